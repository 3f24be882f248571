// A PyTorch optimizer and its model (format.md 10.4), on files torch makes at test time
// (tests/c/torch_pair_seeds.py): the slots from the model, ties from storage identity, the
// indices placed group by group or by param_names, the verdicts and their exact texts with
// error.index, PyTorch's positional pairing beside them; health and export on the pair's slots,
// compared with what torch itself holds.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { open, pair, health, HttpSource, BlobSource } from '../../js/index.js';
import { itemCount, itemStatsPacked, attachPacked } from '../../js/plumbing.js';
import { withFake, withFakeBlob } from './fake-sources.mjs';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const SEEDS = new URL('../c/torch_pair_seeds.py', import.meta.url).pathname;
const PY = '/usr/bin/python3';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-pytorch-pair-'));
execFileSync(PY, [SEEDS, dir], { stdio: 'ignore' });
const at = (f) => path.join(dir, f);
const facts = JSON.parse(fs.readFileSync(at('facts.json'), 'utf8'));
const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir });
// what a PyTorch pair compared: an optimizer saves no ties
const NOTE = 'same shapes, index by index; ties not compared (an optimizer saves none); the values are not compared: `run` with both steps\' state files compares them';
const TL_NOTE = 'same slots, same shapes, same ties; the values are not compared: `run` with both steps\' state files compares them';
const CANNOT_TELL = 'load_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell)';
const GROUP_SIZE = 'loaded state dict contains a parameter group that doesn\'t match the size of optimizer\'s group';
// the condition a pair holds on when slots without optimizer state may be trained
const untold = (names, hint = names.join(',')) => `PyTorch: ${names.length === 1 ? `${names[0]} has` : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} have`} no optimizer state: the pair holds only if the training code does not train ${names.length === 1 ? 'it (a frozen parameter, or a buffer' : 'them (frozen parameters, or buffers'}: --frozen ${hint} says so); if it trains ${names.length === 1 ? 'it' : 'them'}, torch's load_state_dict refuses this state (${GROUP_SIZE})`;

test('a Trainer-style AdamW in two groups pairs with its model: slots in model order, the tied lm_head shares wte; the float buffer, which a state dict does not tell from a parameter, leaves it untold', async () => {
  const o = await open(at('lm.opt.pt'));
  const m = await open(at('lm.model.bin'));
  try {
    assert.equal(o.summary.needsModel, true);
    assert.equal(o.summary.slotCount, null);
    const r = await pair(o, m);
    // every index placed, but mask has no state: a buffer, or a parameter the training code froze?
    assert.equal(r.pairs, null);
    assert.equal(r.ok, false);
    assert.deepEqual(r.failures, []);
    assert.deepEqual([r.error.code, r.error.message, r.error.slot], [79, untold(['mask']), 0]);
    assert.equal(r.note, NOTE);
    assert.deepEqual(r.warnings, []);
    const rep = o.report;
    assert.equal(rep.needsModel, false);
    assert.deepEqual(rep.pairing.slots, facts.lm.names);
    assert.equal(rep.slotCount, 18);
    const eff = rep.schema.effectiveRepresentatives;
    const slot = (name) => facts.lm.names.indexOf(name);
    assert.equal(eff[slot('lm_head.weight')], slot('wte.weight'));
    assert.equal(eff[slot('mask')], null);
    assert.deepEqual(rep.pairing.notInOptimizer, ['mask']);
    assert.deepEqual(rep.pairing.untold, ['mask']);
    // index i is the parameter torch numbered i (decay group first, then no decay)
    assert.deepEqual(rep.pairing.indices.map((x) => x.name), facts.lm.byIndex);
    assert.equal(rep.pairing.positionalKnown, false);
    assert.equal(rep.entries.length, 16);
    for (const e of rep.entries) assert.equal(e.step, 3);
  } finally {
    o.close();
    m.close();
  }
  const told = await pair(at('lm.opt.pt'), at('lm.model.bin'), { frozen: ['mask'] });
  assert.deepEqual([told.pairs, told.error, told.pytorch.untold, told.pytorch.notInOptimizer], [true, null, [], ['mask']]);
  const r = cli('check', 'lm.opt.pt', '--state', 'lm.model.bin');
  assert.equal(r.status, 3);
  assert.equal(r.stdout, `lm.opt.pt with lm.model.bin: cannot tell whether they pair\n  ${untold(['mask'])}\n${CANNOT_TELL}\nnot in the optimizer: mask\n`);
  assert.equal(r.stderr, '');
  const f = cli('check', 'lm.opt.pt', '--state', 'lm.model.bin', '--frozen', 'mask');
  assert.equal(f.status, 0);
  assert.equal(f.stdout, `lm.opt.pt pairs with lm.model.bin: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask\n`);
});

test('a state dict of Parameters (keep_vars=True) tells its buffers apart: the plain tensor beside them is a buffer, and the pair holds', async () => {
  const r = await pair(at('lm.opt.pt'), at('lm.keepvars.bin'));
  assert.deepEqual([r.pairs, r.error, r.pytorch.notInOptimizer, r.pytorch.untold], [true, null, ['mask'], []]);
  const c = cli('check', 'lm.opt.pt', '--state', 'lm.keepvars.bin');
  assert.equal(c.status, 0);
  assert.equal(c.stdout, `lm.opt.pt pairs with lm.keepvars.bin: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask\n`);
});

test('a file holding both pairs with itself: check FILE says it holds its model, and inspect shows the slots by name', () => {
  const r = cli('check', 'lm.both.pt');
  assert.equal(r.status, 3);
  assert.equal(r.stdout, `lm.both.pt holds its model: cannot tell whether they pair\n  ${untold(['mask'])}\n${CANNOT_TELL}\nnot in the optimizer: mask\n`);
  const told = cli('check', 'lm.both.pt', '--frozen', 'mask');
  assert.equal(told.status, 0);
  assert.equal(told.stdout, `lm.both.pt holds its model, and they pair: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask\n`);
  // a Lightning file: the model under state_dict, the optimizer under optimizer_states
  const cnn = cli('check', 'cnn.ckpt', '--frozen', 'conv1.weight,conv1.bias');
  assert.equal(cnn.status, 0);
  assert.equal(cnn.stdout, `cnn.ckpt holds its model, and they pair: ${NOTE}\nload_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell)\nnot in the optimizer (frozen or buffers): conv1.weight, conv1.bias\n`);
  const i = cli('inspect', 'lm.both.pt');
  assert.equal(i.status, 3);
  const lines = i.stdout.split('\n');
  assert.ok(lines.includes('parameters      18 slots, 17 trainable, 16 optimizer states, with tied (shared)'), i.stdout);
  assert.ok(lines.includes('  17  lm_head.weight   [11, 4]    44  yes        shares 1'), i.stdout);
  assert.ok(lines.includes('   0  mask             [3]         3  no         -'), i.stdout);
  assert.equal(lines.slice(-5).join('\n'), `lm.both.pt holds its model: cannot tell whether they pair\n  ${untold(['mask'])}\n${CANNOT_TELL}\nnot in the optimizer: mask\n`);
  const fi = cli('inspect', 'lm.both.pt', '--frozen', 'mask');
  assert.equal(fi.status, 0);
});

