// Distributed checkpoints (docs/distributed.md) through the package and the CLI: the summary
// lines of reports of the core's `dcp` form, the boxes the viewer's chunk maps draw, and the
// fixture tests/fixtures/dcp-torch113 (torch 1.13's save_state_dict over 2 ranks) opened with
// inspect(dir) and every command that reads it, its figures checked against the records as
// Python's zipfile and NumPy read them.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from '../../js/index.js';
import { summaryLines } from '../../js/cli/text.js';
import { chunkBoxes, rankColour, NO_RANK_COLOUR } from '../../web/parts/chunk-map.js';

const chunk = (offsets, sizes, file, offset, length, rank) => ({ offsets, sizes, file, offset, length, rank });

/** A report of the core's form (src/families/dcp/json.c) for a folder of two ranks: a
 *  row-sharded weight, a bias, a 0-d tensor in a file of no rank, and a tensor the core found tied
 *  to the weight. */
function twoRankReport({ stats = false } = {}) {
  const role = (trainable, representative) => (trainable ? 'owner' : representative !== null ? 'tied' : 'frozen or tied');
  const entry = (name, shape, trainable, representative, chunks) => ({ name, key: `model.${name}`, group: trainable ? 0 : null, shape, dtype: 'F32',
    step: trainable ? 2 : null, trainable, representative, role: role(trainable, representative), chunks, state: {} });
  const entries = [
    entry('emb.weight', [11, 6], true, 0, [chunk([0, 0], [6, 6], '__0_0.distcp', 1357, 875, 0), chunk([6, 0], [5, 6], '__1_0.distcp', 0, 811, 1)]),
    entry('l1.bias', [7], true, 1, [chunk([0], [4], '__0_0.distcp', 3043, 747, 0), chunk([4], [3], '__1_0.distcp', 1622, 747, 1)]),
    entry('scale', [], false, null, [chunk([], [], 'data.bin', 0, 747, null)]),
    entry('head.weight', [11, 6], false, 0, [chunk([0, 0], [11, 6], '__0_0.distcp', 9000, 1000, 0)]),
  ];
  const moments = [{ id: 0, step: 2, count: 66, offset: null }, { id: 1, step: 2, count: 7, offset: null }];
  if (stats) {
    moments[0].m = { min: -0.5, max: 0.25, rms: 0.125, nan: 0, inf: 0 };
    moments[0].v = { min: 0, max: 0.0625, rms: 0.03125, nan: 0, inf: 0 };
  }
  return {
    ok: true, family: 'DCP', name: 'PyTorch distributed checkpoint', kind: 'optimizer', version: null, dtype: null, size: 42420, statistics: stats,
    warnings: ['a warning'], entries: moments,
    dcp: {
      opened: 'folder', root: 'ckpt', version: null, classes: 'torch 1.13', plannerData: false, storageMeta: false, form: 'N', note: null,
      files: [{ name: '__0_0.distcp', size: 24599, items: 33, rank: 0 }, { name: '__1_0.distcp', size: 17821, items: 23, rank: 1 }, { name: 'data.bin', size: null, items: 1, rank: null }],
      strays: ['notes.txt'],
      keys: { model: 4, optimizer: 24, other: 0 },
      groups: [{ lr: 0.01, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01, params: ['emb.weight', 'l1.bias'] }],
      bytesItems: [{ key: 'optim.param_groups.0.lr', file: '__0_0.distcp', offset: 0, length: 431 }],
      entries, record: null, diagnostics: [],
    },
    error: null,
  };
}

