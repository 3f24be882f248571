// ckptscope convert DIR OUT.ckpt for a checkpoint folder that consolidates to a PyTorch pair
// (a DeepSpeed folder, format.md 11.8; a DCP folder, 12.8): the pair itself, OPTIMIZER.pt and
// --model MODEL, or TorchLean through that pair, read where it is needed and never written, with
// the PyTorch route's options and refusals. The core consolidates, pairs and converts; nothing
// here restates a rule.

import { open } from '../checkpoint.js';
import { CheckpointError } from '../errors.js';
import { say } from '../terminal.js';
import { writing, displayName, sourceOf, readBack } from '../user-files.js';
import { UsageError, fromTorchArgs, frozenArg } from './args.js';
import { convertedLines } from './text.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';

/** The folder, opened whole; an invalid one is refused with its own failure. */
export async function openFolder(dir) {
  const ck = await open(sourceOf(dir));
  if (!ck.summary.ok) {
    const error = ck.summary.error;
    ck.close();
    throw new CheckpointError(error, { context: `cannot convert ${displayName(dir)}: it is not a valid checkpoint` });
  }
  return ck;
}

/** convert DIR OUT.ckpt [--to V | --for READER] [--kind K] ...: `what` says what DIR is ("a
 *  DeepSpeed checkpoint"), `pair` what its consolidated pair is ("optimizer and fp32 model"). */
export async function toTorchLean(dir, output, seen, { what, pair }) {
  if (seen['--drop-random-counter'] !== undefined) {
    throw new UsageError(`--drop-random-counter does nothing here: ${shown(dir, PATH_ECHO_MAX)} is ${what}: it holds no random counter (--random-counter N supplies one)`, 'convert');
  }
  const options = { ...await fromTorchArgs(seen, 'convert'), frozen: frozenArg(seen, 'convert') ?? undefined };
  const ck = await openFolder(dir);
  let result;
  try {
    const { convert } = await import('../convert.js');
    result = await writing(output, () => convert(ck, output, options));
  } finally {
    ck.close();
  }
  for (const w of result.warnings ?? []) say(process.stderr, `warning: ${w}`);
  if (result.pairError) say(process.stderr, `warning: ${result.pairError.message}`);
  const readers = await readWritten(output, (f) => f.readers);
  say(process.stdout, `converted ${displayName(dir)} to ${displayName(output)}: TLADAMF version ${result.version}, through its consolidated ${pair}`,
    convertedLines(displayName(output), result, readers));
  return 0;
}

/** convert DIR OPTIMIZER.pt --model MODEL: the folder's consolidated optimizer, then its model
 *  (`modelTarget`, the core's 'model' or 'model.safetensors'), each written atomically (a
 *  temporary sibling renamed over it), then read back for the lines `describe(name, summary,
 *  what)` says of it (what: 'optimizer' or 'model'). */
export async function writePair(dir, output, model, { modelTarget = 'model', describe }) {
  const ck = await openFolder(dir);
  try {
    const { consolidateTo } = await import('../convert.js');
    const { saveAtomically } = await import('../sink.js');
    const stem = (p) => displayName(p).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
    let warnings = [];
    await writing(output, () => saveAtomically(output, async (write) => {
      ({ warnings } = await consolidateTo(ck, 'optimizer', write, { prefix: stem(output) }));
    }));
    for (const w of warnings) say(process.stderr, `warning: ${w}`);
    await writing(model, () => saveAtomically(model, (write) => consolidateTo(ck, modelTarget, write, { prefix: stem(model) })));
  } finally {
    ck.close();
  }
  const lines = [];
  for (const [file, what] of [[output, 'optimizer'], [model, 'model']]) {
    const read = await readWritten(file, (f) => describe(displayName(file), f.summary, what));
    if (read) lines.push(...read);
  }
  say(process.stdout, [`converted ${displayName(dir)} to ${displayName(output)} and ${displayName(model)}`, ...lines]);
  return 0;
}

/** `read(f)` of the file just written at `output`, opened; null where reading it back failed
 *  (readBack warns). */
async function readWritten(output, read) {
  return readBack(output, async (written) => {
    const f = await open(written);
    try {
      return read(f);
    } finally {
      f.close();
    }
  });
}