test('a resized embedding, reordered modules and a smaller model fail with their texts and error.index; what still fits is placed', async () => {
  const cases = [
    ['lm.resized.bin', ['PyTorch: wte.weight is [13, 4] in the model, [11, 4] in the optimizer\'s state (index 0)'], 67, 0],
    ['lm.reordered.bin', ['PyTorch: optimizer index 3 holds exp_avg #[4, 8], but no parameter of that shape lies between h.0.fc.weight and h.1.fc.weight in the model',
      'PyTorch: optimizer index 11 holds exp_avg #[4], but no parameter of that shape lies between h.1.ln.bias and h.1.fc.bias in the model'], 67, 3],
    ['lm.small.bin', [`PyTorch: the optimizer's groups hold 16 parameters, the model 11: torch's load_state_dict refuses this state (${GROUP_SIZE})`], 68, null],
  ];
  for (const [model, texts, code, index] of cases) {
    const r = await pair(at('lm.opt.pt'), at(model));
    assert.equal(r.pairs, false, model);
    assert.deepEqual(r.failures.map((f) => f.message), texts, model);
    assert.deepEqual([r.failures[0].code, r.failures[0].index ?? null], [code, index], model);
    assert.equal(r.error.message, texts[0]);
    const c = cli('check', 'lm.opt.pt', '--state', model);
    assert.equal(c.status, 1, model);
    assert.equal(c.stdout, `lm.opt.pt does not pair with ${model}: ${texts.length} failure${texts.length > 1 ? 's' : ''}\n${texts.map((t) => `  ${t}\n`).join('')}${CANNOT_TELL}\n`, model);
    assert.equal(c.stderr, '', model);
  }
  // the resized embedding leaves index 0 out: every other index is placed, the no-decay group too
  const r = await pair(at('lm.opt.pt'), at('lm.resized.bin'));
  const unplaced = r.pytorch.indices.filter((x) => x.slot === null).map((x) => x.index);
  assert.deepEqual(unplaced, [0]);
  assert.deepEqual(r.pytorch.indices.filter((x) => x.group === 1).map((x) => x.name), facts.lm.byIndex.slice(6));
});

test('one group of every parameter: PyTorch\'s positional pairing is shown beside the verdict, as load_state_dict would pair', () => {
  const ok = cli('check', 'mlp.opt.pt', '--state', 'mlp.model.bin');
  assert.equal(ok.status, 0);
  assert.equal(ok.stdout, `mlp.opt.pt pairs with mlp.model.bin: ${NOTE}\nload_state_dict pairs by position: here it gives every index the parameter found for it\n`);
  const bad = cli('check', 'mlp.opt.pt', '--state', 'mlp.swapped.bin');
  assert.equal(bad.status, 1);
  assert.equal(bad.stdout, [
    'mlp.opt.pt does not pair with mlp.swapped.bin: 1 failure',
    // the best alignment keeps l1 (the earliest of two as long): l2's first index is left out
    '  PyTorch: optimizer index 2 holds exp_avg #[5, 4], but no parameter of that shape lies between l1.bias and the end in the model',
    'load_state_dict pairs by position, without a word: 2 indices to another parameter than found',
    '  index 0 (l1.weight) -> l2.weight',
    '  index 1 (l1.bias) -> l2.bias',
    'load_state_dict gives index 2 to l1.weight, without a word',
    '',
  ].join('\n'));
  assert.equal(bad.stderr, '');
});

test('param_names place the indices by name: a renamed module fails naming the index and the name', async () => {
  const ok = await pair(at('named.opt.pt'), at('lm.model.bin'), { frozen: ['mask'] });
  assert.equal(ok.pairs, true);
  assert.deepEqual(ok.pytorch.indices.map((x) => x.name), facts.lm.byIndex);
  const r = await pair(at('named.opt.pt'), at('named.renamed.bin'));
  assert.deepEqual(r.failures.map((f) => [f.code, f.message, f.index]),
    [[69, 'PyTorch: optimizer index 14 is ln_f.weight in its group\'s param_names, which the model does not have', 14]]);
  // a name given as frozen takes no index; with one frozen too many, the count says it first
  const frozen = await pair(at('named.opt.pt'), at('lm.model.bin'), { frozen: ['ln_f.bias'] });
  assert.deepEqual(frozen.failures.map((f) => [f.code, f.message, f.index]),
    [[69, 'PyTorch: optimizer index 15 is ln_f.bias in its group\'s param_names, which is given as frozen', 15]]);
  const count = await pair(at('named.opt.pt'), at('lm.model.bin'), { frozen: ['mask', 'ln_f.bias'] });
  assert.deepEqual(count.failures.map((f) => [f.code, f.message, f.index ?? null]),
    [[68, `PyTorch: the optimizer's groups hold 16 parameters, the model 15 besides the 2 given as frozen: torch's load_state_dict refuses this state (${GROUP_SIZE})`, null]]);
});

test('a CNN: BatchNorm\'s buffers are no slots, the frozen conv is not in the optimizer, amsgrad, one group', async () => {
  const o = await open(at('cnn.opt.pt'));
  const m = await open(at('cnn.model.bin'));
  try {
    const r = await pair(o, m);
    // conv1 has no state: frozen by the training code, the files cannot say
    assert.deepEqual([r.pairs, r.error.message], [null, untold(['conv1.weight', 'conv1.bias'])]);
    assert.deepEqual(o.report.pairing.slots, facts.cnn.names.filter((n) => !/running_mean|running_var|num_batches_tracked/.test(n)));
    assert.deepEqual(o.report.pairing.notInOptimizer, ['conv1.weight', 'conv1.bias']);
    assert.deepEqual(o.report.schema.requiresGrad, [false, false, true, true, true, true, true, true]);
    assert.equal(m.summary.tensorCount, 8);
    assert.equal(o.summary.optimizer.groups[0].amsgrad, true);
  } finally {
    o.close();
    m.close();
  }
  const told = await pair(at('cnn.opt.pt'), at('cnn.model.bin'), { frozen: ['conv1.weight', 'conv1.bias'] });
  assert.equal(told.pairs, true);
  // health: the group's lr when --lr is not given; the frozen slots have no moments; what the
  // files cannot tell is said beside it
  const h = await health(at('cnn.opt.pt'), at('cnn.model.bin'));
  assert.equal(h.pairCondition, untold(['conv1.weight', 'conv1.bias']));
  assert.equal((await health(at('cnn.opt.pt'), at('cnn.model.bin'), { frozen: ['conv1.weight', 'conv1.bias'] })).pairCondition, null);
  assert.equal(h.lr, 0.002);
  assert.equal(h.lrFrom, 'file');
  assert.deepEqual(h.names, ['conv1.weight', 'conv1.bias', 'bn1.weight', 'bn1.bias', 'conv2.weight', 'conv2.bias', 'head.weight', 'head.bias']);
  assert.deepEqual(h.slots.map((s) => s.owner), [null, null, 2, 3, 4, 5, 6, 7]);
  assert.ok(h.slots.slice(2).every((s) => s.ratio > 0));
  // amsgrad: the next step divides by max_exp_avg_sq's root (torch's Adam), which here exceeds v
  const script = `
import json, sys, torch
sd = torch.load(sys.argv[1]); b1, b2 = sd['param_groups'][0]['betas']; eps = sd['param_groups'][0]['eps']
out = []
for i, s in sd['state'].items():
    t = float(s['step']) + 1
    m, vmax, v = s['exp_avg'].double(), s['max_exp_avg_sq'].double(), s['exp_avg_sq'].double()
    rms = lambda d: float(((m / (1 - b1 ** t)) / ((d / (1 - b2 ** t)).sqrt() + eps)).pow(2).mean().sqrt())
    out.append([rms(vmax), rms(v)])
print(json.dumps(out))`;
  const want = JSON.parse(execFileSync(PY, ['-c', script, at('cnn.opt.pt')], { encoding: 'utf8' }));
  h.slots.slice(2).forEach((s, k) => {
    assert.ok(Math.abs(s.update.rms - want[k][0]) <= 1e-6 * want[k][0], `slot ${s.slot}: ${s.update.rms} vs ${want[k][0]}`);
  });
  assert.ok(want.some(([withMax, withV]) => Math.abs(withMax - withV) > 1e-3 * withMax), 'v fell below its maximum somewhere');
  const c = cli('health', 'cnn.opt.pt', '--state', 'cnn.model.bin');
  assert.equal(c.status, 0);
  assert.equal(c.stdout.split('\n')[1], `cannot tell whether cnn.model.bin pairs with cnn.opt.pt (its parameters are used): ${untold(['conv1.weight', 'conv1.bias'])}`);
});