test('inspect DIR: the folder, its files with records and ranks, the keys, groups, bytes items, and a row per tensor', () => {
  const lines = summaryLines(twoRankReport(), 'ckpt', null, { width: 100 });
  assert.deepEqual(lines, [
    'ckpt: PyTorch distributed checkpoint (DCP), 42,420 bytes',
    'dcp             unversioned metadata, classes torch 1.13, optimizer nested (N), no planner_data',
    'files           __0_0.distcp (24,599 bytes, 33 records, rank 0), __1_0.distcp (17,821 bytes, 23',
    '                records, rank 1), data.bin (missing, 1 record)',
    'other files     notes.txt',
    'keys            4 model keys, 24 optimizer keys, 0 other keys',
    'group 0         lr 0.01  betas 0.9, 0.999  eps 1e-8  wd 0.01  2 parameters',
    'bytes items     optim.param_groups.0.lr',
    '',
    'slot  name         shape    dtype  chunks  ranks  step  trainable',
    '   0  emb.weight   [11, 6]  F32         2  0,1       2  yes',
    '   1  l1.bias      [7]      F32         2  0,1       2  yes',
    '   2  scale        []       F32         1  ?         -  frozen or tied',
    '   3  head.weight  [11, 6]  F32         1  0         -  tied to emb.weight',
    'warning: a warning',
    '',
    'verdict: valid',
  ]);
});

test('inspect DIR --stats: the moments\' statistics in a table of their own', () => {
  const lines = summaryLines(twoRankReport({ stats: true }), 'ckpt', null, { width: 100 });
  const at = lines.indexOf('   3  head.weight  [11, 6]  F32         1  0         -  tied to emb.weight');
  assert.deepEqual(lines.slice(at + 1, at + 4), [
    '',
    'slot  name        m min  m max  m rms   v max    v rms  NaN/inf',
    '   0  emb.weight   -0.5   0.25  0.125  0.0625  0.03125',
  ]);
});

test('an invalid folder: the verdict\'s error, then every other error of the core\'s diagnostics (its warnings are the report\'s)', () => {
  const r = twoRankReport();
  const diag = (check, code, text, fqn = null, file = null, offset = null) => ({ check, code, severity: code === null ? 'warning' : 'error', text, fqn, file, offset });
  Object.assign(r, { ok: false, error: { code: 2, message: 'first', offset: null, length: 0, slot: null, subject: 'file', hint: null } });
  r.dcp.diagnostics = [diag(10, 2, 'first', 'emb.weight'), diag(30, null, 'a warning'), diag(11, 2, 'second', 'l1.bias', '__1_0.distcp', 811)];
  const lines = summaryLines(r, 'ckpt', null, { width: 100 });
  assert.deepEqual(lines.slice(-5), ['warning: a warning', 'failure: second', '', 'verdict: invalid at byte -', 'first']);
});

test('a data file alone: what was opened, its last record and the core\'s note', () => {
  const r = twoRankReport();
  Object.assign(r.dcp, { opened: 'distcp', note: 'DCP: a note', record: { offset: 23852, length: 747, dtype: 'float32', shape: [6] }, files: [], strays: [], groups: [], bytesItems: [], entries: [] });
  const lines = summaryLines(r, '__0_0.distcp', null, { width: 100 });
  assert.deepEqual(lines.slice(1, 6), [
    'dcp             a data file alone, without its .metadata',
    'last record     747 bytes at byte 23852: a float32 tensor of shape [6]',
    'note            DCP: a note',
    'warning: a warning',
    '',
  ]);
});

