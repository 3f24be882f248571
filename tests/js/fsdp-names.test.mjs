// FSDP's name-keyed optimizer files (docs/pytorch.md) through the package and the CLI, on files
// torch makes at test time (tests/c/fsdp_names_seeds.py): the report's keying and names, the
// pairing by name with its exact texts and exit statuses, and both conversions: to TLADAMF
// (the same bytes as the Adam's own id-keyed file gives) and to an id-keyed torch.optim state
// dict (--to ids, --group-order stored).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { open, inspect, pair, convertToIds } from '../../js/index.js';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const SEEDS = new URL('../c/fsdp_names_seeds.py', import.meta.url).pathname;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-fsdp-names-'));
execFileSync('/usr/bin/python3', [SEEDS, dir], { stdio: 'ignore' });
const at = (f) => path.join(dir, f);
const manifest = JSON.parse(fs.readFileSync(at('manifest.json'), 'utf8'));
const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir });
const PASS = 'DCP: the model pairs with this checkpoint by name: same names, shapes and ties';
const ORDER = 'DCP: group 0 lists norm.bias before blocks.0.lin.weight, the module the other way round: numbered in module order (--group-order stored keeps the list)';

test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a name-keyed optimizer: keyed by names, its groups\' FSDP-ordered names and its entries by name', async () => {
  const r = await inspect(at('names.pt'));
  assert.equal(r.ok, true);
  assert.equal(r.optimizer.keying, 'names');
  assert.deepEqual(r.optimizer.groups[0].params, manifest.fsdp);
  assert.deepEqual(r.entries.map((e) => [e.index, e.name, e.step]), manifest.fsdp.map((n, k) => [k, n, 2]));
  const ids = await inspect(at('ids.pt'));
  assert.equal(ids.optimizer.keying, 'ids');
  assert.equal(ids.entries[0].name, null);
});

test('form F\'s flat keys: two groups from equal values, with the warning; nested as dcp_to_torch_save writes it', async () => {
  const r = await inspect(at('flat.pt'));
  assert.equal(r.optimizer.keying, 'flat');
  assert.deepEqual(r.optimizer.groups.map((g) => g.params), manifest.fsdp2);
  assert.deepEqual(r.optimizer.groups.map((g) => [g.lr, g.weightDecay]), [[0.01, 0.1], [0.005, 0]]);
  assert.ok(r.warnings.includes('DCP: the flattened optimizer state keeps no group boundaries: parameters with equal hyperparameters form one group (2 groups)'), r.warnings.join('\n'));
  const n = await inspect(at('nested.pt'));
  assert.deepEqual([n.optimizer.path, n.optimizer.keying, n.model], ['optimizer', 'names', 'model']);
});

test('pairing by name: the slots in module order, no positional pairing, the passing text', async () => {
  const o = await open(at('names.pt'));
  const m = await open(at('model.pt'));
  try {
    const r = await pair(o, m);
    assert.deepEqual([r.pairs, r.note, r.failures, r.warnings], [true, PASS, [], []]);
    assert.equal(r.pytorch.byName, true);
    assert.equal(r.pytorch.positionalKnown, false);
    assert.deepEqual(r.pytorch.slots, manifest.module);
    assert.deepEqual(r.pytorch.notInOptimizer, ['pos']);
    assert.deepEqual(r.pytorch.indices.map((x) => x.name), manifest.fsdp);
  } finally {
    m.close();
    o.close();
  }
  const c = cli('check', 'names.pt', '--state', 'model.pt');
  assert.equal(c.status, 0, c.stderr);
  assert.equal(c.stdout, `names.pt pairs with model.pt: ${PASS}\nnot in the optimizer (frozen or buffers): pos\n`);
});

test('a model that does not pair by name: every failure listed in check order, exit status 1', () => {
  const c = cli('check', 'names.pt', '--state', 'renamed.pt');
  assert.equal(c.status, 1);
  assert.equal(c.stdout, [
    'names.pt does not pair with renamed.pt: 3 failures',
    '  DCP: blocks.1.lin.weight is in the checkpoint, not in the model',
    '  DCP: blocks.1.lin.bias is in the checkpoint, not in the model',
    '  DCP: norm.weight is #[4] in the checkpoint, #[5] in the model',
    ''].join('\n'));
  const t = cli('check', 'tiedstate.pt', '--state', 'model.pt');
  assert.equal(t.status, 1);
  assert.match(t.stdout, /^tiedstate\.pt does not pair with model\.pt: 1 failure\n {2}DCP: head\.weight is tied to emb\.weight in the model, not in the checkpoint\n/);
  const f = cli('check', 'names.pt', '--state', 'model.pt', '--frozen', 'pos,norm.bias');
  assert.equal(f.status, 0, f.stdout + f.stderr);
  assert.match(f.stdout, /warning: DCP: norm\.bias is frozen in the model but has optimizer state in the checkpoint\n/);
  const g = cli('check', 'names.pt', '--state', 'model.pt', '--frozen', 'emb.weight');
  assert.equal(g.status, 1);
  assert.match(g.stdout, /DCP: pos requires grad in the model but has no optimizer state in the checkpoint/);
});