test('the paired JSON report: names, and one list of entries by slot, each with its index, name, group, shape, dtype and amsgrad\'s vmax', () => {
  const r = cli('inspect', 'cnn.opt.pt', '--state', 'cnn.model.bin', '--json', '--stats', '--frozen', 'conv1.weight,conv1.bias');
  assert.equal(r.status, 0, r.stderr);
  const rep = JSON.parse(r.stdout);
  const names = ['conv1.weight', 'conv1.bias', 'bn1.weight', 'bn1.bias', 'conv2.weight', 'conv2.bias', 'head.weight', 'head.bias'];
  assert.deepEqual(rep.names, names);
  assert.equal('indexEntries' in rep, false);
  assert.equal('indexCount' in rep, false);
  const script = `
import json, sys, torch
sd = torch.load(sys.argv[1])
print(json.dumps({str(i): {'shape': list(s['exp_avg'].shape), 'step': int(s['step']), 'mmax': float(s['exp_avg'].max()),
                           'vmax': float(s['exp_avg_sq'].max()), 'maxmax': float(s['max_exp_avg_sq'].max())} for i, s in sd['state'].items()}))`;
  const torch = JSON.parse(execFileSync(PY, ['-c', script, at('cnn.opt.pt')], { encoding: 'utf8' }));
  assert.deepEqual(rep.entries.map((e) => [e.id, e.index, e.name, e.group, e.dtype, e.other]),
    [2, 3, 4, 5, 6, 7].map((slot, index) => [slot, index, names[slot], 0, 'float32', []]));
  for (const e of rep.entries) {
    const t = torch[String(e.index)];
    assert.deepEqual([e.shape, e.step, e.m.max, e.v.max, e.vmax.max], [t.shape, t.step, t.mmax, t.vmax, t.maxmax], e.name);
  }
  // without --stats: the same entries, without statistics; the API's report is the CLI's
  const plain = JSON.parse(cli('inspect', 'cnn.opt.pt', '--state', 'cnn.model.bin', '--json', '--frozen', 'conv1.weight,conv1.bias').stdout);
  assert.deepEqual(plain.entries[0], { id: 2, step: 7, count: 2, offset: rep.entries[0].offset, index: 0, name: 'bn1.weight', group: 0, shape: [2], dtype: 'float32', other: [] });
});

test('inspect --stats of a paired amsgrad optimizer: the vmax column by slot', () => {
  const r = cli('inspect', 'cnn.opt.pt', '--state', 'cnn.model.bin', '--stats', '--frozen', 'conv1.weight,conv1.bias');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const at = lines.indexOf('slot  name             m min    m max    m rms    v max    v rms  vmax max');
  assert.ok(at > 0, r.stdout);
  assert.equal(lines[at + 1], '   2  bn1.weight    -0.06734  0.05747   0.0626  0.03584  0.02628   0.05753');
  assert.equal(lines.slice(at + 1).filter((l) => /^\s+\d+  /.test(l)).length, 6);
});

test('export of an amsgrad Adam restores it in torch: max_exp_avg_sq beside the moments, the groups\' configuration and lr', () => {
  const out = at('cnn.moments.safetensors');
  const e = cli('export', 'cnn.opt.pt', out, '--state', 'cnn.model.bin');
  assert.equal(e.status, 0, e.stderr);
  // the metadata and tensors as the safetensors spec has them, read by Python alone; the optimizer
  // rebuilt from them and loaded into torch is the saved one, bit for bit
  const script = `
import json, struct, sys, torch
raw = open(sys.argv[1], 'rb').read(); (n,) = struct.unpack('<Q', raw[:8]); header = json.loads(raw[8:8 + n]); data = raw[8 + n:]
meta = header.pop('__metadata__')
t = lambda name: torch.frombuffer(bytearray(data[header[name]['data_offsets'][0]:header[name]['data_offsets'][1]]), dtype=torch.float32).reshape(header[name]['shape'])
groups, steps = json.loads(meta['groups']), json.loads(meta['steps'])
names = [n for g in groups for n in g['names']]
state = {i: {'step': torch.tensor(float(steps[n])), 'exp_avg': t(n + '.exp_avg'), 'exp_avg_sq': t(n + '.exp_avg_sq'),
             'max_exp_avg_sq': t(n + '.max_exp_avg_sq')} for i, n in enumerate(names)}
params, at = [], 0
for g in groups:
    params.append({'lr': g['lr'], 'betas': (g['beta1'], g['beta2']), 'eps': g['epsilon'], 'weight_decay': g['weightDecay'],
                   'amsgrad': True, 'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False,
                   'fused': False, 'params': list(range(at, at + len(g['names'])))})
    at += len(g['names'])
saved = torch.load(sys.argv[2])
same = len(saved['state']) == len(state) and all(
    torch.equal(saved['state'][i][k], state[i][k]) for i in state for k in ('exp_avg', 'exp_avg_sq', 'max_exp_avg_sq', 'step'))
g0, p0 = saved['param_groups'][0], params[0]
same = same and all(g0[k] == p0[k] for k in ('lr', 'betas', 'eps', 'weight_decay', 'amsgrad', 'params'))
print(json.dumps({'same': same, 'config': json.loads(meta['config'])['kind'], 'tensors': len(header)}))`;
  const got = JSON.parse(execFileSync(PY, ['-c', script, out, at('cnn.opt.pt')], { encoding: 'utf8' }));
  assert.deepEqual(got, { same: true, config: null, tensors: 18 });
});

test('export of a model state dict alone: every tensor under its name, buffers too, bit for bit as torch loads them', () => {
  for (const ext of ['npz', 'safetensors']) {
    const out = at(`cnn.model.${ext}`);
    const e = cli('export', 'cnn.model.bin', out);
    assert.equal(e.status, 0, e.stderr);
    assert.equal(e.stderr, '');
    assert.equal(e.stdout, `wrote ${out} (${fs.statSync(out).size} bytes, ${ext})\n`);
  }
  const script = `
import json, struct, sys, numpy as np, torch
sd = torch.load(sys.argv[1])
z = np.load(sys.argv[2])
raw = open(sys.argv[3], 'rb').read(); (n,) = struct.unpack('<Q', raw[:8]); header = json.loads(raw[8:8 + n]); header.pop('__metadata__')
def same(name):
    t = sd[name]
    a = t.numpy()
    h = header[name]
    b = np.frombuffer(raw[8 + n + h['data_offsets'][0]:8 + n + h['data_offsets'][1]], dtype=a.dtype).reshape(h['shape'])
    return np.array_equal(z[name], a) and z[name].dtype == a.dtype and np.array_equal(b, a)
print(json.dumps({'names': list(sd.keys()), 'npz': [k for k in z.keys() if k != '__metadata__'], 'st': list(header.keys()), 'same': all(same(k) for k in sd)}))`;
  const got = JSON.parse(execFileSync(PY, ['-c', script, at('cnn.model.bin'), at('cnn.model.npz'), at('cnn.model.safetensors')], { encoding: 'utf8' }));
  assert.deepEqual(got.npz, got.names);
  assert.deepEqual(got.st, got.names);
  assert.equal(got.same, true);
  assert.ok(got.names.includes('bn1.num_batches_tracked'), got.names.join());
});

