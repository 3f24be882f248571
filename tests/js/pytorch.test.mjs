// PyTorch files through the front door: real torch.save files (zip and legacy, made by torch at
// test time with tests/c/torch_objects_seeds.py), inspected as data, compared with what torch.load
// itself reads; the CLI's text exactly; a pickle naming os.system never run; a file cut short;
// the bytes read to open a larger file counted.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { open, inspect } from '../../js/index.js';
import { CountingFile } from './counting.mjs';
import { writeLlama } from './llama.mjs';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const SEEDS = new URL('../c/torch_objects_seeds.py', import.meta.url).pathname;
const PY = '/usr/bin/python3';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-pytorch-'));
execFileSync(PY, [SEEDS, dir], { stdio: 'ignore' });
const at = (f) => path.join(dir, f);
// the Lightning-like file pickles this class by its name: torch.load needs it defined to load the file
const PRELUDE = `
import dataclasses
@dataclasses.dataclass
class HParams:
    width: int = 4
    name: str = 'tiny'
`;
const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

/** What torch.load reads in the optimizer state dict at `key` of FILE ('' for the file itself). */
function torchRead(file, key = '') {
  const script = `${PRELUDE}
import json, sys, torch
obj = torch.load(sys.argv[1])
for k in [k for k in sys.argv[2].split('/') if k]:
    obj = obj[int(k)] if isinstance(obj, list) else obj[k]
groups = [{'lr': g['lr'], 'betas': list(g['betas']), 'eps': g['eps'], 'weightDecay': g['weight_decay'],
           'amsgrad': g['amsgrad'], 'maximize': g.get('maximize', False), 'params': g['params']} for g in obj['param_groups']]
entries = []
for i, s in obj['state'].items():
    entries.append({'index': i, 'group': next(k for k, g in enumerate(obj['param_groups']) if i in g['params']),
                    'shape': list(s['exp_avg'].shape), 'dtype': str(s['exp_avg'].dtype).replace('torch.', ''),
                    'step': float(s['step']), 'vmax': 'max_exp_avg_sq' in s})
print(json.dumps({'groups': groups, 'entries': entries}))`;
  return JSON.parse(execFileSync(PY, ['-c', script, file, key], { encoding: 'utf8' }));
}

function assertAsTorchReads(report, file, key = '') {
  const want = torchRead(file, key);
  const got = report.optimizer.groups.map(({ paramNames, ...g }) => g);
  assert.deepEqual(got, want.groups);
  assert.deepEqual(report.entries.map((e) => ({ index: e.index, group: e.group, shape: e.shape, dtype: e.dtype, step: e.step, vmax: e.vmax !== undefined })),
    want.entries);
  for (const e of report.entries) {
    assert.equal(e.id, e.index);
    assert.equal(e.count, e.shape.reduce((a, b) => a * b, 1));
    assert.equal(e.m.count, e.count);
    assert.equal(e.v.count, e.count);
  }
}

test('an AdamW state dict in two groups, zip and legacy, reads as torch.load reads it', async () => {
  for (const [file, format, prefix] of [['adamw.pt', 'zip', 'adamw'], ['adamw-legacy.pt', 'legacy', null]]) {
    const report = JSON.parse(cli('inspect', at(file), '--json', '--stats').stdout);
    assert.deepEqual([report.ok, report.family, report.kind, report.container], [true, 'PyTorch', 'optimizer', { format, prefix, records: 12 }]);
    assert.deepEqual([report.weightsOnly, report.warnings, report.models, report.optimizer.path], [true, [], [], '']);
    // TLADAMF's own members are null here
    assert.deepEqual([report.config, report.randomCounter, report.schema], [null, null, null]);
    assertAsTorchReads(report, at(file));
    // the API's report is the CLI's
    assert.deepEqual(await inspect(at(file), { stats: true }), report);
  }
});

