// A file still being written is named as such: inspect and check warn when the file changed while
// it was read, or, read as truncated moments after it was modified, it grows while watched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { writeCheckpoint } from '../../js/index.js';
import { stillWriting, fileStamp, isFresh } from '../../js/user-files.js';
import { CLI, cli, scratch } from './scratch.mjs';

const { put } = scratch('ckptscope-still-writing-');

// 512 KiB of moments: written a byte at a time, the file is not complete for over an hour
const ELEMENTS = 1 << 16;
const full = () => writeCheckpoint({
  shapes: [[ELEMENTS]], requiresGrad: [true], representatives: [0], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, randomCounter: 1,
  entries: [{ id: 0, step: 1, m: new Float32Array(ELEMENTS), v: new Float32Array(ELEMENTS) }],
});

/** `ckptscope ARGS` while `file` grows by a byte every 10 ms until it exits, each byte the next
 *  of `whole` (the file stays a truncated copy of it, whenever it is read): the writer is a
 *  process of its own, so the growth does not wait on this test's event loop. */
function whileGrowing(file, whole, args) {
  return new Promise((resolve) => {
    const writer = spawn(process.execPath, ['-e', `const fs = require('node:fs');
      const [whole, file] = process.argv.slice(1), src = fs.readFileSync(whole);
      let at = fs.statSync(file).size;
      setInterval(() => { if (at < src.length) fs.appendFileSync(file, src.subarray(at, ++at)); }, 10);`, whole, file], { stdio: 'ignore' });
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => {
      writer.kill();
      resolve({ status, stderr });
    });
  });
}

test('inspect and check: a truncated file that grows is named as still being written', async () => {
  const bytes = await full();
  const layout = put('whole.ckpt', bytes);
  const file = put('partial.ckpt', bytes.subarray(0, 100));
  const warned = (stderr) => stderr.split('\n').filter((l) => l.startsWith('warning:'));
  const tail = ': it may still be being written; read it again once it is complete';
  for (const args of [['inspect', file], ['check', file, '--expect', layout]]) {
    const r = await whileGrowing(file, layout, args);
    assert.equal(r.status, 1, r.stderr);
    const w = warned(r.stderr);
    assert.equal(w.length, 1, r.stderr);
    assert.match(w[0], new RegExp(`^warning: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} changed while it was read( \\([0-9]+ bytes, then [0-9]+\\))?${tail}$`));
  }
  // truncated and left alone: a file that ends early, no warning (fresh or not)
  const still = put('still.ckpt', bytes.subarray(0, 100));
  assert.equal(cli(['inspect', still]).stderr, 'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)\n');
});

test('stillWriting: a file that changed since its stamp, by size or time; isFresh', async () => {
  const file = put('growing.ckpt', new Uint8Array(10));
  const before = fileStamp(file);
  fs.appendFileSync(file, new Uint8Array(5));
  assert.equal(stillWriting(file, before), `${file} changed while it was read (10 bytes, then 15): it may still be being written; read it again once it is complete`);
  const same = fileStamp(file);
  const later = new Date(same.mtimeMs + 5000);
  fs.utimesSync(file, later, later);
  assert.equal(stillWriting(file, same), `${file} changed while it was read: it may still be being written; read it again once it is complete`);
  const stamp = fileStamp(file);
  assert.equal(stillWriting(file, stamp), null);
  assert.equal(isFresh(stamp, stamp.mtimeMs + 1999), true);
  assert.equal(isFresh(stamp, stamp.mtimeMs + 2000), false);
  assert.equal(isFresh(stamp, stamp.mtimeMs - 60_000), true);   // a writer's clock ahead of ours
  assert.equal(stillWriting('-', fileStamp('-')), null);
});
