// Names shortened for room keep what tells them apart: the prefix every name shown shares is said
// once above the table, the rest is shortened from the left where names repeat one another, never
// losing the block number, and what is still cut is listed in full once per output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeCheckpoint } from '../../js/index.js';
import { table, shortName, commonPrefix } from '../../js/cli/table.js';
import { cli, scratch } from './scratch.mjs';

const { put } = scratch('ckptscope-names-fit-');

test('shortName keeps the block number; commonPrefix stops at a module', () => {
  assert.equal(shortName('h.11.attn.c_attn.weight', 30), 'h.11.attn.c_attn.weight');
  assert.equal(shortName('h.11.attn.c_attn.weight', 22), '…11.attn.c_attn.weight');
  assert.equal(shortName('h.11.attn.c_attn.weight', 18), '…11.…c_attn.weight');
  assert.equal(shortName('transformer.wte.weight', 12), '…wte.weight');
  assert.equal(commonPrefix(['transformer.wte.weight', 'transformer.h.0.ln_1.weight', '']), 'transformer.');
  assert.equal(commonPrefix(['transformer.h.0.ln_1.weight', 'lm_head.weight']), '');
  assert.equal(commonPrefix(['transformer.h.1.x', 'transformer.h.10.x']), 'transformer.h.');
  assert.equal(commonPrefix(['a.b', 'a.b']), 'a.');
});

test('twelve transformer.h.{k}.ln_1.weight rows stay twelve different rows at 80 columns', () => {
  const wide = 'x'.repeat(50);
  const rows = [];
  for (let k = 0; k < 12; k++) rows.push([k, `transformer.h.${k}.ln_1.weight`, wide]);
  rows.push([12, 'lm_head.weight', wide]);   // no prefix shared by every name
  const fit = () => ({ width: 80, shrink: 1, key: 0, what: 'slot names', shown: new Set() });
  const row = (k, name) => `${String(k).padStart(4)}  ${name.padEnd(17)}  ${wide}`;
  assert.deepEqual(table(rows, ['slot', 'name', 'wide'], new Set([0]), fit()), [
    `slot  ${'name'.padEnd(17)}  wide`,
    ...rows.slice(0, 12).map(([k]) => row(k, `…h.${k}.ln_1.weight`)),
    row(12, 'lm_head.weight'),
    '',
    'slot names in full (shortened above or left out for room):',
    ...rows.slice(0, 12).map(([k, n]) => `  ${String(k).padStart(2)}  ${n}`),
  ]);
  // without lm_head the shared prefix is said once above, and every name then fits
  const lines = table(rows.slice(0, 12).map((r) => [...r.slice(0, 2), 'x'.repeat(56)]), ['slot', 'name', 'wide'], new Set([0]), fit());
  assert.deepEqual(lines.slice(0, 3), ['slot names under transformer.h.', `slot  ${'name'.padEnd(14)}  wide`, `   0  ${'0.ln_1.weight'.padEnd(14)}  ${'x'.repeat(56)}`]);
  assert.equal(lines.length, 14);   // the prefix, the header, twelve rows: nothing listed in full
});

test('inspect --stats --names: the prefix said once a table, each cut name in full once', async () => {
  const names = ['encoder.embed.weight'];
  for (let l = 0; l < 12; l++) names.push(`encoder.layers.${l}.ln_1.weight`, `encoder.layers.${l}.self_attn.out_proj.weight`);
  const shapes = names.map(() => [3]);
  const entries = shapes.map((_, id) => ({ id, step: 7, m: Float32Array.from([1.5e-4, -2.25e-4, 3e-5]), v: Float32Array.from([1e-8, 2e-8, 4.5e-9]) }));
  const opt = put('enc.ckpt', await writeCheckpoint({ shapes, requiresGrad: shapes.map(() => true), representatives: shapes.map((_, i) => i), config: { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 }, randomCounter: 5, entries }));
  const file = put('enc.json', JSON.stringify(names));
  const r = cli(['inspect', opt, '--stats', '--names', file], { env: { ...process.env, COLUMNS: '80' } });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.equal(lines.filter((l) => l === 'slot names under encoder.').length, 2);
  assert.equal(lines.filter((l) => l.startsWith('slot names in full')).length, 1);
  const stat = (i, name) => `${String(i).padStart(4)}  ${name.padEnd(29)}  -2.25e-4  1.5e-4  1.571e-4   2e-8  1.317e-8`;
  const start = lines.indexOf('slot  name                              m min   m max     m rms  v max     v rms');
  assert.ok(start > 0, r.stdout);
  const expected = [stat(0, 'embed.weight')];
  for (let l = 0; l < 12; l++) expected.push(stat(1 + 2 * l, `layers.${l}.ln_1.weight`), stat(2 + 2 * l, `…${l}.self_attn.out_proj.weight`));
  assert.deepEqual(lines.slice(start + 1, start + 26), expected);
  const full = lines.slice(start + 27, start + 40);
  assert.deepEqual(full, ['slot names in full (shortened above or left out for room):',
    ...Array.from({ length: 12 }, (_, l) => `${String(2 + 2 * l).padStart(4)}  encoder.layers.${l}.self_attn.out_proj.weight`)]);
  for (const n of names.filter((x) => x.includes('out_proj'))) assert.equal(lines.filter((l) => l.endsWith(`  ${n}`)).length, 1, n);
});

test('names short by a tied copy: the refusal says which slot has none, and why', async () => {
  // an embedding, a norm, and a head tied to the embedding (slot 2 shares slot 0)
  const shapes = [[5, 3], [3], [5, 3]];
  const entries = [0, 1].map((id) => ({ id, step: 4, m: new Float32Array(shapes[id][0] * (shapes[id][1] ?? 1)).fill(1e-4), v: new Float32Array(shapes[id][0] * (shapes[id][1] ?? 1)).fill(1e-8) }));
  const opt = put('tied.ckpt', await writeCheckpoint({ shapes, requiresGrad: [true, true, true], representatives: [0, 1, 0], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, randomCounter: 1, entries }));
  const file = put('dropped.json', JSON.stringify(['0.weight', '1.weight']));   // named_parameters() of torch 1.13
  const why = `${file} has 2 names for 3 slots: slot 2 (tied to slot 0) has none: a tied parameter? named_parameters() drops tied copies; named_parameters(remove_duplicate=False) (torch 2.0 and later) or list(model.state_dict()) less the buffers keeps them`;
  const e = cli(['export', opt, put('x.safetensors', new Uint8Array(0)), '--names', file]);
  assert.equal(e.status, 2);
  assert.equal(e.stderr, `ckptscope: ${why}\n`);
  const i = cli(['inspect', opt, '--names', file]);
  assert.equal(i.status, 0);
  assert.equal(i.stderr, `warning: ${why}\n`);
  // short by a name that is not a tie: the plain refusal
  const other = put('one.json', JSON.stringify(['0.weight']));
  assert.equal(cli(['export', opt, put('y.safetensors', new Uint8Array(0)), '--names', other]).stderr, `ckptscope: ${other} has 1 name for 3 slots: give one name per slot\n`);
});
