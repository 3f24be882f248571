// convert IN OUT.pt --lr X [--state STATE] (docs/pytorch.md "TorchLean to PyTorch") through the
// CLI: the torch.save file ckptscope's own reader sees (weights_only's allowlist, the group, the
// owners' steps), torch.load's view of it against the TLADAMF moments, and the refusals (no --lr,
// an invalid IN, a state file that does not pair) with OUT untouched. The writer's torch-level
// checks (torch's next step) are tests/c/torch_write_check.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect, readEntry } from '../../js/index.js';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../docs/examples/', import.meta.url));
const PYTHON = '/usr/bin/python3';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-torch-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const at = (name) => path.join(tmp, name);

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

// model.ckpt: AdamW, slots [owner, owner, frozen, tied to 0]; state.ckpt its model-state file;
// unhealthy-state.ckpt another model's (three tensors)
for (const [json, file] of [['model.json', 'model.ckpt'], ['state.json', 'state.ckpt'], ['unhealthy-state.json', 'other-state.ckpt']]) {
  const r = run('write', path.join(EXAMPLES, json), at(file));
  assert.equal(r.status, 0, r.stderr);
}

test('convert model.ckpt OUT.pt --lr: a torch.save file with weights_only\'s names only, the owners in slot order', async () => {
  const r = run('convert', 'model.ckpt', 'optimizer.pt', '--lr', '3e-4');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'optimizer.pt: torch.save file, AdamW state_dict, 2 parameters with state (float32), lr 0.0003\n'
    + 'weights only: torch 1.13: no, BINFLOAT at byte 872 of "optimizer/data.pkl": Unsupported operand 71\n'
    + 'weights only: torch 2.0 to 2.5: yes\n'
    + 'weights only: torch 2.6: yes\n'
    + 'weights only: torch 2.7 to 2.13: yes\n'
    + 'weights only: torch 2.14 and later: yes\n');
  const rep = await inspect(at('optimizer.pt'));
  assert.equal(rep.ok, true);
  assert.equal(rep.weightsOnly, true);
  assert.deepEqual(rep.globals, ['torch._utils._rebuild_tensor_v2', 'torch.FloatStorage', 'collections.OrderedDict']);
  assert.deepEqual(rep.refused, []);
  assert.equal(rep.container.prefix, 'optimizer');
  assert.equal(rep.optimizer.kind, 'adamw');
  assert.deepEqual(rep.optimizer.groups[0], { lr: 0.0003, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01, amsgrad: false, maximize: false, params: [0, 1], paramNames: null });
  assert.deepEqual(rep.entries.map((e) => [e.index, e.shape, e.dtype, e.step]), [[0, [4, 3], 'float32', 1200], [1, [3, 3], 'float32', 1200]]);
});

test('torch.load reads the moments bit for bit, index i the i-th owner slot', async () => {
  const r = run('convert', 'model.ckpt', 'bits.pt', '--lr', '0.001');
  assert.equal(r.status, 0, r.stderr);
  const py = spawnSync(PYTHON, ['-c', `
import sys, torch
sd = torch.load(sys.argv[1])
for i in sorted(sd['state']):
    s = sd['state'][i]
    print(i, s['step'].dtype, s['step'].item(), s['exp_avg'].numpy().tobytes().hex(), s['exp_avg_sq'].numpy().tobytes().hex())
print(sd['param_groups'][0]['params'], sd['param_groups'][0]['lr'], sd['param_groups'][0]['decoupled_weight_decay'])
`, at('bits.pt')], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const hex = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');
  const want = [];
  for (const [index, slot] of [[0, 0], [1, 1]]) {
    const e = await readEntry(at('model.ckpt'), slot);
    want.push(`${index} torch.float32 ${e.step}.0 ${hex(e.m)} ${hex(e.v)}`);
  }
  want.push('[0, 1] 0.001 True');
  assert.equal(py.stdout, want.join('\n') + '\n');
});

test('convert to .pt without --lr is refused, naming --lr; OUT is not written', () => {
  const r = run('convert', 'model.ckpt', 'no-lr.pt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'a PyTorch optimizer file holds the learning rate and TorchLean does not store it: give it with --lr X\n');
  assert.equal(fs.existsSync(at('no-lr.pt')), false);
});

test('an invalid IN is refused with its own diagnostic', () => {
  fs.writeFileSync(at('cut.ckpt'), fs.readFileSync(at('model.ckpt')).subarray(0, 300));
  const r = run('convert', 'cut.ckpt', 'cut.pt', '--lr', '1e-3');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'ckptscope: cannot convert cut.ckpt: it is not a valid checkpoint\n'
    + 'CUDA Adam checkpoint: truncated checkpoint (wanted 48 bytes, got 13)\n'
    + 'at byte 287, slot 0\n'
    + 'hint: the file ends at least 35 bytes early: an incomplete copy or download?\n');
  assert.equal(fs.existsSync(at('cut.pt')), false);
});

test('--state: a state file that pairs converts; one that does not is refused with the pairing\'s failure', () => {
  const ok = run('convert', 'model.ckpt', 'paired.pt', '--lr', '1e-3', '--state', 'state.ckpt');
  assert.equal(ok.status, 0, ok.stderr);
  const r = run('convert', 'model.ckpt', 'unpaired.pt', '--lr', '1e-3', '--state', 'other-state.ckpt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'ckptscope: cannot convert model.ckpt with --state other-state.ckpt\n'
    + 'state file has 3 tensors, the optimizer checkpoint has 4 parameter slots\n'
    + 'at byte 15\n'
    + 'hint: convert checks the pair as `check --state` does: give the model-state file of this checkpoint, or leave --state out\n');
  assert.equal(fs.existsSync(at('unpaired.pt')), false);
});

test('OUT\'s extension picks the direction: the other direction\'s options are usage errors', () => {
  const lr = run('convert', 'model.ckpt', 'v3.ckpt', '--to', '3', '--lr', '1');
  assert.equal(lr.status, 2);
  assert.equal(lr.stderr.split('\n')[0], 'ckptscope: --lr goes with a PyTorch OUT (.pt, .pth or .bin): convert IN OUT.pt --lr X [--state STATE]');
  const to = run('convert', 'model.ckpt', 'x.pth', '--lr', '1', '--to', '3');
  assert.equal(to.status, 2);
  assert.equal(to.stderr.split('\n')[0], 'ckptscope: --to goes with a TLADAMF OUT: x.pth is written as a torch.save file (its extension)');
  const bad = run('convert', 'model.ckpt', 'x.bin', '--lr', 'fast');
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.split('\n')[0], 'ckptscope: --lr takes a number, not fast');
});
