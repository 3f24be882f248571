// A Hugging Face Trainer's folders as PyTorch pairs (format.md 10.3, 10.5), on files torch 1.13
// makes at test time (tests/c/trainer_run_seeds.py): a checkpoint-N/ folder as FILE for inspect,
// check, health and export; --kind for an AdamW that torch 1.13 does not name, and
// training_args.bin's optim in a folder; run OUTPUT_DIR over the checkpoint-N folders by N, each
// recovered learning rate beside the one trainer_state.json logged for that update (at A's step
// before transformers 4.51, at B's from 4.51, by config.json). Exact texts and codes.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { open, pair, health, setKind, CheckpointError } from '../../js/index.js';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const SEEDS = new URL('../c/trainer_run_seeds.py', import.meta.url).pathname;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-trainer-run-'));
execFileSync('/usr/bin/python3', [SEEDS, dir], { stdio: 'ignore' });
const at = (f) => path.join(dir, f);
const facts = JSON.parse(fs.readFileSync(at('facts.json'), 'utf8'));
const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir });
/** The learning rate trainer_state.json logged at `step`, as the file holds it. */
const logged = (folder, step) => JSON.parse(fs.readFileSync(at(`${folder}/trainer_state.json`), 'utf8')).log_history.find((h) => h.step === step).learning_rate;
const PAIRS = (f) => [
  `${f}/optimizer.pt pairs with ${f}/pytorch_model.bin: same shapes, index by index; ties not compared (an optimizer saves none); the values are not compared: \`run\` with both steps' state files compares them`,
  'load_state_dict pairs by position: here it gives every index the parameter found for it',
];

test('torch 1.13\'s AdamW says no kind; setKind gives it, the pair\'s health then has its decay term', async () => {
  const o = await open(at('out/checkpoint-10/optimizer.pt'));
  const m = await open(at('out/checkpoint-10/pytorch_model.bin'));
  try {
    assert.deepEqual([o.report.optimizer.kind, o.report.optimizer.kindGiven], [null, false]);
    await setKind(o, 'adamw');
    assert.deepEqual([o.report.optimizer.kind, o.report.optimizer.kindGiven], ['adamw', true]);
    assert.equal((await pair(o, m)).pairs, true);
    const h = await health(o, m);
    assert.equal(h.lrFrom, 'file');
    for (const s of h.slots) assert.equal(s.decay, h.lr * 0.1);
  } finally {
    m.close();
    o.close();
  }
  // unknown kind: Adam's step, no decay term
  const h = await health(at('out/checkpoint-10/optimizer.pt'), at('out/checkpoint-10/pytorch_model.bin'));
  for (const s of h.slots) assert.equal(s.decay, 0);
});

test('a kind the file says is kept: another one is refused, naming --kind', async () => {
  const o = await open(at('said/checkpoint-10/optimizer.pt'));
  try {
    assert.equal(o.report.optimizer.kind, 'adam');
    await setKind(o, 'adam');
    assert.equal(o.report.optimizer.kindGiven, false);
    await assert.rejects(setKind(o, 'adamw'), (e) => {
      assert.ok(e instanceof CheckpointError);
      assert.equal(e.code, 39);
      assert.equal(e.message, '--kind adamw contradicts the file: its param_groups say decoupled_weight_decay False (Adam)');
      return true;
    });
    await assert.rejects(setKind(o, 'sgd'), { name: 'RangeError', message: "kind is 'adam' or 'adamw', got sgd" });
  } finally {
    o.close();
  }
  const m = await open(at('out/checkpoint-10/pytorch_model.bin'));
  try {
    await assert.rejects(setKind(m, 'adam'), { message: "--kind is an optimizer's: this file holds none" });
  } finally {
    m.close();
  }
  const r = cli('health', 'said/checkpoint-10', '--kind', 'adamw');
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, 'ckptscope: said/checkpoint-10/optimizer.pt: --kind adamw contradicts the file: its param_groups say decoupled_weight_decay False (Adam)\n');
  // training_args.bin's adamw_torch gives way to the file's own kind
  const j = JSON.parse(cli('health', 'said/checkpoint-10', '--json').stdout);
  for (const s of j.slots) assert.equal(s.decay, 0);
});

