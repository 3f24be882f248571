// convert's answers: an invalid IN gets its own diagnostic; a conversion that needs several
// options names them all at once (the core's hint); a file already at the version asked says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeCheckpoint, convert, CheckpointError } from '../../js/index.js';
import { writeBase } from './table.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-convert-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}
const CONFIG = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };

test('convert of an invalid IN: the file\'s own diagnostic, not "the file is invalid"', async () => {
  fs.writeFileSync(path.join(tmp, 'cut.ckpt'), (await writeBase('model')).slice(0, 300));
  const r = run('convert', 'cut.ckpt', 'o.ckpt', '--to', '5');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, [
    'ckptscope: cannot convert cut.ckpt: it is not a valid checkpoint',
    'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)',
    'at byte 295, slot 2',
    'hint: the file ends at least 3 bytes early: an incomplete copy or download?',
    ''].join('\n'));
  assert.equal(fs.existsSync(path.join(tmp, 'o.ckpt')), false);
  await assert.rejects(convert(path.join(tmp, 'cut.ckpt'), path.join(tmp, 'o.ckpt'), { to: 5 }), (err) =>
    err instanceof CheckpointError && err.message === 'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)' && err.fileError.offset === 295);
});

test('convert --for v2 of a tied file with a counter: every needed option named at once', async () => {
  fs.writeFileSync(path.join(tmp, 'tied4.ckpt'), await writeCheckpoint({ shapes: [[2], [2]], requiresGrad: [true, true], representatives: [0, 0], version: 4, randomCounter: 5, config: CONFIG,
    entries: [{ id: 0, step: 1, m: [1, 2], v: [1, 2] }] }));
  let r = run('convert', 'tied4.ckpt', 'x.ckpt', '--for', 'v2');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'version 2 cannot hold the random counter: --drop-random-counter drops it (stochastic training then cannot resume exactly)\nhint: version 2 needs all of: --drop-random-counter --untie\n');
  r = run('convert', 'tied4.ckpt', 'x.ckpt', '--for', 'v2', '--drop-random-counter', '--untie');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n')[0], 'x.ckpt: version 2 (float32)');
  // one loss: no list
  r = run('convert', 'tied4.ckpt', 'y.ckpt', '--for', 'v2', '--drop-random-counter');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'version 2 cannot hold tied parameters: --untie gives every alias its own copy of its owner\'s moments and step (loadable only where the model\'s weights are untied too)\n');
});

test('convert --to oldest of a file already the oldest: said so', async () => {
  fs.writeFileSync(path.join(tmp, 'v2.ckpt'), await writeBase('model-v2'));
  const r = run('convert', 'v2.ckpt', 'again.ckpt', '--to', 'oldest');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\n').slice(0, 2), ['again.ckpt: version 2 (float32)', 'v2.ckpt is already version 2, the oldest that loses nothing: again.ckpt holds the same state']);
  const up = run('convert', 'v2.ckpt', 'v5.ckpt', '--to', '5');
  assert.doesNotMatch(up.stdout, /already/);
});
