// Sources that count what they are asked for, for the tests and the benchmark: a Node file read
// positionally, and stand-ins for the two browser APIs the viewer reads through, backed by a
// file on disk (a sparse 54 GB one costs nothing): FileReaderSync over Blob slices and a
// synchronous XMLHttpRequest answering Range requests as `ckptscope view`'s server does.
import fs from 'node:fs';

/** A Node file read positionally, every read logged as [offset, bytes]. */
export class CountingFile {
  constructor(file) {
    this.fd = fs.openSync(file, 'r');
    this.size = fs.fstatSync(this.fd).size;
    this.log = [];
  }
  read(offset, dest) {
    const n = fs.readSync(this.fd, dest, 0, dest.length, offset);
    this.log.push([offset, n]);
    return n;
  }
  get bytes() {
    return this.log.reduce((s, [, n]) => s + n, 0);
  }
  close() {   // the package closes a source it opened; a test may close it too
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

/** FileReaderSync over Blob slices, served from the sparse file (Node's Blob has no synchronous
 *  read): every slice() read is logged. */
export function withBlobReader(file, body) {
  const fd = fs.openSync(file, 'r');
  const size = fs.fstatSync(fd).size;
  const log = [];
  const ranges = new WeakMap();
  const blob = { size, slice: (a, b) => { const part = new Blob([]); ranges.set(part, [a, b]); return part; } };
  Object.setPrototypeOf(blob, Blob.prototype);
  globalThis.FileReaderSync = class {
    readAsArrayBuffer(part) {
      const [a, b] = ranges.get(part);
      const bytes = new Uint8Array(b - a);
      fs.readSync(fd, bytes, 0, bytes.length, a);
      log.push([a, b - a]);
      return bytes.buffer;
    }
  };
  return Promise.resolve(body(blob, log)).finally(() => {
    delete globalThis.FileReaderSync;
    fs.closeSync(fd);
  });
}

/** A synchronous XMLHttpRequest stand-in answering Range requests from the sparse file, as
 *  `ckptscope view`'s server does; it counts the bytes it sends and the requests. */
export function withServer(file, body) {
  const fd = fs.openSync(file, 'r');
  const size = fs.fstatSync(fd).size;
  const served = { bytes: 0, requests: 0 };
  class RangeXHR {
    open(method, url, async) {
      if (async !== false) throw new Error('the HTTP source must request synchronously');
    }
    setRequestHeader(name, value) {
      this.range = /^bytes=(\d+)-(\d+)$/.exec(value);
    }
    send() {
      const start = Number(this.range[1]), end = Math.min(Number(this.range[2]) + 1, size);
      served.requests++;
      if (start >= size) {
        this.status = 416;
        this.response = new ArrayBuffer(0);
        return;
      }
      const bytes = new Uint8Array(end - start);
      fs.readSync(fd, bytes, 0, bytes.length, start);
      served.bytes += bytes.length;
      this.status = 206;
      this.response = bytes.buffer;
      this.contentRange = `bytes ${start}-${end - 1}/${size}`;
    }
    getResponseHeader(name) {
      return name === 'Content-Range' ? this.contentRange : null;
    }
  }
  const saved = globalThis.XMLHttpRequest;
  globalThis.XMLHttpRequest = RangeXHR;
  globalThis.WorkerGlobalScope ??= class {};
  return Promise.resolve(body(served)).finally(() => {
    globalThis.XMLHttpRequest = saved;
    delete globalThis.WorkerGlobalScope;
    fs.closeSync(fd);
  });
}