test('inspect checkpoint-N/: its optimizer paired with its model, the kind from training_args.bin', () => {
  const r = cli('inspect', 'out/checkpoint-10');
  assert.equal(r.status, 0);
  const lines = r.stdout.split('\n');
  assert.equal(lines[0], 'out/checkpoint-10/optimizer.pt: torch.save file (PyTorch), float32, 4,125 bytes');
  assert.equal(lines[2], 'optimizer       (the file itself): kind adamw, 1 group, 4 entries');
  // the weights-only lines, one per torch version read (format.md 10.2)
  const wo = lines.findIndex((l) => l.startsWith('weights only    '));
  assert.deepEqual(lines.slice(wo, wo + 6).map((l) => l.replace(/ at byte \d+ /, ' at byte N ')), [
    'weights only    torch 1.13: no, BINFLOAT at byte N of "optimizer/data.pkl":',
    '                  Unsupported operand 71',
    '                torch 2.0 to 2.5: yes',
    '                torch 2.6: yes',
    '                torch 2.7 to 2.13: yes',
    '                torch 2.14 and later: yes',
  ]);
  assert.deepEqual(lines.slice(15, 21), [
    'slot  name      shape   size  trainable  representative  step',
    '   0  0.weight  [8, 4]    32  yes        owner             10',
    '   1  0.bias    [8]        8  yes        owner             10',
    '   2  2.weight  [3, 8]    24  yes        owner             10',
    '   3  2.bias    [3]        3  yes        owner             10',
    '',
  ]);
  assert.deepEqual(lines.slice(21), ['verdict: valid', '', ...PAIRS('out/checkpoint-10'), '']);
  assert.equal(r.stderr, '');
  const json = JSON.parse(cli('inspect', 'out/checkpoint-10', '--json', '--kind', 'adam').stdout);
  assert.equal(json.optimizer.kind, 'adam');
  assert.equal(json.pair.pairs, true);
  // an optimizer whose training_args.bin names no AdamW keeps its kind unknown
  assert.equal(JSON.parse(cli('inspect', 'adam/checkpoint-10', '--json').stdout).optimizer.kind, null);
});

test('check and health of checkpoint-N/: the pair\'s verdict; AdamW\'s decay term in the lines', () => {
  const c = cli('check', 'out/checkpoint-10');
  assert.equal(c.status, 0);
  assert.equal(c.stdout, PAIRS('out/checkpoint-10').join('\n') + '\n');
  const h = cli('health', 'out/checkpoint-10');
  const lines = h.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 3), [
    'out/checkpoint-10/optimizer.pt with out/checkpoint-10/pytorch_model.bin: the next Adam step per slot at lr 0.0091 (the optimizer\'s groups\')',
    'consistency: |m| <= 7.27 * sqrt(v) for any gradient history with these betas',
    'AdamW\'s decoupled decay per unit θ (lr · weight decay): 9.1e-4',
  ]);
  const adam = cli('health', 'out/checkpoint-10', '--kind', 'adam').stdout.split('\n');
  assert.equal(adam[2], '');
  const j = JSON.parse(cli('health', 'out/checkpoint-10', '--json').stdout);
  assert.deepEqual(j.names, ['0.weight', '0.bias', '2.weight', '2.bias']);
  for (const s of j.slots) assert.equal(s.decay, j.lr * 0.1);
});

test('export checkpoint-N/ OUT: the moments under the model\'s names', async () => {
  const out = at('moments.safetensors');
  const r = cli('export', 'out/checkpoint-10', out);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `wrote ${out} (${fs.statSync(out).size} bytes, safetensors)\n`);
  const header = JSON.parse(fs.readFileSync(out).subarray(8, 8 + Number(fs.readFileSync(out).readBigUInt64LE(0))).toString());
  assert.deepEqual(Object.keys(header).filter((k) => k !== '__metadata__').sort(),
    ['0.bias.exp_avg', '0.bias.exp_avg_sq', '0.weight.exp_avg', '0.weight.exp_avg_sq', '2.bias.exp_avg', '2.bias.exp_avg_sq', '2.weight.exp_avg', '2.weight.exp_avg_sq']);
});