test('amsgrad: max_exp_avg_sq has its statistics as vmax', async () => {
  const report = await inspect(at('amsgrad.pt'), { stats: true });
  assert.equal(report.optimizer.groups[0].amsgrad, true);
  assertAsTorchReads(report, at('amsgrad.pt'));
  for (const e of report.entries) assert.ok(e.vmax.max >= e.v.max);
});

test('a bfloat16 model and its optimizer in one Lightning-like dict: both with their paths, bf16 statistics exact', async () => {
  const report = await inspect(at('lightning.ckpt'), { stats: true });
  assert.equal(report.optimizer.path, 'optimizer_states[0]');
  assert.deepEqual(report.models.map((m) => [m.path, m.tensors.map((t) => [t.name, t.dtype, t.shape])]),
    [['state_dict', [['0.weight', 'bfloat16', [4, 3]], ['0.bias', 'bfloat16', [4]], ['1.weight', 'bfloat16', [1, 4]], ['1.bias', 'bfloat16', [1]]]]]);
  assertAsTorchReads(report, at('lightning.ckpt'), 'optimizer_states/0');
  // the statistics of each moment as torch computes them over its bfloat16 values, widened exactly
  const script = `${PRELUDE}
import json, sys, torch
s = torch.load(sys.argv[1])['optimizer_states'][0]['state']
print(json.dumps([[float(t.double().min()), float(t.double().max())] for i in sorted(s) for t in (s[i]['exp_avg'], s[i]['exp_avg_sq'])]))`;
  const want = JSON.parse(execFileSync(PY, ['-c', script, at('lightning.ckpt')], { encoding: 'utf8' }));
  assert.deepEqual(report.entries.flatMap((e) => [[e.m.min, e.m.max], [e.v.min, e.v.max]]), want);
  assert.equal(report.weightsOnly, false);
  assert.deepEqual(report.refused, ['__main__.HParams']);
});

test('the CLI text of an AdamW state dict, exactly', () => {
  const r = cli('inspect', at('adamw.pt'));
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `${at('adamw.pt')}: torch.save file (PyTorch), ${fs.statSync(at('adamw.pt')).size.toLocaleString('en-US')} bytes
container       zip, prefix adamw, 12 records
optimizer       (the file itself): kind unknown, 2 groups, 4 entries
group 0         lr 0.0003  betas 0.9, 0.95  eps 0.000001  wd 0.01  amsgrad no
                maximize no  params 0, 1
group 1         lr 0.0003  betas 0.9, 0.95  eps 0.000001  wd 0  amsgrad no
                maximize no  params 2, 3
weights only    torch 1.13: no, BINFLOAT at byte 829 of "adamw/data.pkl":
                  Unsupported operand 71
                torch 2.0 to 2.5: yes
                torch 2.6: yes
                torch 2.7 to 2.13: yes
                torch 2.14 and later: yes
globals         torch._utils._rebuild_tensor_v2, torch.FloatStorage,
                collections.OrderedDict

index  group  shape   dtype    step
    0      0  [4, 3]  float32     2
    1      0  [2, 4]  float32     2
    2      1  [4]     float32     2
    3      1  [2]     float32     2

verdict: valid
`);
  // with --stats, a table of the moments' statistics by index
  const s = cli('inspect', at('amsgrad.pt'), '--stats').stdout.split('\n');
  assert.equal(s.find((l) => l.startsWith('index    m min')), 'index    m min   m max   m rms     v max     v rms  vmax max  NaN/inf');
});

