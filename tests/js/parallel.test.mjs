// Statistics and the health pass split across worker threads (each with its own WebAssembly
// instance): the report and the health JSON are exactly the one-worker ones, for 1, 2 and 3
// workers, both families, with progress; a cancelled run stops its workers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect, health, writeCheckpoint, writeState } from '../../js/index.js';
import { split, workerCount } from '../../js/parallel.js';

let tmp, opt, state;
before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-parallel-'));
  const sizes = [30000, 5, 70000, 1, 20000, 40000, 3, 60000];   // uneven: the split balances bytes
  const shapes = sizes.map((n) => [n]);
  const entries = sizes.map((n, i) => {
    const m = Float32Array.from({ length: n }, (_, k) => Math.sin(k * 0.01 + i) * 1e-3);
    const v = Float32Array.from({ length: n }, (_, k) => 1e-6 * (1 + (k % 5)));
    if (i === 2) (m[7] = NaN), (v[9] = -1e-9);
    return { id: i, step: 100 + i, m, v };
  });
  opt = path.join(tmp, 'opt.ckpt');
  state = path.join(tmp, 'state.tlsf');
  fs.writeFileSync(opt, await writeCheckpoint({ shapes, requiresGrad: shapes.map(() => true), config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 }, randomCounter: 5, entries }));
  fs.writeFileSync(state, await writeState({ shapes, values: sizes.map((n, i) => Float32Array.from({ length: n }, (_, k) => (i === 4 && k === 3 ? Infinity : 0.02 * Math.cos(k + i)))) }));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('split: contiguous ranges of about equal weight, never empty', () => {
  assert.deepEqual(split([1, 1, 1, 1], 2), [[0, 2], [2, 4]]);
  assert.deepEqual(split([10, 1, 1, 1, 1], 2), [[0, 1], [1, 5]]);
  assert.deepEqual(split([5], 4), [[0, 1]]);
  assert.deepEqual(split([], 3), []);
  const ranges = split([3, 9, 2, 7, 7, 1, 8], 3);
  assert.equal(ranges[0][0], 0);
  assert.equal(ranges.at(-1)[1], 7);
  ranges.slice(1).forEach(([from], k) => assert.equal(from, ranges[k][1]));
});

test('statistics by 1, 2 and 3 workers: the same report, warnings in the same order', async () => {
  const one = await inspect(opt, { stats: true });
  assert.equal(one.statistics, true);
  assert.ok(one.warnings.some((w) => w.includes('parameter 2: m holds 1 NaN')));
  for (const workers of [2, 3, 'auto']) {
    const seen = [];
    assert.deepEqual(await inspect(opt, { stats: true, workers, onProgress: (p) => seen.push(p) }), one, `workers ${workers}`);
    assert.ok(seen.length > 0 && seen.at(-1).done === seen.at(-1).total, 'progress reaches its total');
  }
  const st = await inspect(state, { stats: true });
  assert.deepEqual(await inspect(state, { stats: true, workers: 2 }), st);
  assert.ok(st.warnings.some((w) => w === 'StateIO: tensor 4 holds 0 NaN and 1 infinite values'));
});

test('health by 1, 2 and 3 workers: the same JSON', async () => {
  const one = await health(opt, state, { lr: 1e-3 });
  for (const workers of [2, 3]) assert.deepEqual(await health(opt, state, { lr: 1e-3, workers }), one, `workers ${workers}`);
  assert.deepEqual(await health(opt, null, { workers: 2 }), await health(opt, null));
});

test('cancelling a parallel scan stops it with an AbortError', async () => {
  const controller = new AbortController();
  const run = inspect(opt, { stats: true, workers: 2, signal: controller.signal, onProgress: () => controller.abort() });
  await assert.rejects(run, { name: 'AbortError' });
  await assert.rejects(inspect(opt, { stats: true, workers: 0 }), RangeError);
});

test("'auto' starts what pays: one worker per 512 MiB of the files read, at most the cores", async () => {
  const cores = Math.min(8, os.availableParallelism());
  assert.equal(await workerCount('auto', opt), 1, 'a small file: the calling thread alone');
  assert.equal(await workerCount('auto', opt, state), 1);
  const big = path.join(tmp, 'big.ckpt');   // sparse: only its size matters here
  fs.writeFileSync(big, '');
  fs.truncateSync(big, 3 * 2 ** 30);
  assert.equal(await workerCount('auto', big), Math.min(cores, 6));
  assert.equal(await workerCount('auto', big, state), Math.min(cores, 6));
  fs.truncateSync(big, 2 ** 30 - 1);
  assert.equal(await workerCount('auto', big), 1);
  assert.equal(await workerCount('auto', big, big), Math.min(cores, 3));
  assert.equal(await workerCount('auto', new Uint8Array(10)), cores, 'a source of unknown cost (not split anyway)');
  assert.equal(await workerCount(3, big), 3);
  assert.equal(await workerCount(undefined, big), 1);
});