test('chunk map: a 2-D tensor\'s row chunks as boxes over rows × columns, a 1-D tensor as a bar, a 0-d tensor one cell', () => {
  const r = twoRankReport();
  const w = chunkBoxes(r.dcp.entries[0].shape, r.dcp.entries[0].chunks);
  assert.equal(w.caption, '11 rows × 6 columns');
  assert.equal(w.width, 160);
  assert.equal(w.height, 96);   // 160 · 11 / 6 rows, at most 96
  const px = (boxes) => boxes.map(({ x, y, w: bw, h }) => [x, y, bw, h].map((v) => Math.round(v * 1000) / 1000));
  assert.deepEqual(px(w.boxes), [[0, 0, 160, 52.364], [0, 52.364, 160, 43.636]]);   // rows 0-5 and 6-10
  const b = chunkBoxes(r.dcp.entries[1].shape, r.dcp.entries[1].chunks);
  assert.equal(b.caption, '7 elements');
  assert.equal(b.height, 14);
  assert.deepEqual(px(b.boxes), [[0, 0, 91.429, 14], [91.429, 0, 68.571, 14]]);   // elements 0-3 and 4-6
  const s = chunkBoxes([], [chunk([], [], 'x', 0, 1, null)]);
  assert.equal(s.caption, 'one value');
  assert.deepEqual(px(s.boxes), [[0, 0, 160, 14]]);
  // more dims: drawn over the first two, and said
  const t = chunkBoxes([4, 8, 3], [chunk([0, 4, 0], [4, 4, 3], 'x', 0, 1, 1)]);
  assert.equal(t.caption, '4 rows × 8 columns (dims 0 and 1 of 3)');
  assert.deepEqual(px(t.boxes), [[80, 0, 80, 80]]);
  // a column-sharded weight: side by side
  const c = chunkBoxes([2, 4], [chunk([0, 0], [2, 2], 'a', 0, 1, 0), chunk([0, 2], [2, 2], 'b', 0, 1, 1)]);
  assert.deepEqual(px(c.boxes), [[0, 0, 80, 80], [80, 0, 80, 80]]);
});

test('chunk map: one colour a rank, grey for a file of no rank', () => {
  assert.notEqual(rankColour(0), rankColour(1));
  assert.equal(rankColour(null), NO_RANK_COLOUR);
  assert.equal(rankColour(10), rankColour(0));
});

// ---- the fixture: torch 1.13's save_state_dict over 2 ranks (tests/fixtures/dcp-torch113) ----

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = path.join(ROOT, 'tests/fixtures/dcp-torch113');
const CLI = path.join(ROOT, 'js/cli.js');
const FIXTURES = path.dirname(DIR);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const cli = (args, cwd = FIXTURES, columns = 80) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, COLUMNS: String(columns) } });
/** The CLI with lines as wide as they come (a diagnostic compared whole). */
const wide = (args, cwd = FIXTURES) => cli(args, cwd, 400);
const NAMES = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias'];

test('inspect(dir): the folder as one checkpoint of the family DCP, its files, keys, groups and each tensor\'s chunks where .metadata puts them', async () => {
  const r = await inspect(DIR);
  assert.equal(r.ok, true);
  assert.equal(r.family, 'DCP');
  const d = r.dcp;
  assert.deepEqual([d.opened, d.version, d.classes, d.form, d.plannerData], ['folder', null, 'torch 1.13', 'N', false]);
  // the sizes are the files', the records those .metadata's storage_data names in each
  assert.deepEqual(d.files, [
    { name: '__0_0.distcp', size: fs.statSync(path.join(DIR, '__0_0.distcp')).size, items: 33, rank: 0 },
    { name: '__1_0.distcp', size: fs.statSync(path.join(DIR, '__1_0.distcp')).size, items: 23, rank: 1 },
  ]);
  assert.deepEqual(d.strays, []);
  assert.deepEqual(d.keys, { model: 9, optimizer: 24, other: 0 });
  assert.deepEqual(d.groups, [{ lr: 0.01, betas: [0.9, 0.999], eps: null, weightDecay: null, decoupledWeightDecay: null, params: NAMES.slice(0, 7) }]);
  assert.deepEqual(d.bytesItems.map((b) => [b.key, b.file, b.offset, b.length]), [
    ['optim.param_groups.0.lr', '__0_0.distcp', 0, 431], ['optim.param_groups.0.betas', '__0_0.distcp', 431, 431], ['optim.param_groups.0.params', '__0_0.distcp', 862, 495]]);
  assert.deepEqual(d.entries.map((e) => e.name), NAMES);
  // the two tensors without state equal no trained one, bit for bit: frozen
  assert.deepEqual(d.entries.map((e) => e.role), [...Array(7).fill('owner'), 'frozen', 'frozen']);
  const emb = d.entries[0];
  assert.deepEqual([emb.shape, emb.dtype, emb.step, emb.group], [[11, 6], 'F32', 2, 0]);
  assert.deepEqual(emb.chunks, [
    { offsets: [0, 0], sizes: [6, 6], file: '__0_0.distcp', offset: 1357, length: 875, rank: 0 },
    { offsets: [6, 0], sizes: [5, 6], file: '__1_0.distcp', offset: 0, length: 811, rank: 1 },
  ]);
  assert.deepEqual(emb.state.exp_avg.chunks.map((c) => [c.file, c.offset, c.length, c.rank]), [['__0_0.distcp', 9147, 875, 0], ['__1_0.distcp', 6979, 811, 1]]);
  assert.deepEqual(d.diagnostics, []);
});

