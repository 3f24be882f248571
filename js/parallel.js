// Statistics and the health pass split n ways: the calling thread and n - 1 workers (Node
// worker_threads, browser workers), each with its own WebAssembly instance reading the same
// file. The workers are started before the calling thread parses the file (their start, 125-140 ms
// of thread, module and parse, overlaps it); once the file is parsed the items (entries or
// tensors; slots for health) are cut into contiguous chunks balanced by bytes, and every thread
// claims the next chunk from a shared counter (SharedArrayBuffer + Atomics) until none is left:
// the calling thread starts first and simply does more, a slow worker less, with no guess.
// Chunks are claimed largest first, so the last ones to finish are small. The statistics come
// back packed per item and the core attaches them; the health JSON of each chunk concatenates
// in slot order: either way the result is exactly the one-thread result, whatever n.

import { isNode, compiledModule } from './wasm.js';
import { open, itemCount, itemBytes, itemStatsPacked, attachPacked } from './checkpoint.js';
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

// What 'auto' starts, per pass: one worker per this many bytes of the files read, at most the cores
// (and 8). A worker costs its start: 125-140 ms of wall time on an idle machine before it takes
// its first chunk (a thread, Node's bootstrap, this package's modules, the module instance, the
// file parsed again; timed inside a 4 GiB pass), its first chunks run before V8 has
// optimised the kernel, and it takes about 0.1-0.3 s of CPU, which the calling thread loses where
// cores are shared. With the chunks claimed from a shared counter, n threads take about
// (S + (n - 1) start) / n for a pass of S seconds alone. `node bench/workers.mjs` measures 2
// workers against 1 (docs/performance.md "Workers"): a second one gains nothing on 256 MiB of
// statistics and pays from a few GiB; health, with more work per byte, pays sooner. So statistics
// take a second worker from 2 GiB, health from 512 MiB of the two files.
const MiB = 2 ** 20;
const BYTES_PER_WORKER = { stats: 1024 * MiB, health: 256 * MiB };

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
        total += typeof source === 'number' ? fs.fstatSync(source).size : fs.statSync(source).size;
      } catch {
        return null;   // the pass itself reports it
      }
    } else return null;
  }
  return total;
}

/** How many workers `workers` means for `pass` ('stats' or 'health'): a number, or 'auto': what
 *  pays for reading `sources` (one per BYTES_PER_WORKER[pass], at most the machine's cores and
 *  8; the cores when the sizes are not known). */
