// Statistics and the health pass split across worker threads (each with its own WebAssembly
// instance, claiming chunks from a shared counter): the report and the health JSON are exactly
// the one-worker ones, for 1, 2, 3 and 7 workers, both families, empty, tied and broken files,
// with and without shared memory, with progress that ends at its total; a cancelled run stops
// its workers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect, health, writeCheckpoint, writeState, open, CheckpointError } from '../../js/index.js';
import { healthOf } from '../../js/api.js';
import { split, plan, claims, workerCount, startCrew, statsInParallel, healthInParallel } from '../../js/parallel.js';
import { model } from './table.mjs';
import { cli, scratch, brokenBeforeSlots } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-parallel-scratch-');

/** A checkpoint of `n` slots of `size` float32 elements, moments m = value, v = 1. */
function filled(n, size, value) {
  return writeCheckpoint({
    shapes: Array.from({ length: n }, () => [size]), requiresGrad: Array.from({ length: n }, () => true),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 },
    entries: Array.from({ length: n }, (_, id) => ({ id, step: 1, m: new Float32Array(size).fill(value), v: new Float32Array(size).fill(1) })),
  });
}

const sizes = [30000, 5, 70000, 1, 20000, 40000, 3, 60000];   // uneven: the split balances bytes
let tmp, opt, state, empty, tiedOpt, tiedState, broken;
before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-parallel-'));
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
  const adam = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };
  empty = path.join(tmp, 'empty.ckpt');
  fs.writeFileSync(empty, await writeCheckpoint({ shapes: [], requiresGrad: [], config: adam, entries: [] }));
  // slots 1 and 3 tied to 0 (one entry, equal values in the state file)
  const tiedShapes = [[5000], [5000], [300], [5000], [7000]];
  const reps = [0, 0, 2, 0, 4];
  tiedOpt = path.join(tmp, 'tied.ckpt');
  tiedState = path.join(tmp, 'tied.tlsf');
  fs.writeFileSync(tiedOpt, await writeCheckpoint({ shapes: tiedShapes, requiresGrad: tiedShapes.map(() => true), representatives: reps, config: adam,
    entries: [0, 2, 4].map((i) => ({ id: i, step: 7, m: Float32Array.from({ length: tiedShapes[i][0] }, (_, k) => 1e-4 * Math.sin(k)), v: new Float32Array(tiedShapes[i][0]).fill(1e-6) })) }));
  fs.writeFileSync(tiedState, await writeState({ shapes: tiedShapes, values: tiedShapes.map(([n], i) => Float32Array.from({ length: n }, (_, k) => Math.cos(k + reps[i]))) }));
  // cut in the middle of entry 5's payload
  broken = path.join(tmp, 'broken.ckpt');
  const bytes = fs.readFileSync(opt);
  fs.writeFileSync(broken, bytes.subarray(0, Math.floor(bytes.length * 0.8)));
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

test('plan: chunks cover every item once, largest first; without shared memory one per thread', () => {
  const weights = [1, 50, 2, 2, 9, 30, 1, 1, 4, 100, 3];
  for (const n of [1, 2, 3, 7]) {
    for (const shared of [true, false]) {
      const { chunks } = plan(weights, n, { shared, perThread: 4 });
      const covered = chunks.flatMap(([from, to]) => Array.from({ length: to - from }, (_, k) => from + k)).sort((a, b) => a - b);
      assert.deepEqual(covered, weights.map((_, k) => k), `n ${n} shared ${shared}`);
      if (!shared) assert.deepEqual(chunks, split(weights, n));
      else {
        const sums = chunks.map(([from, to]) => weights.slice(from, to).reduce((a, b) => a + b, 0));
        assert.deepEqual(sums, [...sums].sort((a, b) => b - a), 'largest first');
      }
    }
  }
  assert.deepEqual(plan([], 3).chunks, []);
});

test('claims: a shared counter hands every chunk to exactly one thread; without one, thread w takes chunk w', () => {
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const threads = [0, 1, 2].map((w) => claims(counter, 10, w));
  const got = [];
  for (let k, w = 0; (k = threads[w % 3].next()) >= 0; w++) got.push(k);
  assert.deepEqual(got, [...Array(10).keys()]);
  assert.equal(threads[1].next(), -1);
  const stopped = new Int32Array(new SharedArrayBuffer(4));
  claims(stopped, 5, 0).stopAll();
  assert.equal(claims(stopped, 5, 1).next(), -1, 'after a failure nobody claims more');
  assert.equal(claims(null, 3, 2).next(), 2);
  const alone = claims(null, 3, 1);
  assert.deepEqual([alone.next(), alone.next()], [1, -1]);
  assert.equal(claims(null, 3, 5).next(), -1);
});

