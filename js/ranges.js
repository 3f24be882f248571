// Reads for sources where each call costs far more than its bytes: a FileReaderSync call in a
// worker, an HTTP range request. The core sizes its own reads: a header walk reads a record's
// header alone after a payload it skips (64 bytes), and grows its reads only while they follow
// each other (src/base/io.c). So a read that jumps is fetched at exactly its size: paging it up would
// fetch payload bytes to skip them (4 KiB per entry: 1.2 MiB over HTTP for a Llama-7B-like
// file, where its headers are 30 KB). A read that follows a range read before (within a record
// header's length of its end) is a pass going through the data: it is fetched a page at least
// and twice the range it follows, up to MAX_READ, and the last ranges read are kept. So small
// slots cost one call per few slots (the viewer's health pass over 10,000 slots: 15 s with plain
// reads, 0.7 s with pages), and a pass over large payloads costs one call per MAX_READ bytes of
// each stream it reads: statistics read one, health three (m, v and the parameters) side by
// side. Chromium reads a File at ~10 ms a call plus its bytes: the health pass's 64 KiB reads
// fetched one by one took 275 s for 1.5 GiB, where 16 MiB calls take a few.
const MIN_READ = 4096;
const MAX_READ = 16 << 20;   // the default; a source may say more
const NEAR = 64;   // a record header (24 bytes for an entry, 32 for a rank-2 tensor) between reads
const KEEP = 16;
const STARTS = 64;   // where the last streams began

export class Ranges {
  /** fetch(start, length) returns the bytes from start (at most length; fewer at the end), or
   *  {bytes, wait(upTo), release()} for bytes that arrive after it returns (js/feed.js: `bytes`
   *  has the range's length, wait blocks until [0, upTo) is there, release says the range is
   *  no longer kept). */
  constructor(fetch, { maxRead = MAX_READ } = {}) {
    this.fetch = fetch;
    // A source may read more at a time (js/http-source.js through the feed: a streamed range
    // request of 64 MiB reads ~1.4x the rate of 16 MiB ones in Chromium).
    this.maxRead = maxRead;
    this.keepBytes = 4 * maxRead;   // health's three streams at their largest read, and a page or so
    this.kept = [];   // {start, bytes, asked (the reader's own request), wait?, release?}, most recently used last
    this.keptBytes = 0;
    // Where reads that jump began: the start of a stream (health reads m and v of a slot side
    // by side, and m's payload ends where v's begins). A pass's growing read stops there, so it
    // never fetches the bytes another stream has read already: each payload byte once.
    this.starts = [];
  }

  /** Copy up to dest.length bytes from offset (the caller has clipped to the size). */
  read(offset, dest) {
    let done = 0;
    while (done < dest.length) {
      const at = offset + done;
      const want = dest.length - done;
      let range = this.take((r) => r.start <= at && at < r.start + r.bytes.length);
      if (!range) {
        // the range this read follows is read through: the new one takes its place (one range
        // per stream kept, so three streams at maxRead fit in keepBytes)
        const before = this.take((r) => at >= r.start + r.bytes.length && at - (r.start + r.bytes.length) <= NEAR);
        // A reader whose own requests grow (the core's read-ahead doubles through a schema) gets
        // what it asks: growing on top would read past the headers into a payload. The start of
        // the data is a page at least: a JSON sniff's 256 bytes and the core's first read (4096,
        // src/base/io.c) then cost one call, the sniff's bytes the open's own.
        const grows = before && dest.length <= before.asked;
        let length = grows ? Math.min(this.maxRead, Math.max(want, MIN_READ, 2 * before.bytes.length)) : at === 0 ? Math.max(want, MIN_READ) : want;
        if (grows) length = Math.min(length, this.nextStart(at) - at);
        if (!before) this.began(at);
        const got = this.fetch(at, Math.max(want, length));
        range = got instanceof Uint8Array ? { start: at, bytes: got, asked: dest.length } : { start: at, ...got, asked: dest.length };
      }
      this.keep(range);
      const from = at - range.start;
      const n = Math.max(0, Math.min(want, range.bytes.length - from));
      if (n === 0) break;   // the end of the data
      if (range.wait) {
        // a range still arriving (js/feed.js): the bytes needed now; a failed one is not kept
        try {
          range.wait(from + n);
        } catch (err) {
          if (this.take((r) => r === range)) range.release();
          throw err;
        }
      }
      dest.set(range.bytes.subarray(from, from + n), done);
      done += n;
    }
    return done;
  }

  /** Note that a stream began at `at` (the last STARTS kept). */
  began(at) {
    if (this.starts.includes(at)) return;
    this.starts.push(at);
    if (this.starts.length > STARTS) this.starts.shift();
  }

  /** The nearest stream start after `at` (Infinity when none). */
  nextStart(at) {
    let next = Infinity;
    for (const s of this.starts) if (s > at && s < next) next = s;
    return next;
  }

  /** Remove and return the first kept range matching `test` (null when none does). */
  take(test) {
    const at = this.kept.findIndex(test);
    if (at < 0) return null;
    const [range] = this.kept.splice(at, 1);
    this.keptBytes -= range.bytes.length;
    return range;
  }

  /** Keep bytes read from start (most recently used): at most KEEP ranges and keepBytes bytes,
   *  the newest always. */
  keep(range) {
    this.kept.push(range);
    this.keptBytes += range.bytes.length;
    while (this.kept.length > 1 && (this.kept.length > KEEP || this.keptBytes > this.keepBytes)) {
      const gone = this.kept.shift();
      this.keptBytes -= gone.bytes.length;
      gone.release?.();   // a feed's range (js/feed.js): its memory is reused
    }
  }

  /** Forget the kept ranges (later reads fetch again). */
  clear() {
    for (const range of this.kept) range.release?.();
    this.kept.length = 0;
    this.keptBytes = 0;
    this.starts.length = 0;
  }
}
