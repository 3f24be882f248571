// ckptscope convert (docs/cli.md "convert", docs/pytorch.md): IN OUT --to V | --for READER, the
// same optimizer state as another TLADAMF version; IN OUT.pt --lr X [--state STATE], TorchLean to
// PyTorch; optimizer.pt OUT --state MODEL [--to V] [--kind K] ..., PyTorch to TorchLean. OUT is
// written atomically (a temporary sibling renamed over it, its mode kept); then what the readers
// make of it.

import { open } from '../checkpoint.js';
import { pair } from '../api.js';
import { CheckpointError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { say } from '../terminal.js';
import { STDIN, checkInput, reading, writing, displayName, sourceOf, isStream, streamName, readBack } from '../user-files.js';
import { UsageError, parseArgs, versionTargets, versionArg, randomCounterArg, numberArg, readerArg, frozenArg, fromTorchArgs } from './args.js';
import { readNames, modelFacts, folderArgs, giveKind, isDeepSpeedFolder, folderFamilyOf, Failure } from './inputs.js';
import { convertDeepSpeed } from './convert-deepspeed.js';
import { convertLines, convertedLines, fromTorchLine, torchFileLines } from './text.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';

// OUT's extension says the direction: a torch.save file for PyTorch, else a TLADAMF version
const TORCH_OUT = /\.(pt|pth|bin)$/i;
// the options of a PyTorch optimizer's conversion: TorchLean's file holds one configuration
const FROM_TORCH = ['--kind', '--weight-decay', '--betas', '--eps', '--drop-amsgrad', '--frozen'];

export async function cmdConvert(argv) {
  const { positional, seen } = parseArgs('convert', argv);
  // a DeepSpeed folder as a universal checkpoint (docs/deepspeed.md)
  if (seen['--to'] === 'universal') return (await import('./convert-universal.js')).cmdConvertUniversal(positional, seen);
  // a PyTorch optimizer and its model as a DCP folder (docs/distributed.md)
  if (seen['--to'] === 'dcp') return convertDcp(positional, seen);
  if (seen['--torch'] !== undefined) throw new UsageError('--torch goes with --to dcp: convert optimizer.pt OUT_DIR --to dcp --state MODEL --torch 1.13', 'convert');
  // a name-keyed PyTorch optimizer (FSDP) as an id-keyed torch.optim state dict (docs/pytorch.md)
  if (seen['--to'] === 'ids') return convertIds(positional, seen);
  if (seen['--group-order'] !== undefined) throw new UsageError('--group-order goes with --to ids: convert optimizer.pt OUT.pt --state MODEL --to ids --group-order stored', 'convert');
  // a DeepSpeed folder: its consolidated pair, or TorchLean through it (js/cli/convert-deepspeed.js)
  if (positional.length === 2 && !isStream(positional[0]) && await isDeepSpeedFolder(positional[0])) return convertDeepSpeed(positional, seen);
  // a DCP folder: its consolidated pair, or TorchLean through it (js/cli/convert-dcp-pair.js)
  if (positional.length === 2 && !isStream(positional[0]) && await folderFamilyOf(positional[0]) === 'DCP') return (await import('./convert-dcp-pair.js')).convertDcpFolder(positional, seen);
  if (seen['--model'] !== undefined) throw new UsageError('--model goes with a DeepSpeed or DCP checkpoint folder IN: convert DIR OPTIMIZER.pt --model MODEL.pt', 'convert');
  if (positional.length === 2 && TORCH_OUT.test(positional[1])) return convertTorch(positional, seen);
  // a Trainer checkpoint-N/ folder: its optimizer.pt, with its model as --state
  const folder = positional.length === 2 ? await folderArgs(positional, seen, 'convert') : null;
  if (positional.length === 2 && (await modelFacts(positional[0])).needsModel) return convertFromTorch(positional, seen, folder);
  for (const option of FROM_TORCH) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a PyTorch optimizer IN: convert optimizer.pt OUT.ckpt --state MODEL ${option}`, 'convert');
  }
  for (const option of ['--lr', '--state']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a PyTorch OUT (.pt, .pth or .bin): convert IN OUT.pt --lr X [--state STATE]`, 'convert');
  }
  if (positional.length !== 2 || (seen['--to'] === undefined) === (seen['--for'] === undefined)) {
    throw new UsageError(`convert takes IN OUT and one of --to ${versionTargets().join('|')}, --for READER`, 'convert');
  }
  const [input, output] = positional;
  // the converter reads the entries again after the parse: a stream is drained by then
  if (isStream(input)) throw new UsageError(`convert needs a file: ${streamName(input)} cannot be read twice over`, 'convert');
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  const to = versionArg(seen['--to'], 'convert');
  const counter = randomCounterArg(seen, 'convert');
  const options = {
    ...(to === undefined ? { for: seen['--for'] } : { to }),
    randomCounter: counter, dropRandomCounter: !!seen['--drop-random-counter'], untie: !!seen['--untie'], roundToFloat32: !!seen['--round-to-float32'],
  };
  if (seen['--for'] !== undefined) await readerArg('--for', seen['--for'], '');
  say(process.stdout, await convertFile(input, output, options));
  return 0;
}

