// Universal checkpoints through the package (docs/deepspeed.md "Universal checkpoints", format.md
// 11.7): DeepSpeed's own ds_to_universal output opened with open(dir); `convert DIR OUT_DIR --to
// universal` and convertToUniversal() writing the seeds' cases (tests/c/deepspeed_seeds.py's
// universal-write manifest), each compared by tests/c/universal_check.py (a restricted unpickler)
// with what ds_to_universal writes, read back valid, and the refusals and warnings in the core's
// words.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { open, convertToUniversal, universalPlan, health } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = path.join(ROOT, 'tests/fixtures/deepspeed');
const CLI = path.join(ROOT, 'js/cli.js');
const CHECK = path.join(ROOT, 'tests/c/universal_check.py');
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-universal-'));
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/deepspeed_seeds.py'), FIXTURES, out], { stdio: 'ignore' });
const { writes } = JSON.parse(fs.readFileSync(path.join(out, 'universal-write', 'manifest.json'), 'utf8'));
const byName = (name) => writes.find((w) => w.name === name);

const cli = (args, cwd = ROOT) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, COLUMNS: '1000' } });
const check = (written, expected) => spawnSync('/usr/bin/python3', [CHECK, written, expected], { encoding: 'utf8' });

test('DeepSpeed\'s own universal checkpoint opens as a DeepSpeed checkpoint: universal, valid, one fragment per tensor', async () => {
  const ck = await open(path.join(FIXTURES, 'zero2-w3-universal'), { stats: true });
  try {
    const r = ck.report;
    assert.deepEqual([r.family, r.ok, r.deepspeed.kind, r.deepspeed.universal, r.deepspeed.worldSize, r.deepspeed.tag],
      ['DeepSpeed', true, 'ZeRO-2', true, null, 'global_step2']);
    assert.equal(r.deepspeed.entries.length, 7);
    const l1 = r.deepspeed.entries.find((e) => e.name === 'l1.weight');
    assert.deepEqual(l1.fragments.map((f) => f.file), ['zero/l1.weight/fp32.pt']);
    assert.deepEqual(l1.keys, ['exp_avg', 'exp_avg_sq', 'fp32']);
    assert.equal(l1.step, 2);
    assert.equal(l1.master.count, l1.count);
    assert.deepEqual(r.deepspeed.files.filter((f) => f.role === 'optimizer').map((f) => f.name), ['zero/optimizer_state.pt']);
  } finally {
    ck.close();
  }
});

test('convert --to universal writes what ds_to_universal writes, and reads it back valid', () => {
  const w = byName('zero2-w3-for-universal');
  const dir = path.join(out, 'cli-fixture');
  fs.mkdirSync(dir);
  const r = cli(['convert', w.src, path.join(dir, 'global_step2'), '--to', 'universal']);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `wrote ${path.join(dir, 'global_step2')}: a DeepSpeed universal checkpoint of ${w.src} (7 parameters, 30 files)\n`
    + `${path.join(dir, 'latest_universal')} names global_step2\n`
    + `${dir}: read back as a DeepSpeed universal checkpoint: valid\n`);
  assert.equal(r.status, 0);
  assert.equal(fs.readFileSync(path.join(dir, 'latest_universal'), 'utf8'), 'global_step2');
  assert.deepEqual(fs.readdirSync(dir).sort(), ['global_step2', 'latest_universal']);
  const c = check(dir, w.expected);
  assert.equal(c.status, 0, c.stdout);
  assert.match(c.stdout, /^30 passed, 0 failed$/m);
});

test('convertToUniversal() writes every case of the seeds as ds_to_universal does, warnings in the core\'s words', async () => {
  for (const w of writes.filter((x) => x.expected && x.name !== 'zero2-w3-for-universal')) {
    const dir = path.join(out, 'api', w.name);
    fs.mkdirSync(dir, { recursive: true });
    const res = await convertToUniversal(w.src, path.join(dir, 'global_step2'));
    assert.deepEqual(res.warnings, w.warnings, w.name);
    assert.equal(res.tag, 'global_step2');
    const c = check(dir, w.expected);
    assert.equal(c.status, 0, `${w.name}: ${c.stdout}`);
    const ck = await open(dir);
    try {
      assert.deepEqual([ck.ok, ck.report.deepspeed.universal], [true, true], w.name);
    } finally {
      ck.close();
    }
  }
});

test('refusals: the core\'s texts, exit status 1, nothing written', async () => {
  for (const w of writes.filter((x) => x.error)) {
    const dir = path.join(out, 'refused', w.name);
    fs.mkdirSync(dir, { recursive: true });
    const r = cli(['convert', w.src, path.join(dir, 'global_step2'), '--to', 'universal']);
    assert.equal(r.status, 1, w.name);
    assert.equal(r.stderr, `${w.error.message}\n`, w.name);
    assert.deepEqual(fs.readdirSync(dir), [], w.name);
    await assert.rejects(universalPlan(w.src), (e) => e.code === w.error.code && e.message === w.error.message);
  }
});

test('the CLI\'s warnings go to stderr; OUT_DIR that exists, a file, other options are refused', () => {
  const w = byName('wu-no-info');
  const dir = path.join(out, 'cli-warn');
  fs.mkdirSync(dir);
  const r = cli(['convert', w.src, path.join(dir, 'u'), '--to', 'universal']);
  assert.equal(r.status, 0);
  assert.equal(r.stderr, `warning: ${w.warnings[0]}\n`);
  const again = cli(['convert', w.src, path.join(dir, 'u'), '--to', 'universal']);
  assert.equal(again.status, 2);
  assert.equal(again.stderr, `ckptscope: ${path.join(dir, 'u')} exists: convert --to universal writes a new folder\n`);
  const file = cli(['convert', path.join(w.src, 'global_step2', 'mp_rank_00_model_states.pt'), path.join(dir, 'v'), '--to', 'universal']);
  assert.equal(file.status, 2);
  assert.equal(file.stderr, `ckptscope: ${path.join(w.src, 'global_step2', 'mp_rank_00_model_states.pt')} is no DeepSpeed folder: convert --to universal reads a save_dir or a tag folder\n`);
  const opt = cli(['convert', w.src, path.join(dir, 'v'), '--to', 'universal', '--untie']);
  assert.equal(opt.status, 2);
  assert.match(opt.stderr, /^ckptscope: --untie does nothing with --to universal: convert DIR OUT_DIR --to universal takes no other option\n/);
});

test('inspect says universal; export and health read it as the save it came from, bit for bit', async () => {
  const universal = path.join(FIXTURES, 'zero2-w3-universal'), source = path.join(FIXTURES, 'zero2-w3-for-universal');
  const r = cli(['inspect', universal]);
  assert.equal(r.status, 0);
  assert.equal(r.stdout.split('\n')[1], 'deepspeed       ZeRO-2, universal (loads by name on any world size), float32 module, DeepSpeed 0.14.4, tag global_step2');
  const a = path.join(out, 'universal.safetensors'), b = path.join(out, 'source.safetensors');
  assert.equal(cli(['export', universal, a]).status, 0);
  assert.equal(cli(['export', source, b]).status, 0);
  assert.ok(fs.readFileSync(a).equals(fs.readFileSync(b)));
  assert.deepEqual(await health(universal), await health(source));
});
