// convert optimizer.pt OUT_DIR --to dcp --state MODEL [--torch 1.13] (docs/distributed.md "Writing a
// DCP folder") through the CLI and the API: the seed of tests/c/dcp_write_check.py (torch 1.13's
// AdamW state of a small model with a tie, a frozen layer and buffers) written as both forms of
// folder, read back by ckptscope's own DCP reader, which that script then loads with torch 1.13's load_state_dict (dcp113/) and checks
// class by class and byte range by byte range (dcp2/); the API's bytes; the refusals, with no
// stack trace and nothing left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { convertToDcpTo } from '../../js/index.js';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const CHECK = fileURLToPath(new URL('../c/dcp_write_check.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const at = (name) => path.join(tmp, name);

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

const seed = spawnSync(PYTHON, [CHECK, 'seed', tmp], { encoding: 'utf8' });
assert.equal(seed.status, 0, seed.stderr);

test('both forms written by the CLI, then loaded by torch 1.13 and checked against torch >= 2.4\'s writer', () => {
  let r = run('convert', 'optimizer.pt', 'dcp113', '--to', 'dcp', '--state', 'model.pt', '--torch', '1.13');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'wrote dcp113: a DCP folder (torch 1.13) of optimizer.pt and model.pt: 43 keys (13 of the model), __0_0.distcp and .metadata\n'
    + 'dcp113: read back as a DCP folder: valid\n');
  r = run('convert', 'optimizer.pt', 'dcp2', '--to', 'dcp', '--state', 'model.pt');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'wrote dcp2: a DCP folder (torch >= 2.4) of optimizer.pt and model.pt: 43 keys (13 of the model), __0_0.distcp and .metadata\n'
    + 'dcp2: read back as a DCP folder: valid\n');
  for (const dir of ['dcp113', 'dcp2']) assert.deepEqual(fs.readdirSync(at(dir)).sort(), ['.metadata', '__0_0.distcp']);
  const py = spawnSync(PYTHON, [CHECK, 'check', tmp], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  assert.equal(py.stdout, "dcp113: 43 keys loaded by torch 1.13.0a0's load_state_dict, bit for bit\n"
    + 'dcp2: 43 keys, classes, fields and 43 byte ranges as torch >= 2.4 writes them\n');
});

test('the API streams the same bytes: the data file, then .metadata', async () => {
  const data = [], meta = [];
  const result = await convertToDcpTo(at('optimizer.pt'), (b) => data.push(b.slice()), (b) => meta.push(b.slice()), { state: at('model.pt'), torch: '1.13' });
  assert.deepEqual(result, { keys: 43, modelKeys: 13, tensors: 34, bytesItems: 9, dataBytes: result.dataBytes, dataFile: '__0_0.distcp' });
  const cli = fs.mkdtempSync(path.join(tmp, 'api-'));
  const r = run('convert', 'optimizer.pt', path.join(cli, 'out'), '--to', 'dcp', '--state', 'model.pt', '--torch', '1.13');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(Buffer.concat(data), fs.readFileSync(path.join(cli, 'out', '__0_0.distcp')));
  assert.deepEqual(Buffer.concat(meta), fs.readFileSync(path.join(cli, 'out', '.metadata')));
  assert.equal(result.dataBytes, Buffer.concat(data).length);
  await assert.rejects(convertToDcpTo(at('optimizer.pt'), () => {}, () => {}, {}), /state is required/);
  await assert.rejects(convertToDcpTo(at('optimizer.pt'), () => {}, () => {}, { state: at('model.pt'), torch: '2.1' }), /torch must be '1\.13' or '2'/);
});

test('refusals: the pairing\'s first failure, the wrong files, a folder in use; nothing left behind', () => {
  let r = run('convert', 'optimizer.pt', 'other', '--to', 'dcp', '--state', 'other.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'ckptscope: cannot convert optimizer.pt with other.pt\n'
    + "PyTorch: l1.weight is [8, 6] in the model, [7, 6] in the optimizer's state (index 1)\n"
    + "hint: convert places the optimizer's ids on the model's names as `check --state` pairs them: give the model the optimizer was saved with\n");
  assert.equal(fs.existsSync(at('other')), false);
  r = run('convert', 'model.pt', 'other', '--to', 'dcp', '--state', 'model.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'ckptscope: cannot convert model.pt with model.pt\n'
    + 'DCP: a DCP folder is written from a PyTorch optimizer file (optimizer.pt, a torch.save file holding an optimizer state dict)\n');
  assert.equal(fs.existsSync(at('other')), false);
  fs.writeFileSync(at('bad.pt'), 'not a checkpoint\n');
  r = run('convert', 'bad.pt', 'other', '--to', 'dcp', '--state', 'model.pt');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^ckptscope: cannot convert bad\.pt\n.*\nat byte 0\n/);
  r = run('convert', 'optimizer.pt', 'dcp2', '--to', 'dcp', '--state', 'model.pt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: dcp2 is not empty: convert --to dcp writes a new folder (or an empty one)\n');
  r = run('convert', 'optimizer.pt', 'other', '--to', 'dcp');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: convert --to dcp needs --state MODEL: the model's torch\.save state dict, whose names key the DCP folder\n/);
  r = run('convert', 'optimizer.pt', 'other', '--to', 'dcp', '--state', 'model.pt', '--torch', '2.1');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: --torch takes 1\.13 \(torch 1\.13's form; without it, torch >= 2\.4's\), not 2\.1\n/);
  r = run('convert', 'optimizer.pt', 'other.ckpt', '--state', 'model.pt', '--torch', '1.13');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: --torch goes with --to dcp/);
  assert.equal(fs.existsSync(at('other')), false);
});