/** convert optimizer.pt OUT.ckpt [--state MODEL] [--to V] [--kind K] ...: PyTorch to TorchLean
 *  (docs/pytorch.md): the pair's slots (format.md 10.4) written as a TLADAMF file, the lowest
 *  version that holds it unless --to or --for says. */
async function convertFromTorch([input, output], seen, folder = null) {
  for (const option of ['--lr', '--drop-random-counter']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} does nothing here: ${displayName(input)} is a PyTorch optimizer: it holds no random counter (--random-counter N supplies one)`, 'convert');
  }
  randomCounterArg(seen, 'convert');   // a bad --random-counter is said before OUT's name
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  const options = await fromTorchArgs(seen, 'convert');
  const modelPath = seen['--state'] ?? ((await modelFacts(input)).holdsBoth ? input : undefined);
  if (modelPath === undefined) throw new UsageError(`convert ${displayName(input)} needs its model: a PyTorch optimizer's slots come from it (--state MODEL)`, 'convert');
  if (modelPath !== input) checkInput(modelPath, 'checkpoint');
  const ck = await reading(input, 'checkpoint', () => open(sourceOf(input)));
  const model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath))).catch((err) => {
    ck.close();
    throw err;
  });
  let result;
  try {
    if (folder) await giveKind(ck, folder, input);   // training_args.bin's kind, where the file says none
    const frozen = frozenArg(seen, 'convert');
    const paired = await pair(ck, model, { names: readNames(seen['--names'], null), frozen, modelLabel: modelPath }).catch((err) => {
      if (err instanceof CheckpointError && err.result?.invalid) throw new CheckpointError(err.fileError ?? err, { context: `cannot convert ${displayName(input)}: ${err.result.invalid === 'state' ? modelPath : displayName(input)} is not a valid checkpoint` });
      throw err;
    });
    if (paired.pairs === false) throw new CheckpointError(paired.error, { context: `cannot convert ${displayName(input)}: it does not pair with ${modelPath}` });
    // the slots without state become frozen slots of the TLADAMF file: what the files cannot tell is said
    if (paired.pairs === null) say(process.stderr, `warning: ${paired.error.message}`);
    const { convert } = await import('../convert.js');
    result = await writing(output, () => convert(ck, output, options));
  } finally {
    model.close();
    ck.close();
  }
  say(process.stdout, fromTorchLine(displayName(output), result, displayName(input), modelPath), convertedLines(displayName(output), result, await readersOf(output)));
  return 0;
}

/** convert optimizer.pt OUT.pt --state MODEL --to ids [--group-order stored]: a name-keyed
 *  optimizer (FSDP's, docs/pytorch.md) paired with its model by name, then written keyed by ids:
 *  each group's ids in the model's module order, or in the stored list's (--group-order stored). */
