// Hostile input through the JS API: every prefix of each corpus file, seeded random byte
// mutations, and every u64 field set to 0, 1, 2^32, 2^63 and 2^64 - 1. Each must give a valid
// report or the reference diagnostic (inspect), and resolve or reject with a CheckpointError
// (check) — never another exception, never a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect, check, writeCheckpoint, writeState, CheckpointError } from '../../js/index.js';
import { matchesTemplate } from './templates.mjs';

const F = 'CUDA Adam checkpoint: ';
const layout = { shapes: [[2, 2], [3], [2, 2], []], requiresGrad: [true, false, true, true] };
const cfg = (k) => ({ kind: k % 2 ? 'adamw' : 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: k % 2 ? 0.01 : 0 });

async function corpus() {
  const out = [];
  const variants = [
    { representatives: [0, null, 2, 3] },
    { representatives: [0, null, 0, 3] },
    { representatives: [0, null, 0, 3], randomCounter: 9 },
    { representatives: [0, null, 0, 3], dtype: 'float64', randomCounter: 2 },
    { representatives: [0, null, 2, 3], dtype: 'float64' },
    { representatives: [0, null, 2, 3], version: 5 },
  ];
  for (const [k, v] of variants.entries()) {
    const desc = { ...layout, ...v, config: cfg(k) };
    desc.entries = desc.representatives.flatMap((r, i) => (r === i ? [{ id: i, step: 3 + i, m: new Array(i === 3 ? 1 : 4).fill(0.5), v: new Array(i === 3 ? 1 : 4).fill(0.25) }] : []));
    const bytes = await writeCheckpoint(desc);
    out.push({ name: `variant ${k}`, bytes, desc, layout: { ...layout, representatives: desc.representatives } });
  }
  // the model-state families: checked against the same shapes
  for (const family of ['TLSF32B', 'TLPF32B']) {
    const values = layout.shapes.map((s) => new Array(s.reduce((a, b) => a * b, 1)).fill(0.5));
    out.push({ name: family, bytes: await writeState({ family, shapes: layout.shapes, values }), layout: { shapes: layout.shapes }, state: true });
  }
  return out;
}

/** The u64 fields of a state file the writer made. */
function stateFields(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields = [7, 15];
  let at = 23;
  for (let i = 0, n = Number(dv.getBigUint64(15, true)); i < n; i++) {
    const rank = Number(dv.getBigUint64(at, true));
    for (let k = 0; k < rank + 2; k++) fields.push(at + 8 * k);
    at += 8 * (rank + 1);
    at += 8 + 4 * Number(dv.getBigUint64(at, true));
  }
  assert.equal(at, bytes.length);
  return fields;
}

/** The u64 fields of a valid file (a test oracle: it walks only files the writer made). */
function u64Fields(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields = [];
  let at = 7;
  const u64 = () => {
    fields.push(at);
    const v = dv.getBigUint64(at, true);
    at += 8;
    return Number(v);
  };
  const version = u64();
  const dtype = version === 5 ? u64() : 0;
  for (let k = 0; k < 5; k++) u64();
  const counter = version === 4 || (version === 5 && u64() === 1);
  if (counter) u64();
  const n = u64();
  for (let i = 0; i < n; i++) {
    const rank = u64();
    for (let k = 0; k < rank; k++) u64();
    u64();
    u64();
  }
  if (version >= 3) for (let i = 0; i < n; i++) u64();
  const entries = u64();
  for (let e = 0; e < entries; e++) {
    u64();
    u64();
    const count = u64();
    at += 2 * count * (dtype === 1 ? 8 : 4);
  }
  assert.equal(at, bytes.length);
  return fields;
}

/** A seeded generator (mulberry32) so every run sweeps the same mutations. */
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const counts = { files: 0, prefixes: 0, byteMutations: 0, fieldMutations: 0, unexpected: 0, codes: new Set() };

/** Every diagnostic is one of docs/format.md's templates, the one of its code. */
async function expectHandled(bytes, expected, what) {
  const report = await inspect(bytes, { stats: true });
  if (!report.ok && !(report.error && matchesTemplate(report.error.code, report.error.message))) {
    counts.unexpected++;
    assert.fail(`${what}: report without a reference diagnostic of its code: ${JSON.stringify(report.error)}`);
  }
  try {
    await check(bytes, expected);
  } catch (err) {
    if (!(err instanceof CheckpointError) || !matchesTemplate(err.code, err.message)) {
      counts.unexpected++;
      assert.fail(`${what}: check threw ${err?.name} ${err?.code}: ${err?.message}`);
    }
  }
  counts.codes.add(report.error?.code ?? 0);
  return report;
}

