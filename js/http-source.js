// A checkpoint read over HTTP by range requests (`ckptscope view` serves files this way): only
// the ranges the core asks for cross the network, so a 50 GB file costs what a 5 MB one does.
// The core reads synchronously, and so must a source: in a cross-origin-isolated page the read
// feed (js/feed.js) makes streamed requests in a worker of its own and this thread waits for the
// bytes; elsewhere synchronous XMLHttpRequest, which browsers allow in workers (the viewer
// parses in one). Blocks fetched are kept in a small cache, so a metadata walk that reads a
// field at a time costs one request per block.
//
// Errors name the URL and the HTTP status.

// A request is never smaller than a page and the last ranges are kept (js/ranges.js), so fields
// read one by one near each other cost one request.
import { Ranges } from './ranges.js';
import { FeedReads } from './feed.js';

const FIRST_REQUEST = 4096;   // learns the size from Content-Range
// The largest request through the feed: a 1 GiB file's statistics took 25.5 s in 16 MiB
// requests, 15.5 s in 64 MiB ones (Chromium under a DevTools client).
const FEED_READ = 64 << 20;

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
  static open(url, { feed = null } = {}) {
    const href = String(url instanceof URL ? url.href : url);
    if (typeof XMLHttpRequest === 'undefined' || typeof FileReaderSync === 'undefined' && typeof WorkerGlobalScope === 'undefined') {
      throw new HttpError(`${href}: http(s) sources are read in a browser worker (synchronous range requests); in Node, download the file first`, { url: href });
    }
    return new HttpSource(href, { feed });
  }

  #sent = 0;       // bytes and requests of the synchronous requests
  #requests = 0;
  #feed = null;    // the feed's requests (js/feed.js), once the size is known

  constructor(url, { feed = null } = {}) {
    this.url = url;
    this.ranges = new Ranges((start, length) => (this.#feed ? this.#feed.fetch(start, Math.min(this.size, start + length) - start) : this.fetch(start, length)),
      { maxRead: feed ? FEED_READ : undefined });
    this.size = -1;
    this.whole = null;   // set when the server answers 200 with the whole file
    this.ranges.keep({ start: 0, bytes: this.fetch(0, FIRST_REQUEST), asked: FIRST_REQUEST });   // learns the size
    // The first request is synchronous: it learns the size and whether the server honours
    // ranges (a 200 is the whole file, kept). The rest go through the feed when it runs.
    if (feed && !this.whole) this.#feed = new FeedReads(feed, { url }, (err) => new HttpError(err.message, { url, status: err.status }));
  }

  /** The body bytes the server sent (through the feed: once the requests in flight have ended). */
  get bytesTransferred() {
    this.#feed?.count();
    return this.#sent + (this.#feed?.bytes ?? 0);
  }

  /** The range requests made. */
  get requests() {
    return this.#requests + (this.#feed?.calls ?? 0);
  }

  /** How the ranges are read: 'feed' (streamed fetches, js/feed.js) or 'sync' (XMLHttpRequest). */
  get reads() {
    return this.#feed ? 'feed' : 'sync';
  }

  /** Fetch [start, start + length) (clipped to the size once known). */
  fetch(start, length) {
    const end = this.size >= 0 ? Math.min(this.size, start + length) : start + length;
    const xhr = rangeRequest(this.url, start, end);
    this.#requests++;
    if (xhr.status === 416) return new Uint8Array(0);   // past the end
    if (xhr.status !== 206 && xhr.status !== 200) {
      throw new HttpError(`${this.url}: HTTP ${xhr.status}${xhr.statusText ? ` ${xhr.statusText}` : ''}`, { url: this.url, status: xhr.status });
    }
    let bytes = new Uint8Array(xhr.response);
    this.#sent += bytes.length;
    if (xhr.status === 200) {
      // The server ignored the range and sent the whole file: keep it, ask nothing more.
      this.size = bytes.length;
      this.whole = bytes;
      bytes = bytes.subarray(start, end);
    } else if (this.size < 0) {
      const total = /\/(\d+)$/.exec(xhr.getResponseHeader('Content-Range') ?? '');
      if (!total) throw new HttpError(`${this.url}: the server's 206 answer has no Content-Range size`, { url: this.url, status: 206 });
      this.size = Number(total[1]);
    }
    return bytes;
  }

  read(offset, dest) {
    if (offset >= this.size) return 0;
    if (this.whole) {
      const part = this.whole.subarray(offset, offset + dest.length);
      dest.set(part);
      return part.length;
    }
    return this.ranges.read(offset, dest.subarray(0, Math.min(dest.length, this.size - offset)));
  }

  close() {
    this.ranges.clear();   // the source can still be read: it fetches again
  }
}
