// Checkpoints of one run (docs/runs.md): every consecutive pair's continuity per
// slot, the gradient of a one-step pair and the learning rate it used, and per file its health
// summary. Every rule is the core's (src/analyses/run.c, health.c); this module opens the files,
// hands the core the open files in run order (one pass reads every payload once, for the
// pairs and for each file's health) and adds the names.

import { loadBinding } from './binding.js';
import { open, Checkpoint, withProgress, withFile } from './checkpoint.js';
import { health, pair, setKind } from './api.js';
import { learningRate, ratioBand } from './options.js';
import { CheckpointError, coreError } from './errors.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { exportArguments, exportPointers } from './export.js';
import { ownSlotNames } from './dcp.js';

/** The k = 1 learning-rate residual past which a pair breaks, unless given (src/analyses/run.c's). */
export const DEFAULT_RESIDUAL_LIMIT = 0.1;

/** residualLimit: a positive finite number, or undefined/null for the default (NaN to the core). */
function residualLimitOf(x) {
  if (x === undefined || x === null) return NaN;
  if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) throw new RangeError(`residualLimit must be a positive number, got ${String(x)}`);
  return x;
}

/** What a file is called in the report: its path, URL or name; null when it has none. */
function nameOf(source) {
  if (typeof source === 'string') return source;
  if (source instanceof URL) return source.href;
  if (source instanceof Checkpoint) return null;
  return typeof source?.name === 'string' && source.name ? source.name : null;
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

/** A DeepSpeed save_dir's tag folders, or a folder's DCP folders, in run order (Node). */
async function runFolders(dir) {
  const { checkpointRunFolders } = await import('./run-folders.js');
  const found = await checkpointRunFolders(dir);
  if (!found) throw new TypeError(`files must be an array, or the path of a DeepSpeed save_dir or of a folder of DCP folders: ${String(dir)} is neither`);
  return found.folders;
}

/**
 * The checkpoints `files` of one run, in run order (at least two), with `states` (an array of
 * the same length: each file's model-state file or null) for the learning rates. `lr` sets the
 * learning rate of the health ratios, `ratioBand` ([low, high], as for health) their flag band,
 * `residualLimit` (default 0.1) the k = 1 learning-rate residual that breaks a pair; `labels`
 * ({files, states}: names) name files given as open Checkpoints. `onHealth(i, result)`, when given, hears each file's full
 * per-slot health() (the viewer's timeline): that is a second pass over each file, paid only by a
 * caller that asks for it; the run's own figures come from one pass. Resolves with {ok, cannotTell, files, pairs, first} (docs/runs.md);
 * rejects only for I/O errors, bad arguments and cancellation: an invalid file is the report's.
 */
export async function run(files, { states = null, lr, ratioBand: bandArg, residualLimit, labels, onProgress, onHealth, signal, kind } = {}) {
  // a DeepSpeed save_dir (Node: a folder's path): its tag folders in run order (a Trainer output
  // folder saved with DeepSpeed: its checkpoint-N folders); a folder of DCP folders: those
  if (typeof files === 'string' || files instanceof URL) files = await runFolders(files);
  sources(files, 'files');
  const limit = residualLimitOf(residualLimit);
  if (files.length < 2) throw new RangeError(`a run needs at least two checkpoints, got ${files.length}`);
  if (states !== null && states !== undefined) {
    sources(states, 'states');
    if (states.length !== files.length) throw new RangeError(`states must have one entry per file (${files.length}), got ${states.length}`);
  }
  const stateOf = (i) => (states ? states[i] ?? null : null);
  const rate = learningRate(lr);   // health's rule for lr: NaN when none
  const band = await ratioBand(bandArg);   // and for the band: null, the default
  const b = await loadBinding();
  const opened = [], owned = [], stateErrors = [];
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
      // a state file that cannot be opened: this file's health without parameters
      let st = null;
      if (stateOf(i) !== null) {
        try {
          st = await take(stateOf(i));
          // an invalid state file: its own diagnostic, beside the core's reason
          if (!st.ok) stateErrors[i] = `${st.kind === null ? 'not a file of a known family' : 'the state file is invalid'}: ${st.summary.error?.message ?? 'no diagnostic'}`;
        } catch (e) {
          if (!(e instanceof CheckpointError)) throw e;
          stateErrors[i] = e.message;
        }
      }
      // a PyTorch optimizer's slots come from its model: its state file, or the model its own
      // file holds (opened again); the pairing's first failure is the file's state error
      const ck = opened[opened.length - 1];
      // the kind, where the files do not say it (one that says another refuses it, named)
      if (kind !== undefined && ck.ok) {
        await setKind(ck, kind).catch((e) => {
          throw e instanceof CheckpointError && typeof files[i] === 'string' ? new CheckpointError(e, { context: files[i] }) : e;
        });
      }
      if (ck.ok && ck.summary.needsModel) {
        if (!st && ck.summary.tensorCount && !(files[i] instanceof Checkpoint)) st = await take(files[i]);
        if (st?.ok) {
          const paired = await pair(ck, st).catch((e) => {
            if (!(e instanceof CheckpointError)) throw e;
            return { pairs: false, error: e };
          });
          // a pair the files cannot tell (pairs null) is used: continuity is the run's question
          if (paired.pairs === false) stateErrors[i] = paired.error.message;
        }
      }
      opened.push(st);
    }
    const opts = opened.filter((_, k) => k % 2 === 0), sts = opened.filter((_, k) => k % 2 === 1);
    const n = files.length;
    err = b.errorNew();
    const json = withFiles([...opts, ...sts], (ptrs) => {
      const result = withProgress(b, { onProgress, signal }, (pid) => b.run(ptrs.slice(0, n), ptrs.slice(n), rate, band, limit, pid, err));
      if (!result) throw coreError(b, err, {}, signal);
      return result;
    });
    if (onHealth) {
      for (let i = 0; i < n; i++) {
        signal?.throwIfAborted();
        let result = null;
        try {
          result = await health(opts[i], json.files[i].stateUsed ? sts[i] : null, { lr, ratioBand: band });
        } catch (e) {
          if (!(e instanceof CheckpointError)) throw e;   // an invalid file: the run report says why
        }
        onHealth(i, result);
      }
    }
    // a PyTorch pair's slots are named by its model, a DeepSpeed or DCP folder's by itself (the
    // first file's that has names)
    const names = opts.map((ck) => ownSlotNames(ck?.report)).find(Boolean) ?? null;
    storedRates(json, opts, b);
    return {
      ok: json.ok,
      cannotTell: json.cannotTell,
      ratioBand: json.ratioBand,
      residualLimit: Number.isNaN(limit) ? DEFAULT_RESIDUAL_LIMIT : limit,
      files: json.files.map((f, i) => {
        const stateError = stateErrors[i] ?? f.stateError;
        return {
          path: nameOf(files[i]) ?? labels?.files?.[i] ?? null,
          step: f.step,
          state: f.stateUsed ? nameOf(stateOf(i)) ?? labels?.states?.[i] ?? null : null,
          health: f.health,
          ok: f.ok,
          error: f.error,
          // an optimizer whose file does not say Adam or AdamW (torch 1.13's): no lr comes back
          // (a DeepSpeed folder's: its ds_config names no optimizer; DCP keeps no optimizer class)
          kindUnknown: opts[i].summary.optimizer ? opts[i].summary.optimizer.kind === null : f.kindUnknown,
          ...(stateError ? { stateError, stateFile: nameOf(stateOf(i)) } : {}),
        };
      }),
      pairs: json.pairs,
      first: json.first,
      ...(names ? { names } : {}),
    };
  } finally {
    b.errorFree(err);
    for (const ck of owned) ck.close();
  }
}

