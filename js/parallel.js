// Statistics and the health pass split n ways: the calling thread takes the first share and
// n - 1 workers (Node worker_threads, browser workers) the others, each with its own
// WebAssembly instance reading the same file. A share is a contiguous range of items (entries or
// tensors, balanced by bytes) whose statistics come back packed; the core attaches them, so the
// report is exactly the one-thread report. The health pass splits by slot ranges and its JSON
// concatenates. The caller works rather than waits: a worker costs its start (a thread, a
// module instance, the file's metadata parsed again), and on two cores one fewer is felt.

import { isNode, compiledModule } from './wasm.js';
import { itemCount, itemStatsPacked, attachPacked } from './checkpoint.js';
import { loadBinding } from './binding.js';

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;

/** Sources every worker can open on its own: a file path, file: URL or descriptor (Node), a
 *  Blob/File. */
export function canSplit(source) {
  if (isBlob(source)) return true;
  if (!isNode) return false;
  return typeof source === 'string' || typeof source === 'number' || (source instanceof URL && source.protocol === 'file:');
}

/**
 * Run fn(source') where every thread reads the same open file: a path (or file: URL) is opened
 * once here and its descriptor handed to the workers (threads of one process share it), so a
 * file renamed over the path mid-run (a trainer saving `latest.ckpt`) cannot mix two files'
 * bytes. Other sources as they are.
 */
export async function withPinned(source, fn) {
  if (!isNode || !(typeof source === 'string' || (source instanceof URL && source.protocol === 'file:'))) return fn(source);
  const fs = await import('node:fs');
  const fd = fs.openSync(source, 'r');
  try {
    return await fn(fd);
  } finally {
    fs.closeSync(fd);
  }
}

// What 'auto' starts: a worker costs its start (a thread, a module instance evaluated 43-68 ms
// after the job is posted, the file's metadata parsed again) and slows the calling thread where
// cores are shared, so it pays only with a share that takes longer than that: measured, 2
// workers were slower than 1 on every command on a 320 MB pair and 1.65-1.86x faster on 1.5 GiB.
// One worker per 512 MiB of the files read, at most the cores (and 8).
const BYTES_PER_WORKER = 512 * 2 ** 20;

/** The bytes of the sources the pass reads (files' and Blobs' sizes), or null when one is not
 *  known (a source that is not split anyway). */
async function bytesOf(sources) {
  let total = 0;
  for (const source of sources) {
    if (source === null || source === undefined) continue;
    if (isBlob(source)) total += source.size;
    else if (isNode && canSplit(source)) {
      const fs = await import('node:fs');
      try {
        total += fs.statSync(source).size;
      } catch {
        return null;   // the pass itself reports it
      }
    } else return null;
  }
  return total;
}

/** How many workers `workers` means: a number, or 'auto': what pays for reading `sources` (one
 *  per 512 MiB, at most the machine's cores and 8; the cores when the sizes are not known). */
export async function workerCount(workers, ...sources) {
  if (workers === 'auto') {
    const cores = Math.min(8, isNode ? (await import('node:os')).availableParallelism() : globalThis.navigator?.hardwareConcurrency ?? 1);
    const bytes = sources.length ? await bytesOf(sources) : null;
    return bytes === null ? cores : Math.max(1, Math.min(cores, Math.floor(bytes / BYTES_PER_WORKER)));
  }
  if (workers === undefined || workers === null) return 1;
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) throw new RangeError(`workers must be a whole number from 1 to 64, or 'auto', got ${String(workers)}`);
  return workers;
}

/** Contiguous ranges [from, to) of weights, about equal in sum, at most n of them. */
export function split(weights, n) {
  const total = weights.reduce((a, b) => a + b, 0);
  const ranges = [];
  let from = 0, acc = 0;
  for (let k = 0; k < weights.length; k++) {
    acc += weights[k];
    if (ranges.length < n - 1 && acc >= (total * (ranges.length + 1)) / n) {
      ranges.push([from, k + 1]);
      from = k + 1;
    }
  }
  if (from < weights.length || !ranges.length) ranges.push([from, weights.length]);
  return ranges.filter(([a, b]) => b > a);
}

/** Start one job in a fresh worker, posted before this returns (so it runs while the caller
 *  computes its own share); progress messages go to onProgress. `result` rejects with the
 *  worker's error (rebuilt as the same class name and fields), or when `signal` aborts or
 *  `stop()` is called. */
