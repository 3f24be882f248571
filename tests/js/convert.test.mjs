// convert (docs/format.md 8 "Conversion") through the JS API and the CLI: the same state as
// another version (read back and compared), refusals that name their option with the
// destination untouched, the atomic write keeping the destination's mode, and OUT's verdict per
// reader. The lossless paths' byte-level round trips are tests/c/test_convert.c.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { convert, inspect, readEntry, CheckpointError } from '../../js/index.js';
import { makeFile } from './table.mjs';
import { usageOf } from './scratch.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-convert-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
let serial = 0;
const out = (name) => path.join(tmp, `${serial++}-${name}`);

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

/** The state a trainer restores: config bits, layout, counter, and per slot its step and moments. */
async function state(source) {
  const r = await inspect(source);
  assert.equal(r.error, null, r.error?.message);
  const slots = [];
  for (let i = 0; i < r.schema.shapes.length; i++) {
    if (!r.schema.requiresGrad[i]) continue;
    const e = await readEntry(source, i);
    slots.push({ slot: i, owner: e.owner, step: e.step, m: Array.from(e.m), v: Array.from(e.v) });
  }
  return { config: r.config, shapes: r.schema.shapes, requiresGrad: r.schema.requiresGrad, counter: r.randomCounter, slots };
}

test('convert: v4 to v5 and back to v4 keep the state (counter included)', async () => {
  const v4 = await makeFile({ base: 'model-v4' });
  const a = out('a.ckpt'), b = out('b.ckpt');
  assert.deepEqual(await convert(v4, a, { to: 5 }), { version: 5, dtype: 'float32', rounded: false, maxRelativeError: 0 });
  assert.equal((await inspect(a)).version, 5);
  assert.deepEqual(await state(a), await state(v4));
  assert.equal((await convert(a, b, { to: 4 })).version, 4);
  assert.deepEqual(fs.readFileSync(b), Buffer.from(v4));   // the writer's layout: the same bytes
});

test('convert: oldest and for a reader', async () => {
  const v2 = await makeFile({ base: 'model-v2' });
  const v5 = out('v5.ckpt'), back = out('back.ckpt');
  await convert(v2, v5, { to: 5 });
  assert.deepEqual(await convert(v5, back, { to: 'oldest' }), { version: 2, dtype: 'float32', rounded: false, maxRelativeError: 0 });
  assert.deepEqual(fs.readFileSync(back), Buffer.from(v2));
  assert.equal((await convert(v5, out('x.ckpt'), { for: 'v2-v3' })).version, 3);
});

test('convert: a refusal names its option, and the destination is untouched', async () => {
  const v4 = await makeFile({ base: 'model-v4' });
  const dest = out('kept.ckpt');
  fs.writeFileSync(dest, 'old');
  await assert.rejects(convert(v4, dest, { for: 'v2-v3' }), (err) => {
    assert.ok(err instanceof CheckpointError);
    assert.equal(err.code, 50);
    assert.equal(err.message, 'version 3 cannot hold the random counter: --drop-random-counter drops it (stochastic training then cannot resume exactly)');
    return true;
  });
  assert.equal(fs.readFileSync(dest, 'utf8'), 'old');
  assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.includes('.tmp-')), []);
  const r = await convert(v4, dest, { for: 'v2-v3', dropRandomCounter: true });
  assert.equal(r.version, 3);
  assert.equal((await inspect(dest)).randomCounter, null);
});

test('convert: bad options are RangeErrors before anything is read', async () => {
  const v2 = await makeFile({ base: 'model-v2' });
  const n = out('n.ckpt');
  await assert.rejects(convert(v2, n, { to: 6 }), { name: 'RangeError', message: 'to must be 2, 3, 4, 5 or "oldest", got 6' });
  await assert.rejects(convert(v2, n, {}), { name: 'RangeError', message: 'convert needs one of to (2, 3, 4, 5 or "oldest") and for (a reader name)' });
  await assert.rejects(convert(v2, n, { for: 'v7' }), { name: 'RangeError', message: 'unknown TorchLean reader "v7": one of v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5' });
  assert.equal(fs.existsSync(n), false, 'nothing written');
});

