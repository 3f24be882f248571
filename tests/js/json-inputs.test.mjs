// Every JSON input (a layout, its config, a description, a names file) is strict: an unknown key
// is refused with the nearest known one, a number past binary64's range (1e400) is refused where
// it is read, a names file is read capped (/dev/zero refused at once) with one name per slot
// where the names become tensor names; the API's reader option is a name, exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { check, diff, LayoutError } from '../../js/index.js';
import { readNamesFile, readJsonFile } from '../../js/user-files.js';
import { writeBase } from './table.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-json-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp, timeout: 60_000 });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  assert.doesNotMatch(r.stderr, /unexpected error/);
  return r;
}
const put = (name, text) => fs.writeFileSync(path.join(tmp, name), typeof text === 'string' ? text : JSON.stringify(text));
const CONFIG = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };
const SHAPES = [[2, 3], [2, 3], [3]];

test('layout JSON: unknown keys refused with the nearest known key (layout, config, config.bits)', async () => {
  fs.writeFileSync(path.join(tmp, 'opt.ckpt'), await writeBase('model'));
  for (const [layout, text] of [
    [{ shapes: SHAPES, dtyp: 'float32' }, 'unknown key layout.dtyp: did you mean dtype?'],
    [{ shapes: SHAPES, confg: CONFIG }, 'unknown key layout.confg: did you mean config?'],
    [{ shapes: SHAPES, config: { ...CONFIG, weight_decay: 0.1 } }, 'unknown key layout.config.weight_decay: did you mean weightDecay?'],
    [{ shapes: SHAPES, config: { ...CONFIG, bits: { beta: '0x0' } } }, 'unknown key layout.config.bits.beta: did you mean beta1?'],
  ]) {
    put('layout.json', layout);
    const r = run('check', 'opt.ckpt', '--expect', 'layout.json');
    assert.equal(r.status, 2, r.stdout);
    assert.equal(r.stderr, `ckptscope: layout.json: ${text}\n`);
    await assert.rejects(check(path.join(tmp, 'opt.ckpt'), layout), (err) => err instanceof LayoutError && err.message === text);
  }
  // diff reads layouts the same way
  await assert.rejects(diff({ shapes: SHAPES, dtyp: 'float32' }, { shapes: SHAPES }), (err) => err instanceof LayoutError && err.message === 'unknown key layout.dtyp: did you mean dtype?');
  // a layout's own keys, and a report used as a layout, still load
  put('good.json', { shapes: SHAPES, requiresGrad: [true, true, true], representatives: [0, 0, 2], dtype: 'float32', config: CONFIG, keepsRandomCounter: false, family: 'TLADAMF' });
  assert.equal(run('check', 'opt.ckpt', '--expect', 'good.json').status, 0);
  const report = run('inspect', 'opt.ckpt', '--json');
  put('report.json', report.stdout);
  assert.equal(run('check', 'opt.ckpt', '--expect', 'report.json').status, 0);
});

test('a description: 1e400 refused as 1e40 is (never +inf); a counter past 2^64 is no unexpected error', () => {
  const desc = (m, more = {}) => ({ shapes: [[2]], requiresGrad: [true], config: CONFIG, entries: [{ id: 0, step: 1, m, v: [1, 2] }], ...more });
  put('big.json', JSON.stringify(desc([1, 2])).replace('"m":[1,2]', '"m":[1e400,2]'));
  let r = run('write', 'big.json', 'o.ckpt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: description.entries[0].m[0] is a number beyond binary64\'s range (largest 1.7976931348623157e+308): write "Infinity" or "-Infinity" for an infinity\n');
  assert.equal(fs.existsSync(path.join(tmp, 'o.ckpt')), false);
  put('f32.json', JSON.stringify(desc([1, 2])).replace('"m":[1,2]', '"m":[1e40,2]'));
  r = run('write', 'f32.json', 'o.ckpt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: description.entries[0].m[0] is 1e+40: beyond float32\'s range (largest 3.4028234663852886e+38)\n');
  put('beta.json', JSON.stringify(desc([1, 2])).replace('"beta1":0.9', '"beta1":-1e999'));
  r = run('write', 'beta.json', 'o.ckpt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: description.config.beta1 is a number beyond binary64\'s range (largest 1.7976931348623157e+308): write "Infinity" or "-Infinity" for an infinity\n');
  // "Infinity" as a string is an infinity, as documented
  put('inf.json', JSON.stringify(desc(['Infinity', 2])));
  assert.equal(run('write', 'inf.json', 'o.ckpt').status, 0);
  put('counter.json', desc([1, 2], { version: 4, randomCounter: '18446744073709551616' }));
  r = run('write', 'counter.json', 'c.ckpt');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'CUDA Adam checkpoint: metadata value does not fit in 64 bits: 18446744073709551616\n');
  r = run('convert', 'o.ckpt', 'c.ckpt', '--to', '4', '--random-counter', '18446744073709551616');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --random-counter takes a nonnegative integer below 2^64, not 18446744073709551616');
});

