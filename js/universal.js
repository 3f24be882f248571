// A DeepSpeed ZeRO-1/2 or BF16_Optimizer folder written as a universal checkpoint (docs/deepspeed.md
// "Universal checkpoints", format.md 11.7), as DeepSpeed's ds_to_universal.py writes one. The core
// names the files and writes each (src/writers/universal.c); here, in Node, they are laid out: the
// folder OUT_DIR is written as a sibling {UTAG}.tmp-{nanos} and renamed when complete, then
// latest_universal (UTAG, no newline) beside it, by a temporary file renamed.

// node:fs, node:path and node:url are imported where a folder is written: the package's index
// exports this module to browsers too (universalPlan reads in any of them).
import { withOpen, withFile } from './checkpoint.js';
import { withSink } from './sink.js';
import { loadBinding } from './binding.js';
import { coreError, CheckpointError } from './errors.js';

const nanos = () => `${BigInt(Date.now()) * 1000000n + process.hrtime.bigint() % 1000000n}`;

/** Run fn(binding, plan, json) with the core's plan for an open DeepSpeed checkpoint (its files
 *  decided once; json: {files, warnings, tag}), freed after; a refusal thrown as the core's
 *  CheckpointError, an invalid checkpoint as its own error. */
function withPlan(ck, fn) {
  if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
  return withFile(ck, async (b, file) => {
    const err = b.errorNew();
    let plan = 0;
    try {
      plan = b.universalPlan(file, err);
      if (!plan) throw coreError(b, err);
      const json = b.universalJSON(plan);
      if (json === null) throw new RangeError('out of memory');
      return await fn(b, plan, json);
    } finally {
      if (plan) b.universalFree(plan);
      b.errorFree(err);
    }
  });
}

/** What convertToUniversal would write: {files, warnings, tag}; a refusal thrown as the core's
 *  CheckpointError. */
export async function universalPlan(source) {
  return withOpen(source, (ck) => withPlan(ck, (b, plan, json) => json));
}

/**
 * Node: `source` (a DeepSpeed save_dir or tag folder, or a Checkpoint opened from one) written as
 * the universal checkpoint `outDir` (OUT/UTAG: ds_to_universal's --output_folder), and
 * OUT/latest_universal naming UTAG. `outDir` must not exist. Resolves with {path, tag, files,
 * warnings}: the folder written, its name, the files written in it (paths in the folder), and the
 * core's warnings (a missing universal_checkpoint_info, a pattern matching no parameter).
 * Rejects with the core's refusal (ZeRO-3, a parameter_with_sub_params pattern, two patterns of
 * one list matching a name) or the checkpoint's own error; nothing is left behind then.
 */
export async function convertToUniversal(source, outDir, options = {}) {
  const { signal } = options;
  const [{ default: fs }, { default: path }, { fileURLToPath }] = await Promise.all([import('node:fs'), import('node:path'), import('node:url')]);
  const target = path.resolve(outDir instanceof URL ? fileURLToPath(outDir) : String(outDir));
  const parent = path.dirname(target), tag = path.basename(target);
  if (fs.existsSync(target)) throw new Error(`${outDir} exists: convert --to universal writes a new folder`);
  if (!fs.statSync(parent, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`${parent} is not a folder: OUT_DIR's parent must exist`);
  return withOpen(source, (ck) => withPlan(ck, async (_, handle, plan) => {
    const tmp = path.join(parent, `${tag}.tmp-${nanos()}`);
    try {
      for (let k = 0; k < plan.files.length; k++) {
        signal?.throwIfAborted();
        const file = path.join(tmp, ...plan.files[k].split('/'));
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const fd = fs.openSync(file, 'w');
        try {
          await withSink((bytes) => fs.writeSync(fd, bytes), (b, sinkId, err) => b.universalWrite(handle, k, sinkId, err), signal);
        } finally {
          fs.closeSync(fd);
        }
      }
      fs.renameSync(tmp, target);
    } catch (err) {
      fs.rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    // latest_universal last: a temporary file renamed
    const latest = path.join(parent, 'latest_universal'), lt = `${latest}.tmp-${nanos()}`;
    try {
      fs.writeFileSync(lt, tag);
      fs.renameSync(lt, latest);
    } catch (err) {
      fs.rmSync(lt, { force: true });
      throw err;
    }
    return { path: target, tag, files: plan.files, warnings: plan.warnings };
  }));
}

/**
 * The universal checkpoint of `source` file by file, for a writer that is not Node's file system
 * (the viewer writes into a folder the user picks): resolves {files, warnings, tag, write(k,
 * write), close()}, the plan decided once (its files as convertToUniversal writes them, paths in
 * the folder); write(k, fn) streams file k's bytes through fn(bytes). close() frees the plan and
 * the opened checkpoint. A refusal is thrown as the core's CheckpointError.
 */
export async function openUniversal(source) {
  const { open } = await import('./checkpoint.js');
  const ck = typeof source?.summary === 'object' ? source : await open(source);
  const owned = ck !== source;
  if (!ck.ok) {
    if (owned) ck.close();
    throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
  }
  let done, finished;
  const closed = new Promise((resolve) => (done = resolve));
  const ready = new Promise((resolve, reject) => {
    finished = withPlan(ck, async (_, handle, plan) => {
      resolve({ ...plan, write: (k, write) => withSink(write, (b, sinkId, err) => b.universalWrite(handle, k, sinkId, err)) });
      await closed;
    }).catch(reject).finally(() => owned && ck.close());
  });
  const out = await ready;
  return { ...out, close: () => {
    done();
    return finished;
  } };
}
