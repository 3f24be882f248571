// Runs over DeepSpeed tag folders (docs/deepspeed.md, docs/runs.md): `run SAVE_DIR` (its tag
// folders in the order of their numbers), `run TAG_A TAG_B ...`, and the API's run(). The folders
// are tests/c/deepspeed_seeds.py's: its ZeRO writer saves a small model after steps of torch's
// own AdamW (so B continues A), a folder of another seed at the next step (broken), a model too
// small to tell (FORMAT.md 9's 64 elements), and folders of another layout.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { run, diff, open } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'js/cli.js');
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-deepspeed-run-'));
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/deepspeed_seeds.py'), path.join(ROOT, 'tests/fixtures/deepspeed'), out], { stdio: 'ignore' });
const { runs } = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
const RUNS = path.join(out, 'runs');
const byName = (name) => runs.find((r) => r.name === name);
const cli = (args, columns = 80) => spawnSync(process.execPath, [CLI, ...args], { cwd: RUNS, encoding: 'utf8', env: { ...process.env, COLUMNS: String(columns) } });
const NAMES = ['emb.weight', 'l1.weight', 'l1.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'head.weight'];

test('run SAVE_DIR: its tag folders in step order, every pair continuous, named by the module', () => {
  const r = cli(['run', 'zero2']);
  assert.equal(r.stderr, '');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `3 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     2      0         0  0.006138         zero2/global_step2
     1     3      0         0  0.005259         zero2/global_step3
     2     4      0         0  0.004841         zero2/global_step4

0 → 1: continuous (worst 1 at slot 3 (l2.weight), power 0.9571, lr on 5 slots)
  lr 0.01 agrees with the groups' stored lr at step 2: 0.01
1 → 2: continuous (worst 1 at slot 0 (emb.weight), power 0.9939, lr on 5 slots)
  lr 0.01 agrees with the groups' stored lr at step 3: 0.01

verdict: one run, every pair continuous
`);
  // the tag folders given one by one: the same run
  const given = cli(['run', 'zero2/global_step2', 'zero2/global_step3', 'zero2/global_step4']);
  assert.equal(given.status, 0);
  assert.equal(given.stdout, r.stdout);
});

test('run SAVE_DIR --json: each one-step pair gives back the gradients drawn and the learning rate used', () => {
  const c = byName('zero2');
  const r = cli(['run', 'zero2', '--json']);
  assert.equal(r.status, 0);
  const j = JSON.parse(r.stdout);
  assert.equal(j.ok, true);
  assert.deepEqual(j.names, NAMES);
  assert.deepEqual(j.files.map((f) => [f.path, f.step, f.state, f.ok, f.health.flags]), [
    ['zero2/global_step2', 2, null, true, 0], ['zero2/global_step3', 3, null, true, 0], ['zero2/global_step4', 4, null, true, 0]]);
  assert.deepEqual(j.pairs.map((p) => [p.a, p.b, p.continuous, p.verdict, p.layoutDiff, p.configDiff]), [[0, 1, true, null, null, null], [1, 2, true, null, null, null]]);
  for (const [k, p] of j.pairs.entries()) {
    // the trainable owners: the tied head and the frozen layer have no entry of their own
    assert.deepEqual(p.slots.map((s) => [s.slot, s.stepA, s.stepB, s.k, s.broken]), [0, 1, 2, 3, 4].map((i) => [i, 2 + k, 3 + k, 1, 0]));
    for (const s of p.slots) {
      const name = NAMES[s.slot];
      // g = Δm / (1 - β1), in float32: the gradient the writer drew, to float32 rounding
      assert.ok(Math.abs(s.gradient.rms / c.gradients[k][name] - 1) < 1e-5, `${name}: rms ${s.gradient.rms} vs ${c.gradients[k][name]}`);
      assert.equal(s.gradient.nonFinite, 0);
      // the masters moved as one AdamW step at the groups' learning rate
      assert.ok(Math.abs(s.lr / c.lr - 1) < 1e-4, `${name}: lr ${s.lr}`);
      assert.ok(s.lrResidual < 1e-4, `${name}: residual ${s.lrResidual}`);
    }
  }
});

test('the learning rate a one-step pair gives back, beside the one A\'s groups stored for that step', async () => {
  const r = cli(['run', 'lr']);
  // a difference is shown, not a break: the pair's verdict is the moments'
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `2 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     2      0         0  0.006138         lr/global_step2
     1     3      0         0   0.00526         lr/global_step3

0 → 1: continuous (worst 1 at slot 3 (l2.weight), power 0.9571, lr on 5 slots)
  lr 0.02 DIFFERS from the groups' stored lr at step 2: 0.01

verdict: one run, every pair continuous
`);
  const result = await run(path.join(RUNS, 'lr'));
  assert.deepEqual(result.pairs[0].storedLr, { step: 2, learningRates: [0.01], agrees: false });
  assert.ok(result.pairs[0].slots.every((s) => Math.abs(s.lr / 0.02 - 1) < 1e-4));
  // no rate back (k > 1, or no kind): agrees null, no line
  const z3 = await run(path.join(RUNS, 'zero3'));
  assert.deepEqual(z3.pairs[0].storedLr, { step: 2, learningRates: [], agrees: null });
});

