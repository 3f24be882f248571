// Distributed checkpoints (docs/distributed.md) in the CLI's words and the viewer's chunk maps:
// the summary lines of a report of the `dcp` form, and the boxes a chunk map draws.
import test from 'node:test';
import assert from 'node:assert/strict';
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
    'dcp             a data file alone',
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