test('a folder that is not a Trainer checkpoint, a sharded model, --state with a folder: refused in words (exit 2)', () => {
  fs.mkdirSync(at('model-only/checkpoint-5'), { recursive: true });
  fs.copyFileSync(at('out/checkpoint-10/pytorch_model.bin'), at('model-only/checkpoint-5/pytorch_model.bin'));
  const e = cli('inspect', 'model-only/checkpoint-5');
  assert.equal(e.status, 2);
  assert.equal(e.stderr, 'ckptscope: model-only/checkpoint-5 holds no optimizer.pt: not a Trainer checkpoint folder\n');
  // a folder of none of the Trainer's files is a folder given for a file
  fs.mkdirSync(at('empty/checkpoint-5'), { recursive: true });
  assert.equal(cli('inspect', 'empty/checkpoint-5').stderr, 'ckptscope: empty/checkpoint-5 is a directory, not a checkpoint file\n');
  const s = cli('check', 'sharded/checkpoint-10');
  assert.equal(s.status, 2);
  assert.equal(s.stderr, 'ckptscope: sharded/checkpoint-10 holds a sharded model (sharded/checkpoint-10/model.safetensors.index.json): a model in shards is not paired with its optimizer: give one model file, OPT --state MODEL\n');
  const st = cli('health', 'out/checkpoint-10', '--state', 'out/checkpoint-10/pytorch_model.bin');
  assert.equal(st.status, 2);
  assert.equal(st.stderr.split('\n')[0], 'ckptscope: --state goes with an optimizer file: out/checkpoint-10 is a checkpoint folder, paired with its own model');
  const k = cli('export', 'out/checkpoint-10', 'x.npz', '--kind', 'sgd');
  assert.equal(k.status, 2);
  assert.equal(k.stderr.split('\n')[0], 'ckptscope: --kind takes adam or adamw, not sgd');
  const x = cli('check', 'out/checkpoint-10/optimizer.pt', '--expect', 'layout.json', '--kind', 'adam');
  assert.equal(x.status, 2);
  assert.equal(x.stderr.split('\n')[0], 'ckptscope: --kind does nothing here: the kind is that of an optimizer whose files do not say it: a PyTorch optimizer checked with its model (OPT --state MODEL, or a checkpoint folder), a DeepSpeed or DCP folder');
});

test('run OUTPUT_DIR: checkpoint-N folders by N, each optimizer with its own model; the one-step lr agrees with the logged one', () => {
  const r = cli('run', 'out');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, [
    '4 checkpoints of one run:',
    '  file  step  flags  warnings  ratio  state  path',
    '     0    10      0         0         yes    out/checkpoint-10',
    '     1    11      0         0         yes    out/checkpoint-11',
    '     2    20      0         0         yes    out/checkpoint-20',
    '     3   100      0         0         yes    out/checkpoint-100',
    '',
    '0 → 1: continuous (worst 1 at slot 0 (0.weight), power 1, lr on 4 slots)',
    '  lr 0.0091 agrees with the one logged at step 10: 0.0091',
    '1 → 2: continuous (worst 0.9975 at slot 0 (0.weight), power 1)',
    '2 → 3: continuous (worst 0.1871 at slot 0 (0.weight), power 1)',
    '',
    'verdict: one run, every pair continuous',
    '',
  ].join('\n'));
  assert.equal(r.stderr, '');
  const j = JSON.parse(cli('run', 'out', '--json').stdout);
  assert.deepEqual(j.files.map((f) => [f.path, f.step, f.state]), [10, 11, 20, 100].map((n) => [`out/checkpoint-${n}`, n, `out/checkpoint-${n}/pytorch_model.bin`]));
  assert.deepEqual(j.pairs.map((p) => p.loggedLr), [
    { step: 10, learningRate: logged('out/checkpoint-11', 10), agrees: true, entry: null },
    { step: 11, learningRate: logged('out/checkpoint-20', 11), agrees: null, entry: null },
    { step: 20, learningRate: logged('out/checkpoint-100', 20), agrees: null, entry: null },
  ]);
  // the rate torch used at step 11, recovered from the moments and the weights (AdamW's decay in)
  for (const s of j.pairs[0].slots) assert.ok(Math.abs(s.lr - facts.rate11) < 1e-5 * facts.rate11, `${s.lr}`);
});

