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
const NOTE = 'same slots, same shapes, same ties; the values are not compared: `run` with both steps\' state files compares them';
const CANNOT_TELL = 'load_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell)';

test('a Trainer-style AdamW in two groups pairs with its model: slots in model order, the tied lm_head shares wte, the buffer frozen', async () => {
  const o = await open(at('lm.opt.pt'));
  const m = await open(at('lm.model.bin'));
  try {
    assert.equal(o.summary.needsModel, true);
    assert.equal(o.summary.slotCount, null);
    const r = await pair(o, m);
    assert.equal(r.pairs, true);
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
    // index i is the parameter torch numbered i (decay group first, then no decay)
    assert.deepEqual(rep.pairing.indices.map((x) => x.name), facts.lm.byIndex);
    assert.equal(rep.pairing.positionalKnown, false);
    assert.equal(rep.entries.length, 16);
    for (const e of rep.entries) assert.equal(e.step, 3);
  } finally {
    o.close();
    m.close();
  }
  const r = cli('check', 'lm.opt.pt', '--state', 'lm.model.bin');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `lm.opt.pt pairs with lm.model.bin: ${NOTE}\n${CANNOT_TELL}\nnot in the optimizer (frozen or buffers): mask\n`);
});

test('a file holding both pairs with itself: check FILE, and inspect shows the slots by name', () => {
  const r = cli('check', 'lm.both.pt');
  assert.equal(r.status, 0);
  assert.equal(r.stdout.split('\n')[0], `lm.both.pt pairs with lm.both.pt: ${NOTE}`);
  const i = cli('inspect', 'lm.both.pt');
  assert.equal(i.status, 0);
  const lines = i.stdout.split('\n');
  assert.ok(lines.includes('parameters      18 slots, 17 trainable, 16 optimizer states, with tied (shared)'), i.stdout);
  assert.ok(lines.includes('  17  lm_head.weight   [11, 4]    44  yes        shares 1'), i.stdout);
  assert.ok(lines.includes('   0  mask             [3]         3  no         -'), i.stdout);
});

test('a resized embedding, reordered modules and a smaller model fail with their texts and error.index', async () => {
  const cases = [
    ['lm.resized.bin', 'PyTorch: optimizer index 0 holds exp_avg #[11, 4], but no parameter of that shape lies between the start and wpe.weight in the model', 67, 0],
    ['lm.reordered.bin', 'PyTorch: optimizer index 3 holds exp_avg #[4, 8], but no parameter of that shape lies between h.0.fc.weight and h.1.fc.weight in the model', 67, 3],
    ['lm.small.bin', 'PyTorch: the optimizer has 16 parameters with state, the model 11 parameters', 68, null],
  ];
  for (const [model, text, code, index] of cases) {
    const r = await pair(at('lm.opt.pt'), at(model));
    assert.equal(r.pairs, false, model);
    assert.deepEqual(r.failures.map((f) => [f.code, f.message, f.index ?? null]), [[code, text, index]], model);
    assert.equal(r.error.message, text);
    const c = cli('check', 'lm.opt.pt', '--state', model);
    assert.equal(c.status, 1, model);
    assert.equal(c.stdout, `lm.opt.pt does not pair with ${model}: 1 failure\n  ${text}\n${CANNOT_TELL}\n`, model);
    assert.equal(c.stderr, `${text}\n`);
  }
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
});

test('param_names place the indices by name: a renamed module fails naming the index and the name', async () => {
  const ok = await pair(at('named.opt.pt'), at('lm.model.bin'));
  assert.equal(ok.pairs, true);
  assert.deepEqual(ok.pytorch.indices.map((x) => x.name), facts.lm.byIndex);
  const r = await pair(at('named.opt.pt'), at('named.renamed.bin'));
  assert.deepEqual(r.failures.map((f) => [f.code, f.message, f.index]),
    [[69, 'PyTorch: optimizer index 14 is ln_f.weight in its group\'s param_names, which the model does not have', 14]]);
});

test('a CNN: BatchNorm\'s buffers are no slots, the frozen conv is not in the optimizer, amsgrad, one group', async () => {
  const o = await open(at('cnn.opt.pt'));
  const m = await open(at('cnn.model.bin'));
  try {
    const r = await pair(o, m);
    assert.equal(r.pairs, true);
    assert.deepEqual(o.report.pairing.slots, facts.cnn.names.filter((n) => !/running_mean|running_var|num_batches_tracked/.test(n)));
    assert.deepEqual(o.report.pairing.notInOptimizer, ['conv1.weight', 'conv1.bias']);
    assert.deepEqual(o.report.schema.requiresGrad, [false, false, true, true, true, true, true, true]);
    assert.equal(m.summary.tensorCount, 8);
    assert.equal(o.summary.optimizer.groups[0].amsgrad, true);
  } finally {
    o.close();
    m.close();
  }
  // health: the group's lr when --lr is not given; the frozen slots have no moments
  const h = await health(at('cnn.opt.pt'), at('cnn.model.bin'));
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
});

