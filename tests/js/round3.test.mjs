// The API on hostile or unusual inputs: workers on broken and replaced files, files of other
// formats, truncated files, descriptions, exports and sources (the CLI's are in cli-hardening.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, inspect, health, check, writeCheckpoint, writeState, exportTensors, Schema, CheckpointError, LayoutError } from '../../js/index.js';
import { model } from './table.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-inputs-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function file(name, bytes) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, bytes);
  return p;
}

/** Files broken before their first slot: an LFS pointer, an unknown version. */
async function brokenBeforeSlots() {
  const badVersion = await model();
  badVersion[7] = 99;
  return [
    [file('lfs.ckpt', 'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), /unsupported checkpoint family/],
    [file('bad-version.ckpt', badVersion), /unsupported format version 99/],
  ];
}

test('workers: 2 on a file broken before its first slot: the file\'s diagnostic, no crash', async () => {
  for (const [p, diagnostic] of await brokenBeforeSlots()) {
    const report = await inspect(p, { stats: true, workers: 2 });
    assert.equal(report.ok, false);
    assert.match(report.error.message, diagnostic);
    await assert.rejects(health(p, null, { workers: 2 }), (err) => {
      assert.ok(err instanceof CheckpointError, `${err.name}: ${err.message}`);
      assert.match(err.fileError?.message ?? '', diagnostic);
      return true;
    });
  }
});

/** A checkpoint of `n` slots of `size` float32 elements, moments m = value, v = 1. */
function filled(n, size, value) {
  return writeCheckpoint({
    shapes: Array.from({ length: n }, () => [size]), requiresGrad: Array.from({ length: n }, () => true),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 },
    entries: Array.from({ length: n }, (_, id) => ({ id, step: 1, m: new Float32Array(size).fill(value), v: new Float32Array(size).fill(1) })),
  });
}

test('with 2 workers, a file renamed over the path mid-run: every thread reads the one file opened', async () => {
  const p = file('latest.ckpt', await filled(16, 1 << 17, 1));
  const next = await filled(16, 1 << 17, 2);   // a trainer's next save: same layout, other values
  const expected = await inspect(p, { stats: true });
  for (const run of [
    (onProgress) => inspect(p, { stats: true, workers: 2, onProgress }),
    (onProgress) => health(p, null, { workers: 2, onProgress }),
  ]) {
    fs.writeFileSync(p, await filled(16, 1 << 17, 1));
    let saved = false;
    const result = await run(() => {
      if (saved) return;
      saved = true;   // the first progress: this thread has started, the workers are starting
      fs.writeFileSync(`${p}.tmp`, next);
      fs.renameSync(`${p}.tmp`, p);
    });
    assert.ok(saved);
    if ('slots' in result) {
      const rms = new Set(result.slots.map((s) => s.update?.rms));
      assert.equal(rms.size, 1, `health: one file's moments, got ${[...rms]}`);
    } else {
      assert.deepEqual(result.entries.map((e) => e.m), expected.entries.map((e) => e.m), 'inspect: one file\'s statistics');
    }
  }
});

test('a PNG, an .npz, a .safetensors, a PyTorch zip or pickle, a GGUF: what the file is and what to do', async () => {
  const src = file('hint-src.ckpt', await model());
  const npz = await exportTensors(src, { format: 'npz' });
  const safetensors = await exportTensors(src, { format: 'safetensors' });
  // a torch.save zip: its first member is archive/data.pkl (stored)
  const name = Buffer.from('archive/data.pkl');
  const zipHead = Buffer.alloc(30);
  zipHead.writeUInt32LE(0x04034b50, 0);
  zipHead.writeUInt16LE(name.length, 26);
  const cases = [
    [Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(40)]), 'this is a PNG image, not a checkpoint'],
    [npz, 'this is a NumPy .npz archive (ckptscope export writes these), not a checkpoint: read it with numpy.load'],
    [safetensors, 'this is a safetensors file (ckptscope export writes these), not a checkpoint: read it with safetensors\' load_file'],
    [Buffer.concat([zipHead, name, Buffer.alloc(20)]), 'this is a PyTorch file (torch.save\'s zip archive), not a TorchLean checkpoint: read it with torch.load'],
    [Buffer.from([0x80, 0x02, 0x7d, 0x71, 0x00, 0x2e, 0, 0, 0, 0]), 'this looks like a Python pickle (a legacy torch.save file?), not a TorchLean checkpoint: read it with torch.load'],
    [Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(40)]), 'this is a GGUF model file (llama.cpp), not a checkpoint'],
  ];
  for (const [bytes, hint] of cases) {
    const report = await inspect(new Uint8Array(bytes));
    assert.equal(report.ok, false);
    assert.equal(report.error.hint, hint);
  }
});

