// Training health against an independent computation: a straightforward per-element loop here
// (the definitions of docs/health.md, written again from the formulas) on files with tied,
// frozen, NaN, never-updated, negative and inconsistent slots, float32 and float64, with and
// without a state file and a learning rate; every field of the JSON is compared. And a property:
// moments made by the Adam recurrence from random gradients never count as inconsistent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { health, writeCheckpoint, writeState, CheckpointError } from '../../js/index.js';
import { model, writeBase } from './table.mjs';
import { cli, scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-health-scratch-');

const size = (shape) => shape.reduce((a, b) => a * b, 1);

/** A bound of the ratio band as the flags' texts write it: the shortest exponent form. */
const boundText = (x) => (x === 0 ? '0' : x.toExponential().replace('e+', 'e'));

/** The health JSON of docs/health.md, computed element by element. */
function reference(desc, stateValues, lr, band = [1e-5, 1e-2]) {
  const { beta1, beta2, epsilon, weightDecay, kind } = desc.config;
  const f32 = (desc.dtype ?? 'float32') === 'float32';
  const store = (x) => (f32 ? Math.fround(x) : x);
  const eps = f32 ? Math.fround(epsilon) : epsilon;
  const c = beta1 * beta1 < beta2 ? (1 - beta1) / Math.sqrt((1 - beta2) * (1 - beta1 * beta1 / beta2)) : null;
  const vFloor = f32 ? 2 ** -126 : 2 ** -1022;
  const reps = desc.representatives ?? desc.requiresGrad.map((t, i) => (t ? i : null));
  const slots = [];
  const flags = [];
  desc.shapes.forEach((shape, i) => {
    const owner = reps[i];
    const e = owner === null ? null : desc.entries.find((x) => x.id === owner);
    const n = size(shape);
    const s = { slot: i, name: null, owner, trainable: desc.requiresGrad[i], count: n, step: e ? e.step : null, param: null, update: null,
      ratio: null, decay: null, neverUpdated: 0, inconsistent: 0, nonFinite: 0, flags: [] };
    // a ratio outside the band is a heuristic's warning; everything else says the state is broken
    const add = (flag, message) => {
      s.flags.push(flag);
      flags.push({ slot: i, flag, severity: flag.startsWith('ratio') ? 'warning' : 'failure', message });
    };
    let uSq = 0, uMax = 0, uN = 0, negative = 0, nan = 0, inf = 0;
    if (e) {
      const bc1 = 1 - beta1 ** (e.step + 1), bc2 = 1 - beta2 ** (e.step + 1);
      for (let k = 0; k < n; k++) {
        const m = store(e.m[k]), v = store(e.v[k]);
        if (!Number.isFinite(m) || !Number.isFinite(v)) {
          for (const x of [m, v]) if (Number.isNaN(x)) nan++; else if (!Number.isFinite(x)) inf++;
          continue;
        }
        if (v < 0) { negative++; continue; }
        if (v === 0) s.neverUpdated++;
        if (c !== null && Math.abs(m) > c * Math.sqrt(Math.max(v, vFloor)) * (1 + 1e-3)) s.inconsistent++;
        const u = (m / bc1) / (Math.sqrt(v / bc2) + eps);
        if (!Number.isFinite(u)) continue;
        uSq += u * u;
        uMax = Math.max(uMax, Math.abs(u));
        uN++;
      }
      s.update = { rms: uN ? Math.sqrt(uSq / uN) : null, maxAbs: uN ? uMax : null };
      s.nonFinite = nan + inf;
      if (lr !== undefined) s.decay = kind === 'adamw' ? lr * weightDecay : 0;
    }
    let pRms = 0;
    if (stateValues) {
      let sq = 0, max = 0, fin = 0, pn = 0, pi = 0;
      for (const x of stateValues[i].map(Math.fround)) {
        if (Number.isNaN(x)) pn++;
        else if (!Number.isFinite(x)) pi++;
        else { sq += x * x; max = Math.max(max, Math.abs(x)); fin++; }
      }
      pRms = fin ? Math.sqrt(sq / fin) : 0;
      s.param = { rms: fin ? pRms : null, maxAbs: fin ? max : null, nan: pn, inf: pi };
      if (pn || pi) add('parameterNonFinite', `parameter ${i}: its values hold ${pn} NaN and ${pi} infinite values`);
    }
    if (e && owner === i && nan + inf) add('momentsNonFinite', `parameter ${i}: its moments hold ${nan} NaN and ${inf} infinite values`);
    if (e && owner === i && negative) add('negativeV', `parameter ${i}: its second moment holds ${negative} negative value${negative === 1 ? '' : 's'}`);
    if (e && owner === i && s.inconsistent) {
      add('inconsistent', `parameter ${i}: ${s.inconsistent} element${s.inconsistent === 1 ? '' : 's'} with |m| beyond what any gradient history gives for these betas: corrupted moments, or betas that are not the ones they were built with`);
    }
    if (lr !== undefined && e && stateValues && pRms > 0) {
      s.ratio = lr * (uN ? Math.sqrt(uSq / uN) : 0) / pRms;
      // a tied slot's ratio is its owner's: flagged once, on the owner
      if (owner === i && s.ratio > band[1]) add('ratioHigh', `parameter ${i}: update-to-weight ratio ${Number(s.ratio.toPrecision(3))} is above ${boundText(band[1])} at lr ${lr}`);
      if (owner === i && s.ratio < band[0]) add('ratioLow', `parameter ${i}: update-to-weight ratio ${s.ratio.toPrecision(3).replace(/\.?0+e/, 'e').replace('e-', 'e-')} is below ${boundText(band[0])} at lr ${lr}`);
    }
    if (!s.neverUpdated && !e) s.neverUpdated = 0;
    slots.push(s);
  });
  return { ok: true, pairs: true, lr: lr ?? null, ratioBand: band, c, first: 0, slots, flags, error: null };
}

/** Deep comparison: numbers to 1e-12 relative (libm pow may differ in the last bit), the rest exactly. */
function assertClose(actual, expected, where = 'health') {
  if (typeof expected === 'number' && typeof actual === 'number') {
    const tol = 1e-12 * Math.max(Math.abs(expected), Math.abs(actual));
    assert.ok(Math.abs(actual - expected) <= tol, `${where}: ${actual} vs ${expected}`);
    return;
  }
  if (expected === null || typeof expected !== 'object') {
    assert.equal(actual, expected, where);
    return;
  }
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), where);
  for (const k of Object.keys(expected)) assertClose(actual[k], expected[k], `${where}.${k}`);
}

