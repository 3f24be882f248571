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
