// ckptscope convert DIR ... for a DCP folder (docs/distributed.md "Converting", format.md 12.8):
// DIR OPTIMIZER.pt --model MODEL.pt, the consolidated torch.optim state dict that
// optimizer.load_state_dict takes and the model part's torch.save state dict, each written
// atomically (a temporary sibling renamed over it), payloads streamed from the folder's records;
// DIR OUT.ckpt [--to V] [--kind K] ..., TorchLean through that pair (never written,
// js/cli/convert-folder.js), with the PyTorch route's options and refusals. The core numbers the
// ids and refuses what it cannot number; nothing here restates a rule.

import { open } from '../checkpoint.js';
import { CheckpointError } from '../errors.js';
import { say } from '../terminal.js';
import { STDIN, writing, displayName, sourceOf, readBack } from '../user-files.js';
import { UsageError } from './args.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';
import { toTorchLean } from './convert-folder.js';

const TORCH_OUT = /\.(pt|pth|bin)$/i;
const USAGE = 'convert DIR OPTIMIZER.pt --model MODEL.pt';

export async function convertDcpFolder([dir, output], seen) {
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  if (!TORCH_OUT.test(output)) {
    for (const option of ['--state', '--lr', '--names', '--model']) {
      if (seen[option] !== undefined) throw new UsageError(`${option} does nothing here: ${shown(dir, PATH_ECHO_MAX)} is a distributed checkpoint (DCP), converted with its own model part: convert DIR OUT.ckpt (or ${USAGE})`, 'convert');
    }
    return toTorchLean(dir, output, seen, { what: 'a distributed checkpoint (DCP)', pair: 'optimizer and model' });
  }
  for (const option of Object.keys(seen)) {
    if (option !== '--model') throw new UsageError(`${option} does nothing here: ${shown(dir, PATH_ECHO_MAX)} is a distributed checkpoint (DCP): ${USAGE}`, 'convert');
  }
  const model = seen['--model'];
  if (model === STDIN) throw new UsageError('--model needs a file name, not -', 'convert');
  if (model === undefined) throw new UsageError(`convert ${shown(dir, PATH_ECHO_MAX)} ${shown(output, PATH_ECHO_MAX)} needs --model MODEL.pt: the model part written beside the optimizer`, 'convert');
  if (!TORCH_OUT.test(model)) throw new UsageError(`--model takes a torch.save file name (.pt, .pth or .bin), not ${shown(model, PATH_ECHO_MAX)}`, 'convert');
  const ck = await open(sourceOf(dir));
  try {
    if (!ck.summary.ok) throw new CheckpointError(ck.summary.error, { context: `cannot convert ${displayName(dir)}: it is not a valid checkpoint` });
    const { consolidateTo } = await import('../convert.js');
    const { saveAtomically } = await import('../sink.js');
    const stem = (p) => displayName(p).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
    let warnings = [];
    await writing(output, () => saveAtomically(output, async (write) => {
      ({ warnings } = await consolidateTo(ck, 'optimizer', write, { prefix: stem(output) }));
    }));
    for (const w of warnings) say(process.stderr, `warning: ${w}`);
    await writing(model, () => saveAtomically(model, (write) => consolidateTo(ck, 'model', write, { prefix: stem(model) })));
  } finally {
    ck.close();
  }
  const lines = [];
  for (const [file, what] of [[output, 'optimizer'], [model, 'model']]) {
    const read = await readBack(file, async (written) => {
      const f = await open(written);
      try {
        const s = f.summary;
        return [what === 'optimizer'
          ? `${displayName(file)}: torch.save file, torch.optim state_dict, ${s.entryCount} parameter${s.entryCount === 1 ? '' : 's'} with state, ${s.optimizer.groups.length} group${s.optimizer.groups.length === 1 ? '' : 's'}`
          : `${displayName(file)}: torch.save file, the model: ${s.tensorCount} tensor${s.tensorCount === 1 ? '' : 's'}`];
      } finally {
        f.close();
      }
    });
    if (read) lines.push(...read);
  }
  say(process.stdout, [`converted ${displayName(dir)} to ${displayName(output)} and ${displayName(model)}`, ...lines]);
  return 0;
}