function startJob(job, { Worker, module }, onProgress, signal) {
  const url = new URL('./parallel-worker.js', import.meta.url);
  let worker, on, terminate;
  if (isNode) {
    worker = new Worker(url);
    on = (fn) => {
      worker.on('message', fn);
      worker.on('error', (err) => fn({ error: { name: err.name, message: err.message } }));
      worker.on('exit', (code) => code && fn({ error: { name: 'Error', message: `a statistics worker stopped (exit status ${code})` } }));
    };
    terminate = () => worker.terminate();
  } else {
    worker = new Worker(url, { type: 'module' });
    on = (fn) => {
      worker.onmessage = ({ data }) => fn(data);
      worker.onerror = (e) => fn({ error: { name: 'Error', message: e.message } });
    };
    terminate = () => worker.terminate();
  }
  let stop;
  const result = new Promise((resolve, reject) => {
    const abort = () => {
      terminate();
      reject(signal?.reason ?? new DOMException('The operation was cancelled', 'AbortError'));
    };
    stop = abort;
    signal?.addEventListener('abort', abort, { once: true });
    on((msg) => {
      if (msg.progress) return onProgress?.(msg.progress);
      signal?.removeEventListener('abort', abort);
      terminate();
      if (msg.error) reject(Object.assign(new Error(msg.error.message), msg.error));
      else resolve(msg.result);
    });
    worker.postMessage({ ...job, module });
  });
  result.catch(() => {});   // handled where it is awaited; a failure while this thread works is not "unhandled"
  return { result, stop };
}

/** What starting workers needs, awaited once: the module compiled by this thread. */
async function workerKit() {
  const Worker = isNode ? (await import('node:worker_threads')).Worker : globalThis.Worker;
  return { Worker, module: await compiledModule() };
}

/** Statistics of every item of the open `ck` (opened from `source` without statistics),
 *  computed n ways (this thread and n - 1 workers) and attached to ck's report. */
export async function statsInParallel(ck, source, n, { onProgress, signal } = {}) {
  const { abi } = await loadBinding();
  const cols = ck.columns();
  const count = itemCount(ck);
  const state = ck.kind === 'state';
  const rows = state ? cols.tensorRows : cols.entryRows;
  const weights = Array.from({ length: count }, (_, k) => Number(rows.get(k, 'count')) + 1);
  const ranges = split(weights, n);
  if (!ranges.length) return;   // no items: no statistics to compute
  const done = new Array(ranges.length).fill(0);
  // the bytes scanned: each item's payloads (m and v per entry, the values per tensor; weights
  // are counts + 1, for balancing only)
  const { width } = abi.dtype(state ? abi.family(ck.summary.family).elementDtype : ck.summary.dtype);
  const total = (weights.reduce((a, b) => a + b, 0) - count) * width * (state ? 1 : 2);
  const report = (w) => onProgress && (({ done: d }) => {
    done[w] = d;
    onProgress({ done: done.reduce((a, b) => a + b, 0), total });
  });
  const kit = await workerKit();
  const jobs = ranges.slice(1).map(([from, to], k) => startJob({ type: 'stats', source, from, to }, kit, report(k + 1), signal));
  await alongside(jobs, () => {
    const [from, to] = ranges[0];
    const progress = report(0);
    const mine = [];
    let base = 0;
    for (let k = from; k < to; k++) {
      let last = 0;
      mine.push(itemStatsPacked(ck, k, { signal, onProgress: progress && (({ done: d }) => progress({ done: base + (last = d) })) }));
      base += last;
    }
    attachPacked(ck, from, mine);
  });
  const results = await Promise.all(jobs.map((job) => job.result));
  results.forEach((list, w) => attachPacked(ck, ranges[w + 1][0], list));
}

/** Run this thread's share while the workers run theirs; if it fails, stop them. */
async function alongside(jobs, share) {
  try {
    return await share();
  } catch (err) {
    jobs.forEach((job) => job.stop());
    await Promise.allSettled(jobs.map((job) => job.result));
    throw err;
  }
}

/** The health pass split by slot ranges n ways: `share(first, count, onProgress)` runs this
 *  thread's range (the first), n - 1 workers the others; the JSON is the one-thread JSON. */
export async function healthInParallel(opt, state, slots, n, share, { lr, ratioBand, onProgress, signal } = {}) {
  const ranges = split(slots, n);
  // no slots (or a file broken before its first): this thread's empty share answers, with the
  // file's own diagnostic
  if (!ranges.length) ranges.push([0, 0]);
  const done = new Array(ranges.length).fill(0), totals = new Array(ranges.length).fill(0);
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  const report = (w) => onProgress && (({ done: d, total }) => {
    done[w] = d;
    totals[w] = total ?? 0;
    onProgress({ done: sum(done), total: sum(totals) });
  });
  const kit = await workerKit();
  const jobs = ranges.slice(1).map(([from, to], k) => startJob({ type: 'health', opt, state, lr, ratioBand, first: from, count: to - from }, kit, report(k + 1), signal));
  const mine = await alongside(jobs, () => share(ranges[0][0], ranges[0][1] - ranges[0][0], report(0)));
  const parts = [mine, ...(await Promise.all(jobs.map((job) => job.result)))];
  return { ...mine, first: 0, slots: parts.flatMap((p) => p.slots), flags: parts.flatMap((p) => p.flags) };
}