test('convert to TLADAMF: the same bytes as the id-keyed optimizer of the same state', () => {
  for (const [opt, out] of [['names.pt', 'from-names.ckpt'], ['ids.pt', 'from-ids.ckpt'], ['nested.pt', 'from-nested.ckpt']]) {
    const r = cli('convert', opt, out, '--state', 'model.pt', '--kind', 'adam');
    assert.equal(r.status, 0, r.stdout + r.stderr);
  }
  assert.ok(fs.readFileSync(at('from-names.ckpt')).equals(fs.readFileSync(at('from-ids.ckpt'))));
  assert.ok(fs.readFileSync(at('from-nested.ckpt')).equals(fs.readFileSync(at('from-ids.ckpt'))));
});

test('convert --to ids: the warning on stderr, an id-keyed file numbered in module order; --group-order stored keeps the list', async () => {
  const r = cli('convert', 'names.pt', 'ids-out.pt', '--state', 'model.pt', '--to', 'ids');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, `warning: ${ORDER}\n`);
  assert.match(r.stdout, /^ids-out\.pt: keyed by ids, from names\.pt numbered by model\.pt \(module order\)\nids-out\.pt: torch\.save file, Adam state_dict, 7 parameters with state \(float32\), lr 0\.01\n/);
  const back = await inspect(at('ids-out.pt'));
  assert.equal(back.optimizer.keying, 'ids');
  assert.deepEqual(back.optimizer.groups[0].params, [0, 1, 2, 3, 4, 5, 6]);
  // id k's moments are the k-th trainable parameter's in module order
  const byName = Object.fromEntries((await inspect(at('names.pt'))).entries.map((e) => [e.name, e.shape]));
  assert.deepEqual(back.entries.map((e) => e.shape), manifest.trainable.map((n) => byName[n]));
  const s = cli('convert', 'names.pt', 'ids-stored.pt', '--state', 'model.pt', '--to', 'ids', '--group-order', 'stored');
  assert.equal(s.status, 0, s.stderr);
  const stored = await inspect(at('ids-stored.pt'));
  assert.deepEqual(stored.entries.map((e) => e.shape), manifest.fsdp.map((n) => byName[n]));
  // the API: an open pair
  const o = await open(at('flat.pt'));
  const m = await open(at('model2.pt'));
  try {
    await pair(o, m);
    const { warnings } = await convertToIds(o, at('flat-ids.pt'));
    assert.deepEqual(warnings, ['DCP: group 1 lists norm.bias before blocks.0.lin.bias, the module the other way round: numbered in module order (--group-order stored keeps the list)']);
  } finally {
    m.close();
    o.close();
  }
  assert.equal((await inspect(at('flat-ids.pt'))).entryCount, 7);
});

test('convert --to ids refuses what it cannot number, and its options elsewhere', () => {
  const ids = cli('convert', 'ids.pt', 'x.pt', '--state', 'model.pt', '--to', 'ids');
  assert.equal(ids.status, 1);
  assert.match(ids.stderr, /--to ids converts an optimizer keyed by parameter names \(FSDP's\); this one is keyed by ids already\n/);
  const bad = cli('convert', 'names.pt', 'x.pt', '--state', 'renamed.pt', '--to', 'ids');
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /cannot convert names\.pt: it does not pair with renamed\.pt\nDCP: blocks\.1\.lin\.weight is in the checkpoint, not in the model\n/);
  assert.equal(fs.existsSync(at('x.pt')), false);
  const order = cli('convert', 'names.pt', 'x.ckpt', '--state', 'model.pt', '--group-order', 'stored');
  assert.equal(order.status, 2);
  const none = cli('convert', 'names.pt', 'x.pt', '--to', 'ids');
  assert.equal(none.status, 2);
  assert.match(none.stderr, /needs its model: the ids follow its module order \(--state MODEL\)/);
});
