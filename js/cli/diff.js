// ckptscope diff A B [--names NAMES.json]: every difference between two layouts or checkpoints
// (and, between two checkpoints of one layout, what they hold: steps, counter, moments). Exit
// status 0 none, 1 some.

import { diff } from '../api.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { jsonKind } from '../layout.js';
import { say } from '../terminal.js';
import { isStream, streamName } from '../user-files.js';
import { UsageError, parseArgs } from './args.js';
import { layoutArg, readNames, openFile } from './inputs.js';
import { diffLines } from './text.js';

export async function cmdDiff(argv) {
  const { positional, seen } = parseArgs('diff', argv);
  if (positional.length !== 2) throw new UsageError('diff takes two files', 'diff');
  const [a, b] = positional;
  for (const side of [a, b]) if (isStream(side)) throw new UsageError(`diff needs two files: ${streamName(side)} is not supported there`);
  const sides = [];
  let differences;
  try {
    sides.push(await diffSide(a), await diffSide(b));
    differences = await diff(sides[0], sides[1]);
    // two checkpoints of one layout: what they hold too (steps, counter, moments)
    const sameSlots = !differences.some((d) => d.slot !== null && d.slot !== undefined);
    if (sameSlots && sides.every((s) => typeof s?.entry === 'function') && sides[0].summary.slotCount === sides[1].summary.slotCount) {
      const { valueDifferences } = await import('../diff-values.js');
      differences = [...differences, ...(await valueDifferences(sides[0], sides[1]))];
    }
  } catch (err) {
    if (err instanceof LayoutError && sides.length === 2) await nameMalformedSide([[sides[0], a], [sides[1], b]]);
    throw err;
  } finally {
    for (const side of sides) side?.close?.();
  }
  say(process.stdout, diffLines(differences, a, b, readNames(seen['--names'], null)));
  return differences.length ? 1 : 0;
}

/** One side of a diff: a layout object, or an open, valid checkpoint (a broken one is named). */
async function diffSide(path) {
  const side = await layoutArg(path);
  if (typeof side === 'string') {
    const ck = await openFile(path, 'checkpoint');
    if (!ck.ok) {
      const error = ck.summary.error;
      ck.close();
      throw new CheckpointError(error, { context: `cannot compare: ${path} is not a valid checkpoint` });
    }
    return ck;
  }
  if (jsonKind(side) === 'report' && side.ok === false) {
    const error = { message: String(side.error?.message ?? 'the report carries no diagnostic'), offset: side.error?.offset ?? null, hint: side.error?.hint ?? null };
    throw new CheckpointError(error, { context: `cannot compare: ${path} is the report of an invalid checkpoint` });
  }
  return side;
}

/** A malformed layout: describe each side alone to name the one at fault. */
async function nameMalformedSide(sides) {
  for (const [side, name] of sides) {
    try {
      await diff(side, side);
    } catch (err) {
      throw err instanceof LayoutError ? new LayoutError(`${name}: ${err.message}`) : err;
    }
  }
}
