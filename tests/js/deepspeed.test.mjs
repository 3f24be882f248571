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
import { open, inspect, pair, setKind, CheckpointError } from '../../js/index.js';

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

test('convert reads a DeepSpeed folder (tests/js/deepspeed-convert.test.mjs); a file alone is refused', () => {
  const r = cli(['convert', 'zero2-w2', path.join(out, 'c.ckpt'), '--kind', 'adamw'], FIXTURES, 200);
  assert.equal(r.status, 0, r.stderr);
  // a file alone: the core refuses (its state is a partition of fragments)
  const e = cli(['export', 'zero_pp_rank_0_mp_rank_00_optim_states.pt', path.join(out, 'x.safetensors')], path.join(FIXTURES, 'zero2-w2/global_step2'), 300);
  assert.equal(e.status, 1);
  assert.equal(e.stderr, 'a DeepSpeed ZeRO checkpoint\'s state lies in fragments across its files: inspect and check read it, check pairs it with a model, health, export, run, diff and convert read its folder\n');
  assert.equal(fs.existsSync(path.join(out, 'x.safetensors')), false);
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

const REAL = ['zero1-w2', 'zero2-w2', 'zero2-w2-bf16', 'zero2-w3', 'zero3-w2', 'zero3-w2-bf16', 'zero3-w3'];
const CHECK = path.join(ROOT, 'tests/js/deepspeed_export_check.py');

test('export of DeepSpeed\'s own folders, ZeRO-1/2/3, float32 and bf16: every exp_avg, exp_avg_sq and fp32 master bit for bit the independent reconstruction, near truth.pt', () => {
  const dir = fs.mkdtempSync(path.join(out, 'export-'));
  const args = [];
  for (const name of REAL) {
    for (const format of ['safetensors', 'npz']) {
      const file = path.join(dir, `${name}.${format}`);
      const r = cli(['export', name, file], FIXTURES, 300);
      assert.equal(r.stderr, '', name);
      assert.equal(r.status, 0, name);
      assert.equal(r.stdout, `wrote ${file} (${fs.statSync(file).size} bytes, ${format})\n`, name);
      args.push(`${name}=${file}`);
    }
  }
  const got = JSON.parse(execFileSync('/usr/bin/python3', [CHECK, path.join(out, 'manifest.json'), path.join(FIXTURES, 'truth.pt'), ...args], { encoding: 'utf8' }));
  const params = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias'];
  for (const name of REAL) {
    for (const format of ['safetensors', 'npz']) {
      const g = got[`${name}:${format}`];
      assert.equal(g.family, 'DeepSpeed');
      // three tensors per trainable owner (the tied head.weight shares emb.weight's; frozen has none)
      assert.deepEqual(g.tensors, params.flatMap((p) => [p, `${p}.exp_avg`, `${p}.exp_avg_sq`]).sort());
      assert.equal(g.compared, 21, name);
      assert.equal(g.same, 21, `${name} ${format}: every tensor bit for bit`);
      // the ranks' reduction order (float32), bf16's rounding of the module's forward pass
      assert.ok(g.worst <= (name.includes('bf16') ? 1e-2 : 5e-8), `${name} ${format}: ${g.worst}`);
      assert.deepEqual(g.what, Object.fromEntries(params.flatMap((p) => [[`${p}.exp_avg`, 'exp_avg'], [`${p}.exp_avg_sq`, 'exp_avg_sq'], [p, 'fp32 master weights']])));
      assert.deepEqual(g.steps, Object.fromEntries(params.map((p) => [p, 2])));
      assert.deepEqual(g.names, ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias', 'head.weight']);
    }
  }
});

test('export of the ZeRO writer\'s folders (BF16_Optimizer, groups, sub-groups, any W) through the API: every tensor bit for bit the values written', async () => {
  const { exportTensors, exportNpy } = await import('../../js/index.js');
  let n = 0;
  for (const c of cases.filter((x) => x.ok && !x.real && Object.keys(x.values).length)) {
    const bytes = await exportTensors(c.dir, { format: 'safetensors' });
    const b = Buffer.from(bytes);
    const len = Number(b.readBigUInt64LE(0));
    const header = JSON.parse(b.subarray(8, 8 + len).toString('utf8'));
    const data = b.subarray(8 + len);
    const meta = header.__metadata__;
    assert.equal(meta.family, 'DeepSpeed', c.name);
    for (const [name, v] of Object.entries(c.values)) {
      for (const [key, raw] of Object.entries(v.keys)) {
        const t = header[key === 'fp32' ? name : `${name}.${key}`];
        assert.ok(t, `${c.name} ${name} ${key}`);
        assert.equal(t.dtype, 'F32');
        assert.deepEqual(t.shape, v.shape);
        assert.ok(data.subarray(t.data_offsets[0], t.data_offsets[1]).equals(fs.readFileSync(raw)), `${c.name} ${name} ${key}`);
      }
    }
    n++;
  }
  assert.ok(n > 15, `${n} cases`);
  // one payload as .npy: a parameter whose exp_avg lies on two ranks (l1.weight of zero2-w2)
  const c = byName('zero2-w2');
  const ck = await open(c.dir);
  const slot = ck.report.deepspeed.entries.find((e) => e.name === 'l1.weight');
  assert.equal(slot.fragments.length, 2);
  ck.close();
  const npy = Buffer.from(await exportNpy(c.dir, slot.slot, 'm'));
  const head = 10 + npy.readUInt16LE(8);
  assert.ok(npy.subarray(head).equals(fs.readFileSync(c.values['l1.weight'].keys.exp_avg)));
});

// ---- --kind: a folder whose ds_config names no optimizer (DeepSpeed's own fixtures: a client
// optimizer) takes the kind given; one it names is kept, another refused ----

test('health DIR --kind adam|adamw where ds_config names none: the groups take it (AdamW\'s decay term, Adam\'s none)', () => {
  const adamw = cli(['health', 'zero1-w2', '--kind', 'adamw'], FIXTURES);
  assert.equal(adamw.status, 0, adamw.stderr);
  assert.deepEqual(adamw.stdout.split('\n').slice(0, 3), ['zero1-w2: the next Adam step per slot at lr 0.01 (the optimizer\'s groups\')', 'AdamW\'s decoupled decay per unit θ (lr · weight decay): 1e-4', '']);
  const adam = cli(['health', 'zero1-w2', '--kind', 'adam'], FIXTURES);
  assert.equal(adam.status, 0, adam.stderr);
  assert.equal(adam.stderr, '');
  assert.equal(adam.stdout, adamw.stdout.replace('AdamW\'s decoupled decay per unit θ (lr · weight decay): 1e-4\n', ''));
  const j = JSON.parse(cli(['health', 'zero1-w2', '--kind', 'adam', '--json'], FIXTURES).stdout);
  for (const s of j.slots) if (s.update) assert.equal(s.decay, 0);
});

test('inspect, check and export DIR --kind: read whole and given the kind; the JSON says it was given, ds_config\'s stays null', async () => {
  const r = cli(['inspect', 'zero1-w2', '--kind', 'adam'], FIXTURES);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.split('\n').includes('optimizer       Adam (given: ds_config names none)'), r.stdout);
  const d = JSON.parse(cli(['inspect', 'zero1-w2', '--kind', 'adam', '--json'], FIXTURES).stdout).deepspeed;
  assert.deepEqual([d.optimizerKind, d.kindGiven], [null, 'adam']);
  const c = cli(['check', 'zero1-w2', '--kind', 'adamw'], FIXTURES);
  assert.equal(c.status, 0, c.stderr);
  assert.equal(c.stdout, 'zero1-w2: a DeepSpeed ZeRO-1 checkpoint that passes every check\n');
  // export: the configuration written says the kind given (without one: null)
  const config = (file) => {
    const b = fs.readFileSync(file);
    const n = Number(b.readBigUInt64LE(0));
    return JSON.parse(JSON.parse(b.subarray(8, 8 + n).toString()).__metadata__.config);
  };
  const [given, none] = [path.join(out, 'kind.safetensors'), path.join(out, 'nokind.safetensors')];
  const e = cli(['export', 'zero1-w2', given, '--kind', 'adam'], FIXTURES);
  assert.equal(e.status, 0, e.stderr);
  assert.equal(config(given).kind, 'adam');
  assert.equal(cli(['export', 'zero1-w2', none], FIXTURES).status, 0);
  assert.equal(config(none).kind, null);
  // the API: setKind on the folder's Checkpoint
  const ck = await open(path.join(FIXTURES, 'zero1-w2'));
  try {
    assert.equal(ck.report.deepspeed.kindGiven, null);
    await setKind(ck, 'adamw');
    assert.equal(ck.report.deepspeed.kindGiven, 'adamw');
  } finally {
    ck.close();
  }
});

test('--kind against a ds_config that names the optimizer: the same kept, another refused naming it; a model-states file alone holds none', async () => {
  const said = byName('w-kind-adam');   // type Adam, adam_w_mode unset: AdamW
  const same = cli(['health', said.dir, '--kind', 'adamw']), plain = cli(['health', said.dir]);
  assert.deepEqual([same.status, same.stdout, same.stderr], [plain.status, plain.stdout, plain.stderr]);
  const r = cli(['health', said.dir, '--kind', 'adam'], ROOT, 400);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `ckptscope: ${said.dir}: --kind adam contradicts the checkpoint: its ds_config.optimizer is AdamW\n`);
  const ck = await open(byName('w-kind-adam-no-w-mode').dir);
  try {
    await setKind(ck, 'adam');
    assert.equal(ck.report.deepspeed.kindGiven, null);
    await assert.rejects(setKind(ck, 'adamw'), (e) => {
      assert.ok(e instanceof CheckpointError);
      assert.equal(e.code, 39);
      assert.equal(e.message, '--kind adamw contradicts the checkpoint: its ds_config.optimizer is Adam');
      return true;
    });
  } finally {
    ck.close();
  }
  const lone = cli(['inspect', 'zero1-w2/global_step2/mp_rank_00_model_states.pt', '--kind', 'adam'], FIXTURES, 400);
  assert.equal(lone.status, 2);
  assert.equal(lone.stderr, 'ckptscope: zero1-w2/global_step2/mp_rank_00_model_states.pt: --kind is an optimizer\'s: this file holds none\n');
});

test('a client optimizer\'s groups that save decoupled_weight_decay say the kind: inspect names it, health follows it, --kind against it refused', () => {
  for (const [name, kind, other, said] of [['w-kind-groups-adamw', 'AdamW', 'adam', 'True (AdamW)'], ['w-kind-groups-adam', 'Adam', 'adamw', 'False (Adam)']]) {
    const dir = byName(name).dir;
    const i = cli(['inspect', dir, '--json']);
    const d = JSON.parse(i.stdout).deepspeed;
    assert.deepEqual([d.optimizerKind, d.kindSaidBy, d.kindGiven], [kind.toLowerCase(), 'param_groups', null]);
    assert.ok(cli(['inspect', dir]).stdout.includes(`\noptimizer       ${kind} (its groups' decoupled_weight_decay)\n`));
    const h = cli(['health', dir]);
    assert.equal(h.stdout.includes('\nAdamW\'s decoupled decay per unit θ (lr · weight decay): 1e-4\n'), kind === 'AdamW', h.stdout);
    const r = cli(['health', dir, '--kind', other], ROOT, 400);
    assert.equal(r.status, 2);
    assert.equal(r.stderr, `ckptscope: ${dir}: --kind ${other} contradicts the checkpoint: its param_groups say decoupled_weight_decay ${said}\n`);
  }
});

test('export of a DeepSpeed folder that fails a check: refused, nothing written', () => {
  const c = cases.find((x) => !x.ok && x.name === 'c11-world-size');
  const file = path.join(out, 'bad.npz');
  const r = cli(['export', c.dir, file], ROOT, 300);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `ckptscope: cannot export ${c.dir}: it is not a valid checkpoint\n${c.error.message}\n`);
  assert.equal(fs.existsSync(file), false);
});

