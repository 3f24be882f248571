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

