// A stream (standard input, a FIFO) is read once: a command that would read it twice refuses it
// (exit status 2) instead of finding it drained and calling the file truncated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeBase } from './table.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-streams-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

/** `cat FILE | ckptscope ARGS` */
function piped(file, ...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp, input: fs.readFileSync(path.join(tmp, file)) });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

test('cat v2.ckpt | convert - o.ckpt --to 5: refused (exit 2), nothing written, no false "truncated"', async () => {
  fs.writeFileSync(path.join(tmp, 'v2.ckpt'), await writeBase('model-v2'));
  const r = piped('v2.ckpt', 'convert', '-', 'o.ckpt', '--to', '5');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: convert needs a file: - (standard input) cannot be read twice over');
  assert.doesNotMatch(r.stderr, /truncated/);
  assert.equal(fs.existsSync(path.join(tmp, 'o.ckpt')), false);
});

test('check - --expect … --reader all: refused (exit 2); one reader reads the stream once', async () => {
  fs.writeFileSync(path.join(tmp, 'opt.ckpt'), await writeBase('model'));
  let r = piped('opt.ckpt', 'check', '-', '--expect', 'opt.ckpt', '--reader', 'all');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: check --reader all needs a file: - (standard input) cannot be read once per reader; give one --reader, or a file');
  assert.doesNotMatch(r.stdout + r.stderr, /truncated/);
  r = piped('opt.ckpt', 'check', '-', '--expect', 'opt.ckpt', '--reader', 'v2-v5');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '(standard input): loads into opt.ckpt\n');
});

test('a FIFO as convert\'s IN and as check --reader all\'s FILE: refused the same way', async () => {
  const fifo = path.join(tmp, 'in.fifo');
  fs.rmSync(fifo, { force: true });
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const r = spawnSync(process.execPath, [CLI, 'convert', fifo, path.join(tmp, 'o.ckpt'), '--to', '5'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `ckptscope: convert needs a file: ${fifo} (a pipe or device, not a regular file) cannot be read twice over`);
  // refused before the FIFO is opened: no writer needed, nothing blocks
  const c = spawnSync(process.execPath, [CLI, 'check', fifo, '--expect', path.join(tmp, 'opt.ckpt'), '--reader', 'all'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(c.status, 2, c.stderr);
  assert.equal(c.stderr.split('\n')[0], `ckptscope: check --reader all needs a file: ${fifo} (a pipe or device, not a regular file) cannot be read once per reader; give one --reader, or a file`);
  assert.doesNotMatch(c.stdout + c.stderr, /truncated/);
});
