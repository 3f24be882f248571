// Statistics are bit-identical across the three builds of the kernel: wasm with SIMD, wasm
// without, and native (tests/c/stats_dump, from `bash scripts/build.sh`). The same bytes go
// through each; every field of every entry's statistics must match exactly (Object.is: -0 is
// not +0). Inputs cover every class of value and lengths around the kernel's vector, run and
// block widths, and payloads longer than the reader's 1 MiB chunk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect, writeCheckpoint } from '../../js/index.js';
import { modelConfig } from './table.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dump = path.join(root, 'build/native/tests/c/stats_dump');

const SIZES = [1, 7, 8, 63, 64, 65, 255, 256, 1000, 32769, 65536 + 9, 3 * 65536 + 5, 300007];
const KINDS = ['random bits', 'adam-like', 'squares', 'tiny', 'huge', 'zeros and subnormals', 'constant', 'range edges'];

function generator(seed) {
  let s = seed >>> 0 || 1;
  const u32 = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  return { u32, uniform: () => u32() / 2 ** 32 };
}

/** One payload of n values of a kind, with a few specials sprinkled in (NaN of either sign,
 *  +-inf, +-0, subnormals). */
function payload(dtype, n, kind, rng) {
  const f = dtype === 'float32' ? new Float32Array(n) : new Float64Array(n);
  const bits = dtype === 'float32' ? new Uint32Array(f.buffer) : null;
  const wide = dtype === 'float32' ? null : new BigUint64Array(f.buffer);
  const edges = dtype === 'float32'
    ? [2 ** 60 * (1 - 2 ** -24), -(2 ** 60), 2 ** -63, -(2 ** -64), 1, -1, 2 ** -126, 2 ** -149]
    : [2 ** 60, -(2 ** 1023), 2 ** -1074, -(2 ** -1022), 1, -1, 0];
  for (let k = 0; k < n; k++) {
    const u = rng.uniform();
    switch (kind) {
      case 'random bits':
        if (bits) bits[k] = rng.u32();
        else wide[k] = (BigInt(rng.u32()) << 32n) | BigInt(rng.u32());
        break;
      case 'adam-like': f[k] = (u - 0.5) * 10 ** ((k % 12) - 8); break;
      case 'squares': f[k] = u * u * 1e-6; break;
      case 'tiny': f[k] = (u - 0.5) * (bits ? 1e-25 : 1e-300); break;
      case 'huge': f[k] = (u - 0.5) * (bits ? 1e30 : 1e300); break;
      case 'zeros and subnormals': f[k] = rng.u32() % 5 ? (k & 1 ? 0 : -0) : (u - 0.5) * (bits ? 2 ** -126 : 2 ** -1022); break;
      case 'constant': f[k] = 1.5; break;
      default: f[k] = edges[rng.u32() % edges.length];
    }
  }
  const specials = [NaN, -NaN, Infinity, -Infinity, 0, -0, bits ? 1e-45 : 5e-324, bits ? -1e-40 : -1e-310];
  for (let j = 0; j < 8; j++) f[rng.u32() % n] = specials[rng.u32() % specials.length];
  if (bits) bits[rng.u32() % n] = 0xffc00001;   // a NaN with the sign bit set: not negative
  return new Uint8Array(f.buffer);
}

async function checkpoint(dtype, seed) {
  const rng = generator(seed);
  const entries = SIZES.map((n, id) => ({
    id, step: 1,
    m: payload(dtype, n, KINDS[id % KINDS.length], rng),
    v: payload(dtype, n, KINDS[(id + 3) % KINDS.length], rng),
  }));
  return writeCheckpoint({ shapes: SIZES.map((n) => [n]), requiresGrad: SIZES.map(() => true), dtype, config: modelConfig, entries });
}

for (const dtype of ['float32', 'float64']) {
  test(`statistics (${dtype}): wasm SIMD, wasm scalar and native agree bit for bit`, async (t) => {
    const bytes = await checkpoint(dtype, dtype === 'float32' ? 7 : 11);
    const simd = await inspect(bytes, { stats: true, variant: 'simd' });
    const plain = await inspect(bytes, { stats: true, variant: 'nosimd' });
    assert.ok(simd.ok, JSON.stringify(simd.error));
    assert.equal(simd.entries.length, SIZES.length);
    // Something of every class was counted, so the fix-up paths ran.
    const all = simd.entries.flatMap((e) => [e.m, e.v]);
    for (const key of ['nan', 'inf', 'zero', 'negative']) assert.ok(all.some((s) => s[key] > 0), key);
    assert.deepStrictEqual(plain.entries, simd.entries);

    if (!fs.existsSync(dump)) {
      t.skip(`${path.relative(root, dump)} is not built (bash scripts/build.sh)`);
      return;
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-stats-'));
    try {
      const file = path.join(dir, `${dtype}.ckpt`);
      fs.writeFileSync(file, bytes);
      const p = spawnSync(dump, [file], { encoding: 'utf8', maxBuffer: 1 << 26 });
      assert.equal(p.status, 0, p.stderr);
      const native = JSON.parse(p.stdout);
      assert.deepStrictEqual(native.entries.map((e) => [e.m, e.v]), simd.entries.map((e) => [e.m, e.v]));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a file opened with statistics gives stats() without reading again, the same as a fresh read', async () => {
  const { open, saveState } = await import('../../js/index.js');
  const { CountingFile } = await import('./counting.mjs');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-stats-again-'));
  try {
    const opt = path.join(dir, 'a.ckpt'), state = path.join(dir, 'a.tlsf');
    const m = Float32Array.from({ length: 12 }, (_, k) => k - 5.5), v = Float32Array.from({ length: 12 }, (_, k) => k * 1e-3);
    fs.writeFileSync(opt, await writeCheckpoint({ shapes: [[3, 4], [5], [3, 4]], requiresGrad: [true, false, true], representatives: [0, null, 0],
      config: modelConfig, entries: [{ id: 0, step: 3, m, v }] }));
    await saveState(state, { family: 'TLSF32B', shapes: [[3, 4], [5], [3, 4]], values: [m, Float32Array.from([1, 2, NaN, 4, 5]), m] });
    for (const [file, slots] of [[opt, [0, 2]], [state, [0, 1, 2]]]) {
      const src = new CountingFile(file);
      const ck = await open(src, { stats: true });
      const fresh = await open(file);
      try {
        const read = src.bytes;
        for (const slot of slots) {
          assert.deepEqual(await ck.stats(slot), await fresh.stats(slot));
          assert.equal(src.bytes, read, `stats(${slot}) read nothing more`);
        }
      } finally {
        ck.close();
        fresh.close();
        src.close();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
