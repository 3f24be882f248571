// A DCP folder paired by name with the model it will be loaded into (docs/distributed.md "Pairing
// with a model"), through the CLI and the package: torch 1.13's folder (tests/fixtures/dcp-torch113)
// against models tests/c/dcp_pair_models.py writes from the folder's own model part (torch.save
// state dicts, a safetensors file, the names alone). Each verdict's lines exactly, the exit
// status, and the API's result (codes, texts, note).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pair } from '../../js/index.js';

const BY_NAME = 90; // CKPT_E_BY_NAME (src/ckptscope.h)

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const FIXTURE = new URL('../fixtures/dcp-torch113', import.meta.url).pathname;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-pair-'));
const at = (...p) => path.join(tmp, ...p);
const PASS = 'DCP: the model pairs with this checkpoint by name: same names, shapes and ties';
const COMPARED = '  DCP: compared with the model by name: names, shapes and ties';

before(() => {
  fs.cpSync(FIXTURE, at('ckpt'), { recursive: true });
  execFileSync('/usr/bin/python3', [new URL('../c/dcp_pair_models.py', import.meta.url).pathname, at('ckpt'), tmp], { stdio: 'ignore' });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function cli(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: tmp, encoding: 'utf8', env: { ...process.env, COLUMNS: '200' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('check DIR --state MODEL: the folder\'s own model part pairs, in any order (DCP loads by name)', () => {
  for (const model of ['model.pt', 'reordered.pt']) {
    const r = cli('check', 'ckpt', '--state', model);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `ckpt pairs with ${model}\n  ${PASS}\n`);
  }
});

test('check DIR --state MODEL.safetensors and --names NAMES.json: the note says what was compared', () => {
  let r = cli('check', 'ckpt', '--state', 'model.safetensors');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'ckpt pairs with model.safetensors\n  DCP: the model pairs with this checkpoint by name: same names and shapes\n');
  r = cli('check', 'ckpt', '--names', 'names.json');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'ckpt pairs with names.json\n  DCP: the model pairs with this checkpoint by name: same names\n');
});

test('check DIR --state MODEL: names both ways, then shapes, every failure listed (exit 1)', () => {
  let r = cli('check', 'ckpt', '--state', 'missing.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, ['ckpt does not pair with missing.pt: 2 failures', '  DCP: extra.bias is in the model, not in the checkpoint',
    '  DCP: l2.bias is in the checkpoint, not in the model', COMPARED, ''].join('\n'));
  r = cli('check', 'ckpt', '--state', 'shapes.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, ['ckpt does not pair with shapes.pt: 2 failures', '  DCP: l1.bias is #[7] in the checkpoint, #[8] in the model',
    '  DCP: l2.weight is #[6, 7] in the checkpoint, #[7, 6] in the model', COMPARED, ''].join('\n'));
});

test('check DIR --state MODEL: a tie by storage whose saved values differ names the first element that differs', () => {
  const firsts = JSON.parse(fs.readFileSync(at('firsts.json'), 'utf8'));
  const r = cli('check', 'ckpt', '--state', 'tied.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, ['ckpt does not pair with tied.pt: 2 failures',
    `  DCP: ln.bias is tied to ln.weight in the model, but the checkpoint saves different values (first at element ${firsts['ln.bias']})`,
    `  DCP: frozen.bias is tied to l2.bias in the model, but the checkpoint saves different values (first at element ${firsts['frozen.bias']})`,
    COMPARED, ''].join('\n'));
});

test('check DIR --state MODEL --frozen NAMES: requires grad (a failure), frozen with state (a warning)', () => {
  const r = cli('check', 'ckpt', '--state', 'model.pt', '--frozen', 'frozen.bias,l1.bias');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, ['ckpt does not pair with model.pt: 1 failure',
    '  DCP: frozen.weight requires grad in the model but has no optimizer state in the checkpoint',
    '  DCP: compared with the model by name: names, shapes, ties and requires grad',
    'warning: DCP: l1.bias is frozen in the model but has optimizer state in the checkpoint', ''].join('\n'));
  const ok = cli('check', 'ckpt', '--state', 'model.pt', '--frozen', 'frozen.weight,frozen.bias');
  assert.equal(ok.status, 0, ok.stdout);
  assert.equal(ok.stdout, 'ckpt pairs with model.pt\n  DCP: the model pairs with this checkpoint by name: same names, shapes, ties and requires grad\n');
});