test('torch 2.0 to 2.5 and 2.7 to 2.13, between the releases read: a verdict where the bounds agree, cannot tell where they differ', () => {
  const by = (name) => JSON.parse(cli('inspect', at(name), '--json').stdout).weightsOnlyBy
    .map((v) => [v.torch, v.source, v.loads, v.opcode, v.check, v.byte, v.reason]);
  // a scheduler's Counter: 1.13 lacks it, 2.6 lists it; when it came between, ckptscope cannot tell
  assert.deepEqual(by('wo-counter.pt'), [
    ['1.13', '1.13.1', false, 'GLOBAL', 'global', 2, 'Unsupported class collections.Counter'],
    ['2.0 to 2.5', null, null, 'GLOBAL', 'global', 2, 'GLOBAL collections.Counter: 1.13 with BINFLOAT refuses it, 2.6 takes the file: which releases between take it is not known'],
    ['2.6', '2.6.0', true, null, null, null, null],
    ['2.7 to 2.13', null, true, null, null, null, null],
    ['2.14 and later', '2.14.1', true, null, null, null, null]]);
  // a class of the training script: no release takes it; 1.13 stops earlier, at the first float
  const lightning = by('lightning.ckpt');
  assert.deepEqual(lightning.filter((v) => v[1] === null), [
    ['2.0 to 2.5', null, false, 'GLOBAL', 'global', 1583, 'GLOBAL __main__.HParams: refused by both 1.13 with BINFLOAT and 2.6, the bounds of this range'],
    ['2.7 to 2.13', null, false, 'GLOBAL', 'global', 1583, 'GLOBAL __main__.HParams: refused by both 2.6 and 2.14, the bounds of this range']]);
  assert.deepEqual(lightning[0].slice(2, 6), [false, 'BINFLOAT', 'opcode', 1326]);
  // the text says the same, a line a range
  const text = cli('inspect', at('wo-counter.pt')).stdout;
  assert.ok(text.includes(`                torch 2.0 to 2.5: cannot tell, GLOBAL at byte 2 of
                  "archive/data.pkl": GLOBAL collections.Counter: 1.13 with
                  BINFLOAT refuses it, 2.6 takes the file: which releases
                  between take it is not known
                torch 2.6: yes
`), text);
});

test('a pickle naming os.system is read, never run: weightsOnly false, the name in the warning', () => {
  const r = cli('inspect', at('evil.pt'), '--json');
  const report = JSON.parse(r.stdout);
  assert.equal(fs.existsSync(at('ran')), false);
  assert.deepEqual([report.ok, report.weightsOnly, report.refused, report.optimizer], [true, false, ['posix.system'], null]);
  assert.deepEqual(report.warnings, ['PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: "posix.system"']);
  assert.deepEqual(report.models.map((m) => [m.path, m.tensors.length]), [['model', 7]]);
  const text = cli('inspect', at('evil.pt')).stdout.split('\n');
  assert.ok(text.includes('weights only    torch 1.13: no, GLOBAL at byte 759 of "evil/data.pkl":'));
  assert.ok(text.includes('                  Unsupported class posix.system'));
  // each version's verdict: where it stops, and torch's own reason
  assert.deepEqual(report.weightsOnlyBy.map((v) => [v.torch, v.source, v.loads, v.opcode, v.check, v.member, v.byte, v.reason]), [
    ['1.13', '1.13.1', false, 'GLOBAL', 'global', 'evil/data.pkl', 759, 'Unsupported class posix.system'],
    ['2.0 to 2.5', null, false, 'GLOBAL', 'blocked', 'evil/data.pkl', 759, 'GLOBAL posix.system: refused by both 1.13 with BINFLOAT and 2.6, the bounds of this range'],
    ['2.6', '2.6.0', false, 'GLOBAL', 'blocked', 'evil/data.pkl', 759, 'Trying to load unsupported GLOBAL posix.system whose module posix is blocked.'],
    ['2.7 to 2.13', null, false, 'GLOBAL', 'blocked', 'evil/data.pkl', 759, 'GLOBAL posix.system: refused by both 2.6 and 2.14, the bounds of this range'],
    ['2.14 and later', '2.14.1', false, 'GLOBAL', 'blocked', 'evil/data.pkl', 759, 'Trying to load unsupported GLOBAL posix.system whose module posix is blocked.']]);
  // the offset is the GLOBAL opcode's byte in the file
  const bytes = fs.readFileSync(at('evil.pt'));
  for (const v of report.weightsOnlyBy.filter((x) => x.loads === false)) assert.equal(bytes[v.offset], 0x63);
  assert.ok(fs.existsSync(at('evil.pt')) && !fs.existsSync(at('ran')));
});

