// DeepSpeed conversions through the package and the CLI (docs/deepspeed.md "As PyTorch or
// TorchLean files", format.md 11.8): every "converts" entry of the manifest tests/c/deepspeed_seeds.py
// writes (DeepSpeed's own fixtures and the writer's folders). consolidate() writes the pair, which
// tests/c/ds_convert_check.py then loads and steps in torch and compares with the writer's values,
// the independent reconstruction and truth.pt; the CLI writes the same bytes; convert() of a folder
// to TLADAMF gives the bytes of the two-step path (the pair written, then converted with --state);
// refusals and usage errors with their exact texts.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { consolidate, consolidateTo, convert, CheckpointError } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = path.join(ROOT, 'tests/fixtures/deepspeed');
const CLI = path.join(ROOT, 'js/cli.js');
const seeds = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-ds-convert-seeds-'));
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/deepspeed_seeds.py'), FIXTURES, seeds], { stdio: 'ignore' });
const { converts } = JSON.parse(fs.readFileSync(path.join(seeds, 'manifest.json'), 'utf8'));
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-ds-convert-'));
const cli = (args, cwd = out) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, COLUMNS: '1000' } });
const valid = converts.filter((c) => !c.error);
const P = 'DeepSpeed: ';

test('consolidate() writes every folder\'s pair; in torch they load into the model and AdamW, equal the writer\'s values, the reconstruction and zero_to_fp32\'s rules, and one more step equals the step from truth.pt', async () => {
  assert.ok(valid.length >= 17);
  for (const c of valid) {
    fs.mkdirSync(path.join(out, c.name), { recursive: true });
    const { warnings } = await consolidate(c.dir, path.join(out, c.name, 'optimizer.pt'), path.join(out, c.name, 'model.pt'));
    assert.deepEqual(warnings, c.warnings ?? [], c.name);
  }
  const r = spawnSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/ds_convert_check.py'), seeds, out, FIXTURES], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^\d+ checks, 0 failed$/m);
});

test('the CLI writes the same bytes as consolidate() (from a save_dir, a tag folder, a Trainer checkpoint-N/), and says what it wrote', async () => {
  for (const c of valid.filter((x) => /real-zero2-w2$|conv-zero3-w8-subgroups|conv-zero2-w3-amsgrad/.test(x.name))) {
    const dir = path.join(out, `cli-${c.name}`);
    fs.mkdirSync(dir);
    const r = cli(['convert', c.dir, 'optimizer.pt', '--model', 'model.pt'], dir);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], `converted ${c.dir} to optimizer.pt and model.pt`);
    // the zips' folders are the files' stems, as consolidate() names them
    for (const f of ['optimizer.pt', 'model.pt']) assert.ok(fs.readFileSync(path.join(dir, f)).equals(fs.readFileSync(path.join(out, c.name, f))), `${c.name} ${f}`);
  }
  const r = cli(['convert', path.join(FIXTURES, 'zero2-w2'), 'opt.pt', '--model', 'm.pt']);
  assert.equal(r.status, 0);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[1], 'opt.pt: torch.save file, torch.optim state_dict, 7 parameters with state (float32), 1 group');
  assert.equal(lines[7], 'm.pt: torch.save file, the fp32 model: 11 tensors');
  assert.equal(lines[8], 'weights only: torch 1.13: yes');
  // a tag folder and a Trainer checkpoint-N/ holding a save_dir convert as their save_dir does
  const { cases } = JSON.parse(fs.readFileSync(path.join(seeds, 'manifest.json'), 'utf8'));
  const hf = cases.find((c) => c.name === 'hf-checkpoint-2').dir;
  for (const [dir, name] of [[path.join(FIXTURES, 'zero3-w2/global_step2'), 'real-zero3-w2'], [hf, 'real-zero2-w2']]) {
    const sub = fs.mkdtempSync(path.join(out, 'where-'));
    const w = cli(['convert', dir, 'optimizer.pt', '--model', 'model.pt'], sub);
    assert.equal(w.status, 0, w.stderr);
    for (const f of ['optimizer.pt', 'model.pt']) assert.ok(fs.readFileSync(path.join(sub, f)).equals(fs.readFileSync(path.join(out, name, f))), `${dir} ${f}`);
  }
  // a group stored in round-robin order: numbered in module order, and said
  const rr = valid.find((c) => c.name === 'conv-zero2-w2-round-robin');
  const w = cli(['convert', rr.dir, 'rr.pt', '--model', 'rr-model.pt']);
  assert.equal(w.status, 0, w.stderr);
  assert.equal(w.stderr, 'warning: DeepSpeed: group 0 is stored in round-robin order; numbered in module order\n');
  // the fp32 model as safetensors: the tied alias left out, the bytes consolidateTo() streams
  const st = cli(['convert', path.join(FIXTURES, 'zero2-w2'), 'opt2.pt', '--model', 'm.safetensors']);
  assert.equal(st.status, 0, st.stderr);
  assert.equal(st.stdout.trim().split('\n').at(-1), 'm.safetensors: safetensors file, the fp32 model: 10 tensors');
  const chunks = [];
  await consolidateTo(path.join(FIXTURES, 'zero2-w2'), 'model.safetensors', (b) => chunks.push(Buffer.from(b)));
  assert.ok(Buffer.concat(chunks).equals(fs.readFileSync(path.join(out, 'm.safetensors'))));
});