test('ckptscope inspect DIR: the header, files with records and ranks, and a row per tensor (80 columns)', () => {
  const r = cli(['inspect', 'dcp-torch113']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `dcp-torch113: PyTorch Distributed Checkpoint (DCP), float32, 53,266 bytes
dcp             unversioned metadata, classes torch 1.13, optimizer nested (N),
                no planner_data
files           __0_0.distcp (24,599 bytes, 33 records, rank 0), __1_0.distcp
                (17,821 bytes, 23 records, rank 1)
keys            9 model keys, 24 optimizer keys, 0 other keys
group 0         lr 0.01  betas 0.9, 0.999  eps ?  wd ?  7 parameters
bytes items     optim.param_groups.0.lr, optim.param_groups.0.betas,
                optim.param_groups.0.params

slot  name           shape    dtype  chunks  ranks  step  trainable
   0  emb.weight     [11, 6]  F32         2  0,1       2  yes
   1  l1.weight      [7, 6]   F32         2  0,1       2  yes
   2  l1.bias        [7]      F32         2  0,1       2  yes
   3  ln.weight      [7]      F32         2  0,1       2  yes
   4  ln.bias        [7]      F32         2  0,1       2  yes
   5  l2.weight      [6, 7]   F32         2  0,1       2  yes
   6  l2.bias        [6]      F32         2  0,1       2  yes
   7  frozen.weight  [6, 6]   F32         2  0,1       -  no
   8  frozen.bias    [6]      F32         2  0,1       -  no

verdict: valid
`);
});

/** exp_avg of `fqn` read from the records themselves by Python's zipfile and NumPy (each chunk's
 *  window a zip of its own), in global row-major order: min, max and rms. */
function pythonMoments(fqn) {
  const script = `
import io, json, pickle, sys, zipfile, numpy as np
class U(pickle.Unpickler):
    def find_class(self, mod, name):
        return type(name, (), {'__init__': lambda s, *a: setattr(s, 'a', a), '__setstate__': lambda s, st: setattr(s, 'st', st), '__new__': lambda c, *a: object.__new__(c)})
d = sys.argv[1]
m = U(open(d + '/.metadata', 'rb')).load().st
key = 'optim.state.' + sys.argv[2] + '.exp_avg'
size = m['state_dict_metadata'][key].st['size'].a[0]
out = np.zeros(size, dtype=np.float32)
for k, v in m['storage_data'].items():
    if k.st['fqn'] != key: continue
    o = k.st['offset'].a[0]
    ch = next(c.st for c in m['state_dict_metadata'][key].st['chunks'] if c.st['offsets'].a[0] == o)
    raw = open(d + '/' + v.st['relative_path'], 'rb').read()[v.st['offset']:v.st['offset'] + v.st['length']]
    z = zipfile.ZipFile(io.BytesIO(raw))
    data = next(n for n in z.namelist() if n.endswith('/data/0'))
    vals = np.frombuffer(z.read(data), dtype='<f4').reshape(ch['sizes'].a[0])
    out[tuple(slice(a, a + b) for a, b in zip(o, ch['sizes'].a[0]))] = vals
print(json.dumps([float(out.min()), float(out.max()), float(np.sqrt(np.mean(out.astype(np.float64) ** 2)))]))
`;
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, DIR, fqn], { encoding: 'utf8' }));
}