test('export of two parameter groups: each group\'s configuration and lr, no one config; the kind null where the file does not say it', () => {
  const meta = (args) => {
    const out = at(`groups-${args.length}.safetensors`);
    const r = cli('export', 'lm.opt.pt', out, '--state', 'lm.model.bin', ...args);
    assert.equal(r.status, 0, r.stderr);
    const raw = fs.readFileSync(out);
    const n = Number(raw.readBigUInt64LE(0));
    return JSON.parse(raw.subarray(8, 8 + n).toString('utf8')).__metadata__;
  };
  const unknown = meta([]);
  assert.equal(unknown.config, 'null');
  const groups = JSON.parse(unknown.groups);
  assert.deepEqual(groups.map((g) => [g.kind, g.beta1, g.beta2, g.epsilon, g.weightDecay, g.lr]),
    [[null, 0.9, 0.95, 1e-8, 0.1, 0.001], [null, 0.9, 0.95, 1e-8, 0, 0.001]]);
  assert.deepEqual(groups.map((g) => g.bits.weightDecay), ['0x3fb999999999999a', '0x0000000000000000']);
  // the groups' names are the optimizer's indices, group by group (torch's numbering)
  assert.deepEqual(groups.flatMap((g) => g.names), facts.lm.byIndex);
  assert.deepEqual(JSON.parse(meta(['--kind', 'adamw']).groups).map((g) => g.kind), ['adamw', 'adamw']);
  // one group: its configuration is the file's
  const mlp = at('mlp.moments.safetensors');
  assert.equal(cli('export', 'mlp.opt.pt', mlp, '--state', 'mlp.model.bin').status, 0);
  const raw = fs.readFileSync(mlp);
  const m = JSON.parse(raw.subarray(8, 8 + Number(raw.readBigUInt64LE(0))).toString('utf8')).__metadata__;
  assert.deepEqual(JSON.parse(m.config), { kind: null, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0,
    bits: { beta1: '0x3feccccccccccccd', beta2: '0x3feff7ced916872b', epsilon: '0x3e45798ee2308c3a', weightDecay: '0x0000000000000000' } });
});

test('two same-shaped layers, one frozen: which one trains is said to be ambiguous, never guessed silently; --frozen says which', async () => {
  const r = await pair(at('twin.opt.pt'), at('twin.model.bin'));
  assert.equal(r.pairs, null);
  assert.deepEqual(r.warnings, ['PyTorch: index 0 could be a.weight or b.weight: give the names (--names) or save param_names']);
  const told = await pair(at('twin.opt.pt'), at('twin.model.bin'), { frozen: ['b.weight', 'b.bias'] });
  assert.equal(told.pairs, true);
  assert.deepEqual(told.warnings, []);
  assert.deepEqual(told.pytorch.indices.map((x) => x.name), ['a.weight', 'a.bias']);
  // frozen the other way, the indices go to b
  const other = await pair(at('twin.opt.pt'), at('twin.model.bin'), { frozen: ['a.weight', 'a.bias'] });
  assert.deepEqual([other.pairs, other.pytorch.indices.map((x) => x.name)], [true, ['b.weight', 'b.bias']]);
});

test('a safetensors model: ordered by --names it pairs as the torch model does; without them by shape, with the warning', async () => {
  const names = JSON.parse(fs.readFileSync(at('lm.names.json'), 'utf8'));
  const o = await open(at('lm.opt.pt'));
  const m = await open(at('lm.model.safetensors'));
  try {
    const r = await pair(o, m, { names, frozen: ['mask'] });
    assert.equal(r.pairs, true);
    assert.deepEqual(r.warnings, []);
    // the tied copy save_pretrained drops is no slot: the rest in module order
    assert.deepEqual(o.report.pairing.slots, names.filter((n) => n !== 'lm_head.weight'));
    assert.deepEqual(o.report.pairing.indices.map((x) => x.name), facts.lm.byIndex);
  } finally {
    o.close();
    m.close();
  }
  const r = await pair(at('lm.opt.pt'), at('lm.model.safetensors'), { frozen: ['mask'] });
  assert.equal(r.pairs, true);
  assert.deepEqual(r.warnings, ['PyTorch: model.safetensors keeps no module order: same-shaped parameters cannot be told apart (give --names NAMES.json, a pytorch_model.bin, or save param_names)']);
  // a shape that several parameters share decides none of them
  const ln = r.pytorch.indices.find((x) => x.index === 6);
  assert.deepEqual([ln.name, ln.decided], [null, false]);
  const wte = r.pytorch.indices.find((x) => x.index === 0);
  assert.deepEqual([wte.name, wte.decided], ['wte.weight', true]);
  // the dropped tied copy is not in the file: a name it does not have is refused
  await assert.rejects(pair(at('lm.opt.pt'), at('lm.model.safetensors'), { frozen: ['lm_head.weight'] }),
    { name: 'CheckpointError', code: 39, message: 'PyTorch: --frozen names lm_head.weight, which the model does not have' });
});

test('export under the model\'s names: each moment bit for bit as torch holds it, the tie once', () => {
  const out = at('lm.moments.npz');
  const r = cli('export', 'lm.opt.pt', out, '--state', 'lm.model.bin');
  assert.equal(r.status, 0, r.stderr);
  const script = `
import json, sys, numpy as np, torch
z = np.load(sys.argv[1]); sd = torch.load(sys.argv[2]); names = json.loads(sys.argv[3])
ok = all(np.array_equal(z[n + '.exp_avg'], sd['state'][i]['exp_avg'].numpy()) and
         np.array_equal(z[n + '.exp_avg_sq'], sd['state'][i]['exp_avg_sq'].numpy()) for i, n in enumerate(names))
print(json.dumps({'ok': ok, 'files': sorted(f for f in z.files if f != '__metadata__')}))`;
  const got = JSON.parse(execFileSync(PY, ['-c', script, out, at('lm.opt.pt'), JSON.stringify(facts.lm.byIndex)], { encoding: 'utf8' }));
  assert.equal(got.ok, true);
  assert.deepEqual(got.files, facts.lm.byIndex.flatMap((n) => [`${n}.exp_avg`, `${n}.exp_avg_sq`]).sort());
});