test('a file cut short and a storage shorter than declared: the exact texts', () => {
  const cut = at('cut.pt');
  fs.writeFileSync(cut, fs.readFileSync(at('adamw.pt')).subarray(0, 2000));
  const r = cli('inspect', cut);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `${cut}: torch.save file (PyTorch), 2,000 bytes

verdict: invalid at byte -
zip: no end-of-central-directory record in the last 2000 bytes of the file
`);
  const s = cli('inspect', at('short-storage.pt'));
  assert.equal(s.status, 1);
  assert.deepEqual(s.stdout.split('\n').slice(2), ['verdict: invalid at byte 255', 'PyTorch: storage "0" declares 16 bytes but its record holds 12', 'at byte 255', '']);
});

test('opening a larger file reads its central directory, data.pkl, 64 KiB and 128 bytes a record at most', async () => {
  const big = at('many.pt');
  const script = `
import json, sys, torch, zipfile
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(100)])
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model(torch.randn(2, 64)).sum().backward()
opt.step()
torch.save(opt.state_dict(), sys.argv[1])
z = zipfile.ZipFile(sys.argv[1])
pkl = next(i.file_size for i in z.infolist() if i.filename.endswith('/data.pkl'))
records = sum(1 for i in z.infolist() if '/data/' in i.filename)
size = z.fp.seek(0, 2)
print(json.dumps({'pkl': pkl, 'records': records, 'centralDirectory': size - z.start_dir}))`;
  const facts = JSON.parse(execFileSync(PY, ['-c', script, big], { encoding: 'utf8' }));
  const src = new CountingFile(big);
  const ck = await open(src);
  assert.equal(ck.report.entries.length, 200);
  assert.equal(ck.report.container.records, facts.records);
  const bound = facts.centralDirectory + facts.pkl + 65536 + 128 * facts.records;
  assert.ok(src.bytes <= bound, `${src.bytes} bytes read, at most ${bound}`);
  assert.ok(src.bytes < fs.statSync(big).size / 4);
  await ck.close();
});

test('opening a Llama-7B-shaped optimizer.pt (291 parameters, 873 records) reads its central directory, data.pkl, 64 KiB and 128 bytes a record at most', async () => {
  // the 7B layout with every dimension divided by 64: the same parameters, records and pickle
  // structure as the benchmark's 54 GB file, 13 MB here
  const tladamf = at('llama-64.ckpt'), pt = at('llama-64.pt');
  writeLlama(tladamf, { kind: 'optimizer', scale: 64 });
  const conv = cli('convert', tladamf, pt, '--lr', '1e-4');
  assert.equal(conv.status, 0, conv.stderr);
  const script = `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
pkl = next(i.file_size for i in z.infolist() if i.filename.endswith('/data.pkl'))
records = sum(1 for i in z.infolist() if '/data/' in i.filename)
print(json.dumps({'pkl': pkl, 'records': records, 'centralDirectory': z.fp.seek(0, 2) - z.start_dir}))`;
  const facts = JSON.parse(execFileSync(PY, ['-c', script, pt], { encoding: 'utf8' }));
  assert.equal(facts.records, 873);
  const src = new CountingFile(pt);
  const ck = await open(src);
  assert.equal(ck.report.entries.length, 291);
  assert.equal(ck.report.container.records, 873);
  const bound = facts.centralDirectory + facts.pkl + 65536 + 128 * facts.records;
  assert.ok(src.bytes <= bound, `${src.bytes} bytes read, at most ${bound}`);
  assert.ok(src.bytes < fs.statSync(pt).size / 16);
  await ck.close();
});