// A model with every kind of slot: 0 embedding (owner), 1 frozen, 2 a layer with never-updated
// rows and an inconsistent element, 3 tied to 0, 4 NaN in m and a negative v, 5 a scalar.
function description(dtype) {
  const shapes = [[4, 3], [5], [2, 4], [4, 3], [6], []];
  const rand = mulberry(7);
  const moments = (n, fill) => Array.from({ length: n }, (_, k) => fill(k, rand()));
  const entries = [
    { id: 0, step: 1200, m: moments(12, (k, r) => (r - 0.5) * 1e-3), v: moments(12, (k, r) => 1e-7 * (1 + r)) },
    { id: 2, step: 7, m: moments(8, (k, r) => (k < 4 ? 0 : k === 6 ? 0.5 : (r - 0.5) * 1e-2)), v: moments(8, (k, r) => (k < 4 ? 0 : 1e-6 * (1 + r))) },
    { id: 4, step: 3, m: moments(6, (k, r) => (k === 1 ? NaN : r * 1e-3)), v: moments(6, (k, r) => (k === 5 ? -1e-9 : 1e-6)) },
    { id: 5, step: 99, m: [2e-4], v: [4e-8] },
  ];
  return { shapes, requiresGrad: [true, false, true, true, true, true], representatives: [0, null, 2, 0, 4, 5], dtype,
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.1 }, entries };
}

