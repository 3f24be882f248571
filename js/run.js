// Checkpoints of one run (docs/runs.md): every consecutive pair's continuity per
// slot, the gradient of a one-step pair and the learning rate it used, and per file its health
// summary. Every rule is the core's (src/run.c, src/health.c); this module opens the files,
// runs health on each, hands the core the open files in run order and adds the names.

import { loadBinding } from './binding.js';
import { open, Checkpoint, withProgress, withFile } from './checkpoint.js';
import { health } from './api.js';
import { CheckpointError, LayoutError, coreError } from './errors.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { namesOf } from './layout.js';
import { toU64 } from './values.js';

/** What a file is called in the report: its path, URL or name; null when it has none. */
function nameOf(source) {
  if (typeof source === 'string') return source;
  if (source instanceof URL) return source.href;
  if (source instanceof Checkpoint) return null;
  return typeof source?.name === 'string' && source.name ? source.name : null;
}

/** The median of the slots' update-to-weight ratios, null when no slot has one. */
function medianRatio(result) {
  const ratios = result.slots.map((s) => s.ratio).filter((r) => typeof r === 'number').sort((a, b) => a - b);
  if (!ratios.length) return null;
  const mid = ratios.length >> 1;
  return ratios.length % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}

/** Health of one file with its state file when that pairs; {summary, pairs} or null when the
 *  optimizer file cannot be read (the run report says why). */
async function fileHealth(opt, state, lr, onHealth) {
  try {
    const result = await health(opt, state ?? null, { lr });
    onHealth?.(result);
    return { flags: result.flags.length, ratio: medianRatio(result), pairs: state != null && result.pairs };
  } catch (err) {
    if (!(err instanceof CheckpointError)) throw err;
    if (state == null) return null;
    // a state file that cannot be read: the optimizer's own health, without parameters
    const alone = await fileHealth(opt, null, lr, onHealth);
    return alone && { ...alone, stateError: err.message };
  }
}

/** fn(pointers) with every checkpoint's file pointer (0 for none) held open. */
function withFiles(cks, fn, ptrs = []) {
  const k = ptrs.length;
  if (k === cks.length) return fn(ptrs);
  if (!cks[k]) return withFiles(cks, fn, [...ptrs, 0]);
  return withFile(cks[k], (_, file) => withFiles(cks, fn, [...ptrs, file]));
}

function sources(list, what) {
  if (!Array.isArray(list)) throw new TypeError(`${what} must be an array`);
  return list;
}

/**
 * The checkpoints `files` of one run, in run order (at least two), with `states` (an array of
 * the same length: each file's model-state file or null) for the learning rates. `lr` sets the
 * learning rate of the health ratios; `onHealth(i, result)` hears each file's health pass (the
 * viewer's per-slot timeline: no second pass). Resolves with {ok, files, pairs, first} (docs/runs.md);
 * rejects only for I/O errors, bad arguments and cancellation: an invalid file is the report's.
 */
export async function run(files, { states = null, lr, onProgress, onHealth, signal } = {}) {
  sources(files, 'files');
  if (files.length < 2) throw new RangeError(`a run needs at least two checkpoints, got ${files.length}`);
  if (states !== null && states !== undefined) {
    sources(states, 'states');
    if (states.length !== files.length) throw new RangeError(`states must have one entry per file (${files.length}), got ${states.length}`);
  }
  const stateOf = (i) => (states ? states[i] ?? null : null);
  const healths = [];
  for (let i = 0; i < files.length; i++) {
    signal?.throwIfAborted();
    healths.push(await fileHealth(files[i], stateOf(i), lr, onHealth && ((result) => onHealth(i, result))));
  }
  const b = await loadBinding();
  const opened = [], owned = [];
  const take = async (source) => {
    if (source instanceof Checkpoint) return source;   // the caller's: not closed here
    const ck = await open(source, { signal });
    owned.push(ck);
    return ck;
  };
  let err = 0;
  try {
    for (let i = 0; i < files.length; i++) {
      opened.push(await take(files[i]));
      // the state only when it pairs (health said so): the core reads it beside the moments
      opened.push(healths[i]?.pairs ? await take(stateOf(i)) : null);
    }
    const opts = opened.filter((_, k) => k % 2 === 0), sts = opened.filter((_, k) => k % 2 === 1);
    const n = files.length;
    const flags = healths.map((h) => BigInt(h ? h.flags : 0));
    err = b.errorNew();
    const json = withFiles([...opts, ...sts], (ptrs) => {
      const result = withProgress(b, { onProgress, signal }, (pid) => b.run(ptrs.slice(0, n), ptrs.slice(n), flags, pid, err));
      if (!result) throw coreError(b, err, {}, signal);
      return result;
    });
    return {
      ok: json.ok,
      files: json.files.map((f, i) => ({
        path: nameOf(files[i]),
        step: f.step,
        state: healths[i]?.pairs ? nameOf(stateOf(i)) : null,
        health: healths[i] ? { flags: healths[i].flags, ratio: healths[i].ratio } : null,
        ok: f.ok,
        error: f.error,
        ...(healths[i]?.stateError ? { stateError: healths[i].stateError } : {}),
      })),
      pairs: json.pairs,
      first: json.first,
    };
  } finally {
    b.errorFree(err);
    for (const ck of owned) ck.close();
  }
}