test('without its model a PyTorch optimizer has no slots: health and export say what to give', () => {
  const why = 'a torch.save file has no slots of its own: they come from the model it belongs to; give the model (--state MODEL)';
  const h = cli('health', 'lm.opt.pt');
  assert.equal(h.status, 1);
  assert.match(h.stderr, new RegExp(why.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  const e = cli('export', 'lm.opt.pt', at('x.safetensors'));
  assert.notEqual(e.status, 0);
  assert.equal(fs.existsSync(at('x.safetensors')), false);
});

// PyTorch -> TorchLean -> PyTorch: the state torch loads back steps on exactly as the original
const ROUND_TRIP = `
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location('seeds', sys.argv[1])   # the seeds' classes, not their files
seeds = importlib.util.module_from_spec(spec); spec.loader.exec_module(seeds); LM = seeds.LM
model_sd, a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3]), torch.load(sys.argv[4])
def stepped(opt_sd):
    torch.manual_seed(1)
    m = LM(); m.load_state_dict(model_sd)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    opt.load_state_dict(opt_sd)
    opt.zero_grad(); m(torch.randint(0, 11, (2, 5))).sum().backward(); opt.step()
    return m, opt
ma, oa = stepped(a); mb, ob = stepped(b)
same = all(torch.equal(x, y) for x, y in zip(ma.state_dict().values(), mb.state_dict().values()))
for i in oa.state_dict()['state']:
    sa, sb = oa.state_dict()['state'][i], ob.state_dict()['state'][i]
    same = same and all(torch.equal(sa[k], sb[k]) for k in ('exp_avg', 'exp_avg_sq')) and float(sa['step']) == float(sb['step'])
print('same' if same else 'differ')
`;

test('PyTorch to TorchLean and back: torch loads the state again and its next step is the original\'s, bit for bit', () => {
  const c = cli('convert', 'rt.opt.pt', 'rt.ckpt', '--state', 'rt.model.bin', '--kind', 'adamw');
  assert.equal(c.status, 0, c.stderr);
  assert.equal(c.stdout.split('\n')[0], 'rt.ckpt: version 3 (float32), from rt.opt.pt with rt.model.bin');
  const i = cli('inspect', 'rt.ckpt');
  assert.equal(i.status, 0);
  assert.ok(i.stdout.includes('parameters      18 slots, 17 trainable, 16 optimizer states, with tied (shared)'), i.stdout);
  const back = cli('convert', 'rt.ckpt', 'rt.back.pt', '--lr', '1e-3');
  assert.equal(back.status, 0, back.stderr);
  const got = execFileSync(PY, ['-c', ROUND_TRIP, SEEDS, at('rt.model.bin'), at('rt.opt.pt'), at('rt.back.pt')], { encoding: 'utf8' });
  assert.equal(got, 'same\n');
});

test('PyTorch to TorchLean: bfloat16 moments widen exactly to float32', () => {
  const c = cli('convert', 'bf16.opt.pt', 'bf16.ckpt', '--state', 'bf16.model.bin', '--kind', 'adam');
  assert.equal(c.status, 0, c.stderr);
  assert.deepEqual(c.stdout.split('\n').slice(0, 2), ['bf16.ckpt: version 2 (float32), from bf16.opt.pt with bf16.model.bin',
    'widened the moments to float32 (exactly: every float16 and bfloat16 value is a float32 value)']);
  const e = cli('export', 'bf16.ckpt', 'bf16.npz');
  assert.equal(e.status, 0, e.stderr);
  const script = `
import sys, numpy as np, torch
z = np.load(sys.argv[1]); sd = torch.load(sys.argv[2])
print(all(np.array_equal(z[f'slot{i}.exp_avg'], s['exp_avg'].float().numpy()) and
          np.array_equal(z[f'slot{i}.exp_avg_sq'], s['exp_avg_sq'].float().numpy()) for i, s in sd['state'].items()))`;
  assert.equal(execFileSync(PY, ['-c', script, at('bf16.npz'), at('bf16.opt.pt')], { encoding: 'utf8' }), 'True\n');
});

test('PyTorch to TorchLean refuses what TorchLean\'s one configuration cannot hold, naming the option', () => {
  const cases = [
    [['lm.opt.pt', 'x.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw'], 'the groups\' weight decays differ (group 0: 0.1, group 1: 0): TorchLean\'s file holds one configuration: --weight-decay X gives every slot one'],
    [['cnn.opt.pt', 'x.ckpt', '--state', 'cnn.model.bin', '--kind', 'adam'], 'amsgrad\'s max_exp_avg_sq has no place in TorchLean\'s Adam: --drop-amsgrad leaves it out (the next steps then divide by the second moment, not its running maximum)'],
    [['mlp.opt.pt', 'x.ckpt', '--state', 'mlp.model.bin'], 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it'],
    [['lm.opt.pt', 'x.ckpt', '--state', 'lm.resized.bin', '--kind', 'adamw', '--weight-decay', '0.1'], 'PyTorch: wte.weight is [13, 4] in the model, [11, 4] in the optimizer\'s state (index 0)'],
    // every option needed, in one message: one command line with them all converts
    [['lm.opt.pt', 'x.ckpt', '--state', 'lm.model.bin'], 'the groups\' weight decays differ (group 0: 0.1, group 1: 0): TorchLean\'s file holds one configuration: --weight-decay X gives every slot one; the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it'],
    [['cnn.opt.pt', 'x.ckpt', '--state', 'cnn.model.bin'], 'amsgrad\'s max_exp_avg_sq has no place in TorchLean\'s Adam: --drop-amsgrad leaves it out (the next steps then divide by the second moment, not its running maximum); the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it'],
  ];
  for (const [args, text] of cases) {
    const r = cli('convert', ...args);
    assert.equal(r.status, 1, args.join(' '));
    assert.equal(r.stderr.split('\n').find((l) => l.includes(text.slice(0, 30))), text, r.stderr);
    assert.equal(r.stderr.split('\n').filter((l) => l.includes(text.slice(0, 30))).length, 1, r.stderr);
    assert.equal(fs.existsSync(at('x.ckpt')), false);
  }
  const ok = cli('convert', 'lm.opt.pt', 'x.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1');
  assert.equal(ok.status, 0, ok.stderr);
  // a random counter only when supplied: version 4 always holds one
  const v4 = cli('convert', 'lm.opt.pt', 'y.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1', '--to', '4', '--frozen', 'mask');
  assert.equal(v4.status, 1);
  assert.equal(v4.stderr.split('\n')[0], 'version 4 always holds a random counter and the file has none: --random-counter N supplies one');
  const counted = cli('convert', 'lm.opt.pt', 'y.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1', '--to', '4', '--random-counter', '7', '--frozen', 'mask');
  assert.equal(counted.status, 0, counted.stderr);
  assert.equal(counted.stdout.split('\n')[0], 'y.ckpt: version 4 (float32), from lm.opt.pt with lm.model.bin');
});

test('over HTTP and from a Blob: the optimizer and its model pair as from files', async () => {
  const optBytes = new Uint8Array(fs.readFileSync(at('lm.opt.pt')));
  const modelBytes = new Uint8Array(fs.readFileSync(at('lm.model.bin')));
  await withFakeBlob(modelBytes, (whole) => withFake(optBytes, {}, async () => {
      const http = HttpSource.open('http://h/optimizer.pt');
      const blob = new BlobSource(whole);
      const o = await open(http), m = await open(blob);
      try {
        const r = await pair(o, m, { frozen: ['mask'] });
        assert.equal(r.pairs, true);
        assert.deepEqual(o.report.pairing.slots, facts.lm.names);
        assert.deepEqual(r.pytorch.indices.map((x) => x.name), facts.lm.byIndex);
      } finally {
        o.close();
        m.close();
      }
      // what opening reads is bounded by the zip's directory, the pickle and the records' headers
      // (tests/js/pytorch.test.mjs counts it on larger files); here, a few requests
      assert.ok(http.requests > 0 && http.requests <= 16, `${http.requests} requests`);
      assert.ok(blob.bytesRead > 0);
  }));
});

test('statistics computed apart attach to a paired optimizer\'s items (a worker\'s scan, a server\'s pass), an amsgrad optimizer\'s too', async () => {
  for (const [optName, modelName, amsgrad] of [['lm.opt.pt', 'lm.model.bin', false], ['cnn.opt.pt', 'cnn.model.bin', true]]) {
    const o = await open(at(optName));
    const m = await open(at(modelName));
    const fresh = await open(at(optName));
    const again = await open(at(modelName));
    try {
      const frozen = optName === 'lm.opt.pt' ? ['mask'] : ['conv1.weight', 'conv1.bias'];
      assert.equal((await pair(o, m, { frozen })).pairs, true);
      assert.equal((await pair(fresh, again, { frozen })).pairs, true);
      assert.equal(o.summary.optimizer.groups[0].amsgrad, amsgrad);
      const n = itemCount(o);
      assert.equal(n, o.summary.entryCount);
      for (let k = 0; k < n; k++) attachPacked(o, k, [itemStatsPacked(fresh, k)]);
      assert.equal(o.report.statistics, true);
      const slot = o.report.entries[0].id;
      const attached = await o.stats(slot);
      const read = await fresh.stats(slot);
      assert.deepEqual([attached.m, attached.v], [read.m, read.v], optName);
    } finally {
      for (const ck of [o, m, fresh, again]) ck.close();
    }
  }
});

test('run across the boundary: a PyTorch checkpoint and the TorchLean checkpoint one step later are one run; another run\'s is not', () => {
  const c = cli('convert', 'rt4.opt.pt', 'rt4.ckpt', '--state', 'rt4.model.bin', '--kind', 'adamw');
  assert.equal(c.status, 0, c.stderr);
  const r = cli('run', 'rt.both.pt', 'rt4.ckpt', '--kind', 'adamw');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const lines = r.stdout.split('\n');
  assert.ok(lines.some((l) => /^0 → 1: continuous \(worst .* at slot 1 \(wte\.weight\), power 0\.\d+\)$/.test(l)), r.stdout);
  assert.equal(lines.at(-2), 'verdict: one run, every pair continuous');
  const contradicts = cli('run', 'rt.both.pt', 'rt4.ckpt', '--kind', 'adam');
  assert.equal(contradicts.status, 1);
  assert.equal(contradicts.stderr.split('\n').slice(0, 2).join('\n'), 'ckptscope: rt4.ckpt\n--kind adam contradicts the file: its optimizer is AdamW');
  const other = cli('convert', 'lm.opt.pt', 'lm.one.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.01');
  assert.equal(other.status, 0, other.stderr);
  const broken = cli('run', 'rt.both.pt', 'lm.one.ckpt', '--kind', 'adamw');
  assert.equal(broken.status, 1);
  assert.ok(broken.stdout.includes('0 → 1: NOT continuous: [wte.weight] slot 1: both at step 3, but the moments differ (first at element 0)'), broken.stdout);
  assert.equal(broken.stdout.split('\n').at(-2), 'verdict: something breaks at file 1 (lm.one.ckpt)');
});

test('run of torch 1.13 AdamW files with their models: without --kind a warning that no lr comes back; the slots by the model\'s names', () => {
  const args = ['run', 'rt.opt.pt', 'rt4.opt.pt', '--state', 'rt.model.bin', '--state', 'rt4.model.bin', '--slots'];
  const r = cli(...args);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, 'warning: every optimizer\'s kind is unknown (its file does not say Adam or\n  AdamW): no learning rate comes back; give --kind adam|adamw\n');
  const lines = r.stdout.split('\n');
  assert.equal(lines[5], '0 → 1: continuous (worst 1 at slot 1 (wte.weight), power 0.9677)');
  assert.equal(lines[6], '    slot  name             steps  k  broken  worst   power  rms(g)  lr  residual');
  assert.ok(lines[7].startsWith('       1  wte.weight       3→4    1       0      1       1'), lines[7]);
  const json = JSON.parse(cli(...args, '--json').stdout);
  assert.deepEqual(json.files.map((f) => f.kindUnknown), [true, true]);
  assert.deepEqual(json.names, facts.lm.names);
  // the kind given: the learning rates come back, no warning
  const k = cli(...args, '--kind', 'adamw');
  assert.equal(k.status, 0, k.stderr);
  assert.equal(k.stderr, '');
  assert.equal(k.stdout.split('\n')[5], '0 → 1: continuous (worst 1 at slot 1 (wte.weight), power 0.9677, lr on 16 slots)');
  assert.deepEqual(JSON.parse(cli(...args, '--kind', 'adamw', '--json').stdout).files.map((f) => f.kindUnknown), [false, false]);
});

test('health at the end of a schedule (the groups\' lr 0): the tied lm_head\'s ratio said once, on wte; --sort; each slot\'s name', () => {
  const script = `
import sys, torch
sd = torch.load(sys.argv[1])
for g in sd['optimizer']['param_groups']: g['lr'] = 0.0
torch.save(sd, sys.argv[2])`;
  execFileSync(PY, ['-c', script, at('rt.both.pt'), at('rt.end.pt')]);
  const r = cli('health', 'rt.end.pt', '--kind', 'adamw');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const warnings = lines.filter((l) => l.startsWith('warning: '));
  // 16 owners, each once; the tied lm_head.weight (slot 17) is wte.weight's parameter
  assert.equal(warnings.length, 16);
  assert.equal(warnings[0], 'warning: [wte.weight] parameter 1: update-to-weight ratio 0 is below 1e-5 at lr 0');
  assert.ok(!warnings.some((l) => l.includes('lm_head')), r.stdout);
  assert.ok(lines.some((l) => /^ {5}17 {2}lm_head\.weight {3}shares 1 {5}3 .* 0$/.test(l)), r.stdout);
  assert.equal(lines.at(-2), 'verdict: healthy (16 ratio warnings: --strict makes them failures)');
  const json = JSON.parse(cli('health', 'rt.end.pt', '--kind', 'adamw', '--json').stdout);
  assert.deepEqual(json.slots.map((s) => s.name), facts.lm.names);
  assert.deepEqual(json.slots[17].flags, []);
  // --sort: the largest ratio first; by name
  const rows = (args) => cli('health', 'rt.both.pt', '--kind', 'adamw', ...args).stdout.split('\n').filter((l) => /^[! ] +\d+ {2}\S+ +(owner|shares|frozen)/.test(l)).map((l) => Number(l.slice(1).trim().split(/ +/)[0]));
  const slots = JSON.parse(cli('health', 'rt.both.pt', '--kind', 'adamw', '--json').stdout).slots;
  const byRatio = slots.filter((s) => s.ratio !== null).sort((a, b) => b.ratio - a.ratio || a.slot - b.slot).map((s) => s.slot);
  assert.deepEqual(rows(['--sort', 'ratio']), [...byRatio, 0]);   // the frozen mask has none: last
  const byName = facts.lm.names.map((n, i) => [n, i]).sort(([a], [b]) => (a < b ? -1 : 1)).map(([, i]) => i);
  assert.deepEqual(rows(['--sort', 'name']), byName);
  assert.deepEqual(rows([]), facts.lm.names.map((_, i) => i));
});

// ---- an optimizer saved with a tied model, paired with an untied one (gpt/, torch's own verdicts in facts.gpt) ----

test('an untied model does not pair with the optimizer of its tied model: the Trainer folder\'s own model is compared first', async () => {
  const r = cli('check', 'gpt/checkpoint-20/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(r.status, 1);
  assert.equal(r.stdout, [
    'gpt/checkpoint-20/optimizer.pt does not pair with gpt/untied.bin: 1 failure',
    '  PyTorch: lm_head.weight is tied to wte.weight in checkpoint-20\'s model, not in gpt/untied.bin',
    CANNOT_TELL,
    '',
  ].join('\n'));
  assert.equal(r.stderr, '');
  // the folder's model.safetensors keeps no ties: save_pretrained left the tied copy out
  const st = cli('check', 'gpt/st/checkpoint-20/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(st.status, 1);
  assert.equal(st.stdout.split('\n')[1], '  PyTorch: lm_head.weight is in gpt/untied.bin, not in checkpoint-20\'s model');
  // a tied copy of the folder's model: the same names, shapes and ties, said in the note
  fs.copyFileSync(at('gpt/checkpoint-20/pytorch_model.bin'), at('gpt/tied.bin'));
  const tied = cli('check', 'gpt/checkpoint-20/optimizer.pt', '--state', 'gpt/tied.bin', '--frozen', 'mask');
  assert.equal(tied.status, 0);
  assert.equal(tied.stdout.split('\n')[0], 'gpt/checkpoint-20/optimizer.pt pairs with gpt/tied.bin: same shapes, index by index; the same names, shapes and ties as checkpoint-20\'s model; the values are not compared: `run` with both steps\' state files compares them');
  // torch agrees: the tied model's optimizer loads the state, the untied one's refuses it
  assert.equal(facts.gpt.tied, null);
  assert.equal(facts.gpt.untied, GROUP_SIZE);
  // the API: the training-time model given, each difference a failure of code 80 before the placement's
  const api = await pair(at('gpt/checkpoint-20/optimizer.pt'), at('gpt/untied.bin'), { trainedModel: at('gpt/checkpoint-20/pytorch_model.bin'), trainedLabel: 'checkpoint-20\'s model', modelLabel: 'gpt/untied.bin' });
  assert.deepEqual([api.pairs, api.failures.map((f) => [f.code, f.message])], [false, [[80, 'PyTorch: lm_head.weight is tied to wte.weight in checkpoint-20\'s model, not in gpt/untied.bin']]]);
});

test('without the model it was saved with, an untied model\'s lm_head without state cannot be told frozen: cannot tell, in torch\'s words; --frozen settles it as torch does', async () => {
  fs.copyFileSync(at('gpt/checkpoint-20/optimizer.pt'), at('gpt/optimizer.pt'));
  const r = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(r.status, 3);
  const condition = `PyTorch: mask and lm_head.weight have no optimizer state: the pair holds only if the training code does not train them (frozen parameters, or buffers: --frozen mask,lm_head.weight says so); if it trains them, torch's load_state_dict refuses this state (${facts.gpt.untied})`;
  assert.equal(r.stdout, `gpt/optimizer.pt with gpt/untied.bin: cannot tell whether they pair\n  ${condition}\n${CANNOT_TELL}\nnot in the optimizer: mask, lm_head.weight\n`);
  assert.equal(r.stderr, '');
  const api = await pair(at('gpt/optimizer.pt'), at('gpt/untied.bin'));
  assert.deepEqual([api.pairs, api.ok, api.error.code, api.error.message, api.pytorch.untold], [null, false, 79, condition, ['mask', 'lm_head.weight']]);
  // lm_head frozen (torch then loads the state: facts.gpt.untiedFrozen), mask a buffer
  const told = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'mask,lm_head.weight');
  assert.equal(told.status, 0);
  assert.equal(told.stdout, `gpt/optimizer.pt pairs with gpt/untied.bin: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask, lm_head.weight\n`);
  assert.equal(facts.gpt.untiedFrozen, null);
  // one of the two told: the other is still untold
  const half = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'mask');
  assert.equal(half.status, 3);
  assert.equal(half.stdout.split('\n')[1], `  PyTorch: lm_head.weight has no optimizer state: the pair holds only if the training code does not train it (a frozen parameter, or a buffer: --frozen lm_head.weight says so); if it trains it, torch's load_state_dict refuses this state (${GROUP_SIZE})`);
  // a name the model does not have
  const typo = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'lm_head.weigth');
  assert.equal(typo.status, 2);
  assert.equal(typo.stderr, 'ckptscope: cannot pair gpt/optimizer.pt with gpt/untied.bin: PyTorch: --frozen names lm_head.weigth, which gpt/untied.bin does not have\n');
  const empty = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'mask,');
  assert.equal(empty.status, 2);
  assert.equal(empty.stderr.split('\n')[0], 'ckptscope: --frozen takes NAME[,NAME...], the model\'s tensor names: mask, holds an empty one');
  const idle = cli('check', 'gpt/optimizer.pt', '--expect', 'gpt/untied.bin', '--frozen', 'mask');
  assert.equal(idle.status, 2);
  assert.equal(idle.stderr.split('\n')[0], 'ckptscope: --frozen does nothing here: it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model (OPT --state MODEL)');
});

