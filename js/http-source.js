// A checkpoint read over HTTP by range requests (`ckptscope view` serves files this way): only
// the ranges the core asks for cross the network, so a 50 GB file costs what a 5 MB one does.
// The core reads synchronously, and so must a source: synchronous XMLHttpRequest, which
// browsers allow in workers (the viewer parses in one). Blocks fetched are kept in a small cache,
// so a metadata walk that reads a field at a time costs one request per block.
//
// Errors name the URL and the HTTP status.

// The core asks for what it needs (its own read-ahead grows over a sequential walk and shrinks
// after a skipped payload); a request is never smaller than a page, and the last ranges fetched
// are kept, so fields read one by one near each other cost one request.
const MIN_REQUEST = 4096;
const CACHE_RANGES = 16;

export class HttpError extends Error {
  constructor(message, { url, status = null } = {}) {
    super(message);
    this.name = 'HttpError';
    this.url = url;
    this.status = status;
  }
}

function rangeRequest(url, start, end) {
  const xhr = new XMLHttpRequest();
  xhr.open('GET', url, false);   // synchronous: allowed in workers, where the viewer parses
  xhr.responseType = 'arraybuffer';
  xhr.setRequestHeader('Range', `bytes=${start}-${end - 1}`);
  try {
    xhr.send();
  } catch (err) {
    throw new HttpError(`${url}: the request failed (${err.message}): is the server still running?`, { url });
  }
  return xhr;
}

export class HttpSource {
  /** Open a URL: its size comes from the first range's Content-Range. */
  static open(url) {
    const href = String(url instanceof URL ? url.href : url);
    if (typeof XMLHttpRequest === 'undefined' || typeof FileReaderSync === 'undefined' && typeof WorkerGlobalScope === 'undefined') {
      throw new HttpError(`${href}: http(s) sources are read in a browser worker (synchronous range requests); in Node, download the file first`, { url: href });
    }
    return new HttpSource(href);
  }

  constructor(url) {
    this.url = url;
    this.cache = [];          // {start, bytes}, least recently used first
    this.bytesTransferred = 0;
    this.requests = 0;
    this.size = -1;
    this.fetch(0, MIN_REQUEST);   // learns the size
  }

  /** Fetch [start, start + length) (clipped to the size once known) and keep it. */
  fetch(start, length) {
    const end = this.size >= 0 ? Math.min(this.size, start + length) : start + length;
    const xhr = rangeRequest(this.url, start, end);
    this.requests++;
    if (xhr.status === 416) return new Uint8Array(0);   // past the end
    if (xhr.status !== 206 && xhr.status !== 200) {
      throw new HttpError(`${this.url}: HTTP ${xhr.status}${xhr.statusText ? ` ${xhr.statusText}` : ''}`, { url: this.url, status: xhr.status });
    }
    let bytes = new Uint8Array(xhr.response);
    this.bytesTransferred += bytes.length;
    if (xhr.status === 200) {
      // The server ignored the range and sent the whole file: fine for a small one.
      if (this.size < 0) this.size = bytes.length;
      bytes = bytes.subarray(start, end);
    } else if (this.size < 0) {
      const total = /\/(\d+)$/.exec(xhr.getResponseHeader('Content-Range') ?? '');
      if (!total) throw new HttpError(`${this.url}: the server's 206 answer has no Content-Range size`, { url: this.url, status: 206 });
      this.size = Number(total[1]);
    }
    this.cache.push({ start, bytes });
    if (this.cache.length > CACHE_RANGES) this.cache.shift();
    return bytes;
  }

  read(offset, dest) {
    if (offset >= this.size) return 0;
    const want = Math.min(dest.length, this.size - offset);
    let hit = this.cache.findIndex((c) => c.start <= offset && offset + want <= c.start + c.bytes.length);
    let range;
    if (hit >= 0) {
      range = this.cache[hit];
      this.cache.splice(hit, 1);
      this.cache.push(range);   // most recently used last
    } else {
      const bytes = this.fetch(offset, Math.max(want, MIN_REQUEST));
      range = { start: offset, bytes };
    }
    const from = offset - range.start;
    const n = Math.min(want, range.bytes.length - from);
    dest.set(range.bytes.subarray(from, from + n));
    return n;
  }

  close() {
    this.cache.length = 0;   // the kept ranges go; the source can still be read (it refetches)
  }
}
