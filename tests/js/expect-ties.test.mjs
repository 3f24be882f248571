// check --expect with a tie that differs: the reference text, and the core's hint with the
// direction (as diff gives it) and a pointer to diff.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { check } from '../../js/index.js';
import { writeBase } from './table.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-ties-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp });

test('a tie mismatch names its direction and points at diff', async () => {
  fs.writeFileSync(path.join(tmp, 'opt.ckpt'), await writeBase('model'));   // representatives [0, 0, 2]
  const layout = { shapes: [[2, 3], [2, 3], [3]], requiresGrad: [true, true, true], representatives: [0, 1, 2] };
  fs.writeFileSync(path.join(tmp, 'untied.json'), JSON.stringify(layout));
  const r = run('check', 'opt.ckpt', '--expect', 'untied.json');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, [
    'opt.ckpt: does not load into untied.json',
    'CUDA Adam checkpoint: storage alias mismatch for parameter 1',
    'at byte 183, slot 1',
    'hint: representative 0 in the file, 1 in the layout; `ckptscope diff` lists every difference',
    ''].join('\n'));
  // the same direction diff gives
  assert.equal(run('diff', 'opt.ckpt', 'untied.json').stdout, '1 difference between opt.ckpt and untied.json:\n  parameter 1: representative 0 vs 1\n');
  await assert.rejects(check(path.join(tmp, 'opt.ckpt'), layout), { code: 12, hint: 'representative 0 in the file, 1 in the layout; `ckptscope diff` lists every difference' });
});

test('write --help points at the descriptions\' documentation', () => {
  const r = run('write', '--help');
  assert.equal(r.status, 0);
  assert.ok(r.stdout.includes('\nDESCRIPTION.json: docs/layout.md#descriptions-for-write\n'), r.stdout);
});