// ---- the gradient of a one-step pair ---------------------------------------------------------

/**
 * Stream the gradient of the one-step pair a → b (docs/runs.md) through write(bytes) as
 * `{name}.grad` tensors, one per owner slot whose steps differ by exactly 1: safetensors or npz
 * (`format`), names one per slot (else slot{i}), `slots` to pick some. Rejects with a
 * CheckpointError when B does not continue A or no slot is one step apart.
 */
export async function exportGradientTo(a, b, write, { format = 'safetensors', names, slots, onProgress, signal } = {}) {
  if (!Object.prototype.hasOwnProperty.call((await loadBinding()).exportFormats(), format)) throw new LayoutError(`format must be "safetensors" or "npz", got ${JSON.stringify(format)}`);
  const list = names === undefined || names === null ? null : namesOf(names, 'names');
  const picked = slots === undefined || slots === null ? null : Array.from(slots, (s, k) => toU64(s, `slots[${k}]`));
  const ca = a instanceof Checkpoint ? a : await open(a, { signal });
  try {
    const cb = b instanceof Checkpoint ? b : await open(b, { signal });
    try {
      return await withSink(write, (bd, sinkId, err, ptrs) => withFile(ca, (_, fa) => withFile(cb, (__, fb) => {
        const { core } = bd;
        let strings = null, slotPtr = 0;
        if (list) {
          strings = list.map((n) => {
            const p = core.stringIn(n);
            ptrs.push(p);
            return p;
          });
        }
        if (picked) {
          slotPtr = core.u64Array(picked);
          ptrs.push(slotPtr);
        }
        return withProgress(bd, { onProgress, signal }, (pid) =>
          bd.exportGradient(fa, fb, format, strings, slotPtr, picked ? picked.length : 0, sinkId, pid, err, ptrs));
      })), signal);
    } finally {
      if (cb !== b) cb.close();
    }
  } finally {
    if (ca !== a) ca.close();
  }
}

/** The gradient export's bytes in memory (see exportGradientTo). */
export function exportGradient(a, b, options) {
  return collect((write) => exportGradientTo(a, b, write, options));
}

/** Node: the gradient export written to `path` atomically, streamed. */
export function saveGradient(path, a, b, options) {
  return saveAtomically(path, (write) => exportGradientTo(a, b, write, options));
}

// ---- a folder of checkpoints ---------------------------------------------------------------

/** The number in a file name: its last run of digits (step-000100.ckpt → 100n), or null. */
export function numberInName(name) {
  const runs = String(name).match(/[0-9]+/g);
  return runs ? BigInt(runs[runs.length - 1]) : null;
}

/** The stem of a file name: its base name without the last extension. */
export function stemOf(name) {
  const base = String(name).replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * Run order of a folder's checkpoints (docs/runs.md): by the number in the name; those
 * without one after them, by their largest step (`step`: a number, a bigint or null). Never by
 * step alone, which would hide an optimizer restarted shortly before a save. Ties keep names
 * in code-point order. Returns a new array of the items ({name, step?}).
 */
export function runOrder(items) {
  const key = (it) => numberInName(it.name);
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  return [...items].sort((x, y) => {
    const kx = key(x), ky = key(y);
    if (kx !== null && ky !== null) return cmp(kx, ky) || cmp(x.name, y.name);
    if (kx !== null) return -1;
    if (ky !== null) return 1;
    const sx = x.step == null ? -1n : BigInt(x.step), sy = y.step == null ? -1n : BigInt(y.step);
    return cmp(sx, sy) || cmp(x.name, y.name);
  });
}