async function convertIds(positional, seen) {
  if (positional.length !== 2) throw new UsageError('convert --to ids takes IN OUT.pt: convert optimizer.pt OUT.pt --state MODEL --to ids', 'convert');
  const [input, output] = positional;
  for (const option of ['--for', '--lr', '--random-counter', '--drop-random-counter', '--untie', '--round-to-float32', '--drop-amsgrad', '--kind', '--weight-decay', '--betas', '--eps', '--model']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} does nothing with --to ids: the optimizer's state and groups are written as stored`, 'convert');
  }
  const order = seen['--group-order'] ?? 'module';
  if (order !== 'module' && order !== 'stored') throw new UsageError(`--group-order takes module or stored, not ${shown(order, PATH_ECHO_MAX)}`, 'convert');
  if (!TORCH_OUT.test(output)) throw new UsageError(`--to ids writes a torch.save file: OUT must end .pt, .pth or .bin, not ${shown(output, PATH_ECHO_MAX)}`, 'convert');
  if (isStream(input)) throw new UsageError(`convert needs a file: ${streamName(input)} cannot be read twice over`, 'convert');
  checkInput(input, 'checkpoint');
  const modelPath = seen['--state'] ?? ((await modelFacts(input)).holdsBoth ? input : undefined);
  if (modelPath === undefined) throw new UsageError(`convert ${displayName(input)} --to ids needs its model: the ids follow its module order (--state MODEL)`, 'convert');
  if (modelPath !== input) checkInput(modelPath, 'checkpoint');
  const ck = await reading(input, 'checkpoint', () => open(sourceOf(input)));
  const model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath))).catch((err) => {
    ck.close();
    throw err;
  });
  let result;
  try {
    const paired = await pair(ck, model, { names: readNames(seen['--names'], null), frozen: frozenArg(seen, 'convert'), modelLabel: modelPath }).catch((err) => {
      if (err instanceof CheckpointError && err.result?.invalid) throw new CheckpointError(err.fileError ?? err, { context: `cannot convert ${displayName(input)}: ${err.result.invalid === 'state' ? modelPath : displayName(input)} is not a valid checkpoint` });
      throw err;
    });
    if (paired.pairs === false) throw new CheckpointError(paired.error, { context: `cannot convert ${displayName(input)}: it does not pair with ${modelPath}` });
    const { convertToIds } = await import('../convert.js');
    result = await writing(output, () => convertToIds(ck, output, { groupOrder: order }));
  } finally {
    model.close();
    ck.close();
  }
  for (const w of result.warnings) say(process.stderr, `warning: ${w}`);
  say(process.stdout, `${displayName(output)}: keyed by ids, from ${displayName(input)} numbered by ${modelPath} (${order === 'stored' ? 'each group as stored' : 'module order'})`);
  say(process.stdout, (await readBack(output, async (written) => {
    const back = await open(written);
    try {
      return torchFileLines(displayName(output), back.summary);
    } finally {
      back.close();
    }
  })) ?? []);
  return 0;
}

