// run says what it does not use: a folder's dangling or looping links, PyTorch files and other
// files (skipped, by name), and each state file given that cannot be used (why, per file), in
// the text and the JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { writeCheckpoint, writeState } from '../../js/index.js';
import { cli, scratch } from './scratch.mjs';

const { dir, put } = scratch('ckptscope-run-skipped-');
const WIDE = { env: { ...process.env, COLUMNS: '300' } };   // each message on one line

const shapes = [[3]];
const checkpoint = (step) => writeCheckpoint({
  shapes, requiresGrad: [true], representatives: [0], config: { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0 }, randomCounter: 1,
  entries: [{ id: 0, step, m: Float32Array.from([1e-3, 2e-3, 3e-3]), v: Float32Array.from([1e-6, 1e-6, 1e-6]) }],
});

test('run DIR: dangling and looping links, PyTorch and other files are skipped by name', async () => {
  const run = path.join(dir, 'run');
  fs.mkdirSync(run);
  fs.writeFileSync(path.join(run, 'step-1.ckpt'), await checkpoint(1));
  fs.writeFileSync(path.join(run, 'step-2.ckpt'), await checkpoint(2));
  fs.writeFileSync(path.join(run, 'optimizer.pt'), Buffer.from('PK\x03\x04 not read'));
  fs.writeFileSync(path.join(run, 'notes.txt'), 'notes');
  fs.symlinkSync('nowhere', path.join(run, 'dangling.ckpt'));
  fs.symlinkSync('loop.ckpt', path.join(run, 'loop.ckpt'));
  const skipped = [
    { name: 'dangling.ckpt', why: 'a symbolic link to nothing: not used' },
    { name: 'loop.ckpt', why: 'a symbolic link that loops: not used' },
    { name: 'notes.txt', why: 'neither an optimizer checkpoint nor a model-state file: not used' },
    { name: 'optimizer.pt', why: 'a PyTorch file (run reads TorchLean checkpoints and model-state files): not used' },
  ];
  const r = cli(['run', run], WIDE);
  assert.equal(r.stderr, '');
  const lines = r.stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith('skipped '));
  assert.deepEqual(lines.slice(at, at + 4), skipped.map((s) => `skipped ${s.name}: ${s.why}`));
  const j = cli(['run', run, '--json']);
  assert.deepEqual(JSON.parse(j.stdout).skipped, skipped);
});

test('run --state: each state file not used says why, in the text and the JSON', async () => {
  const a = put('a.ckpt', await checkpoint(1)), b = put('b.ckpt', await checkpoint(2));
  const junk = put('junk.tlsf', Buffer.from('junkjunk'));
  const wrong = put('wrong.tlsf', await writeState({ shapes: [[4]], values: [new Float32Array(4)] }));
  const r = cli(['run', a, b, '--state', junk, wrong], WIDE);
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('warning: state file'));
  const j = JSON.parse(cli(['run', a, b, '--state', junk, wrong, '--json']).stdout);
  assert.equal(j.files[0].stateFile, junk);
  assert.equal(j.files[1].stateFile, wrong);
  assert.deepEqual(lines, [`warning: state file ${junk} not used for file 0: ${j.files[0].stateError}`, `warning: state file ${wrong} not used for file 1: ${j.files[1].stateError}`]);
  assert.equal(j.files[0].stateError, 'not a file of a known family: unsupported checkpoint family: not a TLADAMF, TLSF32B, TLPF32B, safetensors, DCP, DeepSpeed or PyTorch file');
  assert.equal(j.files[1].stateError, "parameter 0: state shape [4] differs from the optimizer's #[3]");
});
