// The sources whose calls cost more than their bytes, outside a browser: a synchronous
// XMLHttpRequest stand-in serves a checkpoint's bytes by Range and a FileReaderSync stand-in reads
// a Blob, so request sizes, kept ranges, errors and close() are checked in Node. (The browser
// tests open the same sources for real: tests/browser/.)
import test from 'node:test';
import assert from 'node:assert/strict';
import { HttpSource, HttpError, BlobSource, open, writeCheckpoint } from '../../js/index.js';
import { withFake, withFakeBlob } from './fake-sources.mjs';

const sample = await writeCheckpoint({
  shapes: [[64, 64], [64]],
  requiresGrad: [true, true],
  config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 },
  entries: [0, 1].map((id) => {
    const n = id === 0 ? 4096 : 64;
    return { id, step: 3, m: new Float32Array(n).fill(0.5), v: new Float32Array(n).fill(0.25) };
  }),
});

test('in Node without a worker, an http source is refused with advice', () => {
  assert.throws(() => HttpSource.open('http://127.0.0.1:1/x.ckpt'), (err) => err instanceof HttpError && /download the file first/.test(err.message));
});

test('the size comes from Content-Range; kept ranges are reused; bytes and requests counted', () =>
  withFake(sample, {}, async (log) => {
    const src = HttpSource.open('http://h/x.ckpt');
    assert.equal(src.size, sample.length);
    assert.deepEqual(log[0], [0, 4096]);
    const dest = new Uint8Array(8);
    assert.equal(src.read(100, dest), 8);
    assert.deepEqual(dest, sample.subarray(100, 108));
    assert.equal(log.length, 1, 'a read inside the first page costs no request');
    assert.equal(src.read(sample.length - 4, dest), 4, 'a read at the end is short');
    assert.equal(src.read(sample.length, dest), 0);
    const ck = await open(src);
    assert.equal(ck.summary.slotCount, 2);
    ck.close();
    assert.equal(src.bytesTransferred, log.reduce((n, [a, b]) => n + (b - a), 0));
    src.close();
    assert.equal(src.read(0, dest), 8, 'after close() a read fetches again');
    assert.equal(log.length, src.requests);
  }));

test('an HTTP error names the URL and the status', () =>
  withFake(sample, { status: 404 }, async () => {
    assert.throws(() => HttpSource.open('http://h/gone.ckpt'), (err) => err instanceof HttpError && err.status === 404 && err.message === 'http://h/gone.ckpt: HTTP 404 Not Found');
  }));

test('a server that ignores Range still gives the right bytes', () =>
  withFake(sample, { ignoreRange: true }, async () => {
    const src = HttpSource.open('http://h/x.ckpt');
    assert.equal(src.size, sample.length);
    const dest = new Uint8Array(16);
    assert.equal(src.read(5000, dest), 16);
    assert.deepEqual(dest, sample.subarray(5000, 5016));
    const ck = await open(src);
    assert.equal(ck.summary.slotCount, 2);
    ck.close();
    assert.equal(src.requests, 1, 'the whole file came with the first answer');
  }));

test('a Blob in a worker is read as the core asks (its headers, not the payloads it skips), pages kept, bytes counted', async () => {
  const calls = [];
  await withFakeBlob(sample, async (whole) => {
    const src = new BlobSource(whole);
    const ck = await open(src);
    // The first read (4 KiB: the preamble and the schema) and then entry 1's header (24 bytes, and
    // 8 of its payload), after entry 0's 32 KiB of payloads skipped by position.
    const entry1 = sample.length - 2 * 4 * 64 - 24;
    assert.deepEqual(calls, [[0, 4096], [entry1, entry1 + 32]]);
    const e = await ck.entry(1);
    assert.deepEqual(Array.from(e.m.subarray(0, 2)), [0.5, 0.5]);
    ck.close();
    assert.equal(src.bytesRead, calls.reduce((n, [a, b]) => n + b - a, 0));
    assert.ok(calls.length <= 8, `${calls.length} reads for a 2-slot file`);
  }, (range) => calls.push(range));
});