test('a failing check prints every line once: on stdout, each line whole, nothing repeated on stderr, whether the streams are apart or together', () => {
  const want = [
    'gpt/optimizer.pt does not pair with gpt/resized.bin: 1 failure',
    '  PyTorch: wte.weight is [58, 16] in the model, [50, 16] in the optimizer\'s state (index 0)',
    CANNOT_TELL,
    '',
  ].join('\n');
  fs.copyFileSync(at('gpt/checkpoint-20/optimizer.pt'), at('gpt/optimizer.pt'));
  const apart = cli('check', 'gpt/optimizer.pt', '--state', 'gpt/resized.bin');
  assert.equal(apart.status, 1);
  assert.equal(apart.stdout, want);
  assert.equal(apart.stderr, '');
  const together = spawnSync('/bin/sh', ['-c', `"${process.execPath}" "${CLI}" check gpt/optimizer.pt --state gpt/resized.bin > both.txt 2>&1`], { cwd: dir });
  assert.equal(together.status, 1);
  assert.equal(fs.readFileSync(at('both.txt'), 'utf8'), want);
});

test('a resized embedding is named in PyTorch\'s notation, and every other index is still placed (the 18 of the no-decay group too)', async () => {
  const r = await pair(at('gpt/optimizer.pt'), at('gpt/resized.bin'));
  assert.deepEqual(r.failures.map((f) => [f.code, f.message, f.index]), [[67, 'PyTorch: wte.weight is [58, 16] in the model, [50, 16] in the optimizer\'s state (index 0)', 0]]);
  const noDecay = r.pytorch.indices.filter((x) => x.group === 1);
  assert.equal(noDecay.length, 10);
  assert.ok(noDecay.every((x) => x.slot !== null && x.name !== null));
  assert.deepEqual(r.pytorch.indices.filter((x) => x.slot === null).map((x) => x.index), [0]);
  // in its folder the models are compared first: both differences said, then the index
  const c = cli('check', 'gpt/checkpoint-20/optimizer.pt', '--state', 'gpt/resized.bin');
  assert.equal(c.status, 1);
  assert.equal(c.stdout, [
    'gpt/checkpoint-20/optimizer.pt does not pair with gpt/resized.bin: 3 failures',
    '  PyTorch: wte.weight is [58, 16] in gpt/resized.bin, [50, 16] in checkpoint-20\'s model',
    '  PyTorch: lm_head.weight is [58, 16] in gpt/resized.bin, [50, 16] in checkpoint-20\'s model',
    '  PyTorch: wte.weight is [58, 16] in the model, [50, 16] in the optimizer\'s state (index 0)',
    CANNOT_TELL,
    '',
  ].join('\n'));
});

