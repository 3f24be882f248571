// Reads for sources where each call costs far more than its bytes: a FileReaderSync call in a
// worker, an HTTP range request. The core often asks for a few bytes at a time (a header field,
// the next entry's metadata), so a read is never smaller than a page and the last ranges read
// are kept: a metadata walk or a pass slot after slot costs one call per few dozen slots
// (the viewer's health pass over 10,000 slots: 15 s with plain reads, 0.7 s with these).
const MIN_READ = 4096;
const KEEP = 16;

export class Ranges {
  /** fetch(start, length) returns the bytes from start (at most length; fewer at the end). */
  constructor(fetch) {
    this.fetch = fetch;
    this.kept = [];   // {start, bytes}, most recently used last
  }

  /** Copy up to dest.length bytes from offset (the caller has clipped to the size). */
  read(offset, dest) {
    const want = dest.length;
    const at = this.kept.findIndex((r) => r.start <= offset && offset + want <= r.start + r.bytes.length);
    let range;
    if (at >= 0) {
      [range] = this.kept.splice(at, 1);
    } else {
      range = { start: offset, bytes: this.fetch(offset, Math.max(want, MIN_READ)) };
    }
    this.keep(range.start, range.bytes);
    const from = offset - range.start;
    const n = Math.max(0, Math.min(want, range.bytes.length - from));
    dest.set(range.bytes.subarray(from, from + n));
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
  }
}