/**
 * Each pair whose A is a DeepSpeed folder given the learning rate A's groups stored beside the one
 * its one-step slots gave back (DeepSpeed steps its scheduler after the optimizer's step, so the
 * lr saved at step t is the one step t + 1 uses): `storedLr: {step, learningRates, agrees}`, the
 * groups' distinct rates over the slots whose rate came back, `agrees` true when every slot's
 * rate agrees with its group's (the core's rule, ckpt_logged_lr_agrees), false when one differs,
 * null when none came back; pairs of other files get no member.
 */
function storedRates(json, opts, b) {
  for (const p of json.pairs) {
    const d = opts[p.a]?.report.deepspeed;
    if (!d) continue;
    const groupOf = new Map(d.entries.map((e) => [Number(e.slot), e.group]));
    const rated = p.slots.filter((s) => s.lr !== null && typeof d.groups[groupOf.get(Number(s.slot))]?.lr === 'number');
    const stored = (s) => d.groups[groupOf.get(Number(s.slot))].lr;
    const verdicts = rated.map((s) => b.loggedLrAgrees(s.lr, stored(s)));
    p.storedLr = {
      step: json.files[p.a].step,
      learningRates: [...new Set(rated.map(stored))].sort((x, y) => x - y),
      agrees: !verdicts.length || verdicts.includes(null) ? null : verdicts.every((v) => v),
    };
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
  const args = await exportArguments({ format, names, slots });
  const ca = a instanceof Checkpoint ? a : await open(a, { signal });
  try {
    const cb = b instanceof Checkpoint ? b : await open(b, { signal });
    try {
      return await withSink(write, (bd, sinkId, err, ptrs) => withFile(ca, (_, fa) => withFile(cb, (__, fb) => {
        const { strings, slotPtr, slotCount } = exportPointers(bd, args, ptrs);
        return withProgress(bd, { onProgress, signal }, (pid) =>
          bd.exportGradient(fa, fb, format, strings, slotPtr, slotCount, sinkId, pid, err, ptrs));
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

/** The largest step of an optimizer checkpoint's entries (null when it has none or is invalid):
 *  the run order of files without a number in their name. */
export function largestStep(ck) {
  let best = null;
  for (const e of ck.report.entries ?? []) if (best === null || BigInt(e.step) > BigInt(best)) best = e.step;
  return best;
}

/**
 * Group files into a run (docs/runs.md "Files and order"): `names` the files' names, in the
 * caller's order; `openAt(k)` opens file k (a Checkpoint: its headers are enough; closed here).
 * The optimizer checkpoints go in run order (runOrder), each with the first model-state file of
 * its stem. Resolves {order: indices of the checkpoints in run order, states: per checkpoint the
 * index of its state file or null, unused: [{index, text}] the files left out and why}.
 */
export async function runFiles(names, openAt) {
  const opts = [], states = new Map(), unused = [];
  for (let k = 0; k < names.length; k++) {
    const ck = await openAt(k);
    try {
      const stem = stemOf(names[k]);
      if (ck.kind === 'optimizer') opts.push({ name: names[k], step: largestStep(ck), index: k });
      else if (ck.kind === 'state' && !states.has(stem)) states.set(stem, k);
      else unused.push({ index: k, text: ck.kind === 'state' ? `another model-state file of the stem ${stem}: not used` : 'neither an optimizer checkpoint nor a model-state file: not used' });
    } finally {
      ck.close();
    }
  }
  const ordered = runOrder(opts);
  const paired = ordered.map((o) => states.get(stemOf(o.name)) ?? null);
  for (const [stem, k] of states) if (!paired.includes(k)) unused.push({ index: k, text: `a model-state file, but no optimizer checkpoint is named ${stem}: not used` });
  return { order: ordered.map((o) => o.index), states: paired, unused };
}