test('inspect --stats: each tensor\'s moments read from its chunks\' records, as Python reads those records', async () => {
  const r = await inspect(DIR, { stats: true });
  const byName = new Map(r.entries.map((e) => [r.dcp.entries[e.id].name, e]));
  for (const fqn of ['emb.weight', 'l2.weight', 'l1.bias']) {
    const [min, max, rms] = pythonMoments(fqn);
    const m = byName.get(fqn).m;
    assert.equal(m.min, min, fqn);
    assert.equal(m.max, max, fqn);
    assert.ok(Math.abs(m.rms - rms) <= 1e-12 * rms, `${fqn}: rms ${m.rms} vs ${rms}`);
  }
  const text = cli(['inspect', 'dcp-torch113', '--stats']);
  assert.equal(text.status, 0, text.stderr);
  const lines = text.stdout.split('\n');
  assert.deepEqual(lines.slice(18, 31), [
    '   7  frozen.weight  [6, 6]   F32         2  0,1       -  no',
    '   8  frozen.bias    [6]      F32         2  0,1       -  no',
    '',
    'slot  name          m min   m max   m rms     v max     v rms  NaN/inf',
    '   0  emb.weight  -0.1226  0.1595  0.0554  0.001598  4.063e-4',
    '   1  l1.weight   -0.3457  0.3666  0.1759   0.01139  3.938e-3',
    '   2  l1.bias     -0.1987  0.1694  0.1212  0.009083  4.099e-3',
    '   3  ln.weight   0.05614   0.293   0.212  0.005069  3.356e-3',
    '   4  ln.bias     -0.1686  0.1663  0.1326  0.002467  1.573e-3',
    '   5  l2.weight   -0.5687  0.4437  0.2407    0.0203  5.908e-3',
    '   6  l2.bias     -0.1324  0.4694  0.2135   0.01237  5.324e-3',
    '',
    'verdict: valid',
  ]);
});