test('a truncated file is called incomplete, the shortfall from the core', async () => {
  const whole = await model();
  const report = await inspect(whole.slice(0, 300));
  assert.equal(report.error.message, 'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)');
  assert.equal(report.error.hint, 'the file ends at least 3 bytes early: an incomplete copy or download?');
  // a payload cut short: the bytes it misses
  const payloadCut = await inspect(whole.slice(0, 200), { stats: true });
  assert.equal(payloadCut.error.code, 1);
  assert.match(payloadCut.error.hint, /^the file ends at least \d+ bytes? early: an incomplete copy or download\?$/);
});

test('an .npz name past the zip\'s 16-bit name length is refused, never wrapped into a corrupt archive', async () => {
  const src = file('long-names.ckpt', await model());
  const names = ['a'.repeat(65_521), 'b', 'c'];
  await assert.rejects(exportTensors(src, { format: 'npz', names }), (err) => {
    assert.ok(err instanceof CheckpointError);
    assert.equal(err.message, 'name 0 is 65521 bytes long: an .npz name has at most 65520 bytes (a zip member name is at most 65535)');
    assert.equal(err.slot, 0);
    return true;
  });
  // at the limit: a valid archive whose first member name is the name and its suffix
  const ok = await exportTensors(src, { format: 'npz', names: ['a'.repeat(65_520), 'b', 'c'] });
  assert.equal(Buffer.from(ok).readUInt16LE(26), 65_520 + '.exp_avg_sq.npy'.length - '_sq'.length);
  // safetensors has no such limit
  await exportTensors(src, { format: 'safetensors', names });
});

test('unknown keys in a description are refused with the nearest known one; 1e40 as float32 refused', async () => {
  const base = () => JSON.parse(JSON.stringify({ shapes: [[2]], requiresGrad: [true], config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 }, entries: [{ id: 0, step: 1, m: [0, 0], v: [0, 0] }] }));
  const cases = [
    [(d) => { d.config.weight_decay = 0.1; delete d.config.weightDecay; }, 'unknown key description.config.weight_decay: did you mean weightDecay?'],
    [(d) => { d.reprsentatives = [0]; }, 'unknown key description.reprsentatives: did you mean representatives?'],
    [(d) => { d.config.betas = [0.9, 0.999]; }, 'unknown key description.config.betas: ckptscope takes beta1 and beta2 (PyTorch\'s betas=(beta1, beta2))'],
    [(d) => { d.config.eps = 1e-8; }, 'unknown key description.config.eps: did you mean epsilon?'],
    [(d) => { d.config.lr = 1e-3; }, 'unknown key description.config.lr: a checkpoint does not store the learning rate (give it to health with --lr)'],
    [(d) => { d.entries[0].stpe = 2; }, 'unknown key description.entries[0].stpe: did you mean step?'],
    [(d) => { d.entries[0].m[1] = 1e40; }, 'description.entries[0].m[1] is 1e+40: beyond float32\'s range (largest 3.4028234663852886e+38)'],
  ];
  for (const [edit, message] of cases) {
    const d = base();
    edit(d);
    await assert.rejects(writeCheckpoint(d), (err) => {
      assert.ok(err instanceof LayoutError, `${err.name}: ${err.message}`);
      assert.equal(err.message, message);
      return true;
    });
  }
  await assert.rejects(writeState({ shapes: [[1]], vaules: [[1]] }), { message: 'unknown key description.vaules: did you mean values?' });
  await assert.rejects(writeState({ shapes: [[1]], values: [[-1e39]] }), { message: 'description.values[0][0] is -1e+39: beyond float32\'s range (largest 3.4028234663852886e+38)' });
  // float64 holds it; the strings NaN and Infinity are what they say
  const d = base();
  d.dtype = 'float64';
  d.entries[0].m = [1e40, 'Infinity'];
  await writeCheckpoint(d);
});