test('a TorchLean optimizer pairs with a torch.save model of its layout: check, health and pair(); the ties must be the model\'s storages', async () => {
  const c = cli('convert', 'rt.opt.pt', 'rt.ckpt', '--state', 'rt.model.bin', '--kind', 'adamw', '--frozen', 'mask');
  assert.equal(c.status, 0, c.stderr);
  const ok = cli('check', 'rt.ckpt', '--state', 'rt.model.bin');
  assert.equal(ok.status, 0);
  assert.equal(ok.stdout, `rt.ckpt pairs with rt.model.bin: ${TL_NOTE}\n`);
  const r = await pair(at('rt.ckpt'), at('rt.model.bin'));
  assert.deepEqual([r.pairs, r.note, r.failures], [true, TL_NOTE, []]);
  const h = cli('health', 'rt.ckpt', '--state', 'rt.model.bin', '--json');
  assert.equal(h.status, 0, h.stderr);
  const json = JSON.parse(h.stdout);
  assert.deepEqual([json.pairs, json.error, json.slots.length], [true, null, 18]);
  assert.ok(json.slots.every((s) => s.param !== null));
  const untied = cli('check', 'rt.ckpt', '--state', 'rt.untied.bin');
  assert.equal(untied.status, 1);
  assert.equal(untied.stdout, 'rt.ckpt does not pair with rt.untied.bin: 1 failure\n  parameter 17 (lm_head.weight) is tied to parameter 1 (wte.weight) in the optimizer\'s schema, not in the model\n');
  const hu = cli('health', 'rt.ckpt', '--state', 'rt.untied.bin');
  assert.equal(hu.status, 1);
  assert.equal(hu.stdout, untied.stdout);
});

