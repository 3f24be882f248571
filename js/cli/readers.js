// The CLI's words for TorchLean's readers (docs/format.md 8, docs/cli.md): `check --reader`,
// the `loads in:` line of inspect, and `convert`. The verdicts and texts are the core's; this
// module only lays them out.

import { check, readerNames } from '../api.js';
import { open } from '../checkpoint.js';
import { CheckpointError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { displayName, sourceOf, reading, writing, checkInput } from '../user-files.js';

const pad = (name) => name.padEnd(11);

/** inspect's line: which readers can read the file at all (null for a model-state file). */
export function loadsInLine(readers) {
  if (!readers) return null;
  const names = Object.keys(readers);
  const yes = names.filter((n) => readers[n].reads), no = names.filter((n) => !readers[n].reads);
  if (!yes.length) return 'loads in: none of the TorchLean readers';
  return `loads in: ${yes.join(', ')}${no.length ? ` (not ${no.join(', ')})` : ''}`;
}

/** One line per reader: whether it reads the file, else its own first diagnostic. */
export function readerLines(readers) {
  return Object.entries(readers).map(([name, v]) => `  ${pad(name)}${v.reads ? 'reads it' : `does not read it: ${v.error.message}`}`);
}

/**
 * check FILE --expect LAYOUT --reader all: the verdict of every reader, one line each, with its
 * own text and warnings. Exit status 0 only when all of them load it. `name` is how the layout
 * is called in the output. A layout that is itself at fault is thrown, as for one reader.
 */
export async function checkEveryReader(file, layout, name) {
  const lines = [`${displayName(file)} into ${name}, per TorchLean reader:`];
  let all = true;
  for (const reader of await readerNames()) {
    try {
      const result = await reading(file, 'checkpoint', () => check(sourceOf(file), layout, { reader }));
      lines.push(`  ${pad(reader)}loads`);
      for (const w of result.warnings) lines.push(`  ${pad('')}warning: ${w}`);
    } catch (err) {
      if (!(err instanceof CheckpointError) || err.subject === 'expected') throw err;
      all = false;
      lines.push(`  ${pad(reader)}does not load: ${err.message}`);
    }
  }
  return { lines, ok: all };
}

/**
 * convert IN OUT (--to V | --for READER) [options]: written atomically (a temporary sibling
 * renamed over OUT, OUT's mode kept), then OUT's verdict per reader. Returns the lines to print.
 */
export async function convertFile(input, output, options) {
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
  const lines = [`${displayName(output)}: version ${result.version} (${result.dtype})`];
  if (before !== null && before !== undefined && BigInt(before) === BigInt(result.version)) {
    const oldest = options.to === 'oldest' ? ', the oldest that loses nothing' : '';
    lines.push(`${displayName(input)} is already version ${result.version}${oldest}: ${displayName(output)} holds the same state`);
  }
  return [...lines, ...await convertedLines(output, result)];
}

/** What a conversion to TLADAMF did to the values, then what each TorchLean reader makes of OUT. */
export async function convertedLines(output, result) {
  const lines = [];
  if (result.widened) lines.push('widened the moments to float32 (exactly: every float16 and bfloat16 value is a float32 value)');
  if (result.rounded) lines.push(`rounded float64 moments to float32: largest relative error ${result.maxRelativeError.toPrecision(3)}`);
  const ck = await open(output);
  try {
    lines.push(`${displayName(output)}, per TorchLean reader:`, ...readerLines(ck.readers));
  } finally {
    ck.close();
  }
  return lines;
}

/**
 * convert IN OUT.pt --lr X [--state STATE]: TorchLean to PyTorch, written atomically as convert
 * writes, then what ckptscope's own reader sees in OUT. Returns the lines to print.
 */
export async function convertTorchFile(input, output, { lr, state }) {
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
  const ck = await open(output);
  try {
    const s = ck.summary, n = s.entryCount;
    const dtypes = [...new Set(s.entries.map((e) => e.dtype))].join(', ') || 'no moments';
    return [`${displayName(output)}: torch.save file, ${s.optimizer.kind === 'adamw' ? 'AdamW' : 'Adam'} state_dict, ${n} parameter${n === 1 ? '' : 's'} with state (${dtypes}), lr ${s.optimizer.groups[0].lr}`,
      `weights only: ${s.weightsOnly ? 'yes' : 'no'} (torch.load(weights_only=True))`];
  } finally {
    ck.close();
  }
}