test('pair(dir, model) and pair(dir, null, {names}): the failures by code and text, the note', async () => {
  let r = await pair(at('ckpt'), at('missing.pt'));
  assert.equal(r.pairs, false);
  assert.deepEqual(r.failures.map((f) => [f.code, f.message]), [
    [BY_NAME, 'DCP: extra.bias is in the model, not in the checkpoint'],
    [BY_NAME, 'DCP: l2.bias is in the checkpoint, not in the model'],
  ]);
  assert.equal(r.note, COMPARED.trim());
  r = await pair(at('ckpt'), null, { names: JSON.parse(fs.readFileSync(at('names.json'), 'utf8')).slice(1) });
  assert.equal(r.pairs, false);
  assert.deepEqual(r.failures.map((f) => f.message), ['DCP: emb.weight is in the checkpoint, not in the model']);
});

// convert DIR OPTIMIZER.pt --model MODEL.pt (docs/distributed.md "Converting"): torch 1.13's folder
// as a consolidated torch.optim state dict and its model, which tests/c/dcp_consolidate_check.py
// loads with torch 1.13 against dcp_truth.py's reassembly (Adam.load_state_dict takes it); the
// refusals in the core's words (exit 1; usage errors exit 2), no stack trace, nothing left behind.
const CONSOLIDATE_CHECK = new URL('../c/dcp_consolidate_check.py', import.meta.url).pathname;

test('convert DIR OPTIMIZER.pt --model MODEL.pt: the consolidated pair, loaded by torch', () => {
  const r = cli('convert', 'ckpt', 'optimizer.pt', '--model', 'consolidated-model.pt');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, ['converted ckpt to optimizer.pt and consolidated-model.pt',
    'optimizer.pt: torch.save file, torch.optim state_dict, 7 parameters with state, 1 group',
    'consolidated-model.pt: torch.save file, the model: 9 tensors', ''].join('\n'));
  const py = spawnSync('/usr/bin/python3', [CONSOLIDATE_CHECK, '--files', at('ckpt'), at('optimizer.pt'), at('consolidated-model.pt')], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stdout + py.stderr);
  assert.equal(py.stdout, 'files: 7 ids, 7 with state, 1 groups, 9 model keys\n');
});

test('convert DIR OPTIMIZER.pt --model MODEL.pt: refusals, no stack trace, nothing written', () => {
  // an optimizer part alone: the core's refusal (format.md 12.8)
  fs.mkdirSync(at('alone'), { recursive: true });
  const py = spawnSync('/usr/bin/python3', ['-c', `
import sys; sys.path.insert(0, ${JSON.stringify(new URL('../c', import.meta.url).pathname)})
import dcp_seeds
model, trainable, osd = dcp_seeds.base_sd()
dcp_seeds.write(${JSON.stringify(at('alone'))}, {'optim': osd})
`], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  let r = cli('convert', 'alone', 'alone-opt.pt', '--model', 'alone-model.pt');
  assert.equal(r.status, 1);
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/);
  assert.equal(r.stderr, "DCP: alone holds optimizer state but no model part: give --state MODEL (a torch.save state dict, a safetensors file or the model's DCP folder)\n");
  assert.ok(!fs.existsSync(at('alone-opt.pt')) && !fs.existsSync(at('alone-model.pt')));
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => f.includes('.tmp') || f.startsWith('.alone')), []);
  r = cli('convert', 'ckpt', 'optimizer2.pt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: convert ckpt optimizer2.pt needs --model MODEL.pt: the model part written beside the optimizer');
  r = cli('convert', 'ckpt', 'optimizer2.pt', '--model', 'm.pt', '--kind', 'adam');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --kind does nothing here: ckpt is a distributed checkpoint (DCP): convert DIR OPTIMIZER.pt --model MODEL.pt');
});