test('diff of PyTorch optimizers: their model by --state (one for both, or one each), or the one a file holds; without one, how to give it', () => {
  const none = cli('diff', 'rt.opt.pt', 'rt4.opt.pt');
  assert.equal(none.status, 2);
  assert.equal(none.stderr.split('\n')[0], 'ckptscope: diff: rt.opt.pt is a PyTorch optimizer: its slots come from its model, which it does not hold: did you mean `ckptscope diff rt.opt.pt rt4.opt.pt --state MODEL_A MODEL_B`?');
  const one = cli('diff', 'rt.opt.pt', 'rt4.opt.pt', '--state', 'rt.model.bin');
  const each = cli('diff', 'rt.opt.pt', 'rt4.opt.pt', '--state', 'rt.model.bin', 'rt4.model.bin');
  for (const d of [one, each]) {
    assert.equal(d.status, 1, d.stderr);
    assert.equal(d.stderr, '');
    const lines = d.stdout.split('\n');
    assert.equal(lines[0], '48 differences between rt.opt.pt and rt4.opt.pt:');
    assert.equal(lines[1], '  [wte.weight] parameter 1: step 3 vs 4');   // the slots by the model's names
  }
  const both = cli('diff', 'rt.both.pt', 'rt.both.pt');
  assert.equal(both.status, 0);
  assert.equal(both.stdout, 'no differences between rt.both.pt and rt.both.pt\n');
  const own = cli('diff', 'rt.ckpt', 'rt.ckpt', '--state', 'rt.model.bin');
  assert.equal(own.status, 2);
  assert.equal(own.stderr.split('\n')[0], 'ckptscope: --state does nothing here: rt.ckpt and rt.ckpt have slots of their own');
  const three = cli('diff', 'rt.opt.pt', 'rt4.opt.pt', '--state', 'a', 'b', 'c');
  assert.equal(three.status, 2);
  assert.equal(three.stderr.split('\n')[0], 'ckptscope: diff --state takes one model for both files, or A\'s then B\'s: 3 given');
});

test('the API: pair(x) alone pairs a file holding both, else says what is missing; entry() before pairing says why there is no slot yet', async () => {
  const r = await pair(at('cnn.ckpt'), undefined, { frozen: ['conv1.weight', 'conv1.bias'] });
  assert.deepEqual([r.pairs, r.note], [true, NOTE]);
  await assert.rejects(pair(at('lm.opt.pt')), { name: 'TypeError', message: 'pair(optimizer, model): the model is missing; only a file holding both its optimizer and its model pairs alone' });
  await assert.rejects(pair(), { name: 'TypeError', message: 'pair(optimizer, model): the optimizer checkpoint is missing' });
  const o = await open(at('lm.opt.pt'));
  try {
    await assert.rejects(pair(o), { name: 'TypeError', message: 'pair(optimizer, model): the model is missing; only a file holding both its optimizer and its model pairs alone' });
    await assert.rejects(o.entry(0), { name: 'CheckpointError', code: 41, message: 'no parameter 0 yet: a torch.save file has no slots of its own until it is paired with the model it belongs to (pair(optimizer, model), or --state MODEL); then each slot is a parameter of the model' });
  } finally {
    o.close();
  }
});

test('inspect, health and export pair as check does: --frozen, the Trainer folder\'s model first, the condition said beside', () => {
  fs.copyFileSync(at('gpt/checkpoint-20/optimizer.pt'), at('gpt/optimizer.pt'));
  const i = cli('inspect', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'mask,lm_head.weight');
  assert.equal(i.status, 0);
  assert.equal(i.stdout.split('\n').slice(-4).join('\n'), `gpt/optimizer.pt pairs with gpt/untied.bin: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask, lm_head.weight\n`);
  const untold3 = cli('inspect', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(untold3.status, 3);
  assert.equal(untold3.stderr, '');
  const idle = cli('inspect', 'gpt/untied.bin', '--frozen', 'mask');
  assert.equal(idle.status, 2);
  assert.equal(idle.stderr.split('\n')[0], 'ckptscope: --frozen does nothing here: it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model (--state MODEL)');
  const h = cli('health', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(h.status, 0);
  assert.equal(h.stdout.split('\n')[1], `cannot tell whether gpt/untied.bin pairs with gpt/optimizer.pt (its parameters are used): PyTorch: mask and lm_head.weight have no optimizer state: the pair holds only if the training code does not train them (frozen parameters, or buffers: --frozen mask,lm_head.weight says so); if it trains them, torch's load_state_dict refuses this state (${GROUP_SIZE})`);
  const told = JSON.parse(cli('health', 'gpt/optimizer.pt', '--state', 'gpt/untied.bin', '--frozen', 'mask,lm_head.weight', '--json').stdout);
  assert.equal(told.pairCondition, null);
  const folder = cli('health', 'gpt/checkpoint-20/optimizer.pt', '--state', 'gpt/untied.bin');
  assert.equal(folder.status, 1);
  assert.equal(folder.stdout, `gpt/checkpoint-20/optimizer.pt does not pair with gpt/untied.bin: 1 failure\n  PyTorch: lm_head.weight is tied to wte.weight in checkpoint-20's model, not in gpt/untied.bin\n${CANNOT_TELL}\n`);
  const e = cli('export', 'gpt/optimizer.pt', at('g.npz'), '--state', 'gpt/untied.bin');
  assert.equal(e.status, 0);
  assert.equal(e.stderr, `warning: PyTorch: mask and lm_head.weight have no optimizer state: the pair holds only if the training code does not train them (frozen parameters, or buffers: --frozen mask,lm_head.weight says so); if it trains them, torch's load_state_dict refuses this state (${GROUP_SIZE})\n`);
  const ef = cli('export', 'gpt/optimizer.pt', at('g.npz'), '--state', 'gpt/untied.bin', '--frozen', 'mask,lm_head.weight');
  assert.deepEqual([ef.status, ef.stderr], [0, '']);
});
