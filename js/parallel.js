// Statistics and the health pass split across workers (Node worker_threads, browser workers),
// each with its own WebAssembly instance reading the same file: a worker computes the
// statistics of a contiguous range of items (entries or tensors, balanced by bytes) and hands
// them back packed; the core attaches them, so the report is exactly the one-worker report.
// The health pass splits by slot ranges and its JSON concatenates.

import { isNode, compiledModule } from './wasm.js';

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;

/** Sources every worker can open on its own: a file path or file: URL (Node), a Blob/File. */
export function canSplit(source) {
  if (isBlob(source)) return true;
  if (!isNode) return false;
  return typeof source === 'string' || (source instanceof URL && source.protocol === 'file:');
}

/** How many workers `workers` means: a number, or 'auto' (the machine's cores, at most 8). */
export async function workerCount(workers) {
  if (workers === 'auto') {
    if (isNode) return Math.min(8, (await import('node:os')).availableParallelism());
    return Math.min(8, globalThis.navigator?.hardwareConcurrency ?? 1);
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

/** Run one job in a fresh worker; progress messages go to onProgress. Rejects with the
 *  worker's error (rebuilt as the same class name and fields) or when `signal` aborts. */
async function runJob(job, onProgress, signal) {
  const url = new URL('./parallel-worker.js', import.meta.url);
  let worker, on, terminate;
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
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
  return new Promise((resolve, reject) => {
    const abort = () => {
      terminate();
      reject(signal.reason ?? new DOMException('The operation was cancelled', 'AbortError'));
    };
    signal?.addEventListener('abort', abort, { once: true });
    on((msg) => {
      if (msg.progress) return onProgress?.(msg.progress);
      signal?.removeEventListener('abort', abort);
      terminate();
      if (msg.error) reject(Object.assign(new Error(msg.error.message), msg.error));
      else resolve(msg.result);
    });
    compiledModule().then((module) => worker.postMessage({ ...job, module }), (err) => reject(err));
  });
}

/** Statistics of every item of the open `ck` (opened from `source` without statistics),
 *  computed by `n` workers and attached to ck's report. */
export async function statsInParallel(ck, source, n, { onProgress, signal } = {}) {
  const cols = ck.columns();
  const count = ck.itemCount;
  const weights = ck.kind === 'state'
    ? Array.from({ length: count }, (_, k) => Number(cols.tensors[3 * k]) + 1)
    : Array.from({ length: count }, (_, k) => Number(cols.entries[6 * k + 2]) + 1);
  const ranges = split(weights, n);
  const done = new Array(ranges.length).fill(0);
  // the bytes the workers scan: each item's payloads (weights are counts + 1, for balancing only)
  const total = (weights.reduce((a, b) => a + b, 0) - count) * (ck.summary.dtype === 'float64' ? 8 : 4) * (ck.kind === 'state' ? 1 : 2);
  const results = await Promise.all(ranges.map(([from, to], w) => runJob({ type: 'stats', source, from, to },
    onProgress && (({ done: d }) => {
      done[w] = d;
      onProgress({ done: done.reduce((a, b) => a + b, 0), total });
    }), signal)));
  results.forEach((list, w) => list.forEach((words, j) => ck.attachPacked(ranges[w][0] + j, words)));
}

/** The health pass split by slot ranges over `n` workers; the JSON is the one-worker JSON. */
export async function healthInParallel(opt, state, slots, n, { lr, onProgress, signal } = {}) {
  const ranges = split(slots, n);
  const done = new Array(ranges.length).fill(0), totals = new Array(ranges.length).fill(0);
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  const parts = await Promise.all(ranges.map(([from, to], w) => runJob({ type: 'health', opt, state, lr, first: from, count: to - from },
    onProgress && (({ done: d, total }) => {
      done[w] = d;
      totals[w] = total ?? 0;
      onProgress({ done: sum(done), total: sum(totals) });
    }), signal)));
  const [first] = parts;
  return { ...first, first: 0, slots: parts.flatMap((p) => p.slots), flags: parts.flatMap((p) => p.flags) };
}