/** inspect with progress: the report, and whether the progress ended at its total (which
 *  never changed: the statistics' total is known from the start). */
async function inspectWatched(file, workers) {
  const seen = [];
  const report = await inspect(file, { stats: true, workers, onProgress: (p) => seen.push(p) });
  if (seen.length) {
    // a broken file's scan (one thread's) stops where the file does
    if (report.ok) assert.equal(seen.at(-1).done, seen.at(-1).total, `workers ${workers}: progress reaches its total`);
    assert.ok(seen.every((p) => p.total === seen[0].total && p.done <= p.total), `workers ${workers}: one total, never passed`);
  }
  return { report, seen };
}

test('statistics by 1, 2, 3 and 7 workers: the same report, warnings in the same order, progress to the same total', async () => {
  const one = await inspectWatched(opt, 1);
  assert.equal(one.report.statistics, true);
  assert.ok(one.report.warnings.some((w) => w.includes('parameter 2: m holds 1 NaN')));
  // split, the scan is of the payloads alone (m and v, float32): their bytes are the total
  const payloads = sizes.reduce((a, b) => a + b, 0) * 2 * 4;
  for (const workers of [2, 3, 7]) {
    const many = await inspectWatched(opt, workers);
    assert.deepEqual(many.report, one.report, `workers ${workers}`);
    assert.equal(many.seen.at(-1).total, payloads, `workers ${workers}: the payloads' bytes`);
  }
  assert.deepEqual((await inspectWatched(opt, 'auto')).report, one.report);
  const st = await inspect(state, { stats: true });
  for (const workers of [2, 3, 7]) assert.deepEqual((await inspectWatched(state, workers)).report, st, `state, workers ${workers}`);
  assert.ok(st.warnings.some((w) => w === 'StateIO: tensor 4 holds 0 NaN and 1 infinite values'));
});

test('statistics of empty, tied and broken files by 1, 2, 3 and 7 workers: the one-thread report', async () => {
  for (const file of [empty, tiedOpt, tiedState, broken]) {
    const one = await inspect(file, { stats: true });
    for (const workers of [2, 3, 7]) assert.deepEqual((await inspectWatched(file, workers)).report, one, `${path.basename(file)}, workers ${workers}`);
  }
  assert.equal((await inspect(broken, { stats: true, workers: 3 })).ok, false);
});

test('without shared memory (a page that is not cross-origin isolated) each thread takes one share: the same results', async (t) => {
  const one = await inspect(opt, { stats: true });
  const healthOne = await health(opt, state, { lr: 1e-3 });
  const saved = globalThis.SharedArrayBuffer;
  delete globalThis.SharedArrayBuffer;
  t.after(() => (globalThis.SharedArrayBuffer = saved));
  for (const workers of [2, 3, 7]) {
    assert.deepEqual((await inspectWatched(opt, workers)).report, one, `workers ${workers}`);
    assert.deepEqual(await health(opt, state, { lr: 1e-3, workers }), healthOne, `health, workers ${workers}`);
  }
});

/** health with progress: the JSON, the last progress (done = total). */
async function healthWatched(o, s, options) {
  const seen = [];
  const json = await health(o, s, { ...options, onProgress: (p) => seen.push(p) });
  // no slots, no bytes to read: no progress either
  assert.equal(seen.length > 0, json.slots.length > 0);
  if (seen.length) assert.equal(seen.at(-1).done, seen.at(-1).total, 'progress reaches its total');
  assert.ok(seen.every((p) => p.done <= p.total), 'done never passes the total');
  return { json, last: seen.at(-1) };
}

test('health by 1, 2, 3 and 7 workers: the same JSON, progress to the one-thread total', async () => {
  for (const [o, s] of [[opt, state], [opt, null], [tiedOpt, tiedState], [empty, null]]) {
    const one = await healthWatched(o, s, { lr: 1e-3 });
    for (const workers of [2, 3, 7]) {
      const many = await healthWatched(o, s, { lr: 1e-3, workers });
      assert.deepEqual(many.json, one.json, `${path.basename(o)} ${s ? path.basename(s) : ''} workers ${workers}`);
      assert.equal(many.last?.total, one.last?.total, `${path.basename(o)}: the one-thread total`);
    }
  }
  const one = await health(tiedOpt, tiedState);
  assert.equal(one.pairs, true);
  assert.deepEqual(await health(tiedOpt, tiedState, { workers: 3 }), one);
});

