// The read feed's worker (js/feed.js): reads a range of a URL (a streamed `fetch` of a Range
// request) into a SharedArrayBuffer as its bytes arrive, and tells the thread that waits for
// them through the range's control words. Ranges are requested as they are asked for, several
// at once when asked so (the health pass's streams).
import { CONTROL, DONE, FAILED } from './feed.js';

const { RECEIVED, BODY, WANT, STATE, SEQ, STATUS, TEXT_LEN, WORDS, TEXT_BYTES } = CONTROL;

/** Tell the waiter (if any) that the range changed: woken when what it waits for is there or
 *  the read has ended (`always`), not per piece that arrives. */
function changed(ctl, always = true) {
  Atomics.add(ctl, SEQ, 1);
  if (always || Atomics.load(ctl, RECEIVED) >= Atomics.load(ctl, WANT)) Atomics.notify(ctl, SEQ);
}

function fail(ctl, text, status = 0) {
  const bytes = new TextEncoder().encode(text).subarray(0, TEXT_BYTES);
  new Uint8Array(ctl.buffer, WORDS * 4, bytes.length).set(bytes);
  Atomics.store(ctl, TEXT_LEN, bytes.length);
  Atomics.store(ctl, STATUS, status);
  Atomics.store(ctl, STATE, FAILED);
  changed(ctl);
}

/** The body of [start, start + length) of `what`, a stream of Uint8Arrays; `skip` bytes of it
 *  come before the range (a server that ignored the Range header sent the file from 0). */
async function open(what, start, length) {
  let res;
  try {
    res = await fetch(what.url, { headers: { Range: `bytes=${start}-${start + length - 1}` }, cache: 'no-store' });
  } catch (err) {
    throw Object.assign(new Error(`${what.url}: the request failed (${err.message}): is the server still running?`), { status: 0 });
  }
  if (res.status !== 206 && res.status !== 200) {
    res.body?.cancel();
    throw Object.assign(new Error(`${what.url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`), { status: res.status });
  }
  return { body: res.body, skip: res.status === 200 ? start : 0 };
}

async function read({ what, start, length, data, ctl: ctlBuffer }) {
  const ctl = new Int32Array(ctlBuffer);
  const dest = new Uint8Array(data, 0, length);
  let at = 0;
  try {
    let { body, skip } = await open(what, start, dest.length);
    const reader = body.getReader();
    while (at < dest.length) {
      const { done, value } = await reader.read();
      if (done) break;
      Atomics.add(ctl, BODY, value.length);
      let chunk = value;
      if (skip) {
        const n = Math.min(skip, chunk.length);
        skip -= n;
        chunk = chunk.subarray(n);
      }
      const n = Math.min(chunk.length, dest.length - at);
      dest.set(chunk.subarray(0, n), at);
      at += n;
      Atomics.store(ctl, RECEIVED, at);
      changed(ctl, false);
    }
    if (at === dest.length) reader.cancel().catch(() => {});   // a 200's rest is not wanted
    Atomics.store(ctl, STATE, DONE);
    changed(ctl);
  } catch (err) {
    // open()'s failures say what the server answered; a body cut short says so as a request does
    fail(ctl, err.status !== undefined ? err.message : `${what.url}: the request failed (${err.message}): is the server still running?`, err.status ?? 0);
  }
}

self.onmessage = ({ data: port }) => {
  port.onmessage = ({ data }) => read(data);
  self.postMessage('ready');
};
