// DeepSpeed ZeRO checkpoints through the package (docs/deepspeed.md): a folder opened with
// open(dir) and inspect(dir) in Node (js/folder-source.js lays it out as one source, where the
// core says), the CLI's inspect and check of a save_dir, a tag folder, a Trainer checkpoint-N
// and each file alone, and the commands that do not read one yet. The folders are DeepSpeed's own
// (tests/fixtures/deepspeed) and those tests/c/deepspeed_seeds.py writes, with the verdicts,
// failures and warnings the core must give (the same manifest tests/c/test_deepspeed.c reads).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { open, inspect, pair } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = path.join(ROOT, 'tests/fixtures/deepspeed');
const CLI = path.join(ROOT, 'js/cli.js');
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-deepspeed-'));
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/deepspeed_seeds.py'), FIXTURES, out], { stdio: 'ignore' });
const { cases, pairings } = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
const byName = (name) => cases.find((c) => c.name === name);

const cli = (args, cwd = ROOT, columns = 80) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, COLUMNS: String(columns) } });
const errorOf = (e) => (e ? { code: e.code, message: e.message } : null);

test('every case opens with open(dir): its verdict, every failure and every warning, as the core gives them', async () => {
  assert.ok(cases.length > 50);
  for (const c of cases) {
    const ck = await open(c.dir, { stats: !!c.statsWarnings });
    try {
      const r = ck.report;
      assert.equal(r.family, 'DeepSpeed', c.name);
      assert.equal(r.ok, c.ok, c.name);
      assert.deepEqual(errorOf(r.ok ? null : r.error), c.error, c.name);
      assert.deepEqual(r.deepspeed.failures.map(errorOf), c.failures, c.name);
      assert.deepEqual(r.warnings, c.warnings, c.name);
      if (c.hint) assert.equal(r.error.hint, c.hint, c.name);
      if (c.kind) assert.equal(r.deepspeed.kind, c.kind, c.name);
      if (c.worldSize) assert.equal(r.deepspeed.worldSize, c.worldSize, c.name);
    } finally {
      ck.close();
    }
  }
});

/** Float32 values of a raw little-endian file (the seed script's). */
const floats = (file) => {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};

test('statistics over the fragments: each parameter\'s m, v and masters counted once, min and max those of its values', async () => {
  for (const name of ['zero2-w3', 'zero3-w3', 'w-zero2-w4-bf16', 'w-zero3-w3-subgroups', 'w-bf16-optimizer-w2']) {
    const c = byName(name);
    const ck = await open(c.dir, { stats: true });
    try {
      const r = ck.report;
      assert.equal(r.statistics, true);
      for (const e of r.deepspeed.entries) {
        const want = c.values[e.name];
        assert.ok(want, `${name} ${e.name}`);
        const entry = r.entries.find((x) => x.id === e.slot);
        for (const [key, stats] of [['exp_avg', entry.m], ['exp_avg_sq', entry.v], ['fp32', e.master]]) {
          const x = floats(want.keys[key]);
          let min = Infinity, max = -Infinity, negative = 0;
          for (const v of x) {
            min = Math.min(min, v);
            max = Math.max(max, v);
            if (v < 0) negative++;
          }
          assert.equal(stats.count, x.length, `${name} ${e.name} ${key}`);
          assert.equal(stats.min, min, `${name} ${e.name} ${key}`);
          assert.equal(stats.max, max, `${name} ${e.name} ${key}`);
          assert.equal(stats.negative, negative, `${name} ${e.name} ${key}`);
        }
        assert.equal(e.fragments.reduce((a, f) => a + f.count, 0), e.count);
        assert.ok(e.fragments.length <= r.deepspeed.worldSize);
      }
    } finally {
      ck.close();
    }
  }
});

