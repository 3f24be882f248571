// A pass that `ckptscope view` runs on this machine for its page (web/server.js, /passes/): the
// statistics of every item of a served file, or the health pass of a served optimizer file (and
// its model-state file), by the package's API with the workers that pay: the CLI's rate, where a
// page reads a file at what the browser allows (a dropped File at most ~190 MB/s in Chromium).
// It has a thread of its own so that the server keeps answering meanwhile (the page's range
// requests, its Cancel); the server ends it when the page goes away.
//
// The answer is a stream of frames, made here and written by the server as they come:
//   frame   = length (u32, of the payload) | kind (u8) | payload
//   kind j  = a JSON message: {progress: {done, total}}, then {done: {workers}, result?} or
//             {error: {name, message, ...every field of the error}} or {unsplit: true} (the
//             file is not one to hand over: invalid, or no items; the page's own pass says why)
//   kind p  = the packed statistics of items from … from + n − 1 (the core's ckpt_packed_stats
//             words, which the page's worker attaches to its own open handle): u64 from, u64 n,
//             n u64 word counts, then the words
// all little-endian (the page is on this machine: the server listens on 127.0.0.1 only). While
// the page reads slower than the pass computes, the server says so (`paused`) and the pass
// waits: the answer is never held in memory whole.
import { parentPort, workerData } from 'node:worker_threads';
import fs from 'node:fs';
import { open, itemCount, scanPacked, health, workerCount } from 'ckptscope';   // this package, as its users import it

const J = 0x6a, P = 0x70;
const ITEMS_PER_FRAME = 1024;   // a frame of a few hundred KiB: progress on the page, no giant frame
const paused = new Int32Array(workerData.paused);   // 1 while the page is behind

function send(kind, payload, last = null) {
  while (Atomics.load(paused, 0) === 1) Atomics.wait(paused, 0, 1);
  const frame = new Uint8Array(5 + payload.byteLength);
  new DataView(frame.buffer).setUint32(0, payload.byteLength, true);
  frame[4] = kind;
  frame.set(new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength), 5);
  parentPort.postMessage({ frame, last }, [frame.buffer]);
}

const json = (msg, last = null) => send(J, Buffer.from(JSON.stringify(msg, (_, v) => (typeof v === 'bigint' ? String(v) : v))), last);

/** Items from, from + 1, … (their packed words) in frames of at most ITEMS_PER_FRAME items. */
function packed(from, list) {
  for (let at = 0; at < list.length; at += ITEMS_PER_FRAME) {
    const part = list.slice(at, at + ITEMS_PER_FRAME);
    const words = new BigUint64Array(2 + part.length + part.reduce((n, w) => n + w.length, 0));
    words[0] = BigInt(from + at);
    words[1] = BigInt(part.length);
    let k = 2 + part.length;
    part.forEach((w, j) => {
      words[2 + j] = BigInt(w.length);
      words.set(w, k);
      k += w.length;
    });
    send(P, words);
  }
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