// On files this small the calling thread would claim every chunk before a worker has started:
// held back after its first chunk (its progress callback waits until a worker has claimed one;
// polled, as a claim notifies nobody), it leaves work to the workers.
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const holdOnce = (counter) => {
  let held = false;
  return () => {
    if (held) return;
    held = true;
    for (let waited = 0; Atomics.load(counter, 0) === 1 && waited < 60_000; waited += 5) sleep(5);
  };
};

test('every thread claims chunks: a held-back calling thread leaves them to the workers, the report unchanged', async () => {
  const one = await inspect(opt, { stats: true });
  const crew = await startCrew(2, { source: opt });
  const ck = await open(opt);
  try {
    const taken = [];
    await statsInParallel(ck, crew, { onProgress: holdOnce(crew.counter), taken });
    assert.deepEqual(ck.report, one);
    assert.equal(taken.length, 3);
    assert.ok(taken[0] >= 1 && taken[1] + taken[2] >= 1, `${taken}`);
    assert.equal(taken[0] + taken[1] + taken[2], plan(sizes.map((n) => n + 1), 3).chunks.length, `${taken}`);
  } finally {
    crew.stop();
    ck.close();
  }
  const healthOne = await health(opt, state, { lr: 1e-3 });
  const health3 = await startCrew(2, { opt, state });
  const [o, s] = [await open(opt), await open(state)];
  try {
    const taken = [];
    const share = (first, count, onProgress) => healthOf(o, s, { lr: 1e-3, first, count, onProgress });
    assert.deepEqual(await healthInParallel(o, health3, share, { lr: 1e-3 }, { onProgress: holdOnce(health3.counter), taken }), healthOne);
    assert.ok(taken[0] >= 1 && taken[1] + taken[2] >= 1, `${taken}`);
    assert.equal(taken[0] + taken[1] + taken[2], plan(sizes.map((n) => n + 1), 3).chunks.length, `${taken}`);
  } finally {
    health3.stop();
    o.close();
    s.close();
  }
});

test('health with tied slots: one chunk per thread (each chunk pairs the files again, reading the tied tensors)', async () => {
  const one = await health(tiedOpt, tiedState, { lr: 1e-3 });
  const crew = await startCrew(2, { opt: tiedOpt, state: tiedState });
  const [o, s] = [await open(tiedOpt), await open(tiedState)];
  try {
    const taken = [];
    const share = (first, count, onProgress) => healthOf(o, s, { lr: 1e-3, first, count, onProgress });
    assert.deepEqual(await healthInParallel(o, crew, share, { lr: 1e-3 }, { taken }), one);
    assert.equal(taken.reduce((a, b) => a + b, 0), 3, `${taken}`);
  } finally {
    crew.stop();
    o.close();
    s.close();
  }
});

test('health of a broken file by 1, 2, 3 and 7 workers: the same rejection', async () => {
  const failure = (p) => p.then(() => assert.fail('resolved'), (err) => ({ name: err.name, code: err.code, message: err.message, fileError: err.fileError }));
  const one = await failure(health(broken, null));
  assert.equal(one.code, 48);
  for (const workers of [2, 3, 7]) {
    assert.deepEqual(await failure(health(broken, null, { workers })), one, `workers ${workers}`);
    assert.deepEqual(await failure(health(opt, broken, { workers })), await failure(health(opt, broken)), `a broken state side, workers ${workers}`);
  }
});

test('cancelling a parallel scan stops it with an AbortError', async () => {
  const controller = new AbortController();
  const run = inspect(opt, { stats: true, workers: 2, signal: controller.signal, onProgress: () => controller.abort() });
  await assert.rejects(run, { name: 'AbortError' });
  await assert.rejects(inspect(opt, { stats: true, workers: 0 }), RangeError);
});

