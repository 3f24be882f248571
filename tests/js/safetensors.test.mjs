// A safetensors file (docs/format.md "safetensors"), a model-state family on the core's seams:
// opened from a Node file, a Blob and over HTTP reading its header only (8 + N bytes, counted by
// the sources), listed by the CLI (text and JSON), its bfloat16 statistics exact against an
// independent computation here, its tensors read in their dtypes, and paired with a TLADAMF
// file by the names of a NAMES.json.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { open, inspect, pair, writeCheckpoint, HttpSource, BlobSource, Schema } from '../../js/index.js';
import { CountingFile, withBlobReader, withServer } from './counting.mjs';
import { writeLlamaSafetensors } from './llama.mjs';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-safetensors-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A safetensors file: tensors [name, dtype, shape, bytes] in data order; the header's keys in
 *  the order given (a writer sorts them; the reader keeps the header's order). */
function safetensors(tensors, { metadata, order } = {}) {
  const header = {};
  if (metadata) header.__metadata__ = metadata;
  let at = 0;
  const entries = tensors.map(([name, dtype, shape, bytes]) => {
    const e = [name, { dtype, shape, data_offsets: [at, at + bytes.length] }];
    at += bytes.length;
    return e;
  });
  for (const [name, e] of order ? order.map((n) => entries.find(([k]) => k === n)) : entries) header[name] = e;
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  let p = 8 + text.length;
  for (const [, , , bytes] of tensors) out.set(bytes, p), (p += bytes.length);
  return { bytes: out, headerLength: text.length };
}

// bfloat16 values by their bits, and their exact values computed here (the upper half of a binary32)
const bf16Bits = [0x3f80, 0xc020, 0x3f00, 0x0000, 0x4040, 0xbe80, 0x7f80, 0x7fc0, 0x0001, 0x4b00];
const widen = (h) => new Float32Array(new Uint32Array([h << 16]).buffer)[0];
const u16 = (bits) => new Uint8Array(new Uint16Array(bits).buffer);
const f32 = (xs) => new Uint8Array(new Float32Array(xs).buffer);

// a header of more than the first read (4096 bytes): opening then reads exactly 8 + N bytes
const layers = Array.from({ length: 200 }, (_, k) => [`model.layers.${k}.mlp.weight`, 'F32', [2, 3], f32([k, 1, 2, 3, 4, 5])]);
const big = safetensors([['model.embed.weight', 'BF16', [2, 5], u16(bf16Bits)], ...layers, ['step', 'I64', [], new Uint8Array(new BigInt64Array([7n]).buffer)]],
  { metadata: { format: 'pt' } });
const bigFile = path.join(dir, 'model.safetensors');
fs.writeFileSync(bigFile, big.bytes);
const openBytes = 8 + big.headerLength;

test('opening a safetensors file from a Node file reads its header only (8 + N bytes)', async () => {
  assert.ok(openBytes > 4096);
  const src = new CountingFile(bigFile);
  const ck = await open(src);
  assert.equal(ck.ok, true);
  assert.equal(ck.kind, 'state');
  const r = ck.report;
  assert.equal(r.family, 'safetensors');
  assert.equal(r.tensors.length, 202);
  // offset: where its entry starts in the header (after the metadata's)
  assert.deepEqual(r.tensors[0], { name: 'model.embed.weight', dtype: 'bfloat16', shape: [2, 5], count: 10, offset: 8 + JSON.stringify({ __metadata__: { format: 'pt' } }).length, dataOffset: openBytes });
  assert.deepEqual(r.container, { format: 'safetensors', headerLength: big.headerLength, metadata: { format: 'pt' } });
  ck.close();
  assert.equal(src.bytes, openBytes);
  src.close();
});

test('opening it from a Blob reads 8 + N bytes, and bytesRead says so', () =>
  withBlobReader(bigFile, async (blob, log) => {
    const src = new BlobSource(blob);
    const ck = await open(src);
    assert.equal(ck.ok, true);
    ck.close();
    const counted = log.reduce((s, [, n]) => s + n, 0);
    assert.equal(src.bytesRead, counted);
    assert.equal(counted, openBytes);
  }));

test('opening it over HTTP transfers 8 + N bytes, and the source counts what the server sent', () =>
  withServer(bigFile, async (served) => {
    const src = HttpSource.open('http://127.0.0.1/model.safetensors');
    const ck = await open(src);
    assert.equal(ck.ok, true);
    assert.equal(ck.report.tensors.length, 202);
    ck.close();
    assert.equal(src.bytesTransferred, served.bytes);
    assert.equal(served.bytes, openBytes);
  }));

test('a Llama-7B-like model.safetensors (13.5 GB, sparse): opening reads 8 + N bytes from a file, a Blob and over HTTP', async () => {
  const file = path.join(dir, 'llama-7b.safetensors');
  const layout = writeLlamaSafetensors(file);
  assert.equal(layout.tensors, 291);
  assert.ok(layout.size > 13e9);
  const want = 8 + layout.headerLength;
  // where lm_head.weight's entry starts: its quoted name in the header, read here
  const head = Buffer.alloc(want);
  const fd = fs.openSync(file, 'r');
  fs.readSync(fd, head, 0, want, 0);
  fs.closeSync(fd);
  const lmHeadAt = head.indexOf('"lm_head.weight"', 8);
  const src = new CountingFile(file);
  const ck = await open(src);
  assert.equal(ck.ok, true, ck.summary.error?.message);
  assert.equal(ck.report.tensors.length, 291);
  assert.deepEqual(ck.report.tensors.at(-1), { name: 'lm_head.weight', dtype: 'bfloat16', shape: [32000, 4096], count: 131072000,
    offset: lmHeadAt, dataOffset: layout.size - 2 * 131072000 });
  ck.close();
  src.close();
  assert.equal(src.bytes, want);
  await withBlobReader(file, async (blob, log) => {
    const b = new BlobSource(blob);
    (await open(b)).close();
    assert.equal(log.reduce((s, [, n]) => s + n, 0), want);
    assert.equal(b.bytesRead, want);
  });
  await withServer(file, async (served) => {
    const h = HttpSource.open('http://127.0.0.1/model.safetensors');
    (await open(h)).close();
    assert.equal(served.bytes, want);
    assert.equal(h.bytesTransferred, want);
  });
  fs.rmSync(file);
});

test('bfloat16 statistics are exact: the values widened here give the same numbers', async () => {
  const r = await inspect(big.bytes, { stats: true });
  const s = r.tensors[0].values;
  const xs = bf16Bits.map(widen), finite = xs.filter(Number.isFinite);
  const sum = finite.reduce((a, x) => a + x, 0), squares = finite.reduce((a, x) => a + x * x, 0);
  assert.equal(s.count, xs.length);
  assert.equal(s.min, Math.min(...finite));
  assert.equal(s.max, Math.max(...finite));
  assert.equal(s.nan, xs.filter(Number.isNaN).length);
  assert.equal(s.inf, xs.filter((x) => Math.abs(x) === Infinity).length);
  assert.equal(s.zero, xs.filter((x) => x === 0).length);
  assert.equal(s.negative, xs.filter((x) => x < 0).length);
  assert.equal(s.mean, sum / finite.length);
  assert.equal(s.rms, Math.sqrt(squares / finite.length));
  assert.equal(s.histogram.log2Min, Math.floor(Math.log2(Math.min(...finite.filter((x) => x !== 0).map(Math.abs)))));
  // the int64 scalar has statistics too, and the tensor keeps its dtype when read
  assert.equal(r.tensors[201].values.max, 7);
  const ck = await open(big.bytes);
  const t = await ck.tensor(0);
  assert.ok(t.values instanceof Uint16Array);   // bfloat16: its raw bits (JS has no bfloat16 array)
  assert.deepEqual([...t.values], bf16Bits);
  assert.deepEqual([...(await ck.tensor(1)).values], [0, 1, 2, 3, 4, 5]);
  assert.deepEqual([...(await ck.tensor(201)).values], [7n]);
  ck.close();
});

test('the CLI lists every tensor with name, dtype, shape and count; --json is the report', () => {
  const small = safetensors([['b.bias', 'F16', [2], u16([0x3c00, 0xc000])], ['a.weight', 'BF16', [2, 2], u16([0x3f80, 0xc020, 0x0000, 0x4040])]],
    { order: ['a.weight', 'b.bias'] });
  const file = path.join(dir, 'small.safetensors');
  fs.writeFileSync(file, small.bytes);
  const text = execFileSync(process.execPath, [CLI, 'inspect', file, '--stats'], { encoding: 'utf8' });
  assert.equal(text, [
    `${file}: safetensors file (safetensors), ${small.bytes.length} bytes`,
    'tensors         2 tensors',
    '',
    'tensor  name      dtype     shape   count  offset   min  max    rms  NaN/inf',
    '     0  a.weight  bfloat16  [2, 2]      4       9  -2.5    3  2.016',
    '     1  b.bias    float16   [2]         2      73    -2    1  1.581',
    '',
    'verdict: valid',
    '',
  ].join('\n'));
  const json = JSON.parse(execFileSync(process.execPath, [CLI, 'inspect', file, '--json'], { encoding: 'utf8' }));
  assert.equal(json.family, 'safetensors');
  assert.equal(json.dtype, null);   // two dtypes
  assert.deepEqual(json.tensors.map((t) => [t.name, t.dtype, t.shape, t.count]), [['a.weight', 'bfloat16', [2, 2], 4], ['b.bias', 'float16', [2], 2]]);
  assert.deepEqual(json.container, { format: 'safetensors', headerLength: small.headerLength, metadata: null });
  assert.equal(json.error, null);
  // --json --stats: the same report, each tensor's statistics with it (exact: bf16 and f16 widen exactly)
  const withStats = JSON.parse(execFileSync(process.execPath, [CLI, 'inspect', file, '--json', '--stats'], { encoding: 'utf8' }));
  assert.equal(withStats.statistics, true);
  assert.deepEqual(withStats.tensors.map((t) => [t.name, t.count]), [['a.weight', 4], ['b.bias', 2]]);
  const [a, b] = withStats.tensors.map((t) => t.values);
  assert.deepEqual([a.count, a.min, a.max, a.mean, a.rms, a.nan, a.inf, a.zero, a.negative], [4, -2.5, 3, 1.5 / 4, Math.sqrt(16.25 / 4), 0, 0, 1, 1]);
  assert.deepEqual([b.count, b.min, b.max, b.mean, b.rms, b.nan, b.inf, b.zero, b.negative], [2, -2, 1, -0.5, Math.sqrt(5 / 2), 0, 0, 0, 1]);
});

test('a violation is refused with its text, naming the tensor, and its slot', async () => {
  const bad = safetensors([['a', 'F32', [2, 3], f32([1, 2, 3, 4, 5])]]);
  const r = await inspect(bad.bytes);
  assert.equal(r.ok, false);
  assert.equal(r.error.message, 'safetensors: tensor "a" holds 20 bytes (data_offsets [0, 20]), but shape [2, 3] of F32 needs 6 elements of 4 bytes');
  assert.equal(r.error.slot, 0);
  const file = path.join(dir, 'bad.safetensors');
  fs.writeFileSync(file, bad.bytes);
  let out;
  try {
    execFileSync(process.execPath, [CLI, 'inspect', file], { encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    out = e.stdout;
  }
  const at = 8 + '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":'.length;   // where its data_offsets are
  assert.equal(out, [
    `${file}: safetensors file (safetensors), ${bad.bytes.length} bytes`,
    'tensors         0 tensors',
    '',
    `verdict: invalid at byte ${at}`,
    r.error.message,
    `at byte ${at}, slot 0`,
    '',
  ].join('\n'));
});

// ---- pairing with a TLADAMF file (format.md 10.4) -------------------------------------------

const adam = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 };
const optimizerOf = (shapes) => writeCheckpoint({
  shapes, requiresGrad: shapes.map(() => true), representatives: null, config: adam,
  entries: shapes.map((s, id) => {
    const n = s.reduce((a, b) => a * b, 1);
    return { id, step: 3, m: new Float32Array(n).fill(0.5), v: new Float32Array(n).fill(0.25) };
  }),
});
// the model's state-dict order: a.weight [2, 3], a.bias [3], b.bias [3]; the file sorts by name
const model = safetensors([['a.bias', 'F32', [3], f32([1, 2, 3])], ['a.weight', 'F32', [2, 3], f32([1, 2, 3, 4, 5, 6])], ['b.bias', 'F32', [3], f32([7, 8, 9])]]);
const WARNING = 'safetensors: model.safetensors keeps no module order: same-shaped parameters cannot be told apart (give --names NAMES.json)';

test('a TLADAMF file pairs with a safetensors file by the names of NAMES.json, in their order', async () => {
  const opt = await optimizerOf([[2, 3], [3], [3]]);
  const r = await pair(opt, model.bytes, { names: ['a.weight', 'a.bias', 'b.bias'] });
  assert.equal(r.pairs, true);
  assert.deepEqual(r.warnings, []);
  // names the file lacks (a dropped tied copy) are skipped
  const skipped = await pair(opt, model.bytes, { names: ['a.weight', 'lm_head.weight', 'a.bias', 'b.bias'] });
  assert.equal(skipped.pairs, true);
  // names in another order than the optimizer's slots: the first slot whose shape differs fails
  const wrong = await pair(opt, model.bytes, { names: ['a.bias', 'a.weight', 'b.bias'] });
  assert.equal(wrong.pairs, false);
  assert.equal(wrong.error.message, "parameter 0: state shape [3] differs from the optimizer's #[2, 3]");
  assert.equal(wrong.error.slot, 0);
  // the file's own order is kept for everything else: an open handle lists it unchanged
  const ck = await open(model.bytes);
  await pair(opt, ck, { names: ['a.weight', 'a.bias', 'b.bias'] });
  assert.deepEqual(ck.report.tensors.map((t) => t.name), ['a.bias', 'a.weight', 'b.bias']);
  assert.deepEqual((await ck.tensor(1)).values, new Float32Array([1, 2, 3, 4, 5, 6]));
  ck.close();
});

test('without names the pair is checked by shape alone, with the warning that says so', async () => {
  const opt = await optimizerOf([[2, 3], [3], [3]]);
  const r = await pair(opt, model.bytes);
  assert.equal(r.pairs, true);
  assert.deepEqual(r.warnings, [WARNING]);
  // as many of each shape as the optimizer holds: one [3] too few fails
  const more = await pair(await optimizerOf([[2, 3], [3], [3], [3]]), model.bytes);
  assert.equal(more.pairs, false);
  assert.equal(more.error.message, 'state file has 3 tensors, the optimizer checkpoint has 4 parameter slots');
  assert.deepEqual(more.warnings, [WARNING]);
});

test('check --state model.safetensors --names NAMES.json: the CLI pairs by the names', async () => {
  const optFile = path.join(dir, 'opt.ckpt'), stFile = path.join(dir, 'pair.safetensors'), namesFile = path.join(dir, 'names.json');
  fs.writeFileSync(optFile, await optimizerOf([[2, 3], [3], [3]]));
  fs.writeFileSync(stFile, model.bytes);
  fs.writeFileSync(namesFile, JSON.stringify(['a.weight', 'a.bias', 'b.bias']));
  const named = execFileSync(process.execPath, [CLI, 'check', optFile, '--state', stFile, '--names', namesFile], { encoding: 'utf8' });
  assert.doesNotMatch(named, /keeps no module order/);
  const plain = execFileSync(process.execPath, [CLI, 'check', optFile, '--state', stFile], { encoding: 'utf8' });
  assert.match(plain, new RegExp(`warning: ${WARNING.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
});

test('export keeps the dtype: BF16 stays BF16 in safetensors; .npz refuses bfloat16, which NumPy lacks', async () => {
  const { exportTensors } = await import('../../js/index.js');
  const file = safetensors([['a.weight', 'BF16', [2, 2], u16([0x3f80, 0xc020, 0x0000, 0x4040])], ['b', 'F16', [1], u16([0x3c00])]]);
  const out = await exportTensors(file.bytes, { format: 'safetensors' });
  const n = Number(new DataView(out.buffer, out.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(out.subarray(8, 8 + n)));
  // under the file's own names, as safetensors loads them
  assert.deepEqual(header['a.weight'], { dtype: 'BF16', shape: [2, 2], data_offsets: [0, 8] });
  assert.deepEqual(header.b, { dtype: 'F16', shape: [1], data_offsets: [8, 10] });
  assert.deepEqual([...out.subarray(8 + n)], [...file.bytes.subarray(8 + file.headerLength)]);   // bit for bit
  // the export reads as the same tensors
  const back = await inspect(out);
  assert.deepEqual(back.tensors.map((t) => [t.dtype, t.shape]), [['bfloat16', [2, 2]], ['float16', [1]]]);
  await assert.rejects(exportTensors(file.bytes, { format: 'npz' }), { message: 'bfloat16 has no NumPy dtype: export the file as safetensors' });
  // float16 has one: '<f2'
  const f16 = safetensors([['b', 'F16', [1], u16([0x3c00])]]);
  const npz = await exportTensors(f16.bytes, { format: 'npz' });
  assert.ok(new TextDecoder().decode(npz).includes("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }"));
});
