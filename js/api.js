// One-call conveniences over the Checkpoint handle: inspect, check, pair, diff, readEntry,
// entryStats. Every rule is the C core's; this layer turns the caller's objects into the core's
// inputs (validated), owns the core's handles for exactly as long as a call needs them, and
// turns the core's errors into CheckpointError.

import { loadCore } from './wasm.js';
import { open, Checkpoint, withOpen, withProgress } from './checkpoint.js';
import { Schema, buildSchema } from './schema.js';
import { openSource, readJsonSource } from './sources.js';
import { CheckpointError, LayoutError, Codes, abortError, coreError } from './errors.js';
import { toU64 } from './values.js';
import { canSplit, workerCount, statsInParallel, healthInParallel } from './parallel.js';
import { schemaArrays, destinationOf } from './layout.js';

const FAMILY = { any: 0, TLADAMF: 1, TLSF32B: 2, TLPF32B: 3 };

/**
 * The JSON report (docs/report.md) of any source. Resolves for invalid files too: `ok` is
 * false and `error` says why. Rejects only for I/O errors, bad arguments and cancellation.
 */
export async function inspect(source, { stats = false, onProgress, signal, variant, workers } = {}) {
  const n = await workerCount(workers);
  if (!stats || n === 1 || !canSplit(source)) return withOpen(source, (ck) => ck.report, { stats, onProgress, signal, variant });
  // Statistics by n workers, each reading its share of the entries: the same report.
  return withOpen(source, async (ck) => {
    if (!ck.ok) {
      ck.close();
      return withOpen(source, (one) => one.report, { stats, onProgress, signal, variant });
    }
    await statsInParallel(ck, source, n, { onProgress, signal });
    return ck.report;
  }, { signal, variant });
}

// ---- layouts: destinations and the sides of a diff ----------------------------------------

const isPlainObject = (x) => x !== null && typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype;

/**
 * Run fn(layoutPtr) with `x` as a layout: a layout object or JSON report, a Schema, an open
 * Checkpoint, a layout JSON file (path, URL, Blob whose text is JSON), or another checkpoint of
 * any family. `role` names x in errors ('expected', 'first', 'second').
 */
async function withLayout(x, role, fn) {
  const core = await loadCore();
  const ex = core.exports;
  if (x instanceof Schema) return x.use((_, schema) => withLayoutPtr(core, ex.w_layout_new(schema, -1, 0, -1, FAMILY.any), fn));
  if (x instanceof Checkpoint) return x.withLayout(fn, { role });
  if (!isPlainObject(x)) {
    const layout = await readJsonSource(x);   // a JSON file is a layout; anything else a checkpoint
    if (layout === undefined) return withOpen(x, (ck) => ck.withLayout(fn, { role }));
    x = layout;
  }
  let arrays, destination;
  try {
    arrays = schemaArrays(x, 'layout');
    destination = destinationOf(x, 'layout');
  } catch (err) {
    if (err instanceof LayoutError) err.role = role;   // which side of a diff, or the destination
    throw err;
  }
  const { family, dtype, config, keeps } = destination;
  const schema = buildSchema(core, arrays);
  let cfg = 0;
  try {
    if (config) cfg = core.u64Array(config);
    return await withLayoutPtr(core, ex.w_layout_new(schema, dtype, cfg, keeps, family), fn);
  } finally {
    core.free(cfg);
    ex.ckpt_schema_free(schema);
  }
}

async function withLayoutPtr(core, ptr, fn) {
  ptr >>>= 0;
  if (!ptr) throw new RangeError('out of WebAssembly memory');
  try {
    return await fn(ptr);
  } finally {
    core.exports.w_layout_free(ptr);
  }
}

/**
 * Would the trainer load `source` into `layout`? Resolves with {ok: true, warnings, report}
 * when it would; rejects with the trainer's CheckpointError (reference text, code, offset,
 * slot; `subject: 'expected'` when the layout itself is at fault) when it would not.
 * `layout`: a layout object, a JSON report, a Schema, a layout JSON file, or another
 * checkpoint. With `{state}` instead: does this optimizer checkpoint belong to that model-state
 * file (see pair)?
 */
export async function check(source, layout, options = {}) {
  if (isPlainObject(layout) && 'state' in layout && !('shapes' in layout)) {
    const result = await pair(source, layout.state, options);
    if (!result.pairs) throw new CheckpointError(result.error, { result });
    return { ok: true, warnings: result.warnings, pair: result };
  }
  const core = await loadCore();
  const src = await openSource(source);
  const srcId = core.register(src);
  try {
    const report = await withLayout(layout, 'expected', (l) => {
      const size = src.size === null || src.size < 0 ? (1n << 64n) - 1n : BigInt(src.size);
      return core.takeJSON(core.exports.w_check(srcId, size, l));
    });
    if (src.error) throw src.error;
    if (!report.ok) throw new CheckpointError(report.error, { report });
    return { ok: true, warnings: report.warnings, report };
  } finally {
    core.unregister(srcId);
    src.close();
  }
}