test('health of a DeepSpeed folder: each parameter\'s next step from its fragments, its fp32 master weights as θ, at its groups\' lr, named by the module', () => {
  const r = cli(['health', 'zero2-w2'], FIXTURES, 100);
  assert.equal(r.status, 0);
  assert.equal(r.stderr, '');
  // ds_config names no optimizer and the groups save no decoupled_weight_decay: no decay term
  assert.equal(r.stdout, `zero2-w2: the next Adam step per slot at lr 0.01 (the optimizer's groups')

   slot  name           moments   step  rms(u)  max|u|   rms(θ)     ratio  v=0  bad m
      0  emb.weight     owner        2  0.6962  0.8594    1.012  0.006879
!     1  l1.weight      owner        2  0.6643  0.8596   0.2326   0.02857
!     2  l1.bias        owner        2  0.4819  0.7649   0.2421    0.0199
      3  ln.weight      owner        2  0.7776  0.8542   0.9808  0.007928
!     4  ln.bias        owner        2  0.7374  0.8562  0.01754    0.4204
!     5  l2.weight      owner        2  0.7639  0.8595   0.2173   0.03515
!     6  l2.bias        owner        2  0.5392  0.8526   0.2217   0.02432
      7  frozen.weight  frozen
      8  frozen.bias    frozen
      9  head.weight    shares 0     2  0.6962  0.8594    1.012  0.006879

warning: [l1.weight] parameter 1: update-to-weight ratio 0.0286 is above 1e-2 at lr 0.01
warning: [l1.bias] parameter 2: update-to-weight ratio 0.0199 is above 1e-2 at lr 0.01
warning: [ln.bias] parameter 4: update-to-weight ratio 0.42 is above 1e-2 at lr 0.01
warning: [l2.weight] parameter 5: update-to-weight ratio 0.0352 is above 1e-2 at lr 0.01
warning: [l2.bias] parameter 6: update-to-weight ratio 0.0243 is above 1e-2 at lr 0.01
verdict: healthy (5 ratio warnings: --strict makes them failures)
`);
  // the same numbers from every layout of the same two steps (ZeRO-1/2/3, 2 or 3 ranks): the fragments read in order
  const json = (name) => JSON.parse(cli(['health', name, '--json'], FIXTURES).stdout);
  const ref = json('zero2-w2');
  for (const name of ['zero1-w2', 'zero3-w2', 'zero2-w3', 'zero3-w3']) {
    const h = json(name);
    assert.equal(h.ok, true, name);
    assert.deepEqual(h.slots.map((s) => [s.slot, s.owner, s.count, s.step]), ref.slots.map((s) => [s.slot, s.owner, s.count, s.step]), name);
    for (const [k, s] of h.slots.entries()) {
      if (!s.update) continue;
      assert.ok(Math.abs(s.param.rms - ref.slots[k].param.rms) <= 1e-6 * ref.slots[k].param.rms, `${name} ${k}`);
      assert.ok(Math.abs(s.update.rms - ref.slots[k].update.rms) <= 1e-3 * ref.slots[k].update.rms, `${name} ${k}`);
    }
  }
  // a NaN in m, a negative v, read from their fragments: flagged, exit status 1
  const bad = cli(['health', byName('c29-nan').dir, '--json']);
  assert.equal(bad.status, 1);
  const flags = JSON.parse(bad.stdout).flags.filter((f) => f.slot === 2 || f.slot === 4).map((f) => [f.slot, f.flag, f.severity, f.message]);
  assert.deepEqual(flags, [[2, 'momentsNonFinite', 'failure', 'parameter 2: its moments hold 1 NaN and 0 infinite values'], [4, 'negativeV', 'failure', 'parameter 4: its second moment holds 1 negative value']]);
  // --state: a DeepSpeed folder holds its own parameters
  const e = cli(['health', 'zero2-w2', '--state', 'zero2-w3'], FIXTURES, 400);
  assert.equal(e.status, 2);
  assert.equal(e.stderr.split('\n')[0], 'ckptscope: zero2-w2 is a DeepSpeed checkpoint: it is inspected, exported and its health computed alone (its fp32 master weights are its parameters), and checked alone or with the model it will be loaded into (check TAGDIR --state MODEL)');
});


