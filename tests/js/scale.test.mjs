// The Llama-7B-like pair (tests/js/llama.mjs: a 54 GB optimizer file, its tied variant and a
// 27 GB state file, sparse) opened through sources that count what they are asked for: a Node
// file, a Blob read with FileReaderSync and an HTTP server answering range requests (stand-ins
// for the two browser APIs, backed by the same sparse file). Opening reads the headers only
// (DESIGN.md "Scale": at most 64 KiB + 64 bytes per slot and entry), the counts the sources
// keep for a viewer to show are the bytes they gave, and statistics and the health pass read
// every payload byte exactly once (on a small file of the same structure, byte by byte).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, inspect, health, HttpSource, BlobSource } from '../../js/index.js';
import { writeLlama, llamaLayout, openBound } from './llama.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-scale-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

const files = {
  optimizer: { kind: 'optimizer' },
  tied: { kind: 'optimizer', tied: true },
  state: { kind: 'state' },
};
for (const [name, options] of Object.entries(files)) {
  files[name].path = path.join(dir, `llama-${name}.${options.kind === 'state' ? 'tlsf' : 'ckpt'}`);
  files[name].layout = writeLlama(files[name].path, options);
}

/** A Node file read positionally, every read logged as [offset, bytes]. */
class CountingFile {
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
  close() {
    fs.closeSync(this.fd);
  }
}

/** Bytes of [offset, offset + n) that lie in the layout's payloads. */
function payloadBytes(layout, reads) {
  let total = 0;
  for (const [offset, n] of reads) {
    for (const [a, b] of layout.payloads) total += Math.max(0, Math.min(b, offset + n) - Math.max(a, offset));
  }
  return total;
}

test('the sparse 7B-like files cost no disk: headers only', () => {
  for (const { path: file, layout } of Object.values(files)) {
    const st = fs.statSync(file);
    assert.equal(st.size, layout.size);
    assert.ok(st.blocks * 512 < 1 << 20, `${file}: ${st.blocks * 512} bytes on disk`);
  }
  assert.equal(files.optimizer.layout.params, 6_738_415_616);
  assert.ok(files.optimizer.layout.size > 53e9 && files.state.layout.size > 26e9);
});

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file from a Node file reads its headers only`, async () => {
    const src = new CountingFile(file);
    const ck = await open(src);
    try {
      assert.equal(ck.ok, true, ck.summary.error?.message);
      assert.equal(ck.summary.slotCount, 291);
      assert.equal(ck.itemCount, layout.entries ?? layout.tensors);
    } finally {
      ck.close();
    }
    const bytes = src.bytes;
    assert.ok(bytes <= openBound(layout), `${bytes} bytes read, bound ${openBound(layout)}`);
    // One read per record after a payload: the header's size, never into the payload behind it
    // (the only payload bytes read are the schema's last read-ahead, before the first entry).
    assert.ok(src.log.length <= (layout.entries ?? layout.tensors) + 8, `${src.log.length} reads`);
    const tail = src.log.slice(src.log.findIndex(([offset]) => offset > layout.payloads[0][1]));
    assert.equal(payloadBytes(layout, tail), 0, 'no payload byte read after the first');
  });
}

/** FileReaderSync over Blob slices, served from the sparse file (Node's Blob has no synchronous
 *  read): every slice() read is logged. */
function withBlobReader(file, body) {
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

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file from a Blob reads its headers only, and bytesRead says so`, () =>
    withBlobReader(file, async (blob, log) => {
      const src = new BlobSource(blob);
      const ck = await open(src);
      assert.equal(ck.ok, true);
      ck.close();
      const counted = log.reduce((s, [, n]) => s + n, 0);
      assert.equal(src.bytesRead, counted);
      assert.ok(counted <= openBound(layout), `${counted} bytes read in ${log.length} reads, bound ${openBound(layout)}`);
      assert.ok(log.length <= (layout.entries ?? layout.tensors) + 8, `${log.length} reads`);
    }));
}

/** A synchronous XMLHttpRequest stand-in answering Range requests from the sparse file, as
 *  `ckptscope view`'s server does; it counts the bytes it sends and the requests. */
function withServer(file, body) {
  const fd = fs.openSync(file, 'r');
  const size = fs.fstatSync(fd).size;
  const served = { bytes: 0, requests: 0 };
  class RangeXHR {
    open(method, url, async) {
      assert.equal(async, false);
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

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file over HTTP transfers its headers only, and the source's counts are the server's`, () =>
    withServer(file, async (served) => {
      const src = HttpSource.open(`http://127.0.0.1/${name}`);
      const ck = await open(src);
      assert.equal(ck.ok, true);
      ck.close();
      assert.equal(src.bytesTransferred, served.bytes);
      assert.equal(src.requests, served.requests);
      assert.ok(served.bytes <= openBound(layout), `${served.bytes} bytes in ${served.requests} requests, bound ${openBound(layout)}`);
      assert.ok(served.requests <= (layout.entries ?? layout.tensors) + 8, `${served.requests} requests`);
    }));
}

// ---- every payload byte once ----------------------------------------------------------------

const small = {
  tied: { kind: 'optimizer', tied: true, scale: 64 },
  optimizer: { kind: 'optimizer', scale: 64 },
  state: { kind: 'state', scale: 64 },
};
for (const [name, options] of Object.entries(small)) {
  small[name].path = path.join(dir, `small-${name}`);
  small[name].layout = writeLlama(small[name].path, options);
}

/** How many times each payload byte was read, and the bytes read outside payloads. */
function coverage(layout, log) {
  const times = new Uint8Array(layout.size);
  for (const [offset, n] of log) for (let k = offset; k < offset + n; k++) times[k]++;
  let outside = 0;
  const inPayload = new Uint8Array(layout.size);
  for (const [a, b] of layout.payloads) inPayload.fill(1, a, b);
  const counts = new Set();
  for (let k = 0; k < layout.size; k++) {
    if (inPayload[k]) counts.add(times[k]);
    else outside += times[k];
  }
  return { counts: [...counts].sort(), outside };
}

test('statistics read every payload byte exactly once (the 7B-like structure, 1/64 scale)', async () => {
  for (const { path: file, layout } of Object.values(small)) {
    const src = new CountingFile(file);
    const report = await inspect(src, { stats: true });
    src.close();
    assert.equal(report.ok, true);
    const { counts, outside } = coverage(layout, src.log);
    assert.deepEqual(counts, [1], `${file}: payload bytes read ${counts.join(' or ')} times`);
    assert.ok(outside <= openBound(layout), `${outside} header bytes read`);
  }
});

// (untied: a tied slot's step is its owner's moments with its own parameters, so the owner's
// moments serve two slots)
test('the health pass reads every payload byte of both files exactly once', async () => {
  const opt = new CountingFile(small.optimizer.path), state = new CountingFile(small.state.path);
  await health(opt, state, { lr: 1e-4 });
  opt.close();
  state.close();
  for (const [src, { layout }] of [[opt, small.optimizer], [state, small.state]]) {
    const { counts } = coverage(layout, src.log);
    assert.deepEqual(counts, [1], `${layout.kind}: payload bytes read ${counts.join(' or ')} times`);
  }
});