test('run OUTPUT_DIR: a logged rate the step did not use, and the wrong kind, differ from it', () => {
  const r = cli('run', 'mislogged');
  assert.equal(r.status, 0);
  assert.deepEqual(r.stdout.split('\n').slice(5, 7), [
    '0 → 1: continuous (worst 1 at slot 0 (0.weight), power 1, lr on 4 slots)',
    '  lr 0.0091 DIFFERS from the one logged at step 10: 0.0182',
  ]);
  assert.deepEqual(JSON.parse(cli('run', 'mislogged', '--json').stdout).pairs[0].loggedLr, { step: 10, learningRate: logged('mislogged/checkpoint-11', 10), agrees: false, entry: null });
  // AdamW read as Adam: the decay is left out of the step, the rate comes back wrong
  assert.equal(JSON.parse(cli('run', 'out', '--json', '--kind', 'adam').stdout).pairs[0].loggedLr.agrees, false);
  // Adam, its training_args.bin naming another optimizer: the kind stays unknown, and no rate
  // comes back until it is given
  const unknown = cli('run', 'adam');
  assert.equal(unknown.status, 0);
  assert.equal(unknown.stdout.split('\n')[5], '0 → 1: continuous (worst 1 at slot 0 (0.weight), power 1)');
  assert.equal(unknown.stderr, "warning: every optimizer's kind is unknown (neither its file nor\n  training_args.bin says Adam or AdamW): no learning rate comes back; give\n  --kind adam|adamw\n");
  const j = JSON.parse(cli('run', 'adam', '--json').stdout);
  assert.deepEqual(j.pairs[0].slots.map((s) => s.lr), [null, null, null, null]);
  assert.equal(j.pairs[0].loggedLr.agrees, null);
  assert.equal(JSON.parse(cli('run', 'adam', '--json', '--kind', 'adam').stdout).pairs[0].loggedLr.agrees, true);
  assert.equal(JSON.parse(cli('run', 'adam', '--json', '--kind', 'adamw').stdout).pairs[0].loggedLr.agrees, false);
});

test('run OUTPUT_DIR: a scheduled run saved at every step, logged as the Trainer before 4.51 logs (after the scheduler\'s step), flags no pair', () => {
  const r = cli('run', 'scheduled');
  assert.equal(r.status, 0);
  assert.equal(r.stderr, '');
  const lines = r.stdout.split('\n');
  assert.equal(lines.at(-2), 'verdict: one run, every pair continuous');
  // each pair j → j + 1 recovers the rate of step j + 2, which the Trainer logged at step j + 1
  const rates = ['0.002', '0.003', '0.004', '0.005', '0.006', '0.007', '0.008', '0.009', '0.01', '0.0097', '0.0094',
    '0.0091', '0.0088', '0.0085', '0.0082', '0.0079', '0.0076', '0.0073', '0.007', '0.0067', '0.0064', '0.0061',
    '0.0058', '0.0055', '0.0052', '0.0049', '0.0046', '0.0043', '0.004'];
  assert.deepEqual(lines.filter((l) => l.startsWith('  lr ')), rates.map((x, j) => `  lr ${x} agrees with the one logged at step ${j + 1}: ${x}`));
  const pairLines = lines.filter((l) => / → /.test(l));
  assert.equal(pairLines.length, 29);
  pairLines.forEach((l, j) => assert.match(l, new RegExp(`^${j} → ${j + 1}: continuous \\(worst \\S+ at slot \\d \\(\\d\\.(weight|bias)\\), power 1, lr on 4 slots\\)$`)));
  const j = JSON.parse(cli('run', 'scheduled', '--json').stdout);
  assert.equal(j.ok, true);
  j.pairs.forEach((p, k) => {
    const step = k + 1;
    assert.deepEqual(p.loggedLr, { step, learningRate: logged('scheduled/checkpoint-30', step), agrees: true, entry: 'a' });
    // the rate used by step k + 2, recovered from the moments and the weights
    for (const s of p.slots) assert.ok(Math.abs(s.lr - facts.scheduled[k + 1]) < 1e-4 * facts.scheduled[k + 1], `${s.lr}`);
    // the rate logged at B's step is another step's: 3% or more apart, past the 1% that agrees
    const atB = logged('scheduled/checkpoint-30', step + 1);
    assert.ok(Math.abs(atB - p.loggedLr.learningRate) > 0.02 * Math.max(atB, p.loggedLr.learningRate));
  });
});