test('names files: one capped reader, refused fast from /dev/zero everywhere, one name per slot where names become tensors', async () => {
  fs.writeFileSync(path.join(tmp, 'opt.ckpt'), await writeBase('model'));
  const zero = 'ckptscope: names /dev/zero is not valid JSON: Unexpected token \'\\u0000\', "\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000"... is not valid JSON\n';
  for (const args of [['run', 'opt.ckpt', 'opt.ckpt', '--grad', 'g.safetensors', '--names', '/dev/zero'], ['export', 'opt.ckpt', 'e.safetensors', '--names', '/dev/zero'], ['inspect', 'opt.ckpt', '--names', '/dev/zero']]) {
    const r = run(...args);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, zero, args.join(' '));
  }
  put('one.json', ['a']);
  let r = run('export', 'opt.ckpt', 'e.safetensors', '--names', 'one.json');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: one.json has 1 name for 3 slots: give one name per slot\n');
  put('notnames.json', { a: 1 });
  r = run('run', 'opt.ckpt', 'opt.ckpt', '--grad', 'g.safetensors', '--names', 'notnames.json');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: notnames.json must be an array, got an object\n');
  // run --grad: one name per slot of A, as export (a one-step float64 pair)
  const { writeCheckpoint } = await import('../../js/index.js');
  const config = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };
  const side = (step, m, v) => writeCheckpoint({ shapes: [[2]], requiresGrad: [true], dtype: 'float64', version: 5, randomCounter: 1, config, entries: [{ id: 0, step, m, v }] });
  fs.writeFileSync(path.join(tmp, 'A.ckpt'), await side(1, [0.1, 0.2], [0.001, 0.004]));
  fs.writeFileSync(path.join(tmp, 'B.ckpt'), await side(2, [0.19, 0.38], [0.001999, 0.007996]));
  put('two.json', ['a', 'b']);
  r = run('run', 'A.ckpt', 'B.ckpt', '--grad', 'g.safetensors', '--names', 'two.json');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: two.json has 2 names for 1 slot: give one name per slot\n');
  put('w.json', ['w']);
  r = run('run', 'A.ckpt', 'B.ckpt', '--grad', 'g.safetensors', '--names', 'w.json');
  assert.equal(r.status, 0, r.stderr);
  // the function itself, for every --names
  assert.deepEqual(readNamesFile(path.join(tmp, 'one.json')), ['a']);
  assert.throws(() => readNamesFile(path.join(tmp, 'one.json'), { slots: 3 }), { message: `${path.join(tmp, 'one.json')} has 1 name for 3 slots: give one name per slot` });
  const told = [];
  assert.deepEqual(readNamesFile(path.join(tmp, 'one.json'), { slots: 2, onMismatch: (t) => told.push(t) }), ['a']);
  assert.deepEqual(told, [`${path.join(tmp, 'one.json')} has 1 name for 2 slots`]);
  assert.throws(() => readJsonFile('/dev/zero', 'names'), LayoutError);
});

test('the API\'s reader is a name exactly: "v2\\0junk" and [\'v2\'] are refused, not read as v2', async () => {
  const opt = await writeBase('model');
  const known = 'one of v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5';
  await assert.rejects(check(opt, opt, { reader: 'v2\0junk' }), { name: 'RangeError', message: `unknown TorchLean reader "v2\\u0000junk": ${known}` });
  await assert.rejects(check(opt, opt, { reader: ['v2'] }), { name: 'RangeError', message: `unknown TorchLean reader (an array): ${known}` });
  await assert.rejects(check(opt, opt, { reader: 'v2' }), { name: 'CheckpointError', message: 'CUDA Adam checkpoint: unsupported format version 3; expected 2' });
});