test('run(saveDir) and run([tag folders]) in the API: the same result as the CLI gives', async () => {
  const dir = path.join(RUNS, 'zero2');
  const whole = await run(dir);
  const tags = byName('zero2').tags.map((t) => path.join(dir, t));
  const given = await run(tags);
  assert.deepEqual(whole.files.map((f) => f.path), tags);
  assert.deepEqual(given, whole);
  assert.equal(whole.ok, true);
  assert.deepEqual(whole.names, NAMES);
  // a tag folder is one checkpoint, not a run
  await assert.rejects(run(tags[0]), { name: 'TypeError', message: `files must be an array, or the path of a DeepSpeed save_dir or of a folder of DCP folders: ${tags[0]} is neither` });
});

test('a tag folder of another run (another seed) at the next step: NOT continuous', async () => {
  const r = cli(['run', 'other']);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `2 checkpoints of one run:
   file  step  flags  warnings     ratio  state  path
      0     2      0         0  0.006138         other/global_step2
!     1     3      0         0  0.005325         other/global_step3

0 → 1: NOT continuous: [emb.weight] slot 0: 45 elements cannot come from Adam
  steps 2→3 (first at element 0)
  lr -0.7278 to 0.6556 DIFFERS from the groups' stored lr at step 2: 0.01

verdict: something breaks at file 1 (other/global_step3)
`);
  const result = await run(path.join(RUNS, 'other'));
  const p = result.pairs[0];
  assert.equal(p.continuous, false);
  assert.equal(p.verdict, 'slot 0: 45 elements cannot come from Adam steps 2→3 (first at element 0)');
  assert.equal(p.verdictSlot, 0);
  assert.equal(result.first, 1);
  assert.ok(p.slots.every((s) => s.broken > 0), JSON.stringify(p.slots.map((s) => s.broken)));
});

test('too few elements to tell (FORMAT.md 9: 64 needed): cannot tell, exit 3', async () => {
  const r = cli(['run', 'few']);
  assert.equal(r.status, 3);
  assert.equal(r.stdout, `2 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     2      0         0  0.006904         few/global_step2
     1     3      0         0  0.005922         few/global_step3

0 → 1: cannot tell: steps 2→3: only 40 elements can tell (64 needed); 0 of 4
  slots cannot tell
  lr 0.01 agrees with the groups' stored lr at step 2: 0.01

verdict: nothing breaks, but 1 pair of 1 cannot tell (too far apart): not shown
  to be one run
`);
  const result = await run(path.join(RUNS, 'few'));
  assert.equal(result.ok, false);
  assert.equal(result.cannotTell, 1);
  assert.equal(result.first, null);
  assert.equal(result.pairs[0].continuous, null);
  assert.deepEqual(result.names, ['a.weight', 'a.bias', 'b.weight', 'b.bias']);
});

test('tag folders of different layouts: the first name or shape that differs, in the module\'s names', async () => {
  const names = cli(['run', 'layouts']);
  assert.equal(names.status, 1);
  assert.equal(names.stdout.split('\n').slice(5).join('\n'), `0 → 1: NOT continuous: emb.weight is in file 0, not in file 1

verdict: something breaks at file 1 (layouts/global_step3)
`);
  const shapes = cli(['run', 'shapes']);
  assert.equal(shapes.status, 1);
  assert.equal(shapes.stdout.split('\n').slice(5).join('\n'), `0 → 1: NOT continuous: emb.weight is #[11, 6] in file 0, #[12, 6] in file 1

verdict: something breaks at file 1 (shapes/global_step3)
`);
  // the JSON: the verdict, and the schema's own differences (numbered slots) in layoutDiff
  const result = await run(path.join(RUNS, 'shapes'));
  const p = result.pairs[0];
  assert.equal(p.verdict, 'emb.weight is #[11, 6] in file 0, #[12, 6] in file 1');
  assert.equal(p.verdictSlot, null);
  assert.deepEqual(p.layoutDiff.map((d) => d.message), ['parameter 0: shape #[11, 6] vs #[12, 6]', 'parameter 0: size 66 vs 72', 'parameter 6: shape #[11, 6] vs #[12, 6]', 'parameter 6: size 66 vs 72']);
  assert.deepEqual(p.slots, []);
});