test('run OUTPUT_DIR: transformers 4.51 and later log the rate the step used, at B\'s step; config.json says which', () => {
  const r = cli('run', 'scheduled-4.51');
  assert.equal(r.status, 0);
  assert.equal(r.stderr, '');
  const lines = r.stdout.split('\n');
  assert.equal(lines.at(-2), 'verdict: one run, every pair continuous');
  // pair j → j + 1 (steps j + 1 → j + 2) recovers the rate step j + 2 used, logged at step j + 2
  const rates = ['0.002', '0.003', '0.004', '0.005', '0.006', '0.007', '0.008', '0.009', '0.01', '0.0097', '0.0094'];
  assert.deepEqual(lines.filter((l) => l.startsWith('  lr ')), rates.map((x, j) => `  lr ${x} agrees with the one logged at step ${j + 2}: ${x}`));
  const j = JSON.parse(cli('run', 'scheduled-4.51', '--json').stdout);
  j.pairs.forEach((p, k) => assert.deepEqual(p.loggedLr, { step: k + 2, learningRate: logged('scheduled-4.51/checkpoint-12', k + 2), agrees: true, entry: 'b' }));
  // the same folders said to be written by 4.46: the entry at A's step is another step's rate
  const old = path.join(dir, 'said-4.46');
  fs.cpSync(at('scheduled-4.51'), old, { recursive: true });
  for (const f of fs.readdirSync(old)) fs.writeFileSync(path.join(old, f, 'config.json'), JSON.stringify({ transformers_version: '4.46.0' }));
  const said = JSON.parse(cli('run', 'said-4.46', '--json').stdout);
  said.pairs.forEach((p, k) => assert.deepEqual(p.loggedLr, { step: k + 1, learningRate: logged('scheduled-4.51/checkpoint-12', k + 1), agrees: false, entry: 'a' }));
  assert.equal(cli('run', 'said-4.46').stdout.split('\n').filter((l) => l.startsWith('  lr '))[0], '  lr 0.002 DIFFERS from the one logged at step 1: 0.001');
  // no config.json: the entry of the two that agrees
  const none = path.join(dir, 'no-config');
  fs.cpSync(at('scheduled-4.51'), none, { recursive: true });
  for (const f of fs.readdirSync(none)) fs.rmSync(path.join(none, f, 'config.json'));
  const unknown = JSON.parse(cli('run', 'no-config', '--json').stdout);
  unknown.pairs.forEach((p, k) => assert.deepEqual(p.loggedLr, { step: k + 2, learningRate: logged('scheduled-4.51/checkpoint-12', k + 2), agrees: true, entry: null }));
});

test('diff A_DIR B_DIR: each checkpoint-N folder\'s optimizer on its own model\'s slots, named by the model', () => {
  const r = cli('diff', 'out/checkpoint-10', 'out/checkpoint-11');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, '');
  const lines = r.stdout.split('\n');
  assert.equal(lines[0], '12 differences between out/checkpoint-10 and out/checkpoint-11:');
  assert.equal(lines[1], '  [0.weight] parameter 0: step 10 vs 11');
  assert.deepEqual(lines.slice(1).filter((l) => / step /.test(l)), ['0.weight', '0.bias', '2.weight', '2.bias'].map((n, i) => `  [${n}] parameter ${i}: step 10 vs 11`));
  const same = cli('diff', 'out/checkpoint-10', 'out/checkpoint-10');
  assert.deepEqual([same.status, same.stdout], [0, 'no differences between out/checkpoint-10 and out/checkpoint-10\n']);
  const state = cli('diff', 'out/checkpoint-10', 'out/checkpoint-11', '--state', 'out/checkpoint-10/pytorch_model.bin');
  assert.equal(state.status, 2);
  assert.equal(state.stderr.split('\n')[0], 'ckptscope: --state goes with optimizer files: a checkpoint folder is compared with its own model');
});