test('two same-shaped layers, one frozen: which one trains is said to be ambiguous, never guessed silently', async () => {
  const r = await pair(at('twin.opt.pt'), at('twin.model.bin'));
  assert.equal(r.pairs, true);
  assert.deepEqual(r.warnings, ['PyTorch: index 0 could be a.weight or b.weight: give the names (--names) or save param_names']);
});

test('a safetensors model: ordered by --names it pairs as the torch model does; without them by shape, with the warning', async () => {
  const names = JSON.parse(fs.readFileSync(at('lm.names.json'), 'utf8'));
  const o = await open(at('lm.opt.pt'));
  const m = await open(at('lm.model.safetensors'));
  try {
    const r = await pair(o, m, { names });
    assert.equal(r.pairs, true);
    assert.deepEqual(r.warnings, []);
    // the tied copy save_pretrained drops is no slot: the rest in module order
    assert.deepEqual(o.report.pairing.slots, names.filter((n) => n !== 'lm_head.weight'));
    assert.deepEqual(o.report.pairing.indices.map((x) => x.name), facts.lm.byIndex);
  } finally {
    o.close();
    m.close();
  }
  const r = await pair(at('lm.opt.pt'), at('lm.model.safetensors'));
  assert.equal(r.pairs, true);
  assert.deepEqual(r.warnings, ['PyTorch: model.safetensors keeps no module order: same-shaped parameters cannot be told apart (give --names NAMES.json, a pytorch_model.bin, or save param_names)']);
  // a shape that several parameters share decides none of them
  const ln = r.pytorch.indices.find((x) => x.index === 6);
  assert.deepEqual([ln.name, ln.decided], [null, false]);
  const wte = r.pytorch.indices.find((x) => x.index === 0);
  assert.deepEqual([wte.name, wte.decided], ['wte.weight', true]);
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
    [['lm.opt.pt', 'x.ckpt', '--state', 'lm.resized.bin', '--kind', 'adamw', '--weight-decay', '0.1'], 'PyTorch: optimizer index 0 holds exp_avg #[11, 4], but no parameter of that shape lies between the start and wpe.weight in the model'],
  ];
  for (const [args, text] of cases) {
    const r = cli('convert', ...args);
    assert.equal(r.status, 1, args.join(' '));
    assert.equal(r.stderr.split('\n').find((l) => l.includes(text.slice(0, 30))), text, r.stderr);
    assert.equal(fs.existsSync(at('x.ckpt')), false);
  }
  const ok = cli('convert', 'lm.opt.pt', 'x.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1');
  assert.equal(ok.status, 0, ok.stderr);
  // a random counter only when supplied: version 4 always holds one
  const v4 = cli('convert', 'lm.opt.pt', 'y.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1', '--to', '4');
  assert.equal(v4.status, 1);
  assert.equal(v4.stderr.split('\n')[0], 'version 4 always holds a random counter and the file has none: --random-counter N supplies one');
  const counted = cli('convert', 'lm.opt.pt', 'y.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1', '--to', '4', '--random-counter', '7');
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
        const r = await pair(o, m);
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
      assert.equal((await pair(o, m)).pairs, true);
      assert.equal((await pair(fresh, again)).pairs, true);
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
  assert.ok(lines.some((l) => /^0 → 1: continuous \(worst .* at slot \d+, power 0\.\d+\)$/.test(l)), r.stdout);
  assert.equal(lines.at(-2), 'verdict: one run, every pair continuous');
  const contradicts = cli('run', 'rt.both.pt', 'rt4.ckpt', '--kind', 'adam');
  assert.equal(contradicts.status, 1);
  assert.equal(contradicts.stderr.split('\n')[0], '--kind adam contradicts the file: its optimizer is AdamW');
  const other = cli('convert', 'lm.opt.pt', 'lm.one.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.01');
  assert.equal(other.status, 0, other.stderr);
  const broken = cli('run', 'rt.both.pt', 'lm.one.ckpt', '--kind', 'adamw');
  assert.equal(broken.status, 1);
  assert.ok(broken.stdout.includes('0 → 1: NOT continuous: slot 1: both at step 3, but the moments differ (first at element 0)'), broken.stdout);
  assert.equal(broken.stdout.split('\n').at(-2), 'verdict: something breaks at file 1 (lm.one.ckpt)');
});