test('a run across stages and world sizes is per parameter; a ds_config naming no optimizer gives no learning rate', () => {
  // ZeRO-3 over 2 ranks, then ZeRO-2 over 2 ranks at the next step
  const r = cli(['run', 'zero3/global_step2', 'zero2/global_step3']);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `2 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     2      0         0  0.006138         zero3/global_step2
     1     3      0         0  0.005259         zero2/global_step3

0 → 1: continuous (worst 1 at slot 3 (l2.weight), power 0.9571)

verdict: one run, every pair continuous
`);
  assert.equal(r.stderr, `warning: 1 folder's (zero3/global_step2) ds_config names its optimizer (Adam or
  AdamW): no learning rate comes back; give --kind adam|adamw
`);
  const z3 = cli(['run', 'zero3']);
  assert.equal(z3.status, 0);
  assert.equal(z3.stderr, `warning: no folder's ds_config names its optimizer (Adam or AdamW): no learning
  rate comes back; give --kind adam|adamw
`);
  // --kind says it: each slot's learning rate comes back, the 0.01 the run stepped with
  const given = cli(['run', 'zero3', '--kind', 'adamw']);
  assert.equal(given.status, 0, given.stderr);
  assert.equal(given.stderr, '');
  assert.deepEqual(given.stdout.split('\n').slice(-5, -3), ['0 → 1: continuous (worst 1 at slot 3 (l2.weight), power 0.9571, lr on 5 slots)', '  lr 0.01 agrees with the groups\' stored lr at step 2: 0.01']);
});

test('run refuses one tag folder, --state beside DeepSpeed folders, and steps given backwards', () => {
  const one = cli(['run', 'zero2/global_step2']);
  assert.equal(one.status, 2);
  assert.equal(one.stderr, `ckptscope: zero2/global_step2 is one DeepSpeed checkpoint (a tag folder): a run
  needs at least two, or their save_dir
`);
  const state = cli(['run', 'zero2/global_step2', 'zero2/global_step3', '--state', 'a.pt', '--state', 'b.pt']);
  assert.equal(state.status, 2);
  const usage = cli(['run', '--help']);
  assert.equal(state.stderr, `ckptscope: --state goes with checkpoint files: a DeepSpeed folder holds its own
  master weights
${usage.stdout.split('\n\n')[0]}
(ckptscope run --help: its options)
`);
  const back = cli(['run', 'zero2/global_step3', 'zero2/global_step2', '--json']);
  assert.equal(back.status, 1);
  const p = JSON.parse(back.stdout).pairs[0];
  assert.equal(p.verdict, 'slot 0: step 2 in B is before step 3 in A');
});

// ---- diff (docs/deepspeed.md): two DeepSpeed folders, named by the module ----

test('diff A_DIR B_DIR: two steps of one layout, each parameter\'s step and first differing moments, named', () => {
  const r = cli(['diff', 'zero2/global_step2', 'zero2/global_step3']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `15 differences between zero2/global_step2 and zero2/global_step3:
  [emb.weight] parameter 0: step 2 vs 3
  [emb.weight] parameter 0: m[0] 0.000202094598 vs -0.000635448901
  [emb.weight] parameter 0: v[0] 2.96421021e-8 vs 9.64159526e-8
  [l1.weight] parameter 1: step 2 vs 3
  [l1.weight] parameter 1: m[0] 0.00102531293 vs 0.00152666355
  [l1.weight] parameter 1: v[0] 2.27797017e-7 vs 2.64036544e-7
  [l1.bias] parameter 2: step 2 vs 3
  [l1.bias] parameter 2: m[0] 0.00113005098 vs 0.00171682006
  [l1.bias] parameter 2: v[0] 7.73110429e-8 vs 1.26202139e-7
  [l2.weight] parameter 3: step 2 vs 3
  [l2.weight] parameter 3: m[0] -0.00217117858 vs -0.00025409137
  [l2.weight] parameter 3: v[0] 2.61082874e-7 vs 5.49811375e-7
  [l2.bias] parameter 4: step 2 vs 3
  [l2.bias] parameter 4: m[0] -0.00255608745 vs -0.00209895917
  [l2.bias] parameter 4: v[0] 6.24579968e-7 vs 6.2801638e-7
`);
});

test('diff: one state saved by ZeRO-2 and by ZeRO-3 (other fragments, one per rank) has no differences', () => {
  const r = cli(['diff', 'zero2/global_step2', 'zero3/global_step2']);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, 'no differences between zero2/global_step2 and zero3/global_step2\n');
});