test('ckptscope inspect DIR --json: the core\'s report, with the dcp member', () => {
  const r = cli(['inspect', 'dcp-torch113', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.family, 'DCP');
  assert.equal(report.slotCount, 9);
  assert.equal(report.trainableCount, 7);
  assert.deepEqual(report.dcp.entries.map((e) => e.chunks.map((c) => c.rank)), Array(9).fill([0, 1]));
});

test('ckptscope check DIR: passes every check (exit 0); a missing data file and a folder without .metadata fail, in the core\'s words (exit 1)', () => {
  const ok = cli(['check', 'dcp-torch113']);
  assert.deepEqual([ok.status, ok.stdout, ok.stderr], [0, 'dcp-torch113: a distributed checkpoint (DCP) that passes every check\n', '']);
  const missing = path.join(tmp, 'missing'), unfinished = path.join(tmp, 'unfinished');
  fs.cpSync(DIR, missing, { recursive: true });
  fs.rmSync(path.join(missing, '__1_0.distcp'));
  fs.cpSync(DIR, unfinished, { recursive: true });
  fs.rmSync(path.join(unfinished, '.metadata'));
  const gone = 'DCP: __1_0.distcp is missing: it holds 23 records (the first: model.emb.weight)';
  const a = wide(['check', 'missing'], tmp);
  assert.deepEqual([a.status, a.stdout, a.stderr], [1, `missing: a distributed checkpoint (DCP) that fails a check\n${gone}\n`, `${gone}\n`]);
  const b = wide(['check', 'unfinished'], tmp);
  const none = 'DCP: unfinished has 2 data files but no .metadata: the save did not finish (DCP writes .metadata last)';
  assert.deepEqual([b.status, b.stdout, b.stderr], [1, `unfinished: a distributed checkpoint (DCP) that fails a check\n${none}\n`, `${none}\n`]);
  // inspect shows the same verdict below what it read
  const c = cli(['inspect', 'missing'], tmp);
  assert.equal(c.status, 1);
  assert.deepEqual(c.stdout.split('\n').slice(-3), ['verdict: invalid at byte -', gone, '']);
});

/** Folders of torch >= 2.0's classes written by the core's seed script (stand-ins under torch's
 *  names, tests/c/dcp_core_seeds.py): `columns` holds b.weight column-sharded over two ranks
 *  with AdamW state, a frozen a.weight and c.weight tied to b.weight. */
let seedsDir = null;
/** The core's words for torch 1.13's folder, whose group keeps no eps: health, export, run and diff cannot read it. */
const UNREAD = 'DCP: parameter group 0 keeps no eps (it keeps lr, betas): health, export, run and diff read each trained tensor with its group\'s betas and eps';
function seeds() {
  if (!seedsDir) {
    seedsDir = path.join(tmp, 'seeds');
    execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/dcp_core_seeds.py'), seedsDir], { stdio: 'ignore' });
  }
  return seedsDir;
}

test('ckptscope inspect DIR of a column-sharded, tied folder: the chunks side by side, the tie by values named', async () => {
  const r = cli(['inspect', 'columns'], seeds());
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const at = lines.indexOf('slot  name      shape   dtype  chunks  ranks  step  trainable');
  assert.deepEqual(lines.slice(at, at + 5), [
    'slot  name      shape   dtype  chunks  ranks  step  trainable',
    '   0  b.weight  [2, 3]  F32         2  0,1       3  yes',
    '   1  a.weight  [4]     F32         1  0         -  no',
    '   2  c.weight  [2, 3]  F32         1  1         -  tied to b.weight',
    '',
  ]);
  const d = (await inspect(path.join(seeds(), 'columns'))).dcp;
  assert.deepEqual(d.entries[0].chunks.map((c) => [c.offsets, c.sizes, c.rank]), [[[0, 0], [2, 2], 0], [[0, 2], [2, 1], 1]]);
  assert.deepEqual(d.entries.map((e) => [e.role, e.representative]), [['owner', 0], ['frozen', null], ['tied', 0]]);
});

test('ckptscope health DIR: each trained tensor\'s next step, its parameters the model part\'s, at its groups\' lr; a folder whose groups lack eps is refused, the folder named', () => {
  const r = cli(['health', 'columns', '--json'], seeds());
  const h = JSON.parse(r.stdout);
  assert.equal(h.lr, 0.001);
  assert.equal(h.lrFrom, 'file');
  assert.deepEqual(h.slots.map((s) => s.update !== null), [true, false, true]);
  assert.equal(h.slots[0].param.rms.toFixed(3), '3.028');
  // its moments are built for the test, not by Adam: flagged (exit 1)
  assert.equal(r.status, 1);
  assert.deepEqual([...new Set(h.flags.map((f) => f.slot))], [0]);
  // torch 1.13's folder saved lr and betas, not eps or weight_decay: the step cannot be told
  const f = wide(['health', 'dcp-torch113']);
  assert.equal(f.status, 1);
  assert.equal(f.stdout, '');
  assert.equal(f.stderr, `ckptscope: cannot compute the health of dcp-torch113\n${UNREAD}\n`);
  // a folder holds its own parameters
  const s = wide(['health', 'dcp-torch113', '--state', 'x.pt']);
  assert.equal(s.status, 2);
  assert.match(s.stderr, /^ckptscope: dcp-torch113 is a distributed checkpoint \(DCP\): it is inspected, exported and its health computed alone \(its model part holds its parameters\), and checked alone or with the model it will be loaded into \(check DIR --state MODEL\)\n/);
});

test('ckptscope export DIR OUT.safetensors: each trained tensor\'s moments and parameters under its name; refused, the folder named, where health is', () => {
  const out = path.join(tmp, 'columns.safetensors');
  const r = cli(['export', 'columns', out], seeds());
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^wrote .*columns\.safetensors \(\d+ bytes, safetensors\)\n$/);
  const bytes = fs.readFileSync(out);
  const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8'));
  assert.equal(header.__metadata__.family, 'DCP');
  assert.deepEqual(Object.keys(header).filter((k) => k !== '__metadata__'), ['b.weight.exp_avg', 'b.weight.exp_avg_sq', 'b.weight']);
  assert.deepEqual(header['b.weight.exp_avg'].shape, [2, 3]);
  const f = wide(['export', 'dcp-torch113', path.join(tmp, 'x.safetensors')]);
  assert.equal(f.status, 1);
  assert.equal(f.stderr, `ckptscope: cannot export dcp-torch113\n${UNREAD}\n`);
  assert.equal(fs.existsSync(path.join(tmp, 'x.safetensors')), false);
});