test("'auto' starts what pays, per pass: statistics one worker per GiB of the file, health one per 256 MiB of the two, at most the cores", async () => {
  const cores = Math.min(8, os.availableParallelism());
  assert.equal(await workerCount('auto', [opt]), 1, 'a small file: the calling thread alone');
  assert.equal(await workerCount('auto', [opt, state], 'health'), 1);
  const big = path.join(tmp, 'big.ckpt');   // sparse: only its size matters here
  fs.writeFileSync(big, '');
  fs.truncateSync(big, 3 * 2 ** 30);
  assert.equal(await workerCount('auto', [big]), Math.min(cores, 3));
  assert.equal(await workerCount('auto', [big], 'health'), Math.min(cores, 8));
  fs.truncateSync(big, 2 ** 30 - 1);
  assert.equal(await workerCount('auto', [big]), 1);
  assert.equal(await workerCount('auto', [big], 'health'), Math.min(cores, 3));
  fs.truncateSync(big, 2 ** 29 - 2 ** 22);
  assert.equal(await workerCount('auto', [big, state], 'health'), 1);
  assert.equal(await workerCount('auto', [big, big], 'health'), Math.min(cores, 3));
  const fd = fs.openSync(big, 'r');
  try {
    assert.equal(await workerCount('auto', [fd, fd], 'health'), Math.min(cores, 3), 'a descriptor: its size');
    assert.equal(await workerCount('auto', [fd]), 1);
  } finally {
    fs.closeSync(fd);
  }
  assert.equal(await workerCount('auto', [new Uint8Array(10)]), cores, 'a source of unknown cost (not split anyway)');
  assert.equal(await workerCount(3, [big]), 3);
  assert.equal(await workerCount(undefined, [big]), 1);
});

test('workers whatever Node was started with: V8 options, --input-type with --eval (a worker refuses both)', async () => {
  const { spawnSync } = await import('node:child_process');
  const api = new URL('../../js/index.js', import.meta.url).href;
  const script = `const { inspect } = await import(${JSON.stringify(api)});
const r = await inspect(process.argv.at(-1), { stats: true, workers: 2 });
process.stdout.write(JSON.stringify(r));`;
  const one = await inspect(opt, { stats: true, workers: 1 });
  const file = path.join(tmp, 'script.mjs');
  fs.writeFileSync(file, script);
  for (const args of [['--input-type=module', '-e', script, opt], ['--max-old-space-size=4096', file, opt], ['--stack-size=2000', file, opt]]) {
    const run = spawnSync(process.execPath, args, { encoding: 'utf8' });
    assert.equal(run.stderr, '', args[0]);
    assert.equal(run.status, 0, args[0]);
    assert.deepEqual(JSON.parse(run.stdout), one, args[0]);
  }
  // the CLI too
  const cli = spawnSync(process.execPath, ['--max-old-space-size=4096', fileURLToPath(new URL('../../js/cli.js', import.meta.url)), 'inspect', opt, '--stats', '--workers', '2', '--json'], { encoding: 'utf8' });
  assert.equal(cli.stderr, '');
  assert.equal(cli.status, 0);
  assert.deepEqual(JSON.parse(cli.stdout).entries, JSON.parse(JSON.stringify(one.entries)));
});

test('2 workers on a file broken before its first slot: the file\'s diagnostic, no crash', async () => {
  for (const [p, diagnostic] of await brokenBeforeSlots(put)) {
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

test('with 2 workers, a file renamed over the path mid-run: every thread reads the one file opened', async () => {
  const p = put('latest.ckpt', await filled(16, 1 << 17, 1));
  const next = await filled(16, 1 << 17, 2);   // a trainer's next save: same layout, other values
  const expected = await inspect(p, { stats: true });
  for (const cli of [
    (onProgress) => inspect(p, { stats: true, workers: 2, onProgress }),
    (onProgress) => health(p, null, { workers: 2, onProgress }),
  ]) {
    fs.writeFileSync(p, await filled(16, 1 << 17, 1));
    let saved = false;
    const result = await cli(() => {
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

test('the CLI\'s --stats and health with 2 workers on a file broken before its first slot: its diagnostic, exit 1', async () => {
  const badVersion = await model();
  badVersion[7] = 99;
  const files = [
    [put('lfs.ckpt', 'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), /unsupported checkpoint family/],
    [put('bad-version.ckpt', badVersion), /unsupported format version 99/],
  ];
  for (const [p, diagnostic] of files) {
    for (const args of [['inspect', p, '--stats', '--workers', '2'], ['health', p, '--workers', '2']]) {
      const r = cli(args);
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, diagnostic);
      assert.doesNotMatch(r.stderr, /unexpected error/);
    }
  }
});