test('diff: a parameter resized, named by the module; --state refused beside a DeepSpeed folder', async () => {
  const r = cli(['diff', 'shapes/global_step2', 'shapes/global_step3']);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `4 differences between shapes/global_step2 and shapes/global_step3:
  [emb.weight] parameter 0: shape #[11, 6] vs #[12, 6]
  [emb.weight] parameter 0: size 66 vs 72
  [head.weight] parameter 6: shape #[11, 6] vs #[12, 6]
  [head.weight] parameter 6: size 66 vs 72
`);
  const s = cli(['diff', 'shapes/global_step2', 'shapes/global_step3', '--state', 'm.pt']);
  assert.equal(s.status, 2);
  assert.equal(s.stderr, `ckptscope: --state goes with optimizer files: a DeepSpeed folder has slots of
  its own (its module's)
usage:
  ckptscope diff A B [--names NAMES.json] [--state MODEL [MODEL_B]]
      every difference between two layouts/checkpoints (steps, counter, moments)
(ckptscope diff --help: its options)
`);
  // the API: diff(dirA, dirB) and diff of open folders give the core's differences
  const d = await diff(path.join(RUNS, 'shapes/global_step2'), path.join(RUNS, 'shapes/global_step3'));
  assert.deepEqual(d.map((x) => [x.field, x.slot, x.message]), [
    ['shape', 0, 'parameter 0: shape #[11, 6] vs #[12, 6]'], ['size', 0, 'parameter 0: size 66 vs 72'],
    ['shape', 6, 'parameter 6: shape #[11, 6] vs #[12, 6]'], ['size', 6, 'parameter 6: size 66 vs 72']]);
});

test('diff: folders of other modules are compared by name, each name one holds alone', () => {
  const r = cli(['diff', 'layouts/global_step2', 'layouts/global_step3']);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `12 differences between layouts/global_step2 and layouts/global_step3:
  parameter count: 7 vs 4
  emb.weight only in the first
  l1.weight only in the first
  l1.bias only in the first
  l2.weight only in the first
  l2.bias only in the first
  frozen.weight only in the first
  head.weight only in the first
  a.weight only in the second
  a.bias only in the second
  b.weight only in the second
  b.bias only in the second
`);
});

test('entry(slot) of a DeepSpeed folder: the moments read through the fragments, as the writer wrote them', async () => {
  const { cases } = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
  const floats = (file) => {
    const b = fs.readFileSync(file);
    return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  };
  for (const name of ['w-zero2-w3-groups', 'w-zero3-w3-subgroups', 'w-zero2-w4-bf16']) {
    const c = cases.find((x) => x.name === name);
    const ck = await open(c.dir);
    try {
      for (const [slot, n] of ck.report.names.entries()) {
        const want = c.values[n];
        if (!want) continue;
        const e = await ck.entry(slot);
        assert.deepEqual(e.m, floats(want.keys.exp_avg), `${name} ${n}`);
        assert.deepEqual(e.v, floats(want.keys.exp_avg_sq), `${name} ${n}`);
        const st = await ck.stats(slot);
        assert.equal(st.m.count, e.m.length, `${name} ${n}`);
      }
    } finally {
      ck.close();
    }
  }
});

test('run OUTPUT_DIR: a Trainer\'s checkpoint-N/ folders saved with DeepSpeed, in the order of N', async () => {
  // each checkpoint-N/ a save_dir (latest, global_stepN/) beside the Trainer's own files, no optimizer.pt
  const dir = path.join(out, 'trainer');
  for (const n of [4, 2, 3]) {
    const ck = path.join(dir, 'out', `checkpoint-${n}`);
    fs.cpSync(path.join(RUNS, 'zero2', `global_step${n}`), path.join(ck, `global_step${n}`), { recursive: true });
    fs.writeFileSync(path.join(ck, 'latest'), `global_step${n}`);
    fs.writeFileSync(path.join(ck, 'trainer_state.json'), '{"log_history": []}');
  }
  const r = spawnSync(process.execPath, [CLI, 'run', 'out'], { cwd: dir, encoding: 'utf8', env: { ...process.env, COLUMNS: '80' } });
  assert.equal(r.stderr, '');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `3 checkpoints of one run:
  file  step  flags  warnings     ratio  state  path
     0     2      0         0  0.006138         out/checkpoint-2
     1     3      0         0  0.005259         out/checkpoint-3
     2     4      0         0  0.004841         out/checkpoint-4

0 → 1: continuous (worst 1 at slot 3 (l2.weight), power 0.9571, lr on 5 slots)
  lr 0.01 agrees with the groups' stored lr at step 2: 0.01
1 → 2: continuous (worst 1 at slot 0 (emb.weight), power 0.9939, lr on 5 slots)
  lr 0.01 agrees with the groups' stored lr at step 3: 0.01

verdict: one run, every pair continuous
`);
  const result = await run(path.join(dir, 'out'));
  assert.deepEqual(result.files.map((f) => path.basename(f.path)), ['checkpoint-2', 'checkpoint-3', 'checkpoint-4']);
  assert.equal(result.ok, true);
});
