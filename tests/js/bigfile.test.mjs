// A 2 GB checkpoint from a Node path: indexed and scanned in bounded wasm memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect, loadCore } from '../../js/index.js';
import { writeSparse } from './sparse.mjs';

test('a 2 GB sparse checkpoint: report and statistics in under 64 MB of wasm memory', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-big-'));
  try {
    const file = path.join(dir, 'big.ckpt');
    const size = writeSparse(file, { slots: 2, elements: 2 ** 27 });   // 2 x 2 x 512 MiB
    assert.ok(size > 2 * 2 ** 30);
    const report = await inspect(file);
    assert.equal(report.ok, true, report.error?.message);
    assert.equal(report.size, size);
    assert.deepEqual(report.entries.map((e) => e.count), [2 ** 27, 2 ** 27]);
    const withStats = await inspect(file, { stats: true });
    assert.equal(withStats.ok, true);
    assert.equal(withStats.entries[1].v.zero, 2 ** 27);
    const core = await loadCore();
    assert.ok(core.memoryBytes < 64 * 2 ** 20, `wasm memory ${core.memoryBytes} bytes`);
    console.log(`# wasm memory after a ${size}-byte file with statistics: ${core.memoryBytes} bytes`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a 20 GB sparse checkpoint: sizes and offsets exact past 2^32', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-20g-'));
  try {
    const file = path.join(dir, 'huge.ckpt');
    const elements = 2 ** 29;   // 2 GiB per moment, 4 GiB per entry
    const size = writeSparse(file, { slots: 5, elements });
    assert.ok(size > 20 * 2 ** 30);
    const report = await inspect(file);
    assert.equal(report.ok, true, report.error?.message);
    assert.equal(report.size, size);
    const head = 7 + 8 * (1 + 5 + 1 + 5 * 4 + 1);
    assert.deepEqual(report.entries.map((e) => e.offset), [0, 1, 2, 3, 4].map((k) => head + k * (24 + 8 * elements)));
    assert.ok(report.entries[4].offset > 2 ** 34);
    // Truncated past 4 GB: the exact wanted/got of the short payload.
    fs.truncateSync(file, size - 12345);
    const cut = await inspect(file);
    assert.equal(cut.error.message, `CUDA Adam checkpoint: truncated checkpoint (wanted ${4 * elements} bytes, got ${4 * elements - 12345})`);
    assert.equal(cut.error.offset, report.entries[4].offset + 24 + 4 * elements);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a 20 GB sparse state file: inspected in bounded memory, offsets exact, the short tensor named', async () => {
  const { writeSparseState } = await import('./sparse.mjs');
  const { open } = await import('../../js/index.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-20g-state-'));
  try {
    const file = path.join(dir, 'huge.tlsf');
    const elements = 2 ** 30;   // 4 GiB per tensor
    const size = writeSparseState(file, { tensors: 5, elements });
    assert.ok(size > 20 * 2 ** 30);
    const core = await loadCore();
    const before = core.memoryBytes;
    const ck = await open(file);
    try {
      assert.equal(ck.ok, true, ck.summary.error?.message);
      const report = ck.report;
      assert.deepEqual(report.tensors.map((t) => t.dataOffset), [0, 1, 2, 3, 4].map((k) => 23 + 24 * (k + 1) + k * 4 * elements));
      assert.ok(report.tensors[4].offset > 2 ** 34);
      assert.equal(core.memoryBytes, before, 'opening 20 GB grew no wasm memory');
    } finally {
      ck.close();
    }
    fs.truncateSync(file, size - 3);
    const cut = await open(file);
    assert.equal(cut.summary.error.message, `StateIO: truncated checkpoint (wanted ${4 * elements} bytes, got ${4 * elements - 3})`);
    assert.equal(cut.summary.error.slot, 4);
    cut.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a 512 MiB pair streams: pairing and health read every value in bounded wasm memory', async () => {
  const { writeSparseState } = await import('./sparse.mjs');
  const { pair, health } = await import('../../js/index.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-pair-'));
  try {
    const elements = 2 ** 25;   // 128 MiB per tensor, 2 tensors; moments 2 x 256 MiB
    const state = path.join(dir, 'pair.tlsf'), opt = path.join(dir, 'pair.ckpt');
    writeSparseState(state, { tensors: 2, elements });
    writeSparse(opt, { slots: 2, elements });
    const core = await loadCore();
    const result = await pair(opt, state);
    assert.equal(result.pairs, true, JSON.stringify(result.failures));
    const h = await health(opt, state, { lr: 1e-3 });
    assert.equal(h.slots[0].neverUpdated, elements, 'all-zero moments never received a gradient');
    assert.ok(core.memoryBytes < 64 * 2 ** 20, `wasm memory ${core.memoryBytes} bytes`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
