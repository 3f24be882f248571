// One-call conveniences over the Checkpoint handle: inspect, check, pair, diff, readEntry,
// entryStats. Every rule is the C core's; this layer turns the caller's objects into the core's
// inputs (validated), owns the core's handles for exactly as long as a call needs them, and
// turns the core's errors into CheckpointError.

import { loadBinding } from './binding.js';
import { open, Checkpoint, withOpen, withProgress, withFile, withFileLayout, withSource, sourceSize, itemCount, reread } from './checkpoint.js';
import { Schema } from './schema.js';
import { openSource, readJsonSource } from './sources.js';
import { CheckpointError, LayoutError, abortError, coreError } from './errors.js';
import { toU64 } from './values.js';
import { canSplit, workerCount, startCrew, openWithStats, openSplit, healthInParallel, withPinned } from './parallel.js';
import { schemaArrays, destinationOf, namesOf } from './layout.js';
import { learningRate, ratioBand, readerId, optimizerKind, listed } from './options.js';

/**
 * The JSON report (docs/report.md) of any source. Resolves for invalid files too: `ok` is
 * false and `error` says why. Rejects only for I/O errors, bad arguments and cancellation.
 */
export async function inspect(source, { stats = false, onProgress, signal, variant, workers } = {}) {
  const n = await workerCount(workers, [source]);
  if (!stats || n === 1 || !canSplit(source)) return withOpen(source, (ck) => ck.report, { stats, onProgress, signal, variant });
  // Statistics by n threads of the one open file: the same report.
  return withPinned(source, async (file) => {
    const ck = await openWithStats(file, n, { onProgress, signal, variant });
    try {
      return ck.report;
    } finally {
      ck.close();
    }
  });
}

/**
 * The statistics of every item of `source` (a file, fd or Blob: what the workers can open on
 * their own) computed by `workers` threads, each run of items handed to `onPacked(from, list)`
 * as the core's packed words (attachPacked takes them, in another instance or another process:
 * `ckptscope view` sends them to its page). Resolves {workers, items}, or null when the file has
 * no items or is invalid before its end (nothing to split: open it for its diagnostic).
 */
export async function scanPacked(source, { workers, onPacked, onProgress, signal, variant } = {}) {
  if (!canSplit(source)) throw new TypeError('scanPacked reads a file path, a file descriptor or a Blob');
  const n = await workerCount(workers, [source]);
  return withPinned(source, async (file) => {
    const ck = await openSplit(file, n, { onProgress, signal, variant, onPacked });
    if (!ck) return null;
    const items = itemCount(ck);
    ck.close();
    return { workers: n, items };
  });
}

// ---- layouts: destinations and the sides of a diff ----------------------------------------

const isPlainObject = (x) => x !== null && typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype;

/**
 * Run fn(layoutPtr) with `x` as a layout: a layout object or JSON report, a Schema, an open
 * Checkpoint, a layout JSON file (path, URL, Blob whose text is JSON), or another checkpoint of
 * any family. `subject` names x in errors ('expected', 'first', 'second').
 */
async function withLayout(x, subject, fn) {
  const b = await loadBinding();
  if (x instanceof Schema) return x.use((_, schema) => withLayoutPtr(b, b.layoutNew(schema), fn));
  if (x instanceof Checkpoint) return withFileLayout(x, fn, subject);
  // a caller's own source ({size, read}) is a file to read, never a layout object
  const customSource = isPlainObject(x) && typeof x.read === 'function' && 'size' in x;
  if (!isPlainObject(x) || customSource) {
    const layout = await readJsonSource(x);   // a JSON file is a layout; anything else a checkpoint
    if (layout === undefined) return withOpen(x, (ck) => withFileLayout(ck, fn, subject));
    x = layout;
  }
  let arrays, destination;
  try {
    arrays = schemaArrays(x, 'layout');
    destination = destinationOf(x, 'layout');
  } catch (err) {
    // which side of a diff, or the destination
    if (err instanceof LayoutError) throw new LayoutError(err.message, { subject });
    throw err;
  }
  const schema = b.schemaNew(arrays);
  try {
    return await withLayoutPtr(b, b.layoutNew(schema, destination), fn);
  } finally {
    b.schemaFree(schema);
  }
}

async function withLayoutPtr(b, ptr, fn) {
  try {
    return await fn(ptr);
  } finally {
    b.layoutFree(ptr);
  }
}

/**
 * Would the trainer load `source` into `layout`? Resolves with {ok: true, warnings, report}
 * when it would; rejects with the trainer's CheckpointError (reference text, code, offset,
 * slot; `subject: 'expected'` when the layout itself is at fault) when it would not.
 * `layout`: a layout object, a JSON report, a Schema, a layout JSON file, or another
 * checkpoint. With `{state}` instead: is this optimizer checkpoint structurally the pair of
 * that model-state file (see pair)?
 */
