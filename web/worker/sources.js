// What the worker reads a file through: a dropped File, or a path this viewer's own server
// serves (`ckptscope view` serves files at /files/TOKEN/NAME), each counting its bytes for the
// viewer (payloads are skipped until statistics are asked for).
import { HttpSource, BlobSource } from '/js/index.js';
import { Feed } from '/js/plumbing.js';

/** A File, read by the package's BlobSource (a page at least, pages kept), counting bytes read. */
export class FileBytes extends BlobSource {
  get name() {
    return this.blob.name;   // *.json is JSON
  }

  io() {
    return { via: 'file', bytesRead: this.bytesRead };
  }
}

/** A URL of this origin, read by the package's HTTP source: range requests, counted. */
export class UrlBytes {
  constructor(path, feed = null) {
    const url = new URL(path, self.location.href);
    if (url.origin !== self.location.origin) throw new TypeError(`${path}: only files served by this viewer's own server are opened from the address`);
    this.http = HttpSource.open(url.href, { feed });
    this.path = url.pathname;   // /files/TOKEN/NAME: its passes on the server are /passes/KIND/TOKEN/NAME
    this.size = this.http.size;
    this.name = decodeURIComponent(url.pathname.split('/').pop() || url.pathname);   // *.json is JSON
  }
  read(offset, dest) {
    return this.http.read(offset, dest);
  }
  io() {
    return { via: 'http', bytesTransferred: this.http.bytesTransferred, requests: this.http.requests, reads: this.http.reads };
  }
  close() {}
}

/** A File, or a served path read through the feed where the page is cross-origin isolated
 *  (js/server/server.js's headers), else by synchronous requests (js/feed.js). */
export async function sourceOf(source) {
  if (typeof source === 'string') return new UrlBytes(source, await Feed.start());
  if (source instanceof Blob) return new FileBytes(source);
  throw new TypeError('a file to open must be a File or a path of this viewer\'s server');
}
