// Reads for sources where each call costs far more than its bytes: a FileReaderSync call in a
// worker, an HTTP range request. The core sizes its own reads: a header walk reads a record's
// header alone after a payload it skips (64 bytes), and grows its reads only while they follow
// each other (src/io.c). So a read that jumps is fetched at exactly its size: paging it up would
// fetch payload bytes to skip them (4 KiB per entry: 1.2 MiB over HTTP for a Llama-7B-like
// file, where its headers are 30 KB). A read that follows the previous one (within a record
// header's length) is a pass going through the data, slot after slot: it is fetched a page at
// least, and the last ranges read are kept, so small slots cost one call per few slots (the
// viewer's health pass over 10,000 slots: 15 s with plain reads, 0.7 s with pages).
const MIN_READ = 4096;
const NEAR = 64;   // a record header (24 bytes for an entry, 32 for a rank-2 tensor) between reads
const KEEP = 16;

export class Ranges {
  /** fetch(start, length) returns the bytes from start (at most length; fewer at the end). */
  constructor(fetch) {
    this.fetch = fetch;
    this.kept = [];   // {start, bytes}, most recently used last
    this.next = -1;   // where the last read ended
  }

  /** Copy up to dest.length bytes from offset (the caller has clipped to the size). */
  read(offset, dest) {
    const want = dest.length;
    const at = this.kept.findIndex((r) => r.start <= offset && offset + want <= r.start + r.bytes.length);
    let range;
    if (at >= 0) {
      [range] = this.kept.splice(at, 1);
    } else {
      const follows = this.next >= 0 && offset >= this.next && offset - this.next <= NEAR;
      range = { start: offset, bytes: this.fetch(offset, follows ? Math.max(want, MIN_READ) : want) };
    }
    this.keep(range.start, range.bytes);
    const from = offset - range.start;
    const n = Math.max(0, Math.min(want, range.bytes.length - from));
    dest.set(range.bytes.subarray(from, from + n));
    this.next = offset + n;
    return n;
  }

  /** Keep bytes read from start (most recently used). */
  keep(start, bytes) {
    this.kept.push({ start, bytes });
    if (this.kept.length > KEEP) this.kept.shift();
  }

  /** Forget the kept ranges (later reads fetch again). */
  clear() {
    this.kept.length = 0;
    this.next = -1;
  }
}
