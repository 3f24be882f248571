// The CLI as a subprocess: the shared case table through `inspect`, `--json` against the API's
// report, `check`, `diff`, `write`, and the exit codes 0 / 1 / 2. No stack trace, ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect, writeCheckpoint } from '../../js/index.js';
import { cases, model, modelLayout, modelDescription, F } from './cases.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-cli-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

function file(name, bytes) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, bytes);
  return p;
}

for (const c of cases) {
  test(`cli inspect: ${c.name}`, async () => {
    const p = file(`${c.name.replace(/\W+/g, '_')}.ckpt`, await c.make());
    const r = run('inspect', p);
    if (c.error === null) {
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /verdict: valid/);
    } else {
      assert.equal(r.status, 1);
      assert.equal(r.stderr, `${c.error}\n`);
      assert.match(r.stdout, new RegExp(`verdict: invalid at byte ${c.offset}\\n`));
    }
    const j = run('inspect', p, '--json');
    assert.equal(j.status, c.error === null ? 0 : 1);
    assert.deepEqual(JSON.parse(j.stdout), await inspect(p));
  });
}

test('cli inspect --stats --json matches the API field by field', async () => {
  const p = file('stats.ckpt', await model({ randomCounter: 12 }));
  const r = run('inspect', p, '--stats', '--json');
  assert.equal(r.status, 0);
  const report = JSON.parse(r.stdout);
  assert.deepEqual(report, await inspect(p, { stats: true }));
  assert.deepEqual(Object.keys(report.entries[0].m), ['count', 'min', 'max', 'mean', 'rms', 'nan', 'inf', 'zero', 'negative', 'histogram']);
  assert.deepEqual(report.entries[0].m.histogram, { log2Min: -1, counts: [6] });
});

test('cli summary is a table a person reads at a glance', async () => {
  const r = run('inspect', file('summary.ckpt', await model({ randomCounter: 12 })));
  assert.match(r.stdout, /CUDA Adam checkpoint \(TLADAMF\) version 4, float32, 335 bytes/);
  assert.match(r.stdout, /optimizer\s+Adam\s+beta1 0\.9\s+beta2 0\.999\s+epsilon 1e-8\s+weight decay 0/);
  assert.match(r.stdout, /random counter\s+12/);
  assert.match(r.stdout, /slot\s+shape\s+size\s+trainable\s+representative\s+step/);
  assert.match(r.stdout, /\n\s+1\s+\[2, 3\]\s+6\s+yes\s+shares 0/);
});

test('cli check: loads, would not load, bad layout', async () => {
  const p = file('check.ckpt', await model());
  const good = file('good.json', JSON.stringify(modelLayout));
  const bad = file('bad.json', JSON.stringify({ ...modelLayout, representatives: null }));
  let r = run('check', p, '--expect', good);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /loads/);
  r = run('check', p, '--expect', bad);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}storage alias mismatch for parameter 1\nat byte 183\n`);
  r = run('check', p, '--expect', p);   // another checkpoint
  assert.equal(r.status, 0, r.stderr);
  r = run('check', p, '--expect', file('broken.json', '{"shapes": [[1]'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not valid JSON/);
  r = run('check', p, '--expect', file('wrongtype.json', '{"shapes": [[1]], "requiresGrad": ["yes"]}'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /requiresGrad\[0\] must be true or false/);
});

test('cli diff: differences exit 1, none exit 0', async () => {
  const a = file('da.ckpt', await model());
  const b = file('db.json', JSON.stringify({ ...modelLayout, shapes: [[2, 3], [2, 3], [4]] }));
  let r = run('diff', a, b);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /parameter 2: shape #\[3\] vs #\[4\]/);
  assert.match(r.stdout, /parameter 2: size 3 vs 4/);
  r = run('diff', a, a);
  assert.equal(r.status, 0);
});

test('cli write: a description in, a checkpoint out', async () => {
  const d = modelDescription();
  const json = { ...d, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) };
  const desc = file('desc.json', JSON.stringify(json));
  const out = path.join(tmp, 'written.ckpt');
  let r = run('write', desc, out);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(new Uint8Array(fs.readFileSync(out)), await model());
  r = run('write', file('bad-desc.json', JSON.stringify({ ...json, entries: [] })), out);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}expected 2 moment entries, got 0\n`);
});

test('cli usage and I/O errors exit 2', () => {
  for (const args of [[], ['frobnicate'], ['inspect'], ['inspect', 'a', 'b'], ['inspect', '--nope', 'x'], ['check', 'x'], ['serve', '--port', 'abc']]) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  const r = run('inspect', path.join(tmp, 'does-not-exist.ckpt'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /no such file: .*does-not-exist\.ckpt/);
  const d = run('inspect', tmp);   // a directory
  assert.equal(d.status, 2);
  assert.match(d.stderr, /is a directory, not a checkpoint file/);
});

test('cli: friendly words for what is not a checkpoint', () => {
  const lfs = file('pointer.ckpt', 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1234\n');
  const r = run('inspect', lfs);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /hint: this is a Git LFS pointer file/);
  assert.equal(r.stderr, `${F}unsupported checkpoint family\n`);
});

test('cli summary of 200,000 slots (no argument-spreading limits)', async () => {
  const n = 200_000;
  const p = file('wide.ckpt', await writeCheckpoint({ shapes: Array.from({ length: n }, () => []), requiresGrad: Array.from({ length: n }, (_, i) => i === 0),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [0], v: [0] }] }));
  const r = run('inspect', p);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\n\s*199999\s+\[\]\s+1\s+no\s+-\n/);
});