export async function check(source, layout, options = {}) {
  if (isPlainObject(layout) && 'state' in layout && !('shapes' in layout)) {
    const result = await pair(source, layout.state, options);
    if (!result.pairs) throw new CheckpointError(result.error, { result });
    return { ok: true, warnings: result.warnings, pair: result };
  }
  const b = await loadBinding();
  const reader = readerId(b, options.reader);
  const load = (srcId, size) => withLayout(layout, 'expected', (l) => {
    b.layoutSetReader(l, reader);
    return b.check(srcId, size, l);
  });
  const verdict = (report) => {
    if (!report.ok) throw new CheckpointError(report.error, { report });
    return { ok: true, warnings: report.warnings, report };
  };
  // an open Checkpoint: the trainer's load reads its own source again (the handle stays open)
  if (source instanceof Checkpoint) return verdict(await withSource(source, (_, srcId, size) => load(srcId, size)));
  const { core } = b;
  const src = await openSource(source);
  const srcId = core.register(src);
  try {
    const report = await load(srcId, sourceSize(b, src));
    if (src.error) throw src.error;
    return verdict(report);
  } finally {
    core.unregister(srcId);
    src.close();
  }
}

/**
 * Is the optimizer checkpoint `opt` structurally the pair of the model-state file `state`
 * (docs/format.md 6): same slots, same shapes, same ties? Resolves with {ok, pairs, invalid,
 * note, failures, warnings, error}: every failure in check order, the first being the verdict;
 * `note` says what the check does not compare (the values). Rejects when a file is invalid (an
 * invalid file never pairs: its own diagnostic, `subject` 'optimizer' or 'state'), when the
 * files are in the wrong roles, for I/O errors and cancellation.
 */
export async function pair(opt, state, { onProgress, signal, names } = {}) {
  const b = await loadBinding();
  if (names !== undefined && names !== null) names = namesOf(names, 'names');
  return withOpen(opt, (o) => withOpen(state, (s) => {
    // a state file that keeps no module order (safetensors) is ordered by the names, or by shape
    const result = withFile(o, (_, fo) => withFile(s, (__, fs) =>
      withProgress(b, { onProgress, signal }, (pid) => b.pairNamed(fo, fs, names ?? null, pid))));
    if (result.pytorch) {
      reread(o);   // a PyTorch optimizer and its model: both handles now hold the pair's slots
      reread(s);
    }
    if (result.error?.code === b.codes.CANCELLED) throw abortError(signal);
    if (result.error && !result.failures.length) {
      // Not a verdict: an invalid file (the core says which; it never pairs, its own
      // diagnostic is the error), or files that cannot be paired at all (the wrong roles, I/O).
      const broken = result.invalid === 'state' ? s : result.invalid === 'optimizer' ? o : null;
      throw new CheckpointError(result.error, { result, fileError: broken?.summary.error ?? null, subject: result.invalid ?? 'file' });
    }
    return result;
  }));
}

/**
 * The kind ('adam' or 'adamw') of the open PyTorch optimizer `ck` whose file does not say it
 * (torch 1.13's AdamW writes no decoupled_weight_decay): its groups' configurations take it
 * (health's decay term, a run's learning rate). Call it before pairing. Rejects with the core's
 * CheckpointError when the file says another kind or holds no optimizer.
 */
export async function setKind(ck, kind) {
  await loadBinding();
  const { id } = optimizerKind(kind, (names) => new RangeError(`kind is ${listed(names, { quote: "'" })}, got ${String(kind)}`));
  const error = withFile(ck, (b, file) => b.setKind(file, id));
  if (error) throw new CheckpointError(error);
  reread(ck);
}

/**
 * Every difference between two layouts or files (any of what check accepts as a layout): slot
 * count, ranks, shapes, sizes, trainability, sharing, dtype, configuration and random-counter
 * status. Each difference is {field, slot, a, b, text, message}; an empty array means they agree
 * on everything both state.
 */
export async function diff(a, b) {
  const binding = await loadBinding();
  return withLayout(a, 'first', (la) => withLayout(b, 'second', (lb) => binding.diff(la, lb)));
}

// ---- training health --------------------------------------------------------------------------

/** Run fn(errPtr) with an error of its own; freed after. */
async function withError(b, fn) {
  const err = b.errorNew();
  try {
    return await fn(err);
  } finally {
    b.errorFree(err);
  }
}