test('inspect(dir) gives the report JSON: the schema of 11.4, an entry per trainable owner, and the deepspeed member', async () => {
  const r = await inspect(path.join(FIXTURES, 'zero2-w2'));
  assert.equal(r.family, 'DeepSpeed');
  assert.equal(r.kind, 'optimizer');
  assert.deepEqual(r.deepspeed.slots, ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias', 'head.weight']);
  assert.deepEqual(r.schema.requiresGrad, [true, true, true, true, true, true, true, false, false, true]);
  assert.deepEqual(r.schema.representatives, [0, 1, 2, 3, 4, 5, 6, null, null, 0]);
  assert.equal(r.entries.length, 7);
  const d = r.deepspeed;
  assert.deepEqual({ kind: d.kind, stage: d.stage, configStage: d.configStage, worldSize: d.worldSize, bf16: d.bf16, dtype: d.dtype, dsVersion: d.dsVersion, tag: d.tag, lone: d.lone, optimizerKind: d.optimizerKind, globalSteps: d.globalSteps, skippedSteps: d.skippedSteps },
    { kind: 'ZeRO-2', stage: 2, configStage: 2, worldSize: 2, bf16: false, dtype: 'float32', dsVersion: '0.14.4', tag: 'global_step2', lone: false, optimizerKind: null, globalSteps: 2, skippedSteps: 0 });
  assert.deepEqual(d.files.map((f) => [f.name, f.rank, f.role]), [['mp_rank_00_model_states.pt', null, 'model'], ['zero_pp_rank_0_mp_rank_00_optim_states.pt', 0, 'optimizer'], ['zero_pp_rank_1_mp_rank_00_optim_states.pt', 1, 'optimizer']]);
  assert.deepEqual(d.groups, [{ lr: 0.01, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01, amsgrad: false, params: ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias'], paddings: [0, 3], flatSize: 180, step: 2 }]);
  // l1.weight: elements 66..108 of the flat group; each rank holds 90 of them
  const l1 = d.entries.find((e) => e.name === 'l1.weight');
  assert.deepEqual(l1.fragments, [{ rank: 0, start: 66, count: 24, file: 'zero_pp_rank_0_mp_rank_00_optim_states.pt' }, { rank: 1, start: 0, count: 18, file: 'zero_pp_rank_1_mp_rank_00_optim_states.pt' }]);
  assert.deepEqual(l1.keys, ['exp_avg', 'exp_avg_sq', 'fp32']);
  assert.deepEqual(d.failures, []);
});

test('the CLI inspects a save_dir: its kind, files, groups, slots and fragments', () => {
  const r = cli(['inspect', 'zero2-w2'], FIXTURES);
  assert.equal(r.status, 0, r.stderr);
  // the source's size: the folder's listing, then its files (the core's layout)
  const size = JSON.parse(cli(['inspect', 'zero2-w2', '--json'], FIXTURES).stdout).size;
  assert.ok(size > 4159 + 4057 + 4185 + 12);
  assert.equal(r.stdout, `zero2-w2: DeepSpeed ZeRO checkpoint (DeepSpeed), float32, ${size.toLocaleString('en-US')} bytes
deepspeed       ZeRO-2, 2 ranks, float32 module, DeepSpeed 0.14.4, tag
                global_step2
files           mp_rank_00_model_states.pt,
                zero_pp_rank_0_mp_rank_00_optim_states.pt,
                zero_pp_rank_1_mp_rank_00_optim_states.pt
group 0         lr 0.01  betas 0.9, 0.999  eps 1e-8  wd 0.01  amsgrad no  7
                parameters, flat 180, paddings 0, 3  step 2
engine          global_steps 2, skipped_steps 0
parameters      10 slots, 8 trainable, 7 optimizer states, with tied (shared)
                slots

slot  name           shape    size  trainable  representative  step
   0  emb.weight     [11, 6]    66  yes        owner              2
   1  l1.weight      [7, 6]     42  yes        owner              2
   2  l1.bias        [7]         7  yes        owner              2
   3  ln.weight      [7]         7  yes        owner              2
   4  ln.bias        [7]         7  yes        owner              2
   5  l2.weight      [6, 7]     42  yes        owner              2
   6  l2.bias        [6]         6  yes        owner              2
   7  frozen.weight  [6, 6]     36  no         -
   8  frozen.bias    [6]         6  no         -
   9  head.weight    [11, 6]    66  yes        shares 0

slot  name        group  fragments (rank:start+count)
   0  emb.weight      0  0:0+66
   1  l1.weight       0  0:66+24 1:0+18
   2  l1.bias         0  1:18+7
   3  ln.weight       0  1:25+7
   4  ln.bias         0  1:32+7
   5  l2.weight       0  1:39+42
   6  l2.bias         0  1:81+6

verdict: valid
`);
});

test('the CLI inspects a tag folder and a Trainer checkpoint-N saved with DeepSpeed as the save_dir', () => {
  const tag = cli(['inspect', 'zero3-w3/global_step2', '--json'], FIXTURES);
  assert.equal(tag.status, 0, tag.stderr);
  const t = JSON.parse(tag.stdout);
  assert.deepEqual([t.family, t.deepspeed.kind, t.deepspeed.worldSize, t.deepspeed.tag, t.deepspeed.dir], ['DeepSpeed', 'ZeRO-3', 3, null, 'zero3-w3/global_step2']);
  const hf = byName('hf-checkpoint-2').dir;
  const r = cli(['inspect', hf, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual([j.family, j.ok, j.deepspeed.kind, j.deepspeed.tag, j.entries.length], ['DeepSpeed', true, 'ZeRO-2', 'global_step2', 7]);
});

test('check DIR: every failure of format.md 11.5 listed, the first the verdict; exit status 1', () => {
  const folders = path.join(out, 'folders');
  const r = cli(['check', 'c05-missing-ranks-zero3'], folders);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `c05-missing-ranks-zero3: a DeepSpeed ZeRO-3 checkpoint that fails 2 checks
DeepSpeed: rank 2 of 4 is missing: no zero_pp_rank_2_mp_rank_00_optim_states.pt
DeepSpeed: rank 3 of 4 is missing: no zero_pp_rank_3_mp_rank_00_model_states.pt
`);
  const ok = cli(['check', 'c06-stale-rank'], folders, 200);
  assert.equal(ok.status, 0);
  assert.equal(ok.stdout, 'c06-stale-rank: a DeepSpeed ZeRO-2 checkpoint that passes every check\n');
  assert.equal(ok.stderr, 'warning: DeepSpeed: zero_pp_rank_2_mp_rank_00_optim_states.pt is rank 2, but the checkpoint has 2 partitions: a stale file from an earlier save (zero_to_fp32 counts it and fails)\n');
});

test('check DIR whose latest holds only whitespace: the empty tag is written ""', () => {
  const dir = path.join(out, 'empty-latest');
  fs.cpSync(path.join(FIXTURES, 'zero2-w2'), dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'latest'), ' \n');
  const r = cli(['check', 'empty-latest'], out);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, 'empty-latest: a DeepSpeed checkpoint that fails a check\nDeepSpeed: latest names "", but empty-latest has no folder ""\n');
});

test('a file alone says what it is: a partition r of W, or model states (inspect)', () => {
  const p = cli(['inspect', 'zero_pp_rank_1_mp_rank_00_optim_states.pt'], path.join(FIXTURES, 'zero2-w2/global_step2'));
  assert.equal(p.status, 0, p.stderr);
  assert.equal(p.stdout, `zero_pp_rank_1_mp_rank_00_optim_states.pt: DeepSpeed ZeRO checkpoint
  (DeepSpeed), float32, 4,185 bytes
deepspeed       ZeRO-2, rank 1 of 2, DeepSpeed 0.14.4
group 0         lr 0.01  betas 0.9, 0.999  eps 1e-8  wd 0.01  amsgrad no  flat
                90, paddings 3  step 2
note            DeepSpeed: this file is partition 1 of 2 of a DeepSpeed ZeRO-2
                optimizer: each parameter's state is split across the 2 files of
                its folder; open its folder
warning: PyTorch: the file names Python callables that
  torch.load(weights_only=True) refuses:
  "deepspeed.runtime.fp16.loss_scaler.LossScaler", "__builtin__.getattr",
  "deepspeed.runtime.zero.config.ZeroStageEnum",
  "deepspeed.utils.tensor_fragment.fragment_address"

verdict: valid
`);
  const m = cli(['inspect', 'zero3-w2/global_step2/zero_pp_rank_0_mp_rank_00_model_states.pt', '--json'], FIXTURES);
  const j = JSON.parse(m.stdout);
  assert.equal(j.kind, 'state');
  assert.equal(j.deepspeed.note, 'DeepSpeed: zero_pp_rank_0_mp_rank_00_model_states.pt holds ZeRO-3 placeholders (0 elements per parameter): the weights are in the optimizer partitions; open its folder');
  assert.equal(j.tensors.length, 11);
});

test('commands that do not read a DeepSpeed checkpoint yet say so', () => {
  const r = cli(['health', 'zero2-w2'], FIXTURES, 200);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: zero2-w2 is a DeepSpeed checkpoint: health does not read one yet; ckptscope inspect and ckptscope check do\n');
  // a file alone: the core refuses (its state is a partition of fragments)
  const e = cli(['export', 'zero_pp_rank_0_mp_rank_00_optim_states.pt', path.join(out, 'x.safetensors')], path.join(FIXTURES, 'zero2-w2/global_step2'), 300);
  assert.equal(e.status, 1);
  assert.equal(e.stderr, 'a DeepSpeed ZeRO checkpoint\'s state lies in fragments across its files: inspect and check read it, and check pairs it with a model; health, runs, diff, export and conversion do not yet\n');
});

// ---- pairing with the model the user will load into (format.md 11.6) ----

test('pair(dir, model): every pairing case\'s verdict, failures, warnings and note, as the core gives them', async () => {
  assert.ok(pairings.length >= 30);
  for (const c of pairings) {
    const names = c.names ? JSON.parse(fs.readFileSync(c.names, 'utf8')) : null;
    const r = await pair(c.dir, c.model, { names, worldSize: c.worldSize });
    assert.equal(r.pairs, c.pairs, c.name);
    assert.deepEqual(r.failures.map(errorOf), c.failures, c.name);
    assert.deepEqual(r.warnings, c.warnings, c.name);
    assert.equal(r.note, c.note, c.name);
    assert.deepEqual(errorOf(r.pairs ? null : r.error), c.failures[0] ?? null, c.name);
  }
});

test('pair(dir, model): error.index is the checkpoint slot of the first failing name', async () => {
  const byPair = (name) => pairings.find((c) => c.name === name);
  const slots = (await inspect(byPair('zero2-same').dir)).deepspeed.slots;
  const reordered = await pair(byPair('zero2-reordered').dir, byPair('zero2-reordered').model);
  assert.equal(reordered.error.slot, slots.indexOf('blocks.0.weight'));
  assert.equal(reordered.error.index, slots.indexOf('blocks.0.weight'));
  const untied = await pair(byPair('zero2-untied').dir, byPair('zero2-untied').model);
  assert.equal(untied.error.slot, slots.indexOf('head.weight'));
  assert.equal(untied.error.index, slots.indexOf('head.weight'));
  const world = await pair(byPair('zero2-world').dir, byPair('zero2-world').model, { worldSize: 4 });
  assert.equal(world.error.slot, null);
  assert.equal(world.error.index, undefined);
  await assert.rejects(pair(byPair('zero2-same').dir, byPair('zero2-same').model, { worldSize: 0 }), { name: 'TypeError', message: 'pair: worldSize is a positive integer' });
});

const pairDir = (name) => pairings.find((c) => c.name === name).dir;
const pairFile = (...p) => path.join(out, 'pair', ...p);

test('check TAGDIR --state MODEL: the passing verdict says what was compared; exit status 0', () => {
  const r = cli(['check', pairDir('torch-net'), '--state', pairFile('torch', 'net.pt'), '--world-size', '2'], ROOT, 200);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${pairDir('torch-net')} pairs with ${pairFile('torch', 'net.pt')}
  DeepSpeed: the new model pairs with this checkpoint as DeepSpeed pairs it: same names, shapes, ties and order in every group
`);
  const n = cli(['check', pairDir('zero3-same'), '--names', pairFile('zero3', 'same.json')], ROOT, 200);
  assert.equal(n.status, 0, n.stderr);
  assert.equal(n.stdout, `${pairDir('zero3-same')} pairs with ${pairFile('zero3', 'same.json')}
  DeepSpeed: the new model pairs with this checkpoint as DeepSpeed pairs it: same names and order in every group
`);
  const st = cli(['check', pairDir('zero2-same'), '--state', pairFile('zero2', 'model.safetensors')], ROOT, 200);
  assert.equal(st.status, 0, st.stderr);
  assert.equal(st.stdout, `${pairDir('zero2-same')} pairs with ${pairFile('zero2', 'model.safetensors')}
  DeepSpeed: the new model pairs with this checkpoint as DeepSpeed pairs it: same names and shapes
warning: DeepSpeed: model.safetensors keeps no module order: the order DeepSpeed pairs by is not checked (give --names NAMES.json or a torch.save state dict)
`);
});

test('check TAGDIR --state MODEL: reordered same-shaped modules, a resized embedding, ties, names; exit status 1', () => {
  const swapped = cli(['check', pairDir('torch-net-swapped'), '--state', pairFile('torch', 'net-swapped.pt'), '--world-size', '3'], ROOT, 200);
  assert.equal(swapped.status, 1, swapped.stderr);
  assert.equal(swapped.stdout, `${pairDir('torch-net-swapped')} does not pair with ${pairFile('torch', 'net-swapped.pt')}: 2 failures
  DeepSpeed: group 0 position 1: DeepSpeed would load blocks.0.weight's moments and master weights into blocks.1.weight
  DeepSpeed: the checkpoint has 2 partitions; DeepSpeed refuses to load it on 3
  DeepSpeed: only the order or the world size differs: a universal checkpoint (ds_to_universal) loads by name on any world size, without retraining
`);
  const resized = cli(['check', pairDir('torch-net-resized'), '--state', pairFile('torch', 'net-resized.pt')], ROOT, 200);
  assert.equal(resized.status, 1, resized.stderr);
  assert.equal(resized.stdout, `${pairDir('torch-net-resized')} does not pair with ${pairFile('torch', 'net-resized.pt')}: 2 failures
  DeepSpeed: emb.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model
  DeepSpeed: head.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model
  DeepSpeed: compared with the new model as DeepSpeed pairs it: names, shapes, ties and order in every group
`);
  const tied = cli(['check', pairDir('zero3-tied'), '--state', pairFile('zero3', 'tied.pt')], ROOT, 200);
  assert.equal(tied.status, 1, tied.stderr);
  assert.equal(tied.stdout, `${pairDir('zero3-tied')} does not pair with ${pairFile('zero3', 'tied.pt')}: 1 failure
  DeepSpeed: blocks.1.weight is tied to blocks.0.weight in the new model, not in the checkpoint
  DeepSpeed: compared with the new model as DeepSpeed pairs it: names, shapes, ties and order in every group
`);
  const renamed = cli(['check', pairDir('zero2-renamed'), '--state', pairFile('zero2', 'renamed.pt')], ROOT, 200);
  assert.equal(renamed.status, 1, renamed.stderr);
  assert.equal(renamed.stdout, `${pairDir('zero2-renamed')} does not pair with ${pairFile('zero2', 'renamed.pt')}: 3 failures
  DeepSpeed: blocks.1.bias is in the checkpoint, not in the new model
  DeepSpeed: scale is in the checkpoint, not in the new model
  DeepSpeed: blocks.2.bias is in the new model, not in the checkpoint
  DeepSpeed: compared with the new model as DeepSpeed pairs it: names, shapes, ties and order in every group
`);
});

test('check TAGDIR: --world-size goes with a new model, and with a DeepSpeed checkpoint only; an invalid checkpoint never pairs', () => {
  // the usage error's text, then check's usage
  const said = (r) => r.stderr.slice(0, r.stderr.indexOf('usage:\n'));
  const alone = cli(['check', pairDir('zero2-same'), '--world-size', '2'], ROOT, 200);
  assert.equal(alone.status, 2);
  assert.equal(said(alone), 'ckptscope: --world-size goes with the model the checkpoint will be loaded into: --state MODEL or --names NAMES.json\n');
  const bad = cli(['check', pairDir('zero2-same'), '--state', pairFile('zero2', 'same.pt'), '--world-size', 'two'], ROOT, 200);
  assert.equal(bad.status, 2);
  assert.equal(said(bad), 'ckptscope: --world-size must be a positive whole number, got two\n');
  const pt = cli(['check', pairFile('zero2', 'same.pt'), '--world-size', '2'], ROOT, 200);
  assert.equal(pt.status, 2);
  assert.equal(said(pt), 'ckptscope: --world-size does nothing here: it is the world size a DeepSpeed checkpoint will be loaded on (TAGDIR --state MODEL)\n');
  const lone = cli(['check', path.join(pairDir('zero2-same'), 'zero_pp_rank_0_mp_rank_00_optim_states.pt'), '--state', pairFile('zero2', 'same.pt')], ROOT, 1000);
  assert.equal(lone.status, 2);
  assert.equal(lone.stderr, `ckptscope: cannot pair ${path.join(pairDir('zero2-same'), 'zero_pp_rank_0_mp_rank_00_optim_states.pt')} with ${pairFile('zero2', 'same.pt')}: DeepSpeed: pairing with a model reads the tag folder: open the folder, not one of its files\n`);
  const folders = path.join(out, 'folders');
  const invalid = cli(['check', 'c05-missing-rank', '--state', pairFile('zero2', 'same.pt')], folders, 200);
  assert.equal(invalid.status, 1);
  assert.equal(invalid.stdout, `c05-missing-rank: DeepSpeed: rank 1 of 3 is missing: no zero_pp_rank_1_mp_rank_00_optim_states.pt
c05-missing-rank does not pair with ${pairFile('zero2', 'same.pt')}: c05-missing-rank is invalid, and an invalid file never pairs
`);
});
