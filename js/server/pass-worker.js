// A pass that `ckptscope view` runs on this machine for its page (js/server/server.js, /passes/): the
// statistics of every item of a served file, or the health pass of a served optimizer file (and
// its model-state file), by the package's API with the workers that pay: the CLI's rate, where a
// page reads a file at what the browser allows (a dropped File at most ~190 MB/s in Chromium).
// It has a thread of its own so that the server keeps answering meanwhile (the page's range
// requests, its Cancel); the server ends it when the page goes away.
//
// Its answer is a stream of frames (js/pass-frames.js), made here and written by the server as
// they come. While the page reads slower than the pass computes, the server says so (`paused`)
// and the pass waits: the answer is never held in memory whole.
import { parentPort, workerData } from 'node:worker_threads';
import fs from 'node:fs';
import { open, health, workerCount } from '../index.js';
import { itemCount, scanPacked } from '../plumbing.js';
import { jsonFrame, packedFrame } from '../pass-frames.js';

const ITEMS_PER_FRAME = 1024;   // a frame of a few hundred KiB: progress on the page, no giant frame
const paused = new Int32Array(workerData.paused);   // 1 while the page is behind

/** A frame to the server, once the page has caught up; `last`: how the pass ended with it. */
function send(frame, last = null) {
  while (Atomics.load(paused, 0) === 1) Atomics.wait(paused, 0, 1);
  parentPort.postMessage({ frame, last }, [frame.buffer]);
}

const json = (msg, last = null) => send(jsonFrame(msg), last);

/** Items from, from + 1, … (their packed words) in frames of at most ITEMS_PER_FRAME items. */
function packed(from, list) {
  for (let at = 0; at < list.length; at += ITEMS_PER_FRAME) send(packedFrame(from + at, list.slice(at, at + ITEMS_PER_FRAME)));
}

/** Progress at most every 100 ms (the page shows it; a million items must not flood it). */
function throttled() {
  let last = 0;
  return ({ done, total }) => {
    const now = performance.now();
    if (now - last < 100) return;
    last = now;
    json({ progress: { done, total } });
  };
}

/** The file the page parsed is the one here: the same size (a file rewritten in place since the
 *  page opened it would give statistics of other bytes). */
function same(fd, size, what) {
  const now = fs.fstatSync(fd).size;
  if (size !== null && now !== size) {
    throw Object.assign(new Error(`${what} changed since the page opened it (${size} bytes then, ${now} now): open it again`), { name: 'FileChanged' });
  }
}

async function stats({ fd, size, items }) {
  same(fd, size, 'the file');
  const ck = await open(fd);
  const now = ck.ok ? itemCount(ck) : 0;
  ck.close();
  if (now === 0) return json({ unsplit: true }, 'done');
  if (items !== null && now !== items) {
    throw Object.assign(new Error(`the file changed since the page opened it (${items} items then, ${now} now): open it again`), { name: 'FileChanged' });
  }
  const done = await scanPacked(fd, { workers: 'auto', onProgress: throttled(), onPacked: packed });
  json(done ? { done: { workers: done.workers } } : { unsplit: true }, 'done');
}

async function healthPass({ fd, size, stateFd, stateSize, lr, ratioBand }) {
  same(fd, size, 'the optimizer checkpoint');
  if (stateFd !== null) same(stateFd, stateSize, 'the model-state file');
  const workers = await workerCount('auto', stateFd === null ? [fd] : [fd, stateFd], 'health');
  const result = await health(fd, stateFd, { lr: lr ?? undefined, ratioBand: ratioBand ?? undefined, workers, onProgress: throttled() });
  json({ done: { workers }, result }, 'done');
}

try {
  await (workerData.kind === 'stats' ? stats(workerData) : healthPass(workerData));
} catch (err) {
  // every field of the error (a CheckpointError's code, offset, length, slot, subject, hint)
  json({ error: { ...(err !== null && typeof err === 'object' ? err : {}), name: err?.name ?? 'Error', message: err?.message ?? String(err) } }, 'error');
}