test('sweep: prefixes, byte mutations and u64 field mutations give reference diagnostics only', { timeout: 300_000 }, async () => {
  const files = await corpus();
  const random = rng(20261129);
  const specials = [0n, 1n, 1n << 32n, 1n << 63n, (1n << 64n) - 1n];
  for (const f of files) {
    counts.files++;
    assert.equal((await inspect(f.bytes)).ok, true);
    for (let cut = 0; cut < f.bytes.length; cut++) {
      const report = await expectHandled(f.bytes.subarray(0, cut), f.layout, `${f.name} cut at ${cut}`);
      assert.equal(report.error.code, 1);
      assert.ok(matchesTemplate(1, report.error.message), report.error.message);
      counts.prefixes++;
    }
    for (const at of f.state ? stateFields(f.bytes) : u64Fields(f.bytes)) {
      for (const value of specials) {
        const m = f.bytes.slice();
        new DataView(m.buffer).setBigUint64(at, value, true);
        await expectHandled(m, f.layout, `${f.name} field at ${at} = ${value}`);
        counts.fieldMutations++;
      }
    }
    for (let k = 0; k < 2000; k++) {
      const m = f.bytes.slice();
      const flips = 1 + Math.floor(random() * 4);
      for (let j = 0; j < flips; j++) m[Math.floor(random() * m.length)] = Math.floor(random() * 256);
      await expectHandled(m, f.layout, `${f.name} mutation ${k}`);
      counts.byteMutations++;
    }
  }
  console.log(`# sweep: ${counts.files} files, ${counts.prefixes} prefixes, ${counts.fieldMutations} field mutations, ${counts.byteMutations} byte mutations, ${counts.codes.size} distinct codes, ${counts.unexpected} unexpected outcomes`);
  assert.equal(counts.unexpected, 0);
});

test('what is not a TLADAMF checkpoint is named: the reference text first, then a hint', async () => {
  const enc = (s) => new TextEncoder().encode(s);
  const header = (magic, version) => {
    const b = new Uint8Array(15 + 8);
    b.set(enc(magic));
    new DataView(b.buffer).setBigUint64(7, BigInt(version), true);
    return b;
  };
  const future = (await writeCheckpoint({ shapes: [[1]], requiresGrad: [true], config: cfg(0), entries: [{ id: 0, step: 1, m: [0], v: [0] }] })).slice();
  new DataView(future.buffer).setBigUint64(7, 6n, true);
  // a file of no family, inspected: named in words of what ckptscope reads, not in one family's text
  const U = 'unsupported checkpoint family: not a TLADAMF, TLSF32B, TLPF32B, safetensors, DCP, DeepSpeed or PyTorch file';
  const cases = [
    [new Uint8Array(0), `${F}truncated checkpoint (wanted 7 bytes, got 0)`, /empty/],
    [enc('abc'), U, null],   // shorter than a magic: no hint
    [enc('version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 42\n'), U, /Git LFS pointer/],
    [enc('<!doctype html><title>404</title>'), U, /HTML/],
    [enc('  {"shapes": [[2, 3]], "requiresGrad": [true]}'), U, /JSON/],
    [future, `${F}unsupported format version 6; expected 2 through 5`, /newer TorchLean/],
    [enc('hello, world\n'), U, /text file/],
  ];
  for (const [bytes, message, hint] of cases) {
    const report = await inspect(bytes);
    assert.equal(report.error.message, message);
    if (hint === null) assert.equal(report.error.hint, null);
    else assert.match(report.error.hint, hint);
  }
  // A model-state file is read as one; loaded where optimizer state is expected, it is named.
  for (const [magic, version, name] of [['TLSF32B', 1, 'state'], ['TLPF32B', 2, 'parameter']]) {
    assert.equal((await inspect(header(magic, version))).ok, true);
    await assert.rejects(check(header(magic, version), { shapes: [], requiresGrad: [], family: 'TLADAMF' }), {
      message: `${F}unsupported checkpoint family`,
      hint: `this is a TorchLean float32 ${name} checkpoint (${magic}, version ${version}, 0 tensors), not optimizer state`,
    });
  }
});