/** convert IN OUT.pt --lr X [--state STATE]: TorchLean to PyTorch (docs/pytorch.md). */
async function convertTorch([input, output], seen) {
  if (seen['--frozen'] !== undefined) throw new UsageError('--frozen goes with a PyTorch optimizer IN: convert optimizer.pt OUT.ckpt --state MODEL --frozen NAMES', 'convert');
  for (const option of ['--to', '--for', '--random-counter', '--drop-random-counter', '--untie', '--round-to-float32']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a TLADAMF OUT: ${shown(output, PATH_ECHO_MAX)} is written as a torch.save file (its extension)`, 'convert');
  }
  if (isStream(input)) throw new UsageError(`convert needs a file: ${streamName(input)} cannot be read twice over`, 'convert');
  const state = seen['--state'];
  if (state !== undefined && isStream(state)) throw new UsageError(`convert --state needs a file: ${streamName(state)} works for IN only`, 'convert');
  // a number: the core's rule decides which (finite and not negative, as torch's Adam takes it)
  const lr = numberArg(seen, '--lr', 'convert');
  say(process.stdout, await convertTorchFile(input, output, { lr, state }));
  return 0;
}

/** What each TorchLean reader makes of the file written (null, said, when it cannot be read back). */
function readersOf(output) {
  return readBack(output, async (written) => {
    const ck = await open(written);
    try {
      return ck.readers;
    } finally {
      ck.close();
    }
  });
}

/** convert IN OUT (--to V | --for READER) [options]: written, then OUT's verdict per reader.
 *  Returns the lines to print. */
async function convertFile(input, output, options) {
  checkInput(input, 'checkpoint');
  // the version IN has (a regular file: convert refuses a stream), to say when nothing changes
  const before = await reading(input, 'checkpoint', () => open(sourceOf(input))).then((ck) => {
    const version = ck.summary.version;
    ck.close();
    return version;
  });
  let result;
  try {
    result = await reading(input, 'checkpoint', () => writing(output, async () => (await import('../convert.js')).convert(sourceOf(input), output, options)));
  } catch (err) {
    if (err instanceof CheckpointError && (err.fileError || err.code === (await loadBinding()).codes.NOT_READABLE)) {
      // the file's own diagnostic, not "the file is invalid"
      throw new CheckpointError(err.fileError ?? err, { context: `cannot convert ${displayName(input)}: it is not a valid checkpoint` });
    }
    throw err;
  }
  const same = before !== null && before !== undefined && BigInt(before) === BigInt(result.version);
  return [...convertLines(displayName(input), displayName(output), result, { same, oldest: options.to === 'oldest' }),
    ...convertedLines(displayName(output), result, await readersOf(output))];
}

/** convert IN OUT.pt --lr X [--state STATE]: TorchLean to PyTorch, written as convert writes,
 *  then what ckptscope's own reader sees in OUT. Returns the lines to print. */
async function convertTorchFile(input, output, { lr, state }) {
  checkInput(input, 'checkpoint');
  if (state !== undefined) checkInput(state, 'checkpoint');
  // torch.save names the zip's folder after the file's stem (the core keeps a plain one only)
  const prefix = displayName(output).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
  const { convertToTorch } = await import('../convert.js');
  const options = { lr, prefix, ...(state === undefined ? {} : { state: sourceOf(state) }) };
  try {
    await reading(input, 'checkpoint', () => writing(output, () => convertToTorch(sourceOf(input), output, options)));
  } catch (err) {
    if (err instanceof CheckpointError && err.fileError) {
      throw new CheckpointError(err.fileError, { context: `cannot convert ${displayName(input)}: it is not a valid checkpoint` });
    }
    // the pairing's failure (or the state file's own diagnostic) says which file: not --lr's
    if (err instanceof CheckpointError && state !== undefined && !err.context && err.code !== (await loadBinding()).codes.INVALID_ARGUMENT) {
      throw new CheckpointError(err, { context: `cannot convert ${displayName(input)} with --state ${displayName(state)}` });
    }
    throw err;
  }
  return (await readBack(output, async (written) => {
    const ck = await open(written);
    try {
      return torchFileLines(displayName(output), ck.summary);
    } finally {
      ck.close();
    }
  })) ?? [];
}

/** convert optimizer.pt OUT_DIR --to dcp --state MODEL [--torch 1.13]: a PyTorch optimizer and its
 *  model as a DCP folder (docs/distributed.md "Writing a DCP folder"). */
async function convertDcp(positional, seen) {
  for (const option of Object.keys(seen)) {
    if (!['--to', '--state', '--torch'].includes(option)) throw new UsageError(`${option} does nothing with --to dcp: convert optimizer.pt OUT_DIR --to dcp --state MODEL [--torch 1.13]`, 'convert');
  }
  if (positional.length !== 2) throw new UsageError('convert --to dcp takes optimizer.pt OUT_DIR: a PyTorch optimizer file and the DCP folder to write', 'convert');
  const [input, output] = positional;
  const model = seen['--state'];
  if (model === undefined) throw new UsageError(`convert --to dcp needs --state MODEL: the model's torch.save state dict, whose names key the DCP folder`, 'convert');
  const torch = seen['--torch'];
  if (torch !== undefined && torch !== '1.13') throw new UsageError(`--torch takes 1.13 (torch 1.13's form; without it, torch >= 2.4's), not ${shown(torch, PATH_ECHO_MAX)}`, 'convert');
  for (const [what, file] of [['optimizer.pt', input], ['--state', model]]) {
    if (file === STDIN || isStream(file)) throw new UsageError(`convert --to dcp needs a file for ${what}: ${file === STDIN ? 'the standard input' : streamName(file)} cannot be read twice over`, 'convert');
  }
  if (output === STDIN) throw new UsageError('convert --to dcp needs a folder name for OUT_DIR, not -', 'convert');
  checkInput(input, 'checkpoint');
  checkInput(model, 'checkpoint');
  const { convertToDcp } = await import('../convert.js');
  const ck = await reading(input, 'checkpoint', () => open(sourceOf(input)));
  let result;
  try {
    const st = await reading(model, 'checkpoint', () => open(sourceOf(model)));
    try {
      result = await convertToDcp(ck, output, { state: st, torch: torch ?? '2' }).catch((err) => {
        if (err instanceof CheckpointError) throw new CheckpointError(err, { context: `cannot convert ${displayName(input)}${err.fileError ? '' : ` with ${displayName(model)}`}` });
        if (err instanceof Error && !err.code && / is not empty: | is not a folder: /.test(err.message)) throw new Failure(err.message);
        throw err;
      });
    } finally {
      st.close();
    }
  } finally {
    ck.close();
  }
  const lines = [`wrote ${output}: a DCP folder (${torch === '1.13' ? 'torch 1.13' : 'torch >= 2.4'}) of ${displayName(input)} and ${displayName(model)}: ${result.keys} keys (${result.modelKeys} of the model), ${result.dataFile} and .metadata`];
  // what ckptscope's own DCP reader makes of it
  const back = await readBack(output, async (written) => {
    const d = await open(written);
    try {
      const s = d.summary;
      return s.ok ? `${output}: read back as a DCP folder: valid` : `${output}: read back: ${s.error.message}`;
    } finally {
      d.close();
    }
  });
  if (back) lines.push(back);
  say(process.stdout, ...lines);
  return 0;
}
