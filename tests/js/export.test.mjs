// Export read back by independent readers: NumPy (Debian's python3-numpy: numpy.load) for .npz
// and .npy, and a parser of the safetensors format written here from its public spec (u64 header
// length, JSON header with dtype, shape and data_offsets, contiguous offsets covering the buffer,
// __metadata__ of strings). Values bit-identical to the checkpoint: float32 and float64, tied and
// frozen slots, NaN payloads, state files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeCheckpoint, writeState, readEntry, open, exportTensors, exportNpy, CheckpointError } from '../../js/index.js';
import { model } from './table.mjs';
import { scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-export-scratch-');

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const PYTHON = '/usr/bin/python3';   // Debian's, with python3-numpy (installed by the test command)
let tmp;
before(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-export-'))));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
const hex = (typed) => Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength).toString('hex');

/** Every array of an .npz (or one .npy) as {name: {dtype, shape, hex}} by numpy.load. */
function numpyRead(file) {
  const script = `
import json, sys, numpy as np
f = sys.argv[1]
out = {}
if f.endswith('.npy'):
    a = np.load(f)
    out['(npy)'] = {'dtype': a.dtype.str, 'shape': list(a.shape), 'hex': a.tobytes().hex()}
else:
    with np.load(f) as z:
        for k in z.files:
            a = z[k]
            out[k] = {'dtype': a.dtype.str, 'shape': list(a.shape), 'hex': a.tobytes().hex() if a.dtype.kind == 'f' else str(a)}
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', script, file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** safetensors, from its spec: returns {metadata, tensors: {name: {dtype, shape, bytes}}}. */
function safetensorsRead(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(dv.getBigUint64(0, true));
  assert.ok(8 + n <= bytes.length, 'the header fits');
  const header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  const data = bytes.subarray(8 + n);
  const { __metadata__: metadata = null, ...entries } = header;
  if (metadata) for (const v of Object.values(metadata)) assert.equal(typeof v, 'string', 'metadata values are strings');
  const spans = Object.entries(entries).map(([name, t]) => ({ name, ...t })).sort((a, b) => a.data_offsets[0] - b.data_offsets[0]);
  let at = 0;
  const tensors = {};
  const widths = { F32: 4, F64: 8 };
  for (const t of spans) {
    assert.equal(t.data_offsets[0], at, `${t.name}: contiguous`);
    const count = t.shape.reduce((a, b) => a * b, 1);
    assert.equal(t.data_offsets[1] - t.data_offsets[0], count * widths[t.dtype], `${t.name}: size of its shape`);
    tensors[t.name] = { dtype: t.dtype, shape: t.shape, bytes: data.subarray(t.data_offsets[0], t.data_offsets[1]) };
    at = t.data_offsets[1];
  }
  assert.equal(at, data.length, 'the offsets cover the buffer');
  return { metadata, tensors };
}

// Slot 0 embedding, 1 frozen, 2 tied to 0, 3 a scalar; NaN payload bits and -0 in the moments.
function description(dtype) {
  const C = dtype === 'float64' ? Float64Array : Float32Array;
  const m0 = C.from([0.5, -0, NaN, 1e-30, -2.5, 3]), v0 = C.from([1, 2, 3, 4, 5, 6]);
  new Uint8Array(m0.buffer)[C.BYTES_PER_ELEMENT * 2] ^= 1;   // a NaN with a payload: bits must survive
  return { shapes: [[2, 3], [4], [2, 3], []], requiresGrad: [true, false, true, true], representatives: [0, null, 0, 3], dtype,
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, randomCounter: 12,
    entries: [{ id: 0, step: 7, m: m0, v: v0 }, { id: 3, step: 9, m: C.from([0.25]), v: C.from([0.0625]) }] };
}

const NAMES = ['wte.weight', 'wpe.weight', 'lm_head.weight', 'ln_f.scale'];

for (const dtype of ['float32', 'float64']) {
  test(`export ${dtype}: .npz read by NumPy and .safetensors by a spec parser, bit for bit`, async () => {
    const bytes = await writeCheckpoint(description(dtype));
    const file = path.join(tmp, `model-${dtype}.ckpt`);
    fs.writeFileSync(file, bytes);
    const names = path.join(tmp, 'names.json');
    fs.writeFileSync(names, JSON.stringify(NAMES));
    const e0 = await readEntry(bytes, 0), e3 = await readEntry(bytes, 3);
    const want = {
      'wte.weight.exp_avg': e0.m, 'wte.weight.exp_avg_sq': e0.v, 'ln_f.scale.exp_avg': e3.m, 'ln_f.scale.exp_avg_sq': e3.v,
    };
    const shapes = { 'wte.weight': [2, 3], 'ln_f.scale': [] };

    const npz = path.join(tmp, `m-${dtype}.npz`);
    let r = run('export', file, npz, '--names', names);
    assert.equal(r.status, 0, r.stderr);
    const arrays = numpyRead(npz);
    assert.deepEqual(Object.keys(arrays).sort(), [...Object.keys(want), '__metadata__'].sort(), 'only owners, PyTorch names');
    for (const [name, typed] of Object.entries(want)) {
      assert.equal(arrays[name].dtype, dtype === 'float64' ? '<f8' : '<f4');
      assert.deepEqual(arrays[name].shape, shapes[name.replace(/\.exp_avg(_sq)?$/, '')]);
      assert.equal(arrays[name].hex, hex(typed), name);
    }
    const meta = JSON.parse(arrays.__metadata__.hex);
    assert.equal(meta.family, 'TLADAMF');
    assert.equal(meta.version, dtype === 'float64' ? '5' : '4');   // a counter: v4; float64: v5
    assert.deepEqual(JSON.parse(meta.steps), { 'wte.weight': 7, 'ln_f.scale': 9 });
    assert.deepEqual(JSON.parse(meta.representatives), [0, null, 0, 3]);
    assert.deepEqual(JSON.parse(meta.names), NAMES);
    assert.equal(JSON.parse(meta.config).bits.beta1, '0x3feccccccccccccd');

    const st = path.join(tmp, `m-${dtype}.safetensors`);
    r = run('export', file, st, '--names', names);
    assert.equal(r.status, 0, r.stderr);
    const parsed = safetensorsRead(new Uint8Array(fs.readFileSync(st)));
    assert.deepEqual(Object.keys(parsed.tensors).sort(), Object.keys(want).sort());
    for (const [name, typed] of Object.entries(want)) {
      assert.equal(parsed.tensors[name].dtype, dtype === 'float64' ? 'F64' : 'F32');
      assert.equal(Buffer.from(parsed.tensors[name].bytes).toString('hex'), hex(typed), name);
    }
    assert.deepEqual(parsed.metadata, meta, 'the same metadata in both formats');

    // slot{i} without names; the API gives the same bytes as the CLI
    assert.deepEqual(await exportTensors(bytes, { format: 'safetensors', names: NAMES }), new Uint8Array(fs.readFileSync(st)));
    const plain = safetensorsRead(await exportTensors(bytes, { format: 'safetensors' }));
    assert.deepEqual(Object.keys(plain.tensors).sort(), ['slot0.exp_avg', 'slot0.exp_avg_sq', 'slot3.exp_avg', 'slot3.exp_avg_sq']);
  });
}

test('export a state file; one entry\'s m and v as .npy', async () => {
  const values = [Float32Array.from([1, -0, NaN, Infinity]), Float32Array.from([7]), Float32Array.from([1, 2, 3, 4, 5, 6])];
  const state = await writeState({ family: 'TLPF32B', shapes: [[4], [], [3, 2]], values });
  const npz = path.join(tmp, 'state.npz');
  fs.writeFileSync(npz, await exportTensors(state, { format: 'npz' }));
  const arrays = numpyRead(npz);
  values.forEach((v, i) => assert.equal(arrays[`slot${i}`].hex, hex(v)));
  assert.deepEqual(arrays.slot2.shape, [3, 2]);
  assert.deepEqual(arrays.slot1.shape, []);
  const st = safetensorsRead(await exportTensors(state, { format: 'safetensors', names: ['a', 'b', 'c'] }));
  values.forEach((v, i) => assert.equal(Buffer.from(st.tensors['abc'[i]].bytes).toString('hex'), hex(v)));
  assert.equal(st.metadata.family, 'TLPF32B');

  const opt = await writeCheckpoint(description('float32'));
  for (const [slot, what] of [[0, 'm'], [2, 'v'], [3, 'm']]) {
    const npy = path.join(tmp, `one-${slot}-${what}.npy`);
    fs.writeFileSync(npy, await exportNpy(opt, slot, what));
    const e = await readEntry(opt, slot);
    assert.equal(numpyRead(npy)['(npy)'].hex, hex(e[what]), `slot ${slot} ${what}`);
  }
  await assert.rejects(exportNpy(opt, 1, 'm'), { code: 40, message: 'parameter 1 is frozen: it has no optimizer state' });
  const tensor = path.join(tmp, 'tensor.npy');
  fs.writeFileSync(tensor, await exportNpy(state, 2, 'values'));
  assert.deepEqual(numpyRead(tensor)['(npy)'].shape, [3, 2]);
});

test('export: names are checked, invalid files refused, nothing half-written', async () => {
  const bytes = await writeCheckpoint(description('float32'));
  const file = path.join(tmp, 'n.ckpt');
  fs.writeFileSync(file, bytes);
  const out = path.join(tmp, 'never.npz');
  const names = (list) => {
    const p = path.join(tmp, `names-${list.length}-${list.join('_').length}.json`);
    fs.writeFileSync(p, JSON.stringify(list));
    return p;
  };
  let r = run('export', file, out, '--names', names(['a', 'b']));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /has 2 names for 4 slots: give one name per slot/);
  // names the core refuses: the names file is at fault, named, with exit status 2 as above
  const alike = names(['a', 'b', 'a', 'c']);
  r = run('export', file, out, '--names', alike);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${alike}: slots 0 and 2 have the same name\n`);
  const long = names(['x'.repeat(65_521), 'b', 'c', 'd']);
  r = run('export', file, out, '--names', long);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${long}: name 0 is 65521 bytes long: an .npz name has at most 65516 bytes (a zip member name is at most 65535)\n`);
  await assert.rejects(exportTensors(bytes, { names: ['a', 'b', 'a', 'c'] }), { name: 'CheckpointError', slot: 2, message: 'slots 0 and 2 have the same name' });
  await assert.rejects(exportTensors(bytes, { names: ['a', '', 'b', 'c'] }), { slot: 1 });
  await assert.rejects(exportTensors(bytes, { names: ['a', 'b', 1, 'c'] }), { name: 'LayoutError' });
  await assert.rejects(exportTensors(bytes.slice(0, 300)), { code: 48 });
  r = run('export', path.join(tmp, 'n.ckpt'), path.join(tmp, 'x.pt'));
  assert.equal(r.status, 2);
  assert.equal(fs.existsSync(out), false);
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-')), []);
  const ck = await open(bytes.slice(0, 300));
  assert.equal(ck.ok, false);
  ck.close();
  r = run('export', (fs.writeFileSync(path.join(tmp, 'cut.ckpt'), bytes.slice(0, 300)), path.join(tmp, 'cut.ckpt')), out);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /cannot export .*cut\.ckpt: it is not a valid checkpoint\n.*truncated/);
});

test('.npz member names are one file name each: /, \\, :, % and control characters written %XX, the map in __metadata__', async () => {
  const src = put('path-names.ckpt', await model());
  const names = ['../../x', '/etc/passwd', 'C:\\w%1\n'];
  const npz = path.join(tmp, 'paths.npz');
  fs.writeFileSync(npz, await exportTensors(src, { format: 'npz', names }));
  const members = ['..%2F..%2Fx', '%2Fetc%2Fpasswd', 'C%3A%5Cw%251%0A'];
  const arrays = numpyRead(npz);
  assert.deepEqual(Object.keys(arrays).sort(), [...members.flatMap((m) => [`${m}.exp_avg`, `${m}.exp_avg_sq`]).filter((k) => !k.startsWith('%2Fetc')), '__metadata__'].sort());
  const meta = JSON.parse(arrays.__metadata__.hex);
  assert.deepEqual(JSON.parse(meta.npzNames), { '..%2F..%2Fx': '../../x', '%2Fetc%2Fpasswd': '/etc/passwd', 'C%3A%5Cw%251%0A': 'C:\\w%1\n' });
  assert.deepEqual(JSON.parse(meta.names), names);
  // unpacked, every member stays in its folder; unquote gives the names back
  const out = fs.mkdtempSync(path.join(tmp, 'unpacked-'));
  const r = spawnSync(PYTHON, ['-c', `
import os, sys, zipfile, json, urllib.parse
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
    print(json.dumps([urllib.parse.unquote(n[:-4]) for n in z.namelist()]))
print(json.dumps(sorted(os.listdir(sys.argv[2]))))
`, npz, out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [unquoted, listed] = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(unquoted, ['../../x.exp_avg', '../../x.exp_avg_sq', 'C:\\w%1\n.exp_avg', 'C:\\w%1\n.exp_avg_sq', '__metadata__']);
  assert.deepEqual(listed, ['..%2F..%2Fx.exp_avg.npy', '..%2F..%2Fx.exp_avg_sq.npy', 'C%3A%5Cw%251%0A.exp_avg.npy', 'C%3A%5Cw%251%0A.exp_avg_sq.npy', '__metadata__.npy']);
  // names needing no escape leave the metadata as it was
  const plain = JSON.parse(numpyRead(put('plain.npz', await exportTensors(src, { format: 'npz', names: ['a.weight', 'b', 'c'] }))).__metadata__.hex);
  assert.equal(plain.npzNames, undefined);
  // the length limit counts the name as written
  await assert.rejects(exportTensors(src, { format: 'npz', names: ['/'.repeat(21_841), 'b', 'c'] }),
    { message: 'name 0 is 65523 bytes long: an .npz name has at most 65516 bytes (a zip member name is at most 65535)' });
});

test('an .npz name past the zip\'s 16-bit name length is refused, never wrapped into a corrupt archive', async () => {
  const src = put('long-names.ckpt', await model());
  const names = ['a'.repeat(65_517), 'b', 'c'];
  await assert.rejects(exportTensors(src, { format: 'npz', names }), (err) => {
    assert.ok(err instanceof CheckpointError);
    assert.equal(err.message, 'name 0 is 65517 bytes long: an .npz name has at most 65516 bytes (a zip member name is at most 65535)');
    assert.equal(err.slot, 0);
    return true;
  });
  // at the limit: a valid archive whose first member name is the name and its suffix
  const ok = await exportTensors(src, { format: 'npz', names: ['a'.repeat(65_516), 'b', 'c'] });
  assert.equal(Buffer.from(ok).readUInt16LE(26), 65_516 + '.exp_avg.npy'.length);
  // safetensors has no such limit
  await exportTensors(src, { format: 'safetensors', names });
});
