// convert DIR OUT.ckpt for a DCP folder (docs/distributed.md "To TorchLean", format.md 12.8):
// TorchLean through the folder's consolidated pair in one step, the pair never written. Against
// the two-step path (convert DIR OPT.pt --model M.pt, then convert OPT.pt OUT.ckpt --state M.pt):
// the same bytes (cmp) through the CLI and the API, on torch 1.13's folder and folders of
// tests/c/dcp_seeds.py (tests/cases/dcp.json); the pair route's refusals unchanged, 12.8's first,
// in the core's words and code, with no stack trace and nothing written.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { convertTo } from '../../js/index.js';

const CONVERSION_LOSES = 50; // CKPT_E_CONVERSION_LOSES (src/ckptscope.h)
const TORCH_UNTRAINED = 79; // CKPT_E_TORCH_UNTRAINED

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const FIXTURE = new URL('../fixtures/dcp-torch113', import.meta.url).pathname;
const SEEDS = new URL('../c', import.meta.url).pathname;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-tladamf-'));
const at = (...p) => path.join(tmp, ...p);
// folders of the table: forms N, N23 and F, bfloat16 records, blocks of chunks, and one whose
// optimizer keeps state for a name no group lists
const FOLDERS = ['n', 'n23', 'f', 'bf16', 'blocks', 'state-without-group'];

before(() => {
  fs.cpSync(FIXTURE, at('ckpt'), { recursive: true });
  execFileSync('/usr/bin/python3', ['-c', `
import os, sys; sys.path.insert(0, ${JSON.stringify(SEEDS)})
import dcp_seeds
for name in ${JSON.stringify(FOLDERS.concat(['no-planner-data']))}:
    dcp_seeds.write_case(name, os.path.join(${JSON.stringify(tmp)}, name))
`], { stdio: 'ignore' });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function cli(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: tmp, encoding: 'utf8', env: { ...process.env, COLUMNS: '200' } });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The two-step path: the consolidated pair written, then converted as a PyTorch pair. */
function twoStep(dir, out, options) {
  const stem = `${dir}.two`;
  const a = cli('convert', dir, `${stem}-opt.pt`, '--model', `${stem}-model.pt`);
  assert.equal(a.status, 0, a.stderr);
  return cli('convert', `${stem}-opt.pt`, out, '--state', `${stem}-model.pt`, ...options);
}

const same = (a, b) => assert.ok(fs.readFileSync(at(a)).equals(fs.readFileSync(at(b))), `${a} and ${b} differ`);

test('convert DIR OUT.ckpt: the bytes of the two-step path, on every folder form', () => {
  for (const dir of FOLDERS) {
    const one = cli('convert', dir, `${dir}.ckpt`, '--kind', 'adamw');
    assert.equal(one.status, 0, `${dir}: ${one.stderr}`);
    const two = twoStep(dir, `${dir}.two.ckpt`, ['--kind', 'adamw']);
    assert.equal(two.status, 0, `${dir}: ${two.stderr}`);
    same(`${dir}.ckpt`, `${dir}.two.ckpt`);
  }
});

test('convert DIR OUT.ckpt on torch 1.13\'s folder: the pair route\'s refusals in turn (its groups say neither the kind nor eps), then the two-step path\'s bytes', () => {
  let r = cli('convert', 'ckpt', 'x.ckpt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it\n');
  r = cli('convert', 'ckpt', 'x.ckpt', '--kind', 'adamw');
  assert.equal(r.status, 1);
  // no eps stored: TorchLean's check of the configuration refuses it, as the two-step path's
  assert.equal(r.stderr, 'CUDA Adam checkpoint: `epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32\n');
  assert.ok(!fs.existsSync(at('x.ckpt')));
  const before = fs.readdirSync(tmp);
  r = cli('convert', 'ckpt', 'adamw.ckpt', '--kind', 'adamw', '--eps', '1e-8');
  assert.equal(r.status, 0, r.stderr);
  // the pair is read where it is needed: no intermediate file is written
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => !before.includes(f)), ['adamw.ckpt']);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, ['converted ckpt to adamw.ckpt: TLADAMF version 2, through its consolidated optimizer and model',
    'adamw.ckpt, per TorchLean reader:', '  v2         reads it', '  v2-lists   reads it', '  v2-v3      reads it',
    '  v2-v4      reads it', '  v2-v4-f32  reads it', '  v2-v5      reads it', ''].join('\n'));
  const two = twoStep('ckpt', 'adamw.two.ckpt', ['--kind', 'adamw', '--eps', '1e-8']);
  assert.equal(two.status, 0, two.stderr);
  same('adamw.ckpt', 'adamw.two.ckpt');
});

test('convertTo(DIR): the CLI\'s bytes; warnings, and the pair\'s condition as pairError', async () => {
  const chunks = [];
  const result = await convertTo(at('ckpt'), (b) => chunks.push(Buffer.from(b)), { to: 'oldest', kind: 'adamw', eps: 1e-8 });
  assert.ok(Buffer.concat(chunks).equals(fs.readFileSync(at('adamw.ckpt'))));
  assert.deepEqual(result.warnings, []);
  assert.equal(result.pairError, undefined);
  const loose = [];
  const r = await convertTo(at('state-without-group'), (b) => loose.push(Buffer.from(b)), { to: 'oldest', kind: 'adamw' });
  assert.ok(Buffer.concat(loose).equals(fs.readFileSync(at('state-without-group.ckpt'))));
  assert.equal(r.pairError.code, TORCH_UNTRAINED);
  assert.equal(r.pairError.message, "PyTorch: l2.bias has no optimizer state: the pair holds only if the training code does not train it (a frozen parameter, or a buffer: --frozen l2.bias says so); if it trains it, torch's load_state_dict refuses this state (loaded state dict contains a parameter group that doesn't match the size of optimizer's group)");
});

test('12.8\'s refusals first, in the core\'s words and code; the options that do nothing here; nothing written', async () => {
  const text = 'DCP: no-planner-data keeps no module order (no planner_data): give --names NAMES.json to number the parameters';
  let r = cli('convert', 'no-planner-data', 'np.ckpt', '--kind', 'adamw');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${text}\n`);
  assert.ok(!fs.existsSync(at('np.ckpt')));
  await assert.rejects(convertTo(at('no-planner-data'), () => {}, { to: 'oldest', kind: 'adamw' }),
    (err) => err.code === CONVERSION_LOSES && err.message === text.replace('no-planner-data', at('no-planner-data')));
  r = cli('convert', 'ckpt', 'x.ckpt', '--names', 'names.json');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --names does nothing here: ckpt is a distributed checkpoint (DCP), converted with its own model part: convert DIR OUT.ckpt (or convert DIR OPTIMIZER.pt --model MODEL.pt)');
  r = cli('convert', 'ckpt', 'x.ckpt', '--drop-random-counter');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --drop-random-counter does nothing here: ckpt is a distributed checkpoint (DCP): it holds no random counter (--random-counter N supplies one)');
  assert.ok(!fs.existsSync(at('x.ckpt')));
});