test('a lone .metadata: its index, its data files missing, the core\'s note; a lone .distcp: its last record and the note', () => {
  // the records' checks need the data files: an index alone is no all-clear (exit 3)
  const meta = cli(['inspect', 'dcp-torch113/.metadata']);
  assert.equal(meta.status, 3, meta.stderr);
  assert.match(meta.stdout, /\nverdict: cannot tell \(the index alone: its data files are not here\)\n$/);
  assert.deepEqual(meta.stdout.split('\n').slice(0, 13), [
    'dcp-torch113/.metadata: PyTorch Distributed Checkpoint (DCP), float32, 10,697',
    '  bytes',
    'dcp             the index (.metadata) alone, unversioned metadata, classes torch',
    '                1.13, optimizer nested (N), no planner_data',
    'files           __0_0.distcp (missing, 33 records, rank 0), __1_0.distcp',
    '                (missing, 23 records, rank 1)',
    'keys            9 model keys, 24 optimizer keys, 0 other keys',
    'group 0         lr ?  betas ?  eps ?  wd ?  parameters ?',
    'bytes items     optim.param_groups.0.lr, optim.param_groups.0.betas,',
    '                optim.param_groups.0.params',
    'note            DCP: this is the index of a distributed checkpoint; its data is',
    '                in 2 files (__0_0.distcp, …) that are not here',
    '',
  ]);
  const data = cli(['inspect', 'dcp-torch113/__1_0.distcp']);
  assert.equal(data.status, 3, data.stderr);
  assert.equal(data.stdout, `dcp-torch113/__1_0.distcp: PyTorch Distributed Checkpoint (DCP), 17,821 bytes
dcp             a data file alone, without its .metadata
last record     747 bytes at byte 17074: a float32 tensor of shape [3]
note            DCP: __1_0.distcp is a data file of a distributed checkpoint:
                torch.save records back to back, found only through the folder's
                .metadata; open dcp-torch113

verdict: cannot tell (a data file alone: open its folder)
`);
});

test('commands that do not read a DCP folder say so, and what does (exit 2)', () => {
  // convert reads one through its consolidated pair (tests/js/dcp-convert-tladamf.test.mjs): the
  // pair route's refusal of a file that does not say its kind, nothing written
  const c = wide(['convert', 'dcp-torch113', path.join(tmp, 'x.ckpt')]);
  assert.equal(c.status, 1);
  assert.equal(c.stderr, 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it\n');
  assert.ok(!fs.existsSync(path.join(tmp, 'x.ckpt')));
  // diff reads a DCP folder, but not one whose groups keep no betas and eps: named, exit 1
  const d = wide(['diff', 'dcp-torch113', 'dcp-torch113']);
  assert.equal(d.status, 1);
  assert.equal(d.stderr, `ckptscope: cannot compare: dcp-torch113\n${UNREAD}\n`);
  const e = wide(['check', 'dcp-torch113', '--expect', 'x.json']);
  assert.equal(e.status, 2);
  assert.match(e.stderr, /^ckptscope: dcp-torch113 is a distributed checkpoint \(DCP\): it is inspected, exported and its health computed alone \(its model part holds its parameters\), and checked alone or with the model it will be loaded into \(check DIR --state MODEL\)\n/);
});
