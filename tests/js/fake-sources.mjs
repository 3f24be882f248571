// Stand-ins for the sources whose calls cost more than their bytes, outside a browser: a
// synchronous XMLHttpRequest that serves bytes by Range (and logs each request), for the tests
// of HttpSource and of what is read through it.
import assert from 'node:assert/strict';

export function fakeServer(bytes, { status = null, ignoreRange = false } = {}) {
  const log = [];
  class FakeXHR {
    open(method, url, async) {
      assert.equal(method, 'GET');
      assert.equal(async, false);
      this.url = url;
    }
    setRequestHeader(name, value) {
      this.range = /^bytes=(\d+)-(\d+)$/.exec(value);
    }
    send() {
      const start = Number(this.range[1]);
      const end = Math.min(Number(this.range[2]) + 1, bytes.length);
      log.push([start, end]);
      if (status) {
        this.status = status;
        this.statusText = 'Not Found';
        this.response = new ArrayBuffer(0);
      } else if (ignoreRange) {
        this.status = 200;
        this.response = bytes.slice().buffer;
      } else if (start >= bytes.length) {
        this.status = 416;
        this.response = new ArrayBuffer(0);
      } else {
        this.status = 206;
        this.response = bytes.slice(start, end).buffer;
        this.headers = { 'Content-Range': `bytes ${start}-${end - 1}/${bytes.length}` };
      }
    }
    getResponseHeader(name) {
      return this.headers?.[name] ?? null;
    }
  }
  return { FakeXHR, log };
}

/** Run body(log) with the stand-in installed as a worker's XMLHttpRequest. */
export async function withFake(bytes, options, body) {
  const { FakeXHR, log } = fakeServer(bytes, options);
  const saved = { xhr: globalThis.XMLHttpRequest, scope: globalThis.WorkerGlobalScope };
  globalThis.XMLHttpRequest = FakeXHR;
  globalThis.WorkerGlobalScope = class {};
  try {
    return await body(log);
  } finally {
    globalThis.XMLHttpRequest = saved.xhr;
    if (saved.scope === undefined) delete globalThis.WorkerGlobalScope;
    else globalThis.WorkerGlobalScope = saved.scope;
  }
}


/** Run body(blob) with a Blob of `bytes` that a FileReaderSync stand-in reads synchronously (as
 *  a worker does; Node's Blob has none): each slice's range is kept, and onRead([a, b]) hears each
 *  read. */
export async function withFakeBlob(bytes, body, onRead = () => {}) {
  const parts = new Map();
  globalThis.FileReaderSync = class {
    readAsArrayBuffer(blob) {
      const [a, b] = parts.get(blob);
      onRead([a, b]);
      return bytes.slice(a, b).buffer;
    }
  };
  const whole = new Blob([bytes]);
  const slice = whole.slice.bind(whole);
  whole.slice = (a, b) => {
    const part = slice(a, b);
    parts.set(part, [a, b]);
    return part;
  };
  try {
    return await body(whole);
  } finally {
    delete globalThis.FileReaderSync;
  }
}
