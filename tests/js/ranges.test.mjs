// js/ranges.js: what a File or HTTP source fetches for the core's reads (each fetch is a
// FileReaderSync call or a range request, far dearer than its bytes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ranges } from '../../js/ranges.js';

const SIZE = 64 << 20;
const byteAt = (k) => (k * 7 + (k >>> 11)) & 0xff;

/** Ranges over SIZE bytes of a known pattern, recording each fetch [start, length]. */
function counted() {
  const fetches = [];
  const ranges = new Ranges((start, length) => {
    fetches.push([start, length]);
    const n = Math.max(0, Math.min(length, SIZE - start));
    return Uint8Array.from({ length: n }, (_, k) => byteAt(start + k));
  });
  const read = (offset, length) => {
    const dest = new Uint8Array(Math.min(length, SIZE - offset));
    assert.equal(ranges.read(offset, dest), dest.length);
    for (const k of [0, dest.length >> 1, dest.length - 1]) assert.equal(dest[k], byteAt(offset + k), `byte ${offset + k}`);
  };
  return { ranges, fetches, read };
}

test('a read that jumps is fetched at its size: a skipped payload is not read', () => {
  const { fetches, read } = counted();
  read(1 << 20, 24);
  read(5 << 20, 32);
  assert.deepEqual(fetches, [[1 << 20, 24], [5 << 20, 32]]);
});

test('reads that follow each other are fetched a page, then twice the range they follow, up to 16 MiB', () => {
  const { fetches, read } = counted();
  const chunk = 1 << 20;
  for (let at = 0; at < 40 << 20; at += chunk) read(at, chunk);
  assert.deepEqual(fetches.map(([, n]) => n), [chunk, 2 * chunk, 4 * chunk, 8 * chunk, 16 * chunk, 16 * chunk]);
});

test('three streams read side by side (health: m, v, parameters) each grow on their own', () => {
  const { fetches, read } = counted();
  const chunk = 64 << 10;
  const starts = [0, 20 << 20, 40 << 20];
  for (let k = 0; k < 63; k++) for (const s of starts) read(s + k * chunk, chunk);   // 63 chunks: 64 KiB + ... + 2 MiB
  for (const s of starts) assert.deepEqual(fetches.filter(([a]) => a >= s && a < s + (20 << 20)).map(([, n]) => n >> 10), [64, 128, 256, 512, 1024, 2048]);
  assert.equal(fetches.length, 3 * 6);
});

test('a read across the end of a kept range takes the kept bytes and fetches the rest', () => {
  const { fetches, read } = counted();
  read(1000, 100);
  read(1050, 5000);
  assert.deepEqual(fetches, [[1000, 100], [1100, 4950]]);
});

test('the end of the data: fewer bytes, no loop', () => {
  const { ranges } = counted();
  const dest = new Uint8Array(100);
  assert.equal(ranges.read(SIZE - 10, dest), 10);
});

test('the start of the data is read a page at least: a sniff of 256 bytes, then the core\'s 4096, cost one fetch', () => {
  const { fetches, read } = counted();
  read(0, 256);
  read(0, 4096);
  assert.deepEqual(fetches, [[0, 4096]]);
});

test('three streams at the largest reads stay kept: none is fetched again', () => {
  const { fetches, read } = counted();
  const chunk = 1 << 20;
  const starts = [0, 20 << 20, 40 << 20];
  for (let k = 0; k < 20; k++) for (const s of starts) read(s + k * chunk, chunk);
  const total = fetches.reduce((a, [, n]) => a + n, 0);
  assert.ok(total <= 3 * (32 << 20), `each byte fetched once (and a range past the end): ${total >> 20} MiB`);
  // a stream's growing read stops where the next stream began (its 20 MiB are 1+2+4+8+5); the
  // last one reads on past its 20 MiB, where no stream began
  starts.forEach((s, i) => assert.deepEqual(fetches.filter(([a]) => a >= s && a < s + (20 << 20)).map(([, n]) => n >> 20), i < 2 ? [1, 2, 4, 8, 5] : [1, 2, 4, 8, 16]));
});

test('streams that end where another began (health: m, then v) fetch each byte once', () => {
  const { fetches, read } = counted();
  const chunk = 64 << 10, payload = 4 << 20;
  // two slots, m and v of each side by side, payloads adjacent: slot 0's m at 4096, its v
  // right after, slot 1's m and v after those
  for (let slot = 0; slot < 2; slot++) {
    const m = 4096 + slot * 2 * payload, v = m + payload;
    for (let k = 0; k < payload / chunk; k++) for (const s of [m, v]) read(s + k * chunk, chunk);
  }
  // no byte fetched twice (the last stream's read past the payloads is the data's end, here more
  // bytes of the pattern)
  const sorted = fetches.toSorted((a, b) => a[0] - b[0]);
  for (let k = 1; k < sorted.length; k++) assert.ok(sorted[k - 1][0] + sorted[k - 1][1] <= sorted[k][0], `fetches ${sorted[k - 1]} and ${sorted[k]} overlap`);
  const inPayloads = fetches.reduce((a, [at, n]) => a + Math.max(0, Math.min(at + n, 4096 + 4 * payload) - at), 0);
  assert.equal(inPayloads, 4 * payload);
});
