// The read feed: asynchronous range requests for the core's synchronous pulls, in a browser
// worker. The core reads synchronously (it asks a source for [offset, length) and blocks), so a
// URL was read with synchronous XMLHttpRequest: measured in Chromium on a 1 GiB file served by
// js/server/server.js, synchronous 16 MiB range requests read ~28 MB/s whatever the server's chunk
// size (curl takes the same ranges at ~215 MB/s), where a streamed `fetch` of the same ranges
// reads ~130 MB/s (16 MiB) to ~180 MB/s (64 MiB) (about a third of that under a DevTools
// client, which copies what crosses the network). The feed makes those requests in a worker of
// its own (js/feed-worker.js): the range is asked for by message, its bytes land in a
// SharedArrayBuffer as they arrive, and the reading thread blocks (Atomics.wait) only until the
// bytes it needs now are there; the core computes on the first MiB of a 16 MiB range while the
// rest arrives. Which ranges are read stays the caller's (js/ranges.js decides, the core asks):
// the feed only serves them, so every byte is read once and counted when it arrives.
//
// It needs shared memory (a cross-origin-isolated page: `Cross-Origin-Opener-Policy:
// same-origin` and `Cross-Origin-Embedder-Policy: require-corp`, which js/server/server.js sends) and a
// worker thread to block; elsewhere Feed.start() resolves null and sources read synchronously.
// (A File is read with FileReaderSync still: through the feed, blob.slice().stream() and
// arrayBuffer() alike, the health pass of a 1 GiB pair took 23-33 s against 16-21 s.)

// Control words of a range, Int32 in a SharedArrayBuffer of their own.
const RECEIVED = 0;   // bytes written so far
const STATE = 1;      // RUNNING, DONE, FAILED
const SEQ = 2;        // bumped after every change: what a waiter sleeps on
const STATUS = 3;     // the HTTP status of a failed request (0: none)
const TEXT_LEN = 4;   // the failure's text: its UTF-8 length, then its bytes after the words
const BODY = 5;       // bytes that arrived (more than RECEIVED only from a server that ignored the range)
const WANT = 6;       // what the waiter waits for: it is woken once that much has arrived, not per piece
export const CONTROL = { RECEIVED, STATE, SEQ, STATUS, TEXT_LEN, BODY, WANT, WORDS: 8, TEXT_BYTES: 2048 };
export const RUNNING = 0, DONE = 1, FAILED = 2;

/** A range being read: `bytes` (its full length, filled as it arrives), wait(upTo). Its memory
 *  comes from the feed's pool and goes back once the range is released and has ended. */
class FeedRange {
  constructor(feed, what, start, length) {
    this.feed = feed;
    this.start = start;
    this.ctl = feed.take(CONTROL.WORDS * 4 + CONTROL.TEXT_BYTES, true);
    this.data = feed.take(length);
    this.bytes = new Uint8Array(this.data, 0, length);
    this.released = false;
    feed.port.postMessage({ what, start, length, data: this.data, ctl: this.ctl.buffer });
  }

  /** Back to the pool (once ended: the feed's worker writes into it until then). */
  giveBack() {
    this.feed.give(this.data);
    this.feed.give(this.ctl.buffer);
    this.data = this.bytes = this.ctl = null;
  }

  /** Block until bytes [0, upTo) have arrived; throw what the read failed with. */
  wait(upTo) {
    if (Atomics.load(this.ctl, RECEIVED) >= upTo) return;
    Atomics.store(this.ctl, WANT, upTo);
    for (;;) {
      const seq = Atomics.load(this.ctl, SEQ);
      if (Atomics.load(this.ctl, RECEIVED) >= upTo) return;
      const state = Atomics.load(this.ctl, STATE);
      if (state === FAILED) throw this.failure();
      if (state === DONE) throw new RangeError(`the read of ${this.bytes.length} bytes at ${this.start} ended after ${this.received} bytes`);
      Atomics.wait(this.ctl, SEQ, seq);
    }
  }

  /** Block until the read has ended (done or failed). */
  settle() {
    for (;;) {
      const seq = Atomics.load(this.ctl, SEQ);
      if (Atomics.load(this.ctl, STATE) !== RUNNING) return;
      Atomics.wait(this.ctl, SEQ, seq);
    }
  }

  get received() {
    return Atomics.load(this.ctl, RECEIVED);
  }

  /** The bytes that arrived for this read. */
  get transferred() {
    return Atomics.load(this.ctl, BODY);
  }

  get ended() {
    return Atomics.load(this.ctl, STATE) !== RUNNING;
  }