function mulberry(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function stateValues(shapes) {
  const rand = mulberry(11);
  return shapes.map((s, i) => Array.from({ length: size(s) }, (_, k) => (i === 1 && k === 2 ? NaN : i === 5 ? 0 : (rand() - 0.5) * 0.2)))
    .map((values, i, all) => (i === 3 ? all[0] : values));   // slot 3 is tied to 0: the same storage
}

for (const dtype of ['float32', 'float64']) {
  test(`health equals a per-element reference (${dtype}): tied, frozen, NaN, never updated, negative, inconsistent`, async () => {
    const desc = description(dtype);
    const opt = await writeCheckpoint(desc);
    const values = stateValues(desc.shapes);
    const state = await writeState({ shapes: desc.shapes, values });
    for (const lr of [undefined, 3e-4, 0.5]) {
      assertClose(await health(opt, state, { lr }), reference(desc, values, lr), `lr ${lr}`);
      assertClose(await health(opt, null, { lr }), reference(desc, null, lr), `no state, lr ${lr}`);
    }
    const result = await health(opt, state, { lr: 3e-4 });
    const by = (i) => result.slots[i];
    assert.ok(by(2).neverUpdated === 4 && by(2).inconsistent === 1, 'the slot with unseen rows and a corrupt element');
    assert.equal(by(1).update, null, 'frozen: no optimizer state');
    assert.equal(by(3).owner, 0, 'tied: its owner\'s moments');
    assert.deepEqual(by(5).ratio, null, 'a zero parameter: no ratio');
    // a range of slots (what a parallel pass splits): the same slots as the whole
    const part = await health(opt, state, { lr: 3e-4, slots: { first: 2, count: 3 } });
    assert.deepEqual(part.slots, result.slots.slice(2, 5));
    assert.equal(part.first, 2);
    // a band given: its bounds in the JSON and in the texts, with and without workers
    for (const ratioBand of [[0, 2.5e-4], [1e-3, 0.5], [3e-7, 4e-3]]) {
      const want = reference(desc, values, 3e-4, ratioBand);
      assertClose(await health(opt, state, { lr: 3e-4, ratioBand }), want, `band ${ratioBand}`);
      assertClose(await health(opt, state, { lr: 3e-4, ratioBand, workers: 2 }), want, `band ${ratioBand}, 2 workers`);
    }
    assert.ok(reference(desc, values, 3e-4, [0, 2.5e-4]).flags.some((f) => f.severity === 'warning'), 'the bands above flag something');
  });
}

test('health: a state file of another model is not used; invalid files are refused', async () => {
  const desc = description('float32');
  const opt = await writeCheckpoint(desc);
  const other = await writeState({ shapes: [[4, 3], [5]], values: [new Array(12).fill(1), new Array(5).fill(1)] });
  const result = await health(opt, other, { lr: 1e-3 });
  assert.equal(result.ok, false);
  assert.equal(result.pairs, false);
  assert.equal(result.error.message, 'state file has 2 tensors, the optimizer checkpoint has 6 parameter slots');
  assert.ok(result.slots.every((s) => s.param === null), 'its parameters are not this checkpoint\'s');
  await assert.rejects(health(opt.slice(0, 300), null), { name: 'CheckpointError', code: 48 });
  await assert.rejects(health(other, opt), { code: 49 });
  await assert.rejects(health(opt, null, { lr: -1 }), RangeError);
  await assert.rejects(health(opt, null, { lr: 'fast' }), RangeError);
});

test('health: a ratio band that is not one is refused in the core\'s words, before any pass', async () => {
  const opt = await writeCheckpoint(description('float32'));
  for (const [ratioBand, message] of [
    [[1e-2, 1e-5], 'the ratio band LO,HI needs LO below HI, got 1e-2,1e-5'],
    [[-1e-5, 1e-2], 'the ratio band LO,HI takes numbers >= 0 (a ratio is never negative), got -1e-5,1e-2'],
    [[NaN, 1e-2], 'the ratio band LO,HI takes finite numbers, got NaN,1e-2'],
    [[0, Infinity], 'the ratio band LO,HI takes finite numbers, got 0,inf'],
  ]) {
    await assert.rejects(health(opt, null, { lr: 1e-3, ratioBand }), { name: 'RangeError', message });
    await assert.rejects(health(opt, null, { lr: 1e-3, ratioBand, workers: 2 }), { name: 'RangeError', message });
  }
  for (const ratioBand of [[1e-5], [1e-5, 1e-2, 1], '1e-5,1e-2', [1e-5, '1e-2'], { low: 0, high: 1 }]) {
    await assert.rejects(health(opt, null, { ratioBand }), { name: 'TypeError', message: /^ratioBand must be \[low, high\], two numbers, got / });
  }
  // the default band, stated
  assert.deepEqual((await health(opt, null)).ratioBand, [1e-5, 1e-2]);
});

test('property: moments made by the Adam recurrence from random gradients are never inconsistent', async () => {
  const gradient = fc.oneof(
    fc.double({ min: -1e3, max: 1e3, noNaN: true }),
    fc.double({ min: -1e-20, max: 1e-20, noNaN: true }),   // tiny: v underflows before m does
    fc.constant(0),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.double({ min: 0, max: 0.999, noNaN: true }),
      fc.double({ min: 0.5, max: 0.99999, noNaN: true }),
      fc.constantFrom('float32', 'float64'),
      fc.array(fc.array(gradient, { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 60 }),
      async (beta1, beta2, dtype, steps) => {
        fc.pre(beta1 * beta1 < beta2);
        // A trainer of this dtype: its arithmetic rounds to the dtype at every operation.
        const r = dtype === 'float32' ? Math.fround : (x) => x;
        const b1 = r(beta1), b2 = r(beta2);
        const m = [0, 0, 0], v = [0, 0, 0];
        for (const g of steps) {
          for (let k = 0; k < 3; k++) {
            const gk = r(g[k]);
            m[k] = r(r(b1 * m[k]) + r(r(1 - b1) * gk));
            v[k] = r(r(b2 * v[k]) + r(r(1 - b2) * r(gk * gk)));
          }
        }
        const opt = await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], dtype,
          config: { kind: 'adam', beta1, beta2, epsilon: 1e-8, weightDecay: 0 }, entries: [{ id: 0, step: steps.length, m, v }] });
        const result = await health(opt, null);
        assert.equal(result.slots[0].inconsistent, 0, JSON.stringify({ beta1, beta2, dtype, m, v }));
      },
    ),
    { numRuns: 300, seed: 20261130 },
  );
});