/**
 * Does the optimizer checkpoint `opt` belong to the model-state file `state` (docs/format.md 6)?
 * Resolves with {ok, pairs, failures, warnings, error}: every failure in check order, the first
 * being the verdict; rejects only when a file cannot be read that far, for I/O errors and
 * cancellation.
 */
export async function pair(opt, state, { onProgress, signal } = {}) {
  const core = await loadCore();
  return withOpen(opt, (o) => withOpen(state, (s) => {
    const result = o.withFile((ex, fo) => s.withFile((_, fs) =>
      core.takeJSON(withProgress(core, { onProgress, signal }, (pid) => ex.w_pair(fo, fs, pid)))));
    if (result.error?.code === Codes.CANCELLED) throw abortError(signal);
    if (result.error && !result.failures.length) {
      // Not a verdict: one of the files cannot be paired at all. Its own error says why.
      const broken = [o, s].find((ck) => !ck.ok);
      throw new CheckpointError(result.error, { result, fileError: broken?.summary.error ?? null, role: broken === s ? 'state' : 'optimizer' });
    }
    return result;
  }));
}

/**
 * Every difference between two layouts or files (any of what check accepts as a layout): slot
 * count, ranks, shapes, sizes, trainability, sharing, dtype, configuration and random-counter
 * status. Each difference is {field, slot, a, b, text, message}; an empty array means they agree
 * on everything both state.
 */
export async function diff(a, b) {
  const core = await loadCore();
  return withLayout(a, 'first', (la) => withLayout(b, 'second', (lb) => core.takeJSON(core.exports.w_diff(la, lb))));
}

// ---- training health --------------------------------------------------------------------------

/** Run fn(errPtr) with an error of its own; freed after. */
async function withError(core, fn) {
  const err = core.exports.w_error_new() >>> 0;
  if (!err) throw new RangeError('out of WebAssembly memory');
  try {
    return await fn(err);
  } finally {
    core.exports.w_error_free(err);
  }
}

export function learningRate(lr) {
  if (lr === undefined || lr === null) return NaN;
  if (typeof lr !== 'number' || !Number.isFinite(lr) || lr <= 0) throw new RangeError(`lr must be a positive finite number, got ${String(lr)}`);
  return lr;
}

/**
 * Training health (docs/health.md): Adam's next step per slot from `opt`'s moments and, with a
 * model-state file `state` (or null), the slot's parameters: rms and max of the step per unit
 * learning rate, the update-to-weight ratio at `lr`, elements never updated, moments no
 * gradient history can produce, NaN and infinities, and the flags they raise. `slots`:
 * {first, count} for a range. Resolves with the health JSON; rejects when a file is invalid.
 */
export async function health(opt, state = null, { lr, onProgress, signal, slots = {}, workers } = {}) {
  const rate = learningRate(lr);
  const n = await workerCount(workers);
  if (n > 1 && canSplit(opt) && (state === null || state === undefined || canSplit(state)) && slots.first === undefined && slots.count === undefined) {
    const weights = await withOpen(opt, (o) => {
      const c = o.columns();
      return Array.from(c.sizes, (x) => Number(x) + 1);
    });
    const lrArg = Number.isNaN(rate) ? undefined : rate;
    const share = (first, count, progress) => health(opt, state, { lr: lrArg, signal, onProgress: progress, slots: { first, count } });
    return healthInParallel(opt, state ?? null, weights, n, share, { lr: lrArg, onProgress, signal });
  }
  const first = toU64(slots.first ?? 0, 'slots.first');
  const count = slots.count === undefined || slots.count === null ? (1n << 64n) - 1n : toU64(slots.count, 'slots.count');
  const core = await loadCore();
  const run = (o, s) => withError(core, (err) => o.withFile((ex, fo) => {
    const go = (fs) => withProgress(core, { onProgress, signal }, (pid) => ex.w_health(fo, fs, rate, first, count, pid, err) >>> 0);
    const ptr = s ? s.withFile((_, fs) => go(fs)) : go(0);
    if (!ptr) throw coreError(core, err, { fileError: [o, s].find((ck) => ck && !ck.ok)?.summary.error ?? null }, signal);
    return core.takeJSON(ptr);
  }));
  return withOpen(opt, (o) => (state === null || state === undefined ? run(o, null) : withOpen(state, (s) => run(o, s))));
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
