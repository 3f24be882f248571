// Runs and diffs of PyTorch DCP folders (docs/distributed.md, docs/runs.md): `run DIR` over
// torchtitan's checkpoint/ of step-N/ folders (in the order of N), `run A_DIR B_DIR ...`, `diff
// A_DIR B_DIR` named by the folders' FQNs (by name when their names differ), and the API's run()
// and diff(). The folders are tests/c/dcp_run_seeds.py's: dcp_seeds.py's writer saves a small
// model after steps 8, 9 and 10 of torch's own AdamW (so B continues A), another run's step 10,
// the step 10 of a model of other names, and a folder of one step.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { run, diff } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'js/cli.js');
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-run-'));
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/dcp_run_seeds.py'), out], { stdio: 'ignore' });
const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
const cli = (args, columns = 80) => spawnSync(process.execPath, [CLI, ...args], { cwd: out, encoding: 'utf8', env: { ...process.env, COLUMNS: String(columns) } });
// module order: the model's keys as planner_data keeps them, the tied head last
const NAMES = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias', 'head.weight'];
const KIND_WARNING = `warning: DCP folders keep no optimizer class (Adam or AdamW): no learning rate
  comes back; give --kind adam|adamw
`;

test('run DIR: torchtitan\'s step-N folders in the order of N, every pair continuous, named by FQN', () => {
  const r = cli(['run', 'checkpoint']);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `3 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     8      0         0  3.882e-4         checkpoint/step-8
     1     9      0         0  3.396e-4         checkpoint/step-9
     2    10      0         0  3.043e-4         checkpoint/step-10

0 → 1: continuous (worst 1 at slot 2 (l1.bias), power 1)
1 → 2: continuous (worst 1 at slot 6 (l2.bias), power 1)

verdict: one run, every pair continuous
`);
  assert.equal(r.stderr, KIND_WARNING);
  // the folders given one by one: the same run
  const given = cli(['run', 'checkpoint/step-8', 'checkpoint/step-9', 'checkpoint/step-10']);
  assert.equal(given.status, 0);
  assert.equal(given.stdout, r.stdout);
  assert.equal(given.stderr, KIND_WARNING);
});

test('run DIR --json: each one-step pair gives back the gradients drawn; no learning rate without the kind', () => {
  const r = cli(['run', 'checkpoint', '--json']);
  assert.equal(r.status, 0);
  const j = JSON.parse(r.stdout);
  assert.equal(j.ok, true);
  assert.deepEqual(j.names, NAMES);
  assert.deepEqual(j.files.map((f) => [f.path, f.step, f.state, f.ok, f.health.flags, f.kindUnknown]), [
    ['checkpoint/step-8', 8, null, true, 0, true], ['checkpoint/step-9', 9, null, true, 0, true], ['checkpoint/step-10', 10, null, true, 0, true]]);
  assert.deepEqual(j.pairs.map((p) => [p.a, p.b, p.continuous, p.verdict, p.layoutDiff, p.configDiff]), [[0, 1, true, null, null, null], [1, 2, true, null, null, null]]);
  for (const [k, p] of j.pairs.entries()) {
    // the trained tensors: the tied head and the frozen layer have no state of their own
    assert.deepEqual(p.slots.map((s) => [s.slot, s.stepA, s.stepB, s.k, s.broken]), [0, 1, 2, 3, 4, 5, 6].map((i) => [i, 8 + k, 9 + k, 1, 0]));
    for (const s of p.slots) {
      const name = NAMES[s.slot];
      // g = Δm / (1 - β1), in float32: the gradient drawn for step B, to float32 rounding
      const drawn = manifest.gradients[String(9 + k)][name];
      assert.ok(Math.abs(s.gradient.rms / drawn - 1) < 1e-5, `${name}: rms ${s.gradient.rms} vs ${drawn}`);
      assert.equal(s.gradient.nonFinite, 0);
      assert.equal(s.lr, null);
    }
    assert.equal(p.storedLr, undefined);
  }
});