  failure() {
    const n = Atomics.load(this.ctl, TEXT_LEN);
    const text = new TextDecoder().decode(new Uint8Array(this.ctl.buffer, CONTROL.WORDS * 4, n).slice());
    const status = Atomics.load(this.ctl, STATUS);
    return Object.assign(new Error(text), { status: status || null });
  }
}

let starting = null;
const POOL_MIN = 64 * 1024;
const POOL_BYTES = 128 << 20;   // js/ranges.js keeps 64 MiB; the rest is ranges between uses

export class Feed {
  /** The feed of this thread, started once (its worker answers before any read blocks: a worker
   *  started by a thread that then blocks would never start); null where it cannot run. */
  static start() {
    const usable = typeof SharedArrayBuffer === 'function' && globalThis.crossOriginIsolated === true
      && typeof Worker === 'function' && typeof WorkerGlobalScope !== 'undefined';
    if (!usable) return Promise.resolve(null);
    starting ??= new Promise((resolve) => {
      let worker;
      try {
        worker = new Worker(new URL('./feed-worker.js', import.meta.url), { type: 'module' });
      } catch {
        resolve(null);   // a CSP without worker-src for this script: read synchronously
        return;
      }
      // Requests go by a MessagePort: a port's messages leave at once, where a worker's own
      // postMessage waits for its sender's event loop, which a blocked reader never returns to.
      const { port1, port2 } = new MessageChannel();
      worker.onmessage = ({ data }) => resolve(data === 'ready' ? new Feed(worker, port1) : null);
      worker.onerror = () => resolve(null);
      worker.postMessage(port2, [port2]);
    });
    return starting;
  }

  constructor(worker, port) {
    this.worker = worker;   // kept: it lives as long as this thread
    this.port = port;
    worker.onmessage = null;
    // Shared memory of ranges that ended, by capacity, for the next ranges: allocating a fresh
    // 16 MiB SharedArrayBuffer per range took a 1 GiB read in 16 MiB ranges from ~115 to ~80 MB/s
    // in Chromium (measured with a File; the allocation is the cost, whatever fills it).
    this.pool = new Map();
    this.pooled = 0;
  }

  /** A SharedArrayBuffer of at least `length` bytes (a power of two from 64 KiB; `exact` for
   *  control words), zeroed when `exact`; an Int32Array over it when `exact`. */
  take(length, exact = false) {
    const capacity = exact ? length : Math.max(POOL_MIN, 2 ** Math.ceil(Math.log2(Math.max(1, length))));
    const free = this.pool.get(capacity);
    let buffer = free?.pop();
    if (buffer) this.pooled -= capacity;
    else buffer = new SharedArrayBuffer(capacity);
    return exact ? new Int32Array(buffer).fill(0) : buffer;
  }

  /** Keep `buffer` for a later take (at most POOL_BYTES in all). */
  give(buffer) {
    if (this.pooled + buffer.byteLength > POOL_BYTES) return;
    if (!this.pool.has(buffer.byteLength)) this.pool.set(buffer.byteLength, []);
    this.pool.get(buffer.byteLength).push(buffer);
    this.pooled += buffer.byteLength;
  }

  /** Start reading [start, start + length) of `what` ({url}); returns the range. */
  read(what, start, length) {
    return new FeedRange(this, what, start, length);
  }
}

/**
 * The reads one source makes through the feed, counted: `fetch(start, length)` for js/ranges.js
 * ({bytes, wait}; wait throws toError(the failure)); `bytes` and `calls` count what has arrived, once every read has ended (a
 * range the caller moved past may still be arriving: settle() waits for it, so the count is
 * what was transferred, not what was asked).
 */
export class FeedReads {
  constructor(feed, what, toError = (err) => err) {
    this.feed = feed;
    this.what = what;
    this.toError = toError;   // the source's own error for a failed read
    this.open = [];   // ranges not yet counted
    this.bytes = 0;
    this.calls = 0;
  }

  fetch(start, length) {
    this.count(false);
    const range = this.feed.read(this.what, start, length);
    this.calls++;
    this.open.push(range);
    return {
      bytes: range.bytes,
      // js/ranges.js no longer keeps it: its memory is reused once the read has ended
      release: () => {
        range.released = true;
        if (range.ended && !this.open.includes(range)) range.giveBack();
      },
      wait: (upTo) => {
        try {
          range.wait(upTo);
        } catch (err) {
          throw this.toError(err);
        }
      },
    };
  }

  /** Add the ranges that have ended to the count (waiting for every one when `all`). */
  count(all = true) {
    this.open = this.open.filter((range) => {
      if (all) range.settle();
      if (!range.ended) return true;
      this.bytes += range.transferred;
      if (range.released) range.giveBack();
      return false;
    });
  }
}