/**
 * Training health (docs/health.md): Adam's next step per slot from `opt`'s moments and, with a
 * model-state file `state` (or null), the slot's parameters: rms and max of the step per unit
 * learning rate, the update-to-weight ratio at `lr`, elements never updated, moments no
 * gradient history can produce, NaN and infinities, and the flags they raise, each with its
 * severity (a ratio outside `ratioBand`, [low, high], is a warning). `slots`: {first, count}
 * for a range. Resolves with the health JSON; rejects when a file is invalid.
 */
export async function health(opt, state = null, { lr, ratioBand: bandArg, onProgress, signal, slots = {}, workers } = {}) {
  const rate = learningRate(lr);
  const band = await ratioBand(bandArg);
  let n = await workerCount(workers, [opt, state], 'health');
  const args = { lr: Number.isNaN(rate) ? undefined : rate, ratioBand: band };
  // a PyTorch pair's slots exist in the handles that paired them, not in a worker's
  if (n > 1 && await withOpen(opt, (o) => o.summary.needsModel)) n = 1;
  if (n > 1 && canSplit(opt) && (state === null || state === undefined || canSplit(state)) && slots.first === undefined && slots.count === undefined) {
    // every thread reads the same open files; the workers open them while this thread does
    return withPinned(opt, (o) => withPinned(state ?? null, async (s) => {
      const crew = await startCrew(n - 1, { opt: o, state: s });
      try {
        return await withOpen(o, (ok) => withOpenOrNull(s, (sk) => {
          const share = (first, count, progress) => healthOf(ok, sk, { ...args, first, count, onProgress: progress, signal });
          return healthInParallel(ok, crew, share, args, { onProgress, signal });
        }));
      } finally {
        crew.stop();
      }
    }));
  }
  return withOpen(opt, (o) => withOpenOrNull(state, (s) => withModelSlots(o, s, opt, async (oo, ss) => {
    const json = await healthOf(oo, ss, { ...args, ...slots, onProgress, signal });
    // a PyTorch pair's slots are named by its model
    if (oo.summary.pairing?.slots) json.names = oo.summary.pairing.slots;
    return json;
  })));
}

/**
 * A PyTorch optimizer has no slots of its own: they come from its model (docs/pytorch.md). Run
 * fn(o, s) once the open optimizer `o` is paired with the open model `s` (or, when s is null,
 * with the model o's own file holds, opened again from `source`); the handles then hold the
 * pair's slots. Any other file: fn(o, s) as it is. Rejects with the pairing's first failure when
 * the two do not pair.
 */
export async function withModelSlots(o, s, source, fn, { names } = {}) {
  if (!o.summary.needsModel) return fn(o, s);
  const bind = async (m) => {
    const result = await pair(o, m, { names });
    if (!result.pairs) throw new CheckpointError(result.error, { result });
    return fn(o, m);
  };
  if (s) return bind(s);
  if (!o.summary.tensorCount || source instanceof Checkpoint) return fn(o, s);   // the core says what is missing
  return withOpen(source, bind);
}

const withOpenOrNull = (source, fn) => (source === null || source === undefined ? fn(null) : withOpen(source, fn));

/** The health JSON of the open `o` (and state `s`, or null) over slots {first, count} (default:
 *  all); the options as for health (the workers of js/parallel.js call it too). */
export async function healthOf(o, s, { lr, ratioBand: bandArg, first, count, onProgress, signal } = {}) {
  const rate = learningRate(lr);
  const band = await ratioBand(bandArg);
  const from = toU64(first ?? 0, 'slots.first');
  const b = await loadBinding();
  const many = count === undefined || count === null ? b.NONE : toU64(count, 'slots.count');
  return withError(b, (err) => withFile(o, (_, fo) => {
    const go = (fs) => withProgress(b, { onProgress, signal }, (pid) => b.health(fo, fs, rate, band, from, many, pid, err));
    const json = s ? withFile(s, (__, fs) => go(fs)) : go(0);
    if (!json) throw coreError(b, err, { fileError: [o, s].find((ck) => ck && !ck.ok)?.summary.error ?? null }, signal);
    return json;
  }));
}

// ---- one slot ---------------------------------------------------------------------------------

/** The moments of one slot: see Checkpoint.entry. */
export function readEntry(source, slot) {
  return withOpen(source, (ck) => {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { report: ck.summary });
    return ck.entry(slot);
  });
}

/** Streamed statistics of one slot: see Checkpoint.stats. */
export function entryStats(source, slot, { onProgress, signal } = {}) {
  return withOpen(source, (ck) => {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { report: ck.summary });
    return ck.stats(slot, { onProgress, signal });
  });
}

export { open, Checkpoint, withProgress };

// ---- TorchLean's readers (docs/format.md 8) ----------------------------------------------------

/** The six TorchLean readers' names, oldest first, as the core's table has them. */
export async function readerNames() {
  return (await loadBinding()).readerNames();
}