test('health(dir) through the API: one thread whatever the workers asked (a folder is no file a worker shares), the CLI\'s numbers', async () => {
  const { health } = await import('../../js/index.js');
  const dir = path.join(FIXTURES, 'zero3-w3');
  const h = await health(dir, null, { workers: 2 });
  const cliJson = JSON.parse(cli(['health', 'zero3-w3', '--json'], FIXTURES).stdout);
  assert.equal(h.ok, true);
  assert.deepEqual(h.slots.map((s) => [s.slot, s.param?.rms ?? null, s.update?.rms ?? null, s.ratio]), cliJson.slots.map((s) => [s.slot, s.param?.rms ?? null, s.update?.rms ?? null, s.ratio]));
});

test('inspect --stats of a ZeRO-3 folder on 3 ranks: each parameter\'s m and v as a TorchLean report\'s entries have them, and its masters, from its fragments', () => {
  const r = cli(['inspect', 'zero3-w3', '--stats'], FIXTURES, 100);
  assert.equal(r.status, 0);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `zero3-w3: DeepSpeed ZeRO checkpoint (DeepSpeed), float32, 26,395 bytes
deepspeed       ZeRO-3, 3 ranks, float32 module, DeepSpeed 0.14.4, tag global_step2
files           zero_pp_rank_0_mp_rank_00_model_states.pt,
                zero_pp_rank_0_mp_rank_00_optim_states.pt,
                zero_pp_rank_1_mp_rank_00_model_states.pt,
                zero_pp_rank_1_mp_rank_00_optim_states.pt,
                zero_pp_rank_2_mp_rank_00_model_states.pt, zero_pp_rank_2_mp_rank_00_optim_states.pt
group 0         lr 0.01  betas 0.9, 0.999  eps 1e-8  wd 0.01  amsgrad no  7 parameters, flat 183
                step 2
engine          global_steps 2, skipped_steps 0
parameters      10 slots, 8 trainable, 7 optimizer states, with tied (shared) slots

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

slot  name          m min   m max   m rms     v max     v rms  NaN/inf
   0  emb.weight  -0.1226  0.1595  0.0554  0.001598  4.063e-4
   1  l1.weight   -0.3457  0.3666  0.1759   0.01139  3.938e-3
   2  l1.bias     -0.1987  0.1694  0.1212  0.009083  4.099e-3
   3  ln.weight   0.05614   0.293   0.212  0.005069  3.356e-3
   4  ln.bias     -0.1686  0.1663  0.1326  0.002467  1.573e-3
   5  l2.weight   -0.5687  0.4437  0.2407    0.0203  5.908e-3
   6  l2.bias     -0.1324  0.4694  0.2135   0.01237  5.324e-3

slot  name        group/sub  fragments (rank:start+count)  master min  master max  master rms
   0  emb.weight        0/0  0:0+22 1:0+22 2:0+22              -2.096       2.547       1.012
   1  l1.weight         0/0  0:22+14 1:22+14 2:22+14          -0.4271       0.404      0.2326
   2  l1.bias           0/0  0:36+3 1:36+3 2:36+1             -0.4046    -0.08727      0.2421
   3  ln.weight         0/0  0:39+3 1:39+3 2:39+1              0.9799      0.9831      0.9808
   4  ln.bias           0/0  0:42+3 1:42+3 2:42+1            -0.01826     0.01997     0.01754
   5  l2.weight         0/0  0:45+14 1:45+14 2:45+14          -0.3587      0.3745      0.2173
   6  l2.bias           0/0  0:59+2 1:59+2 2:59+2             -0.3251      0.2822      0.2217

verdict: valid
`);
  // the same statistics as the ZeRO-2 folder of the same two steps on 2 ranks (another layout of the fragments)
  const two = cli(['inspect', 'zero2-w2', '--stats'], FIXTURES, 100).stdout;
  const table = (t) => t.slice(t.indexOf('slot  name          m min'), t.indexOf('\n\n', t.indexOf('slot  name          m min')));
  assert.equal(table(two), table(r.stdout));
});