test('run: another run\'s folder at the next step is NOT continuous; steps backwards; a model of other names', () => {
  const other = cli(['run', 'checkpoint/step-9', 'other/step-10']);
  assert.equal(other.status, 1);
  assert.equal(other.stdout, `2 checkpoints of one run:
   file  step  flags  warnings     ratio  state  path
      0     9      0         0  3.396e-4         checkpoint/step-9
!     1    10      0         0  3.493e-4         other/step-10

0 → 1: NOT continuous: [emb.weight] slot 0: 50 elements cannot come from Adam
  steps 9→10 (first at element 1)

verdict: something breaks at file 1 (other/step-10)
`);
  assert.equal(other.stderr, KIND_WARNING);
  const back = cli(['run', 'checkpoint/step-10', 'checkpoint/step-9', '--json']);
  assert.equal(back.status, 1);
  assert.equal(JSON.parse(back.stdout).pairs[0].verdict, 'slot 0: step 9 in B is before step 10 in A');
  const renamed = cli(['run', 'checkpoint/step-9', 'renamed/step-10']);
  assert.equal(renamed.status, 1);
  assert.equal(renamed.stdout.split('\n').slice(5).join('\n'), `0 → 1: NOT continuous: l2.weight is in file 0, not in file 1

verdict: something breaks at file 1 (renamed/step-10)
`);
});

test('run refuses one DCP folder, a folder of one, and --state or --kind beside DCP folders', () => {
  const one = cli(['run', 'checkpoint/step-9']);
  assert.equal(one.status, 2);
  assert.equal(one.stdout, '');
  assert.equal(one.stderr, `ckptscope: checkpoint/step-9 is one DCP checkpoint: a run needs at least two, or
  their folder
`);
  const lone = cli(['run', 'lone']);
  assert.equal(lone.status, 2);
  assert.equal(lone.stderr, 'ckptscope: lone holds 1 DCP folder: a run needs at least two\n');
  const state = cli(['run', 'checkpoint/step-8', 'checkpoint/step-9', '--state', 'a.pt', '--state', 'b.pt']);
  assert.equal(state.status, 2);
  const usage = cli(['run', '--help']);
  assert.equal(state.stderr, `ckptscope: --state goes with checkpoint files: a DCP folder holds its own
  parameters (its model part)
${usage.stdout.split('\n\n')[0]}
(ckptscope run --help: its options)
`);
});

// ---- --kind: DCP keeps no optimizer class; the user who knows it says it ----

