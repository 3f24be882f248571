// A pass that `ckptscope view` runs on this machine for its page (web/server.js, /passes/): the
// statistics of every item of a served file, or the health pass of a served optimizer file (and
// its model-state file), by the package's API with the workers that pay: the CLI's rate, where a
// page reads a file at what the browser allows (a dropped File at most ~190 MB/s in Chromium).
// It has a thread of its own so that the server keeps answering meanwhile (the page's range
// requests, its Cancel); the server ends it when the page goes away.
//
// Messages to the server, in order: {progress: {done, total}}…, for statistics
// {packed: {from, words: [base64 of each item's packed words]}}… (the core's ckpt_packed_stats
// words, which the page's worker attaches to its own open handle), then {done: {workers}} or
// {error: {name, message, code, offset}}; {unsplit: true} when the file is not one the page
// should hand over (invalid, or no items: the page's own scan then says what it says).
import { parentPort, workerData } from 'node:worker_threads';
import { open, itemCount } from '../js/checkpoint.js';
import { workerCount, startCrew, statsInParallel } from '../js/parallel.js';
import { health } from '../js/api.js';

const post = (msg) => parentPort.postMessage(msg);

/** Progress at most every 100 ms (the page shows it; a million items must not flood it). */
function throttled() {
  let last = 0;
  return ({ done, total }) => {
    const now = performance.now();
    if (now - last < 100) return;
    last = now;
    post({ progress: { done, total } });
  };
}

async function stats({ fd }) {
  const workers = await workerCount('auto', [fd]);
  const crew = await startCrew(workers - 1, { source: fd });
  try {
    const ck = await open(fd);
    try {
      if (!ck.ok || itemCount(ck) === 0) return post({ unsplit: true });
      const base64 = (w) => Buffer.from(w.buffer, w.byteOffset, w.byteLength).toString('base64');
      await statsInParallel(ck, crew, { onProgress: throttled(), onPacked: (from, list) => post({ packed: { from, words: list.map(base64) } }) });
      post({ done: { workers } });
    } finally {
      ck.close();
    }
  } finally {
    crew.stop();
  }
}

async function healthPass({ fd, stateFd, lr, ratioBand }) {
  const workers = await workerCount('auto', stateFd === null ? [fd] : [fd, stateFd], 'health');
  const result = await health(fd, stateFd, { lr: lr ?? undefined, ratioBand: ratioBand ?? undefined, workers, onProgress: throttled() });
  post({ result, done: { workers } });
}

try {
  await (workerData.kind === 'stats' ? stats(workerData) : healthPass(workerData));
} catch (err) {
  post({ error: { name: err?.name ?? 'Error', message: err?.message ?? String(err), code: err?.code ?? null, offset: err?.offset ?? null } });
}