test('cli convert: atomic, the mode kept, the verdict per reader', async () => {
  const input = out('in.ckpt');
  fs.writeFileSync(input, await makeFile({ base: 'model-v4' }));
  const dest = out('dest.ckpt');
  fs.writeFileSync(dest, '');
  fs.chmodSync(dest, 0o600);
  const r = run('convert', input, dest, '--to', '5');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.statSync(dest).mode & 0o777, 0o600);
  assert.equal(r.stdout, [
    `${dest}: version 5 (float32)`,
    `${dest}, per TorchLean reader:`,
    '  v2         does not read it: CUDA Adam checkpoint: unsupported format version 5; expected 2',
    '  v2-lists   does not read it: CUDA Adam checkpoint: unsupported format version 5; expected 2',
    '  v2-v3      does not read it: CUDA Adam checkpoint: unsupported format version 5; expected 2 or 3',
    '  v2-v4      does not read it: CUDA Adam checkpoint: unsupported format version 5; expected 2, 3, or 4',
    '  v2-v4-f32  does not read it: CUDA Adam checkpoint: unsupported format version 5; expected 2, 3, or 4',
    '  v2-v5      reads it',
    '',
  ].join('\n'));
});

test('cli convert: a refusal exits 1 with the text; usage errors exit 2', async () => {
  const input = out('in.ckpt');
  fs.writeFileSync(input, await makeFile({ base: 'model' }));   // v3, tied
  const o = out('o.ckpt');
  const r = run('convert', input, o, '--to', '2');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, "version 2 cannot hold tied parameters: --untie gives every alias its own copy of its owner's moments and step (loadable only where the model's weights are untied too)\n");
  assert.equal(r.stdout, '');
  for (const [args, message] of [
    [['--to', '7'], '--to takes 2, 3, 4, 5 or oldest, not 7'],
    [[], 'convert takes IN OUT and one of --to 2|3|4|5|oldest, --for READER'],
    [['--for', 'v9'], '--for takes a TorchLean reader: v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5; not v9'],
  ]) {
    const bad = run('convert', input, o, ...args);
    assert.equal(bad.status, 2, args.join(' '));
    assert.equal(bad.stderr, `ckptscope: ${message}\n${usageOf('convert')}`);
  }
  assert.equal(fs.existsSync(o), false, 'nothing written');
  const untied = out('untied.ckpt');
  const ok = run('convert', input, untied, '--to', '2', '--untie');
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout, [`${untied}: version 2 (float32)`, `${untied}, per TorchLean reader:`,
    ...['v2', 'v2-lists', 'v2-v3', 'v2-v4', 'v2-v4-f32', 'v2-v5'].map((reader) => `  ${reader.padEnd(11)}reads it`), ''].join('\n'));
  assert.equal((await inspect(untied)).version, 2);
});

test('cli convert: float64 rounded, its largest relative error reported', async () => {
  const input = out('f64.ckpt');
  fs.writeFileSync(input, await makeFile({ base: 'model-f64' }));
  const o = out('o.ckpt');
  const rounded = run('convert', input, o, '--to', 'oldest', '--round-to-float32');
  assert.equal(rounded.status, 0, rounded.stderr);
  // the moments of model-f64 are float32 values: rounding them loses nothing
  assert.equal(rounded.stdout, [
    `${o}: version 3 (float32)`,
    'rounded float64 moments to float32: largest relative error 0.00',
    `${o}, per TorchLean reader:`,
    '  v2         does not read it: CUDA Adam checkpoint: unsupported format version 3; expected 2',
    '  v2-lists   does not read it: CUDA Adam checkpoint: unsupported format version 3; expected 2',
    '  v2-v3      reads it',
    '  v2-v4      reads it',
    '  v2-v4-f32  reads it',
    '  v2-v5      reads it',
    '',
  ].join('\n'));
  const r = run('convert', input, out('o3.ckpt'), '--to', '3');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'version 3 cannot hold float64 moments: --round-to-float32 rounds them (the largest relative error is reported)\n');
});