test('isRepresentative past the last slot is false; extra state values refused; a NUL in an export name refused', async () => {
  const schema = await Schema.create({ shapes: [[2], [2]], requiresGrad: [true, true], representatives: [0, 0] });
  try {
    assert.equal(schema.isRepresentative(0), true);
    assert.equal(schema.isRepresentative(1), false);
    assert.equal(schema.isRepresentative(2n ** 64n - 1n), false);
    assert.equal(schema.isRepresentative(2), false);
  } finally {
    schema.close();
  }
  await assert.rejects(writeState({ shapes: [[1]], values: [[1], [2]] }), { name: 'LayoutError', message: 'description.values has 2 arrays for 1 tensors: one per tensor' });
  const src = file('nul-names.ckpt', await model());
  await assert.rejects(exportTensors(src, { format: 'safetensors', names: ['a\0b', 'b', 'c'] }), { name: 'LayoutError', message: 'names[0] holds a NUL character: a name cannot' });
});

test('a custom {size, read} source as check\'s layout is read as a checkpoint, not taken for a layout', async () => {
  const bytes = await model();
  const custom = { size: bytes.length, read: (offset, dest) => { const n = Math.max(0, Math.min(dest.length, bytes.length - offset)); dest.set(bytes.subarray(offset, offset + n)); return n; } };
  const result = await check(bytes, custom);
  assert.equal(result.ok, true);
  const other = await model();
  other[100] ^= 0xff;   // some other file: still a checkpoint source, the verdict by reading it
  const r = await check(bytes, { ...custom, read: (offset, dest) => { const n = Math.max(0, Math.min(dest.length, other.length - offset)); dest.set(other.subarray(offset, offset + n)); return n; } }).catch((err) => err);
  assert.ok(!(r instanceof LayoutError), `${r?.name}: ${r?.message}`);
});

test('check takes an open Checkpoint as its file, as its types say: the verdict, the handle left open', async () => {
  const bytes = await model();
  const report = await inspect(bytes);
  const layout = { shapes: report.schema.shapes, requiresGrad: report.schema.requiresGrad, representatives: report.schema.representatives };
  const ck = await open(bytes);
  try {
    assert.equal((await check(ck, layout)).ok, true);
    assert.equal(ck.closed, false);
    const wrong = { ...layout, shapes: layout.shapes.map((s, i) => (i === 2 ? [7, 7] : s)) };   // slot 2: [3], its own owner
    const err = await check(ck, wrong).catch((e) => e);
    assert.ok(err instanceof CheckpointError, String(err));
    assert.equal(err.message, 'CUDA Adam checkpoint: rank mismatch for parameter 2 (file=1, expected=2)');
    assert.equal(err.slot, 2);
  } finally {
    ck.close();
  }
  await assert.rejects(check(ck, layout), /this Checkpoint is closed/);
});

test('a sparse file declaring rank 2^28: memory bounded by the bytes left, the truncation diagnostic as before', async () => {
  const bytes = await model();
  new DataView(bytes.buffer, bytes.byteOffset).setBigUint64(63, 1n << 28n, true);   // slot 0's rank
  const p = file('rank.ckpt', bytes);
  fs.truncateSync(p, 32 * 2 ** 20);   // 32 MiB of (sparse) zeros: 4 Mi dims, not 2^28
  // a fresh process: the WebAssembly memory it grows to is this file's doing alone
  const script = `
    const { inspect, loadCore } = await import(${JSON.stringify(new URL('../../js/index.js', import.meta.url).href)});
    const core = await loadCore();
    const before = core.memory.buffer.byteLength;
    const r = await inspect(${JSON.stringify(p)});
    console.log(JSON.stringify({ grown: core.memory.buffer.byteLength - before, error: r.error }));`;
  const { execFileSync } = await import('node:child_process');
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  assert.match(out.error.message, /^CUDA Adam checkpoint: truncated checkpoint \(wanted 8 bytes, got \d\)$/);
  assert.equal(out.error.slot, 0);
  assert.ok(out.grown < 8 * 2 ** 20, `WebAssembly memory grew by ${out.grown} bytes`);
});