/** A safetensors export's header (its tensors) and metadata. */
const stHeader = (file) => {
  const b = fs.readFileSync(file);
  const h = JSON.parse(b.subarray(8, 8 + Number(b.readBigUInt64LE(0))).toString('utf8'));
  const meta = h.__metadata__;
  delete h.__metadata__;
  return { tensors: Object.keys(h), meta };
};

test('export of a DeepSpeed folder: a group saved before its first step (its masters alone), an elastic checkpoint (no configuration), --names', () => {
  const dir = fs.mkdtempSync(path.join(out, 'export-cases-'));
  const run = (args) => {
    const r = cli(args, ROOT, 400);
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
    return stHeader(args[2]);
  };
  const none = run(['export', byName('c33-no-state').dir, path.join(dir, 'c33.safetensors')]);
  assert.deepEqual(none.tensors, ['a.weight.exp_avg', 'a.weight.exp_avg_sq', 'a.weight', 'a.bias', 'b.weight.exp_avg', 'b.weight.exp_avg_sq', 'b.weight', 'b.bias']);
  assert.deepEqual(JSON.parse(none.meta.tensors)['a.bias'], 'fp32 master weights');
  assert.deepEqual(JSON.parse(none.meta.steps), { 'a.weight': 2, 'a.bias': 0, 'b.weight': 2, 'b.bias': 0 });
  assert.deepEqual([none.meta.family, none.meta.version, none.meta.dtype], ['DeepSpeed', '0', 'float32']);
  const elastic = run(['export', byName('c32-elastic').dir, path.join(dir, 'c32.safetensors')]);
  assert.equal(elastic.meta.config, 'null');
  assert.deepEqual(JSON.parse(elastic.meta.groups), [{ lr: null, names: ['a.weight', 'a.bias', 'b.weight', 'b.bias'] }]);
  // --names: one per slot, in place of the module's
  const names = path.join(dir, 'names.json');
  fs.writeFileSync(names, JSON.stringify(Array.from({ length: 10 }, (_, i) => `p${i}`)));
  const renamed = run(['export', path.join(FIXTURES, 'zero2-w2'), path.join(dir, 'renamed.safetensors'), '--names', names]);
  assert.deepEqual(renamed.tensors.slice(0, 6), ['p0.exp_avg', 'p0.exp_avg_sq', 'p0', 'p1.exp_avg', 'p1.exp_avg_sq', 'p1']);
  assert.equal(renamed.tensors.length, 21);
});