export async function workerCount(workers, sources, pass = 'stats') {
  if (workers === 'auto') {
    const cores = Math.min(8, isNode ? (await import('node:os')).availableParallelism() : globalThis.navigator?.hardwareConcurrency ?? 1);
    const bytes = sources.length ? await bytesOf(sources) : null;
    return bytes === null ? cores : Math.max(1, Math.min(cores, Math.floor(bytes / BYTES_PER_WORKER[pass])));
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

// Chunks per thread: enough that the last chunks even the threads out (the imbalance is at most
// one chunk), few enough that a chunk's fixed cost (a call into the core; for health, the pairing
// verdict of the two files) stays small.
const CHUNKS_PER_THREAD = 8;

/** Where each thread takes its next chunk: a counter shared by all threads when the platform
 *  shares memory (Node; a cross-origin-isolated page), else none (one fixed chunk per thread). */
const shares = () => typeof SharedArrayBuffer === 'function' && (isNode || globalThis.crossOriginIsolated !== false);

/**
 * The work of n threads over items of these weights: `chunks`, contiguous [from, to) ranges in
 * the order they are claimed (largest first; ties in file order). With a shared counter there
 * are up to `perThread` chunks per thread; without, exactly one per thread, thread w's is
 * chunk w (the calling thread's the first).
 */
export function plan(weights, n, { perThread = CHUNKS_PER_THREAD, shared = shares() } = {}) {
  const chunks = split(weights, shared ? n * perThread : n);
  if (!shared) return { chunks, shared };
  const weight = ([from, to]) => weights.slice(from, to).reduce((a, b) => a + b, 0);
  const sized = chunks.map((c, k) => ({ c, w: weight(c), k }));
  sized.sort((a, b) => b.w - a.w || a.k - b.k);
  return { chunks: sized.map((x) => x.c), shared };
}

/** The chunks thread `w` takes: the next unclaimed one of the shared counter, until none is
 *  left; without a counter, chunk w alone. `stopAll()` makes every thread stop at its next
 *  claim (after a failure). */
export function claims(counter, count, w) {
  let given = false;
  return {
    next: () => {
      if (!counter) return given || w >= count ? -1 : ((given = true), w);
      const k = Atomics.add(counter, 0, 1);
      return k < count ? k : -1;
    },
    stopAll: () => counter && Atomics.store(counter, 0, count),
  };
}

// ---- the workers ------------------------------------------------------------------------------

/**
 * Start `count` workers now: each instantiates the module this thread compiled (of `variant`,
 * default the default build) and opens
 * `files` ({source} for statistics, {opt, state} for health) on its own, then waits for `run`.
 * Their results and progress come back through the returned crew; `stop()` ends them all (done
 * whatever happens: a crew whose work never comes must not keep the process alive).
 */
export async function startCrew(count, files, variant) {
  const Worker = isNode ? (await import('node:worker_threads')).Worker : globalThis.Worker;
  const counter = shares() ? new Int32Array(new SharedArrayBuffer(4)) : null;
  // the threads start while the module compiles (here, once, if not yet)
  const members = Array.from({ length: count }, () => startMember(Worker));
  let module = null;
  try {
    if (count > 0) module = await compiledModule(variant);
  } catch (err) {
    members.forEach((m) => m.stop());
    throw err;
  }
  // thread w + 1 (the calling thread is 0) takes chunk w + 1 when there is no counter
  members.forEach((m, w) => m.post({ type: 'open', module, variant, files, thread: w + 1, counter: counter?.buffer ?? null }));
  return {
    counter,
    size: count,
    /** Hand every worker the job; resolves with their results in worker order. */
    run(job, onProgress, signal) {
      members.forEach((m) => m.run(job, onProgress, signal));
      return members.map((m) => m.result);
    },
    stop: () => members.forEach((m) => m.stop()),
  };
}

function startMember(Worker) {
  const url = new URL('./parallel-worker.js', import.meta.url);
  let worker, on;
  if (isNode) {
    // None of the parent's options: a worker refuses V8's (`node --max-old-space-size=8192
    // train.mjs` using the API, `--stack-size`) and --input-type (a script given with --eval),
    // and this one needs none: it loads this package's own modules
    worker = new Worker(url, { execArgv: [] });
    on = (fn) => {
      worker.on('message', fn);
      worker.on('error', (err) => fn({ error: { name: err.name, message: err.message } }));
      worker.on('exit', (code) => code && fn({ error: { name: 'Error', message: `a statistics worker stopped (exit status ${code})` } }));
    };
  } else {
    worker = new Worker(url, { type: 'module' });
    on = (fn) => {
      worker.onmessage = ({ data }) => fn(data);
      worker.onerror = (e) => fn({ error: { name: 'Error', message: e.message } });
    };
  }
  let settle = null, progress = null, stopped = false;
  const result = new Promise((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => {});   // handled where it is awaited; a failure while this thread works is not "unhandled"
  const stop = (reason) => {
    if (stopped) return;
    stopped = true;
    worker.terminate();
    settle.reject(reason ?? new DOMException('The operation was cancelled', 'AbortError'));
  };
  on((msg) => {
    if (msg.progress) return progress?.(msg.progress);
    if (msg.error) stop(Object.assign(new Error(msg.error.message), msg.error));
    else {
      settle.resolve(msg.result);
      stop();
    }
  });
  return {
    result,
    post: (msg) => worker.postMessage(msg),
    stop: () => stop(),
    run(job, onProgress, signal) {
      progress = onProgress;
      if (signal?.aborted) return stop(signal.reason);
      signal?.addEventListener('abort', () => stop(signal.reason), { once: true });
      worker.postMessage(job);
    },
  };
}

/** Progress of chunks run by several threads, as one {done, total}: each chunk reports its own
 *  {done, total}; a chunk not started yet counts its weight at the rate of the chunks that have
 *  reported (the total is exact once every chunk has started: for statistics it is known from
 *  the start). */
function chunkProgress(weights, onProgress, knownTotal = null) {
  if (!onProgress) return null;
  const done = new Array(weights.length).fill(0), totals = new Array(weights.length).fill(null);
  return (k, { done: d, total }) => {
    done[k] = d;
    if (total !== undefined && total !== null) totals[k] = total;
    let sum = 0, known = 0, knownWeight = 0, unknownWeight = 0;
    for (let c = 0; c < weights.length; c++) {
      sum += done[c];
      if (totals[c] === null) unknownWeight += weights[c];
      else (known += totals[c]), (knownWeight += weights[c]);
    }
    const all = knownTotal ?? known + (knownWeight ? Math.round((unknownWeight * known) / knownWeight) : 0);
    onProgress({ done: sum, total: all });
  };
}

/** This thread's part, claiming chunks alongside the workers; if it fails, the others stop at
 *  their next claim and the workers end. */
async function alongside(crew, claim, work) {
  try {
    return await work();
  } catch (err) {
    claim.stopAll();
    crew.stop();
    throw err;
  }
}

/**
 * Open `source` and compute the statistics of every item n ways: n - 1 workers start (and open
 * the file) while this thread opens it with `openFile` (default open(); the CLI's names the file
 * in I/O errors). Resolves with the open Checkpoint, the statistics attached (the caller closes
 * it), or null when there is nothing to split (no items, or broken before its end: closed, the
 * workers stopped). `onPacked` as for statsInParallel.
 */
export async function openSplit(source, n, { onProgress, signal, variant, openFile = open, onPacked } = {}) {
  const crew = await startCrew(n - 1, { source }, variant);
  try {
    const ck = await openFile(source, { signal, variant });
    if (!ck.ok || itemCount(ck) === 0) {
      ck.close();
      return null;
    }
    try {
      await statsInParallel(ck, crew, { onProgress, signal, onPacked });
      return ck;
    } catch (err) {
      ck.close();
      throw err;
    }
  } finally {
    crew.stop();
  }
}

/**
 * Open `source` with the statistics of every item computed n ways (openSplit). Resolves with the
 * open Checkpoint, its report the one a one-thread scan gives (the caller closes it). A file with
 * no items, or broken before its end, is scanned here alone: nothing to split, and the report is
 * then exactly the one-thread one.
 */
export async function openWithStats(source, n, { onProgress, signal, variant, openFile = open } = {}) {
  return (await openSplit(source, n, { onProgress, signal, variant, openFile })) ??
    openFile(source, { stats: true, onProgress, signal, variant });
}

/** Statistics of every item of the open `ck` (opened without statistics), computed by this
 *  thread and the `crew` started on the same file, and attached to ck's report. `taken[w]`
 *  says how many chunks thread w (this one is 0) computed. `onPacked(from, list)` is told each
 *  run of items' packed words as they are attached (`ckptscope view` sends them to its page). */
export async function statsInParallel(ck, crew, { onProgress, signal, taken = [], onPacked } = {}) {
  const attach = (from, list) => {
    attachPacked(ck, from, list);
    onPacked?.(from, list);
  };
  // the bytes each item's statistics read (its payloads), as the core counts them
  const sizes = Array.from({ length: itemCount(ck) }, (_, k) => itemBytes(ck, k));
  // an item of 0 bytes still costs a call: weigh it 1
  const { chunks } = plan(sizes.map((s) => s + 1), crew.size + 1, { shared: !!crew.counter });
  if (!chunks.length) return crew.stop();   // no items: no statistics to compute
  const bytes = ([from, to]) => sizes.slice(from, to).reduce((a, b) => a + b, 0);
  const weights = chunks.map(bytes);
  const report = chunkProgress(weights, onProgress, weights.reduce((a, b) => a + b, 0));
  const results = crew.run({ type: 'stats', chunks }, report && (({ chunk, done }) => report(chunk, { done })), signal);
  const claim = claims(crew.counter, chunks.length, 0);
  taken[0] = 0;
  await alongside(crew, claim, () => {
    for (let k; (k = claim.next()) >= 0; taken[0]++) {
      const [from, to] = chunks[k];
      const mine = [];
      let base = 0;
      for (let i = from; i < to; i++) {
        let last = 0;
        mine.push(itemStatsPacked(ck, i, { signal, onProgress: report && (({ done: d }) => report(k, { done: base + (last = d) })) }));
        base += last;
      }
      attach(from, mine);
    }
  });
  (await Promise.all(results)).forEach(({ taken: t, parts }, w) => {
    taken[w + 1] = t;
    for (const [from, words] of parts) attach(from, words);
  });
}

/** The health pass over the slots of the open `opt` (and its state file), by this thread and
 *  the `crew` started on the same files: `share(first, count, onProgress)` runs the pass here
 *  over a range of slots, the workers run it with `args` (the pass's options: lr, …); the JSON is
 *  the one-thread JSON. `taken` as for statsInParallel. */
export async function healthInParallel(opt, crew, share, args, { onProgress, signal, taken = [] } = {}) {
  const cols = opt.columns();
  const weights = Array.from(cols.sizes, (x) => Number(x) + 1);
  // Each chunk's call pairs the files again, and a tie's pairing reads both tensors' values:
  // with ties, one chunk per thread.
  const { NONE } = await loadBinding();
  const tied = cols.reps?.some((r, i) => r !== BigInt(i) && r !== NONE) ?? false;
  const { chunks } = plan(weights, crew.size + 1, { shared: !!crew.counter, perThread: tied ? 1 : CHUNKS_PER_THREAD });
  // no slots (or a file broken before its first): this thread's empty share answers, with the
  // file's own diagnostic
  if (!chunks.length) chunks.push([0, 0]);
  const report = chunkProgress(chunks.map(([from, to]) => weights.slice(from, to).reduce((a, b) => a + b, 0)), onProgress);
  const results = crew.run({ type: 'health', chunks, args }, report && (({ chunk, ...p }) => report(chunk, p)), signal);
  const claim = claims(crew.counter, chunks.length, 0);
  const mine = await alongside(crew, claim, async () => {
    const parts = [];
    for (let k; (k = claim.next()) >= 0; ) {
      const [from, to] = chunks[k];
      parts.push([from, await share(from, to - from, report && ((p) => report(k, p)))]);
    }
    return parts;
  });
  const theirs = await Promise.all(results);
  [mine.length, ...theirs.map((r) => r.taken)].forEach((t, w) => (taken[w] = t));
  const parts = [mine, ...theirs.map((r) => r.parts)].flat().sort((a, b) => a[0] - b[0]).map(([, part]) => part);
  return { ...parts[0], first: 0, slots: parts.flatMap((p) => p.slots), flags: parts.flatMap((p) => p.flags) };
}
