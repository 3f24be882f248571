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
import { learningRate, ratioBand, readerId } from './options.js';

/**
 * The JSON report (docs/report.md) of any source. Resolves for invalid files too: `ok` is
 * false and `error` says why. Rejects only for I/O errors, bad arguments and cancellation.
 */
export async function inspect(source, { stats = false, onProgress, signal, variant, workers } = {}) {
  const folder = await trainerFolderOf(source);
  if (folder) return withFolder(folder, async (o, m) => {
    await pair(o, m).catch(() => {});   // a pair that fails: the optimizer's report says it has no slots
    if (!folder.accelerate) return o.report;
    // an Accelerate folder: its reading as the report's `accelerate` member
    const { accelerateJson } = await import('./accelerate-folder.js');
    return { ...o.report, accelerate: accelerateJson(folder.accelerate, folder.pair) };
  }, { stats, onProgress, signal, variant });
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
    if (!result.pairs) throw new CheckpointError(result.error, { result });   // does not pair, or cannot tell
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
 * (docs/format.md 6, 10.4): same slots, same shapes, same ties? Resolves with {ok, pairs,
 * invalid, note, failures, warnings, error}: every failure in check order, the first being the
 * verdict; `note` says what the check compared and what not; `pairs` is null when the files
 * cannot tell (a PyTorch optimizer holds no state for a parameter the files do not say is
 * untrained: `error` says which, code TORCH_UNTRAINED). Rejects when a file is invalid (an
 * invalid file never pairs: its own diagnostic, `subject` 'optimizer' or 'state'), when the
 * files are in the wrong roles or an option is refused, for I/O errors and cancellation.
 * `state` may be left out for a file holding its optimizer and its model (a Lightning .ckpt).
 * Options: `names` (the model's state-dict keys in order), `frozen` (names of the model's
 * tensors the training code does not train), `trainedModel` (the model the optimizer was
 * saved with: its checkpoint folder's, compared first) with `trainedLabel` and `modelLabel`
 * (how the texts name the two models), `onProgress`, `signal`. A DeepSpeed checkpoint folder
 * pairs with the model it will be loaded into, or with `names` alone (`state` null), as DeepSpeed
 * pairs them (docs/deepspeed.md); `worldSize` is the world size it will be loaded on.
 */
export async function pair(opt, state, { onProgress, signal, names, frozen, trainedModel, trainedLabel, modelLabel, worldSize } = {}) {
  if (arguments.length === 0 || opt === undefined || opt === null) throw new TypeError('pair(optimizer, model): the optimizer checkpoint is missing');
  if (worldSize !== undefined && worldSize !== null && !(Number.isSafeInteger(worldSize) && worldSize > 0)) throw new TypeError('pair: worldSize is a positive integer');
  // a DeepSpeed checkpoint pairs with the new model's names alone (docs/deepspeed.md)
  if ((state === undefined || state === null) && names !== undefined && names !== null && await isDeepSpeed(opt)) {
    return pairDeepSpeedNames(opt, namesOf(names, 'names'), { onProgress, signal, worldSize });
  }
  // so does a distributed checkpoint (DCP), by name (docs/distributed.md)
  if ((state === undefined || state === null) && names !== undefined && names !== null && await isDcp(opt)) {
    return pairDeepSpeedNames(opt, namesOf(names, 'names'), { onProgress, signal, frozen: frozen === undefined || frozen === null ? null : namesOf(frozen, 'frozen') });
  }
  const folder = state === undefined || state === null ? await trainerFolderOf(opt) : null;
  if (folder) return withFolder(folder, (o, m) => pair(o, m, { onProgress, signal, names, frozen }));
  const b = await loadBinding();
  if (names !== undefined && names !== null) names = namesOf(names, 'names');
  if (frozen !== undefined && frozen !== null) frozen = namesOf(frozen, 'frozen');
  for (const [label, name] of [[trainedLabel, 'trainedLabel'], [modelLabel, 'modelLabel']]) {
    if (label !== undefined && label !== null && typeof label !== 'string') throw new TypeError(`pair: ${name} is a string`);
  }
  if (state === undefined || state === null) {
    // one file holding its optimizer and its model (a Lightning .ckpt, {'model', 'optimizer'})
    const both = await withOpen(opt, (o) => !!(o.summary.needsModel && o.summary.optimizer && o.summary.tensorCount));
    if (!both) throw new TypeError('pair(optimizer, model): the model is missing; only a file holding both its optimizer and its model pairs alone');
    if (opt instanceof Checkpoint) throw new TypeError('pair(checkpoint) alone: a file holding both its optimizer and its model pairs as pair(source) (a path, bytes, a Blob), which opens it twice; or give the model');
    state = opt;
  }
  const run = (o, s, t) => withFile(o, (_, fo) => withFile(s, (__, fs) => {
    const pairWith = (ft) => withProgress(b, { onProgress, signal }, (pid) => b.pairWith(fo, fs,
      { names: names ?? null, frozen: frozen ?? null, trained: ft, trainedLabel: trainedLabel ?? null, modelLabel: modelLabel ?? null, worldSize: worldSize ?? 0 }, pid));
    return t ? withFile(t, (___, ft) => pairWith(ft)) : pairWith(0);
  }));
  return withOpen(opt, (o) => withOpen(state, (s) => withOpenOrNull(trainedModel, (t) => {
    // a state file that keeps no module order (safetensors) is ordered by the names, or by shape
    const result = run(o, s, t);
    if (result.pytorch || s.summary.needsModel) {
      reread(o);   // a PyTorch optimizer and its model: both handles now hold the pair's slots
      reread(s);
    }
    if (result.error?.code === b.codes.CANCELLED) throw abortError(signal);
    if (result.error && !result.failures.length && result.pairs !== null) {
      // Not a verdict: an invalid file (the core says which; it never pairs, its own
      // diagnostic is the error), or files that cannot be paired at all (the wrong roles, I/O).
      const broken = result.invalid === 'state' ? s : result.invalid === 'optimizer' ? o : null;
      throw new CheckpointError(result.error, { result, fileError: broken?.summary.error ?? null, subject: result.invalid ?? 'file' });
    }
    return result;
  })));
}

/** Is `source` a DeepSpeed checkpoint (a folder, or one of its files)? A source that does not
 *  open (a Trainer folder, which pair opens as its two files) is not. */
const isDeepSpeed = (source) => withOpen(source, (o) => o.summary.family === 'DeepSpeed').catch(() => false);
const isDcp = (source) => withOpen(source, (o) => o.summary.family === 'DCP').catch(() => false);

/** A DeepSpeed checkpoint paired with the new model's names alone (format.md 11.6): names and
 *  order, and the world size when given. */
async function pairDeepSpeedNames(opt, names, { onProgress, signal, worldSize, frozen }) {
  const b = await loadBinding();
  return withOpen(opt, (o) => {
    const result = withFile(o, (_, fo) => withProgress(b, { onProgress, signal }, (pid) => b.pairWith(fo, 0, { names, frozen: frozen ?? null, worldSize: worldSize ?? 0 }, pid)));
    if (result.error?.code === b.codes.CANCELLED) throw abortError(signal);
    if (result.error && !result.failures.length && result.pairs !== null) {
      throw new CheckpointError(result.error, { result, fileError: result.invalid === 'optimizer' ? o.summary.error ?? null : null, subject: result.invalid ?? 'file' });
    }
    return result;
  });
}

export { setKind } from './kind.js';


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
 * for a range. A PyTorch optimizer (or a torch.save model) is paired first, with `frozen` and
 * `trainedModel` as pair() takes them; a pair the files cannot tell is used, its condition in
 * `pairCondition` (null otherwise; absent when nothing was paired). Resolves with the health JSON; rejects when a file is invalid
 * or the two do not pair.
 */
/** Is `x` a path (or file: URL) of a folder? (Node; false elsewhere) */
async function isFolderPath(x) {
  if (typeof x !== 'string' && !(x instanceof URL && x.protocol === 'file:')) return false;
  const fs = await import('node:fs').catch(() => null);
  return !!fs?.statSync(x, { throwIfNoEntry: false })?.isDirectory();
}

export async function health(opt, state = null, { lr, ratioBand: bandArg, onProgress, signal, slots = {}, workers, frozen, trainedModel, trainedLabel, modelLabel } = {}) {
  const folder = state === undefined || state === null ? await trainerFolderOf(opt) : null;
  if (folder) return withFolder(folder, (o, m) => health(o, m, { lr, ratioBand: bandArg, onProgress, signal, slots, workers, frozen }));
  const rate = learningRate(lr);
  const band = await ratioBand(bandArg);
  let n = await workerCount(workers, [opt, state], 'health');
  const args = { lr: Number.isNaN(rate) ? undefined : rate, ratioBand: band };
  // a PyTorch pair's slots exist in the handles that paired them, not in a worker's
  const needsModel = (x) => withOpen(x, (ck) => ck.summary.needsModel);
  // a folder read as one source (a DeepSpeed checkpoint) is no file a worker can share: one thread
  if (n > 1 && await isFolderPath(opt)) n = 1;
  if (n > 1 && (await needsModel(opt) || (state !== null && state !== undefined && await needsModel(state)))) n = 1;
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
  return withOpen(opt, (o) => withOpenOrNull(state, (s) => withModelSlots(o, s, opt, async (oo, ss, paired) => {
    const json = await healthOf(oo, ss, { ...args, ...slots, onProgress, signal });
    // a PyTorch pair's slots are named by its model, a DeepSpeed checkpoint's by its module (the
    // report's names)
    if (oo.summary.pairing?.slots) json.names = oo.summary.pairing.slots;
    else if (oo.summary.names) json.names = oo.summary.names;
    if (paired) json.pairCondition = paired.pairs === null ? paired.error.message : null;
    return json;
  }, { frozen, trainedModel, trainedLabel, modelLabel })));
}

/**
 * A PyTorch optimizer has no slots of its own: they come from its model (docs/pytorch.md); and a
 * torch.save model's slots are the tensors pairing picks (a TorchLean optimizer's model). Run
 * fn(o, s) once the open optimizer `o` is paired with the open model `s` (or, when s is null,
 * with the model o's own file holds, opened again from `source`); the handles then hold the
 * pair's slots. Any other file: fn(o, s) as it is. Rejects with the pairing's first failure when
 * the two do not pair; a pair the files cannot tell (pairs null) is used, its condition in
 * `pairing` (the pair's result) for the caller to say.
 */
export async function withModelSlots(o, s, source, fn, { names, frozen, trainedModel, trainedLabel, modelLabel } = {}) {
  if (!o.summary.needsModel && !s?.summary.needsModel) return fn(o, s);
  const bind = async (m) => {
    const result = await pair(o, m, { names, frozen, trainedModel, trainedLabel, modelLabel });
    if (result.pairs === false) throw new CheckpointError(result.error, { result });
    return fn(o, m, result);
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
    // each slot's name: a PyTorch pair's model's (the report's names), else null
    const names = o.summary.names ?? null;
    for (const x of json.slots) x.name = names?.[x.slot] ?? null;
    return json;
  }));
}