test('run OUTPUT_DIR with a broken optimizer.pt: its folder named, its own diagnostic (exit 1)', () => {
  for (const n of [1, 2]) fs.mkdirSync(at(`broken/checkpoint-${n}`), { recursive: true });
  fs.writeFileSync(at('broken/checkpoint-1/optimizer.pt'), fs.readFileSync(at('out/checkpoint-10/optimizer.pt')).subarray(0, 1000));
  fs.copyFileSync(at('out/checkpoint-10/pytorch_model.bin'), at('broken/checkpoint-1/pytorch_model.bin'));
  for (const f of ['optimizer.pt', 'pytorch_model.bin']) fs.copyFileSync(at(`out/checkpoint-11/${f}`), at(`broken/checkpoint-2/${f}`));
  const r = cli('run', 'broken');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, 'ckptscope: broken/checkpoint-1: broken/checkpoint-1/optimizer.pt does not pair with broken/checkpoint-1/pytorch_model.bin\nzip: no end-of-central-directory record in the last 1000 bytes of the file\n');
});

test('run A_DIR B_DIR: checkpoint-N folders in the order given, each with its own model and trainer_state.json', () => {
  const r = cli('run', 'out/checkpoint-10', 'out/checkpoint-11');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, [
    '2 checkpoints of one run:',
    '  file  step  flags  warnings  ratio  state  path',
    '     0    10      0         0         yes    out/checkpoint-10',
    '     1    11      0         0         yes    out/checkpoint-11',
    '',
    '0 → 1: continuous (worst 1 at slot 0 (0.weight), power 1, lr on 4 slots)',
    '  lr 0.0091 agrees with the one logged at step 10: 0.0091',
    '',
    'verdict: one run, every pair continuous',
    '',
  ].join('\n'));
  assert.equal(r.stderr, '');
  // folders and files are not mixed; --state goes with files
  const mixed = cli('run', 'out/checkpoint-10', 'out/checkpoint-11/optimizer.pt');
  assert.equal(mixed.status, 2);
  assert.equal(mixed.stderr.split('\n')[0], 'ckptscope: run takes checkpoint files or checkpoint folders, not both: out/checkpoint-11/optimizer.pt is a file');
  const state = cli('run', 'out/checkpoint-10', 'out/checkpoint-11', '--state', 'out/checkpoint-10/pytorch_model.bin', 'out/checkpoint-11/pytorch_model.bin');
  assert.equal(state.status, 2);
  assert.equal(state.stderr.split('\n')[0], 'ckptscope: --state goes with checkpoint files: a checkpoint folder is paired with its own model');
});

test('convert checkpoint-N/ OUT: its optimizer on its model\'s slots, the kind training_args.bin says', async () => {
  const out = at('c10.ckpt');
  const r = cli('convert', 'out/checkpoint-10', out);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n')[0], `${out}: version 2 (float32), from out/checkpoint-10/optimizer.pt with out/checkpoint-10/pytorch_model.bin`);
  const ck = await open(out);
  try {
    assert.equal(ck.report.config.kind, 'adamw');
    assert.equal(ck.report.slotCount, 4);
  } finally {
    ck.close();
  }
});

test('the API\'s pair, health and inspect take a checkpoint-N/ folder; a folder of no Trainer is said to be one', async () => {
  const folder = at('out/checkpoint-10');
  const p = await pair(folder);
  assert.equal(p.pairs, true);
  const h = await health(folder);
  assert.equal(h.lrFrom, 'file');
  for (const s of h.slots) assert.equal(s.decay, h.lr * 0.1);   // AdamW: training_args.bin's kind
  const { inspect } = await import('../../js/index.js');
  const report = await inspect(folder);
  assert.equal(report.optimizer.kind, 'adamw');
  assert.equal(report.slotCount, 4);
  const other = at('said');   // a folder, but no Trainer checkpoint
  for (const call of [() => pair(other), () => health(other), () => inspect(other)]) {
    await assert.rejects(call(), { code: 'EISDIR', message: `${other} is a folder, not a checkpoint file (a Trainer checkpoint-N/ folder: inspect, pair and health take it)` });
  }
});
