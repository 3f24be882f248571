// ckptscope export FILE OUT [--state MODEL] [--names NAMES.json] [--kind K] [--frozen NAMES]: the moments (or a
// state file's tensors) in the format OUT's extension names (the core's formats), streamed and
// written atomically (docs/export.md).

import { open } from '../checkpoint.js';
import { pair } from '../api.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { say } from '../terminal.js';
import { STDIN, checkInput, reading, writing, sourceOf, isStream, streamName, readNamesFile } from '../user-files.js';
import { UsageError, parseArgs, refuseIdle, exportFormatOf, exportOutputs, meant, frozenArg } from './args.js';
import { Failure, openInput, folderArgs, giveKind, trainedModelOf } from './inputs.js';
import { wroteLine } from './text.js';

export async function cmdExport(argv) {
  const { positional, seen } = parseArgs('export', argv);
  if (positional.length !== 2) throw new UsageError(`export takes FILE ${exportOutputs({ bar: true })}`, 'export');
  const [given, out] = positional;
  const format = exportFormatOf(out);
  if (!format) {
    const swapped = exportFormatOf(given) ? meant('export', out, given) : '';
    throw new UsageError(`export writes ${exportOutputs()}: the name ${out} says neither${swapped}`, 'export');
  }
  if (isStream(given)) throw new UsageError(`export needs files: ${streamName(given)} cannot be read by ranges`);
  if (out === STDIN) throw new UsageError('export needs files: - (standard output) cannot be written atomically');
  const kind = await folderArgs(positional, seen, 'export');
  const file = positional[0];
  const frozen = frozenArg(seen, 'export');
  // a DeepSpeed or DCP folder is opened whole (its files laid out as one source)
  const ck = await openInput(file, 'checkpoint', kind);
  let model = null, written;
  try {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { context: `cannot export ${file}: it is not a valid checkpoint` });
    await giveKind(ck, kind, file);
    // a PyTorch optimizer's slots, and their names, come from its model
    const modelPath = seen['--state'] ?? (ck.summary.needsModel && ck.summary.optimizer && ck.summary.tensorCount ? file : undefined);
    refuseIdle('export', seen, '--state', ck.summary.needsModel, 'a model gives its slots to a PyTorch optimizer only; this file has its own');
    refuseIdle('export', seen, '--frozen', modelPath !== undefined, 'it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model');
    if (modelPath !== undefined) {
      if (modelPath !== file) checkInput(modelPath, 'checkpoint');
      model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath)));
      const trained = modelPath === file ? {} : { modelLabel: modelPath, ...(await trainedModelOf(file, modelPath)) };
      const result = await pair(ck, model, { frozen, ...trained }).catch(async (err) => {
        if (err instanceof CheckpointError && err.code === (await loadBinding()).codes.INVALID_ARGUMENT) throw new Failure(`cannot export ${file}: ${err.message}`);
        throw err;
      });
      if (result.pairs === false) throw new CheckpointError(result.error, { context: `cannot export ${file}: it does not pair with ${modelPath}` });
      // the moments are exported under the names found; what the files cannot tell is said
      if (result.pairs === null) say(process.stderr, `warning: ${result.error.message}`);
    }
    const slots = ck.kind === 'state' ? ck.summary.tensorCount : ck.summary.slotCount;
    // one name per slot, else refused (exit 2): the names become the tensors' names
    const ties = () => ck.report.schema?.effectiveRepresentatives ?? null;   // read only for a count that differs
    const names = seen['--names'] !== undefined ? readNamesFile(seen['--names'], { slots, ties }) : ck.summary.pairing?.slots ?? undefined;
    const { saveExport } = await import('../export.js');
    const { codes } = await loadBinding();
    written = await writing(out, () => saveExport(out, ck, { format, names })).catch((err) => {
      // a DCP folder whose state export cannot read (the core says why): which folder
      if (kind.dcp && err instanceof CheckpointError && !err.context) throw new CheckpointError(err, { context: `cannot export ${file}` });
      // names the core refuses (empty, alike, too long for a zip): the names file is at fault, as
      // when it has too few; the file itself is fine (exit status 2, not 1)
      if (seen['--names'] !== undefined && err instanceof CheckpointError && err.code === codes.INVALID_ARGUMENT) throw new LayoutError(`${seen['--names']}: ${err.message}`);
      throw err;
    });
  } finally {
    model?.close();
    ck.close();
  }
  say(process.stdout, wroteLine(out, written.bytes, format));
  return 0;
}