// ---- a Trainer checkpoint-N/ folder given for a file (Node) -------------------------------------

/** The files of the Trainer checkpoint-N/ folder `source` names (a path or file: URL to a
 *  folder, in Node): folderFiles's {optimizer, model, kind, fallback}; null for anything else (a
 *  folder of no Trainer's is then refused as a folder when it is opened). A folder without an
 *  optimizer or a model rejects with the FolderError that says so. */
async function trainerFolderOf(source) {
  if (typeof source !== 'string' && !(source instanceof URL && source.protocol === 'file:')) return null;
  if (typeof process === 'undefined' || !process.versions?.node) return null;
  const [{ statSync }, { fileURLToPath }] = await Promise.all([import('node:fs'), import('node:url')]);
  const dir = source instanceof URL ? fileURLToPath(source) : source;
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() !== true) return null;
  const { folderFiles } = await import('./trainer-folder.js');
  return folderFiles(dir);
}

/** fn(o, m) with the folder's optimizer (given training_args.bin's kind where its file says
 *  none) and its model open; both closed after. */
async function withFolder(folder, fn, options) {
  const { applyKind } = await import('./trainer-folder.js');
  return withOpen(folder.optimizer, async (o) => {
    await applyKind(o, folder.kind, folder.fallback);
    return withOpen(folder.model, (m) => fn(o, m));
  }, options);
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