test('TorchLean from a folder: the bytes of the two-step path (the pair written, converted with --state), or its refusal', async () => {
  for (const c of valid) {
    const dir = path.join(out, c.name);
    const opts = ['--kind', 'adamw', '--weight-decay', '0.01', '--drop-amsgrad'];
    const direct = cli(['convert', c.dir, path.join(dir, 'direct.ckpt'), ...opts]);
    assert.equal(direct.status, 0, `${c.name}: ${direct.stderr}`);
    assert.equal(direct.stderr, (c.warnings ?? []).map((w) => `warning: ${w}\n`).join(''), c.name);
    const two = cli(['convert', path.join(dir, 'optimizer.pt'), path.join(dir, 'two.ckpt'), '--state', path.join(dir, 'model.pt'), ...opts]);
    assert.equal(two.status, 0, `${c.name}: ${two.stderr}`);
    assert.ok(fs.readFileSync(path.join(dir, 'direct.ckpt')).equals(fs.readFileSync(path.join(dir, 'two.ckpt'))), c.name);
    // the API writes the same file
    const res = await convert(c.dir, path.join(dir, 'api.ckpt'), { to: 'oldest', kind: 'adamw', weightDecay: 0.01, dropAmsgrad: true });
    assert.ok(fs.readFileSync(path.join(dir, 'api.ckpt')).equals(fs.readFileSync(path.join(dir, 'two.ckpt'))), c.name);
    assert.equal(res.pairError, undefined, c.name);
    assert.deepEqual(res.warnings, c.warnings ?? [], c.name);
  }
  // without --kind: torch 1.13's AdamW groups do not say their kind; the two paths refuse alike
  const real = valid.find((c) => c.name === 'real-zero2-w2');
  const direct = cli(['convert', real.dir, 'nokind.ckpt']);
  const two = cli(['convert', path.join(out, real.name, 'optimizer.pt'), 'nokind2.ckpt', '--state', path.join(out, real.name, 'model.pt')]);
  assert.equal(direct.status, 1);
  assert.equal(two.status, 1);
  const last = (s) => s.trim().split('\n').at(-1);
  assert.equal(last(direct.stderr), last(two.stderr));
  assert.equal(last(direct.stderr), 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it');
  assert.ok(!fs.existsSync(path.join(out, 'nokind.ckpt')));
  // decay and no-decay groups: --weight-decay X, as for a PyTorch pair
  const decay = valid.find((c) => c.name === 'conv-zero2-w3-decay-no-decay');
  const d1 = cli(['convert', decay.dir, 'decay.ckpt', '--kind', 'adamw']);
  const d2 = cli(['convert', path.join(out, decay.name, 'optimizer.pt'), 'decay2.ckpt', '--state', path.join(out, decay.name, 'model.pt'), '--kind', 'adamw']);
  assert.equal(d1.status, 1);
  assert.equal(last(d1.stderr), last(d2.stderr));
  assert.equal(last(d1.stderr), 'the groups\' weight decays differ (group 0: 0.01, group 1: 0): TorchLean\'s file holds one configuration: --weight-decay X gives every slot one');
  // frozen: [] tells the pairing nothing: the pair then holds only if the slots without state are not trained
  const told = await convert(real.dir, path.join(out, 'told.ckpt'), { to: 'oldest', kind: 'adamw', frozen: [] });
  assert.equal(told.pairError.code, 79);
  assert.equal(told.pairError.message, 'PyTorch: scale, frozen.weight and frozen.bias have no optimizer state: the pair holds only if the training code does not train them (frozen parameters, or buffers: --frozen scale,frozen.weight,frozen.bias says so); if it trains them, torch\'s load_state_dict refuses this state (loaded state dict contains a parameter group that doesn\'t match the size of optimizer\'s group)');
  // the API refuses alike, with the PyTorch route's code and text
  await assert.rejects(convert(real.dir, path.join(out, 'nokind3.ckpt'), { to: 'oldest' }), (err) => err instanceof CheckpointError && err.code === 50 &&
    err.message === 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it');
});

test('a refused folder: its failure with its text, from the API and the CLI, nothing written', async () => {
  for (const c of converts.filter((x) => x.error)) {
    await assert.rejects(consolidateTo(c.dir, 'optimizer', () => {}), (err) => err instanceof CheckpointError && err.code === c.error.code && err.message === c.error.message, c.name);
    await assert.rejects(convert(c.dir, path.join(out, `${c.name}.ckpt`), { to: 'oldest', kind: 'adamw' }), (err) => err.code === c.error.code && err.message === c.error.message, c.name);
    const r = cli(['convert', c.dir, `${c.name}.pt`, '--model', `${c.name}-model.pt`]);
    assert.equal(r.status, 1, c.name);
    // an invalid folder is named as such, then its failure; a refusal of the conversion is its text
    assert.equal(r.stderr, c.error.code === 50 ? `${c.error.message}\n` : `ckptscope: cannot convert ${c.dir}: it is not a valid checkpoint\n${c.error.message}\n`, c.name);
    const t = cli(['convert', c.dir, `${c.name}.ckpt`, '--kind', 'adamw']);
    assert.equal(t.status, 1, c.name);
    assert.equal(t.stderr, c.error.code === 50 ? `${c.error.message}\n` : `ckptscope: cannot convert ${c.dir}: it is not a valid checkpoint\n${c.error.message}\n`, c.name);
    assert.ok(!fs.existsSync(path.join(out, `${c.name}.pt`)) && !fs.existsSync(path.join(out, `${c.name}-model.pt`)), c.name);
  }
  const bias = converts.find((c) => c.name === 'conv-fusedadam-no-bias-correction');
  assert.equal(bias.error.message, `${P}group 0 has bias_correction False: no torch.optim or TorchLean Adam skips bias correction`);
});

test('usage: --model is needed with OPTIMIZER.pt, and goes with a DeepSpeed folder only', () => {
  const dir = path.join(FIXTURES, 'zero2-w2');
  let r = cli(['convert', dir, 'x.pt']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `ckptscope: convert ${dir} x.pt needs --model MODEL.pt: the fp32 model written beside the optimizer`);
  r = cli(['convert', dir, 'x.ckpt', '--model', 'm.pt']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --model goes with a torch.save OUT (.pt, .pth or .bin): convert DIR OPTIMIZER.pt --model MODEL.pt');
  r = cli(['convert', dir, 'x.pt', '--model', 'm.pt', '--kind', 'adamw']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --kind goes with a TLADAMF OUT: x.pt is written as a torch.save file (its extension)');
  r = cli(['convert', dir, 'x.ckpt', '--state', 'm.pt']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `ckptscope: --state does nothing here: ${dir} is a DeepSpeed checkpoint, which holds its own parameters (convert DIR OPTIMIZER.pt --model MODEL.pt, or DIR OUT.ckpt)`);
  r = cli(['convert', path.join(ROOT, 'docs/examples/model.json'), 'x.pt', '--model', 'm.pt']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --model goes with a DeepSpeed or DCP checkpoint folder IN: convert DIR OPTIMIZER.pt --model MODEL.pt');
});

test('consolidateTo() takes optimizer, model or model.safetensors', async () => {
  await assert.rejects(consolidateTo(path.join(FIXTURES, 'zero2-w2'), 'masters', () => {}), { name: 'RangeError', message: 'which must be \'optimizer\', \'model\' or \'model.safetensors\', got "masters"' });
});