test('what needs a parameter schema refuses a PyTorch optimizer without its model instead of answering for no slots', async () => {
  const why = 'a torch.save file has no slots of its own: they come from the model it belongs to; give the model (--state MODEL)';
  const opt = at('adamw.pt');
  for (const args of [['health', opt], ['export', opt, path.join(dir, 'out.safetensors')],
    ['run', opt, at('amsgrad.pt')], ['check', opt, '--expect', at('amsgrad.pt')]]) {
    const r = cli(...args);
    assert.notEqual(r.status, 0, `${args[0]}: ${r.stdout}`);
    assert.match(r.stderr, new RegExp(why.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), `${args[0]}: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, /healthy|no differences|continuous|wrote/, args[0]);
  }
  assert.equal(fs.existsSync(path.join(dir, 'out.safetensors')), false);
  // diff says how to give the models, in its own words
  const d = spawnSync(process.execPath, [CLI, 'diff', 'adamw.pt', 'amsgrad.pt'], { encoding: 'utf8', cwd: dir });
  assert.equal(d.status, 2);
  assert.equal(d.stderr.split('\n')[0], 'ckptscope: diff: adamw.pt is a PyTorch optimizer: its slots come from its model, which it does not hold: did you mean `ckptscope diff adamw.pt amsgrad.pt --state MODEL_A MODEL_B`?');
});

test('any torch.save object shows its tensors: a bare tensor, a list of them, a dict beside numbers, each with its path', () => {
  const script = `
import sys, torch
torch.save(torch.arange(6.).reshape(2, 3), sys.argv[1] + '/bare.pt')
torch.save([torch.ones(2), torch.zeros(3, dtype=torch.float64)], sys.argv[1] + '/list.pt')
torch.save({'param': torch.ones(4, dtype=torch.bfloat16), 'cat_dim': 0}, sys.argv[1] + '/shard.pt')`;
  execFileSync(PY, ['-c', script, dir]);
  const tensors = (f) => {
    const r = cli('inspect', at(f), '--json');
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout).otherTensors.map((x) => [x.path, x.shape, x.dtype, x.count]);
  };
  assert.deepEqual(tensors('bare.pt'), [['', [2, 3], 'float32', 6]]);
  assert.deepEqual(tensors('list.pt'), [['[0]', [2], 'float32', 2], ['[1]', [3], 'float64', 3]]);
  assert.deepEqual(tensors('shard.pt'), [['param', [4], 'bfloat16', 4]]);
  // a state dict's tensors are its own: none listed apart
  assert.deepEqual(tensors('lightning.ckpt'), []);
  const r = cli('inspect', at('list.pt'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${at('list.pt')}: torch.save file (PyTorch), ${fs.statSync(at('list.pt')).size.toLocaleString('en-US')} bytes
container       zip, prefix list, 2 records
optimizer       none
other tensors   2 tensors in no optimizer or model state dict
weights only    torch 1.13: yes
                torch 2.0 to 2.5: yes
                torch 2.6: yes
                torch 2.7 to 2.13: yes
                torch 2.14 and later: yes
globals         torch._utils._rebuild_tensor_v2, torch.FloatStorage,
                collections.OrderedDict, torch.DoubleStorage

tensor  path  shape  dtype    count
     0  [0]   [2]    float32      2
     1  [1]   [3]    float64      3

verdict: valid
`);
  const bare = cli('inspect', at('bare.pt'));
  assert.ok(bare.stdout.includes('\ntensor  path               shape   dtype    count\n     0  (the file itself)  [2, 3]  float32      6\n'), bare.stdout);
});

test('a Lightning checkpoint\'s epoch and global_step: in inspect\'s lines and the JSON', () => {
  const r = cli('inspect', at('lightning.ckpt'));
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.split('\n').includes('progress        epoch 1, global step 2'), r.stdout);
  const json = JSON.parse(cli('inspect', at('lightning.ckpt'), '--json').stdout);
  assert.deepEqual([json.epoch, json.globalStep], [1, 2]);
  const plain = JSON.parse(cli('inspect', at('adamw.pt'), '--json').stdout);
  assert.deepEqual([plain.epoch, plain.globalStep], [null, null]);
  assert.ok(!cli('inspect', at('adamw.pt')).stdout.includes('progress'));
});