test('run DIR --kind adamw: every one-step pair\'s learning rate comes back, the lr torch\'s AdamW stepped with; no warning', async () => {
  const r = cli(['run', 'checkpoint', '--kind', 'adamw', '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const j = JSON.parse(r.stdout);
  assert.deepEqual(j.files.map((f) => f.kindUnknown), [false, false, false]);
  for (const p of j.pairs) {
    assert.equal(p.slots.length, 7);
    // from float32 moments: the lr used, to float32 rounding of the moments' differences
    for (const s of p.slots) assert.ok(Math.abs(s.lr / manifest.lr - 1) < 1e-4, `${NAMES[s.slot]}: lr ${s.lr} vs ${manifest.lr}`);
  }
  const text = cli(['run', 'checkpoint', '--kind', 'adamw']);
  assert.equal(text.stdout.split('\n').filter((l) => l.includes('→')).join('\n'),
    '0 → 1: continuous (worst 1 at slot 2 (l1.bias), power 1, lr on 7 slots)\n1 → 2: continuous (worst 1 at slot 6 (l2.bias), power 1, lr on 7 slots)');
  // the API: run(folders, {kind}) the same
  const folders = ['step-8', 'step-9', 'step-10'].map((s) => path.join(out, 'checkpoint', s));
  const api = await run(folders, { kind: 'adamw' });
  assert.deepEqual(api.pairs.map((p) => p.slots.map((s) => s.lr)), j.pairs.map((p) => p.slots.map((s) => s.lr)));
});

test('health DIR --kind adamw: the groups take the kind, AdamW\'s decay term at the stored lr and weight_decay', () => {
  const r = cli(['health', 'checkpoint/step-9', '--kind', 'adamw']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `checkpoint/step-9: the next Adam step per slot at lr 0.001 (the optimizer's
  groups')
consistency: |m| <= 7.27 * sqrt(v) for any gradient history with these betas
AdamW's decoupled decay per unit θ (lr · weight decay): 1e-5

  slot  moments   step  rms(u)  max|u|  rms(θ)     ratio  v=0  bad m
     0  owner        9    0.31   0.724   1.022  3.035e-4
     1  owner        9  0.4309  0.8747  0.8357  5.157e-4
     2  owner        9  0.3593   0.573   0.956  3.758e-4
     3  owner        9  0.2784  0.4631  0.5498  5.065e-4
     4  owner        9  0.2252  0.3812  0.9302  2.422e-4
     5  owner        9  0.3205  0.5832   1.072   2.99e-4
     6  owner        9  0.3655   0.493   0.482  7.583e-4
     7  frozen
     8  frozen
     9  shares 0     9    0.31   0.724   1.022  3.035e-4

verdict: healthy
`);
  // without it: Adam's step, no decay line
  const adam = cli(['health', 'checkpoint/step-9']);
  assert.equal(adam.stdout, r.stdout.replace('AdamW\'s decoupled decay per unit θ (lr · weight decay): 1e-5\n', ''));
  const j = JSON.parse(cli(['health', 'checkpoint/step-9', '--kind', 'adamw', '--json']).stdout);
  for (const s of j.slots.filter((x) => x.update)) assert.equal(s.decay, 0.001 * 0.01);
});

test('inspect, check and export DIR --kind: the folder read whole and given the kind, said to be given', () => {
  const r = cli(['inspect', 'checkpoint/step-9', '--kind', 'adamw']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.split('\n').includes('optimizer       AdamW (given: DCP keeps no optimizer class)'), r.stdout);
  const j = JSON.parse(cli(['inspect', 'checkpoint/step-9', '--kind', 'adam', '--json']).stdout);
  assert.equal(j.dcp.kindGiven, 'adam');
  assert.equal(j.config.kind, 'adam');
  assert.equal(JSON.parse(cli(['inspect', 'checkpoint/step-9', '--json']).stdout).dcp.kindGiven, null);
  const c = cli(['check', 'checkpoint/step-9', '--kind', 'adamw']);
  assert.equal(c.status, 0, c.stderr);
  assert.equal(c.stdout, 'checkpoint/step-9: a distributed checkpoint (DCP) that passes every check\n');
  // export: the configuration written says the kind (without it: null)
  const config = (file) => {
    const b = fs.readFileSync(path.join(out, file));
    const n = Number(b.readBigUInt64LE(0));
    return JSON.parse(JSON.parse(b.subarray(8, 8 + n).toString()).__metadata__.config);
  };
  const e = cli(['export', 'checkpoint/step-9', 'kind.safetensors', '--kind', 'adamw']);
  assert.equal(e.status, 0, e.stderr);
  assert.equal(config('kind.safetensors').kind, 'adamw');
  assert.equal(cli(['export', 'checkpoint/step-9', 'nokind.safetensors']).status, 0);
  assert.equal(config('nokind.safetensors').kind, null);
});

test('run(dir) and run([folders]) in the API: the same result as the CLI gives; a folder alone is no run', async () => {
  const dir = path.join(out, 'checkpoint');
  const whole = await run(dir);
  const folders = ['step-8', 'step-9', 'step-10'].map((s) => path.join(dir, s));
  assert.deepEqual(whole.files.map((f) => f.path), folders);
  assert.deepEqual(await run(folders), whole);
  assert.equal(whole.ok, true);
  assert.deepEqual(whole.names, NAMES);
  await assert.rejects(run(folders[0]), { name: 'TypeError', message: `files must be an array, or the path of a DeepSpeed save_dir or of a folder of DCP folders: ${folders[0]} is neither` });
  await assert.rejects(run(path.join(out, 'lone')), { name: 'RangeError', message: 'a run needs at least two checkpoints, got 1' });
});

// ---- diff: two DCP folders, named by their FQNs ----

test('diff A_DIR B_DIR: two steps of one run, each tensor\'s step and first differing moments, named', () => {
  const r = cli(['diff', 'checkpoint/step-9', 'checkpoint/step-10']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, '');
  const lines = r.stdout.split('\n');
  assert.equal(lines[0], '21 differences between checkpoint/step-9 and checkpoint/step-10:');
  // per trained tensor in slot order: its step, then m[0] and v[0] as the writer saved them
  const want = [];
  for (const [i, name] of NAMES.slice(0, 7).entries()) {
    want.push(`  [${name}] parameter ${i}: step 9 vs 10`, `  [${name}] parameter ${i}: m[0] `, `  [${name}] parameter ${i}: v[0] `);
  }
  assert.deepEqual(lines.slice(1, -1).map((l) => l.replace(/(: [mv]\[0\] ).*$/, '$1')), want);
  assert.equal(lines.at(-1), '');
  for (const [i, name] of NAMES.slice(0, 7).entries()) {
    for (const [q, line] of [[0, lines[2 + 3 * i]], [1, lines[3 + 3 * i]]]) {
      const [, a, b] = /: [mv]\[0\] (\S+) vs (\S+)$/.exec(line);
      assert.equal(Math.fround(Number(a)), Math.fround(manifest.first['9'][name][q]), line);
      assert.equal(Math.fround(Number(b)), Math.fround(manifest.first['10'][name][q]), line);
    }
  }
  const same = cli(['diff', 'checkpoint/step-10', 'checkpoint/step-10']);
  assert.equal(same.status, 0);
  assert.equal(same.stdout, 'no differences between checkpoint/step-10 and checkpoint/step-10\n');
});

test('diff: folders of other names are compared by name, saying which names each holds alone', async () => {
  const r = cli(['diff', 'checkpoint/step-10', 'renamed/step-10']);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `4 differences between checkpoint/step-10 and renamed/step-10:
  parameter count: 10 vs 11
  l2.weight only in the first
  out.weight only in the second
  extra.weight only in the second
`);
  // the API: the core's facts, each name's slot on either side
  const d = await diff(path.join(out, 'renamed/step-10'), path.join(out, 'checkpoint/step-10'));
  assert.deepEqual(d.map((x) => [x.field, x.slot, x.a, x.b, x.aSlot, x.bSlot, x.message]), [
    ['count', null, 11, 10, undefined, undefined, 'parameter count: 11 vs 10'],
    ['name', null, 'out.weight', null, 5, null, 'out.weight only in the first'],
    ['name', null, 'extra.weight', null, 6, null, 'extra.weight only in the first'],
    ['name', null, null, 'l2.weight', null, 5, 'l2.weight only in the second']]);
});

test('diff: a DCP folder against a TorchLean file, by position; --state refused beside a DCP folder', () => {
  const ckpt = path.join(out, 'model.ckpt');
  assert.equal(cli(['write', path.join(ROOT, 'docs/examples/model.json'), ckpt]).status, 0);
  const r = cli(['diff', 'checkpoint/step-10', 'model.ckpt']);
  assert.equal(r.status, 1);
  // the configurations' betas, eps and decay agree; Adam or AdamW is not compared (DCP keeps none)
  assert.equal(r.stdout, `19 differences between checkpoint/step-10 and model.ckpt:
  parameter count: 10 vs 4
  [emb.weight] parameter 0: shape #[11, 6] vs #[4, 3]
  [emb.weight] parameter 0: size 66 vs 12
  [l1.weight] parameter 1: shape #[7, 6] vs #[3, 3]
  [l1.weight] parameter 1: size 42 vs 9
  [l1.bias] parameter 2: shape #[7] vs #[3]
  [l1.bias] parameter 2: size 7 vs 3
  [l1.bias] parameter 2: trainable vs frozen
  [l1.bias] parameter 2: representative 2 vs none
  [ln.weight] parameter 3: rank 1 vs 2
  [ln.weight] parameter 3: shape #[7] vs #[4, 3]
  [ln.weight] parameter 3: size 7 vs 12
  [ln.weight] parameter 3: representative 3 vs 0
  [ln.bias] parameter 4: #[7] only in the first
  [l2.weight] parameter 5: #[6, 7] only in the first
  [l2.bias] parameter 6: #[6] only in the first
  [frozen.weight] parameter 7: #[6, 6] only in the first
  [frozen.bias] parameter 8: #[6] only in the first
  [head.weight] parameter 9: #[11, 6] only in the first
`);
  const s = cli(['diff', 'checkpoint/step-9', 'checkpoint/step-10', '--state', 'm.pt']);
  assert.equal(s.status, 2);
  assert.equal(s.stderr, `ckptscope: --state goes with optimizer files: a DCP folder has slots of its own
  (its model part's)
usage:
  ckptscope diff A B [--names NAMES.json] [--state MODEL [MODEL_B]]
      every difference between two layouts/checkpoints (steps, counter, moments)
(ckptscope diff --help: its options)
`);
});

test('diff and run name a folder whose groups keep no betas and eps (torch 1.13\'s)', () => {
  const t113 = path.join(ROOT, 'tests/fixtures/dcp-torch113');
  const why = 'DCP: parameter group 0 keeps no eps (it keeps lr, betas): health, export, run and diff read each trained tensor with its group\'s betas and eps';
  const d = cli(['diff', 'checkpoint/step-10', t113], 1000);
  assert.equal(d.status, 1);
  assert.equal(d.stderr, `ckptscope: cannot compare: ${t113}\n${why}\n`);
  const r = cli(['run', 'checkpoint/step-9', t113], 1000);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `ckptscope: cannot check the run at ${t113}\n${why}\n`);
  assert.equal(r.stdout, '');
});