test('cli health: a table per slot, flags marked, exit 1 when a slot is flagged, 0 when healthy', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-health-'));
  const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
  const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  try {
    const desc = description('float32');
    const opt = path.join(tmp, 'opt.ckpt');
    const st = path.join(tmp, 'state.tlsf');
    fs.writeFileSync(opt, await writeCheckpoint(desc));
    fs.writeFileSync(st, await writeState({ shapes: desc.shapes, values: stateValues(desc.shapes) }));
    let r = run('health', opt, '--state', st, '--lr', '3e-4');
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout, /\n!\s+2\s+owner\s+7\s/);
    assert.match(r.stdout, /flag: parameter 2: 1 element with \|m\| beyond/);
    assert.match(r.stdout, /verdict: \d+ slots? flagged( \(\d+ ratio warnings?: --strict makes them failures\))?\n$/);   // ratio flags: warnings
    r = run('health', opt, '--state', st, '--lr', '3e-4', '--json');
    assertClose(JSON.parse(r.stdout), await health(opt, st, { lr: 3e-4 }));
    const healthy = path.join(tmp, 'healthy.ckpt');
    fs.writeFileSync(healthy, await writeCheckpoint({ shapes: [[2]], requiresGrad: [true], config: desc.config, entries: [{ id: 0, step: 5, m: [1e-3, -1e-3], v: [1e-6, 1e-6] }] }));
    r = run('health', healthy);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /verdict: healthy\n$/);
    assert.equal(run('health', opt, '--lr', '-3').status, 2);
    assert.equal(run('health').status, 2);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('cli health --ratio-band LO,HI: the band flags as warnings, --strict fails them, bad bands exit 2', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-band-'));
  const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
  const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  try {
    // one slot whose ratio at lr 3e-4 is ~5e-5: inside the default band, below 1e-4
    const opt = path.join(tmp, 'opt.ckpt');
    const st = path.join(tmp, 'state.tlsf');
    fs.writeFileSync(opt, await writeCheckpoint({ shapes: [[2]], requiresGrad: [true], config: description('float32').config,
      entries: [{ id: 0, step: 5, m: [1e-3, -1e-3], v: [1e-6, 1e-6] }] }));
    fs.writeFileSync(st, await writeState({ shapes: [[2]], values: [[1, 1]] }));
    const base = ['health', opt, '--state', st, '--lr', '3e-4'];
    let r = run(...base);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /\nverdict: healthy\n$/);
    const api = await health(opt, st, { lr: 3e-4, ratioBand: [1e-4, 1e-2] });
    assert.deepEqual(api.flags.map((f) => [f.flag, f.severity]), [['ratioLow', 'warning']]);
    assert.match(api.flags[0].message, /^parameter 0: update-to-weight ratio 4\.\d\de-05 is below 1e-4 at lr 0\.0003$/);
    for (const band of [['--ratio-band', '1e-4,1e-2'], ['--ratio-band=1e-4,1e-2']]) {
      r = run(...base, ...band);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.ok(r.stdout.endsWith(`\nwarning: ${api.flags[0].message}\nverdict: healthy (1 ratio warning: --strict makes them failures)\n`), r.stdout);
      r = run(...base, ...band, '--json');
      assert.deepEqual(JSON.parse(r.stdout), api);
      assert.deepEqual(JSON.parse(r.stdout).ratioBand, [1e-4, 1e-2]);
      r = run(...base, ...band, '--strict');
      assert.equal(r.status, 1);
      assert.ok(r.stdout.endsWith(`\nflag: ${api.flags[0].message}\nverdict: 1 slot flagged\n`), r.stdout);
    }
    // the JSON states the default band when none is given
    assert.deepEqual(JSON.parse(run(...base, '--json').stdout).ratioBand, [1e-5, 1e-2]);
    for (const [band, message] of [
      ['--ratio-band=1e-2', '--ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got 1e-2'],
      ['--ratio-band=abc,1', '--ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got abc,1'],
      ['--ratio-band=nan,1e-2', '--ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got nan,1e-2'],
      ['--ratio-band=1e-5,1e-2,1', '--ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got 1e-5,1e-2,1'],
      ['--ratio-band=1e-2,1e-5', '--ratio-band 1e-2,1e-5: the ratio band LO,HI needs LO below HI, got 1e-2,1e-5'],
      ['--ratio-band=-1e-5,1e-2', '--ratio-band -1e-5,1e-2: the ratio band LO,HI takes numbers >= 0 (a ratio is never negative), got -1e-5,1e-2'],
      ['--ratio-band=1e-5,1e999', '--ratio-band 1e-5,1e999: the ratio band LO,HI takes finite numbers, got 1e-5,inf'],
    ]) {
      r = run(...base, band);
      assert.equal(r.status, 2, band);
      assert.equal(r.stderr.split('\n')[0], `ckptscope: ${message}`);
      assert.match(r.stderr, /\n  ckptscope health OPT /, 'the command\'s usage follows');
      assert.equal(r.stdout, '');
    }
    r = run('health', opt, '--state', st, '--ratio-band', '1e-4,1e-2');
    assert.equal(r.status, 2);
    assert.equal(r.stderr.split('\n')[0], 'ckptscope: --ratio-band does nothing here: the ratios need --lr and --state (lr · rms(u) / rms(θ))');
    r = run('health', '--help');
    assert.equal(r.status, 0);
    // the help wraps under its column at 80: the option's line and its continuation
    assert.match(r.stdout, /\n  --ratio-band LO,HI  with --lr and --state: the update\/weight ratios outside it\n {22}are flagged \(default 1e-5,1e-2\)\n/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('health: the same bits with the SIMD build of the core and without (blocks of lanes, their tails, the rare elements)', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-health-lanes-'));
  const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
  const json = (variant, ...args) => {
    const r = spawnSync(process.execPath, [CLI, 'health', ...args, '--lr', '3e-4', '--json', '--workers', '1'],
      { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: variant } });
    assert.ok(r.status === 0 || r.status === 1, r.stderr);
    return r.stdout;
  };
  try {
    const rand = mulberry(11);
    const n = 2 * 16384 + 4099; // three chunks and a tail that is not a whole block
    const m = Array.from({ length: n }, () => (rand() - 0.5) * 2e-2);
    const v = m.map((x) => x * x * (0.05 + 3 * rand()) + 1e-9);
    Object.assign(m, { 100: 0.5, 7: 1e-10, 18000: NaN, 18003: -Infinity, [n - 1]: 0.5 });
    Object.assign(v, { 100: 1e-4, 7: 0, 18001: Infinity, 18002: -1e-6, 18003: NaN, [n - 1]: 1e-4 });
    const shapes = [[n], [3]];
    for (const dtype of ['float32', 'float64']) {
      const desc = { shapes, requiresGrad: [true, true], dtype, config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 },
        entries: [{ id: 0, step: 1000, m, v }, { id: 1, step: 5, m: [1e-3, NaN, 2e-3], v: [1e-6, 1e-6, 4e-6] }] };
      const opt = path.join(tmp, `opt-${dtype}.ckpt`);
      const st = path.join(tmp, 'state.tlsf');
      fs.writeFileSync(opt, await writeCheckpoint(desc));
      fs.writeFileSync(st, await writeState({ shapes, values: stateValues(shapes) }));
      const simd = json('simd', opt, '--state', st);
      assert.match(simd, /"inconsistent": 3/, dtype);
      assert.equal(json('nosimd', opt, '--state', st), simd, dtype);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('cli health: ratio flags are warnings (exit 0) unless --strict; NaN/inf stay failures', async () => {
  // slot 2's parameters are tiny next to its step: ratioHigh at lr 1, and nothing else
  const opt = put('ratio-opt.ckpt', await model());
  const state = put('ratio-state.ckpt', await writeBase('state'));
  const loose = cli(['health', opt, '--state', state, '--lr', '1000']);
  const flags = JSON.parse(cli(['health', opt, '--state', state, '--lr', '1000', '--json']).stdout).flags;
  assert.ok(flags.length && flags.every((f) => f.flag === 'ratioHigh' || f.flag === 'ratioLow'), JSON.stringify(flags));
  assert.equal(loose.status, 0, loose.stdout);
  assert.match(loose.stdout, /\nwarning: parameter \d+: update-to-weight ratio .* is above 1e-2 at lr 1000\n/);
  assert.match(loose.stdout, /\nverdict: healthy \(\d+ ratio warnings?: --strict makes them failures\)\n$/);
  const strict = cli(['health', opt, '--state', state, '--lr', '1000', '--strict']);
  assert.equal(strict.status, 1);
  assert.match(strict.stdout, /\nflag: parameter \d+: update-to-weight ratio/);
  assert.match(strict.stdout, /\nverdict: \d+ slots? flagged\n$/);
  // NaN and infinities stay failures without --strict
  const sick = cli(['health', put('ratio-sick.ckpt', await writeBase('unhealthy'))]);
  assert.equal(sick.status, 1);
});
