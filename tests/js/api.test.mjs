// The public API beyond the shared case table (cases.test.mjs): report contents for every
// version and dtype, the same report from every kind of source, the Checkpoint handle, the
// writers' refusals, Schema, diff, progress and cancellation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, inspect, check, diff, readEntry, entryStats, writeCheckpoint, saveCheckpoint, Schema, CheckpointError, LayoutError, health, writeState, exportTensors } from '../../js/index.js';
import { model, modelLayout, modelConfig, modelDescription, untiedDescription, F } from './table.mjs';
import { scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-api-scratch-');

/** What JSON.parse says of `text` (the engine's words, which a "not valid JSON" message ends with). */
const jsonError = (text) => {
  try {
    JSON.parse(text);
  } catch (err) {
    return err.message;
  }
  return null;
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-api-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

test('check: version 2 cannot restore shared histories', async () => {
  const bytes = await writeCheckpoint(untiedDescription());
  await assert.rejects(check(bytes, modelLayout), { message: `${F}version 2 cannot restore shared parameter histories`, offset: 7 });
});

test('check: legacy counter warning when the destination keeps one', async () => {
  const result = await check(await model(), { ...modelLayout, keepsRandomCounter: true });
  assert.deepEqual(result.warnings, [`${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly`]);
});

test('check: another checkpoint as the destination', async () => {
  const a = await model({ randomCounter: 3 });
  const b = await model({ randomCounter: 9 });
  assert.equal((await check(a, b)).ok, true);
  const other = await writeCheckpoint({ ...modelDescription(), config: { ...modelConfig, beta2: 0.99 } });
  await assert.rejects(check(a, other), { message: `${F}checkpoint belongs to a different optimizer configuration` });
  await assert.rejects(check(a, b.slice(0, 30)), { subject: 'expected', message: `${F}truncated checkpoint (wanted 8 bytes, got 7)`,
    hint: 'the file ends at least 1 byte early: an incomplete copy or download?' });
});

test('reports for every version and dtype', async () => {
  const variants = [
    { untied: true, version: 2, dtype: 'float32', counter: null },
    { extra: {}, version: 3, dtype: 'float32', counter: null },
    { extra: { randomCounter: 42 }, version: 4, dtype: 'float32', counter: 42 },
    { extra: { dtype: 'float64' }, version: 5, dtype: 'float64', counter: null },
    { extra: { dtype: 'float64', randomCounter: 7 }, version: 5, dtype: 'float64', counter: 7 },
    { extra: { version: 5 }, version: 5, dtype: 'float32', counter: null },
  ];
  for (const v of variants) {
    const report = await inspect(v.untied ? await writeCheckpoint(untiedDescription()) : await model(v.extra), { stats: true });
    assert.equal(report.ok, true);
    assert.equal(report.version, v.version);
    assert.equal(report.dtype, v.dtype);
    assert.equal(report.randomCounter, v.counter);
    assert.equal(report.hasRandomCounter, v.counter !== null);
    assert.deepEqual(report.schema.shapes, modelLayout.shapes);
    assert.deepEqual(report.schema.sizes, [6, 6, 3]);
    assert.deepEqual(report.schema.requiresGrad, [true, true, true]);
    assert.deepEqual(report.schema.representatives, v.version === 2 ? null : [0, 0, 2]);
    assert.deepEqual(report.schema.effectiveRepresentatives, v.version === 2 ? [0, 1, 2] : [0, 0, 2]);
    assert.equal(report.optimizerStateCount, v.version === 2 ? 3 : 2);
    assert.deepEqual(report.entries.map((e) => [e.id, e.step, e.count]), v.version === 2 ? [[0, 5, 6], [1, 4, 6], [2, 5, 3]] : [[0, 5, 6], [2, 5, 3]]);
    assert.deepEqual(report.config, {
      kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0,
      bits: { beta1: '0x3feccccccccccccd', beta2: '0x3feff7ced916872b', epsilon: '0x3e45798ee2308c3a', weightDecay: '0x0000000000000000' },
    });
    const m0 = report.entries[0].m;
    assert.equal(m0.count, 6);
    assert.equal(m0.min, 0.5);
    assert.equal(m0.mean, 0.5);
  }
});

test('report fields, in order (docs/report.md)', async () => {
  const report = await inspect(await model());
  assert.deepEqual(Object.keys(report), ['ok', 'family', 'name', 'kind', 'version', 'size', 'statistics', 'dtype', 'config', 'kindUnknown', 'randomCounter',
    'hasRandomCounter', 'schema', 'slotCount', 'wellFormed', 'optimizerStateCount', 'trainableCount', 'hasAliases', 'elementCounts', 'offsets', 'entryCount',
    'entries', 'warnings', 'error', 'readers']);
  assert.equal(report.family, 'TLADAMF');
  assert.equal(report.name, 'CUDA Adam checkpoint');
  assert.equal(report.size, 327);
  assert.deepEqual(report.offsets, { schema: 55, tags: 175, entries: 199 });
  assert.deepEqual(report.schema.brokenSlots, []);
  assert.deepEqual(report.entries[1], { id: 2, step: 5, count: 3, offset: 279 });
  assert.deepEqual(report.warnings, [`${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly`]);
});

test('the same report from a Uint8Array, an ArrayBuffer, a DataView, a path, a file: URL and a descriptor', async () => {
  const bytes = await model({ randomCounter: 5 });
  const file = path.join(tmp, 'same.ckpt');
  fs.writeFileSync(file, bytes);
  const want = await inspect(bytes, { stats: true });
  const fd = fs.openSync(file, 'r');
  try {
    for (const source of [bytes.slice().buffer, new DataView(bytes.buffer), file, new URL(`file://${file}`), fd]) {
      assert.deepEqual(await inspect(source, { stats: true }), want);
    }
  } finally {
    fs.closeSync(fd);
  }
});

test('readEntry returns the moments as stored; a tied slot gives its owner\'s', async () => {
  const e = await readEntry(await model(), 2);
  assert.equal(e.id, 2);
  assert.equal(e.slot, 2);
  assert.equal(e.owner, 2);
  assert.equal(e.step, 5);
  assert.ok(e.m instanceof Float32Array);
  assert.deepEqual([...e.m], [-0.5, -0.5, -0.5]);
  assert.deepEqual([...e.v], [0.125, 0.125, 0.125]);
  const e64 = await readEntry(await model({ dtype: 'float64' }), 0);
  assert.ok(e64.m instanceof Float64Array);
  const tied = await readEntry(await model(), 1);   // slot 1 is tied to slot 0
  assert.deepEqual([tied.slot, tied.owner, tied.id, tied.count], [1, 0, 0, 6]);
  assert.deepEqual([...tied.m], new Array(6).fill(0.5));
  await assert.rejects(readEntry(await model(), 3), { name: 'CheckpointError', code: 41, message: 'no parameter 3: the file has 3 slots' });
  await assert.rejects(readEntry((await model()).slice(0, 300), 0), { code: 1, message: `${F}truncated checkpoint (wanted 8 bytes, got 5)` });
});

test('writer refusals are CheckpointErrors with the reference text', async () => {
  const d = modelDescription();
  await assert.rejects(writeCheckpoint({ ...d, entries: d.entries.slice(1) }), { name: 'CheckpointError', message: `${F}expected 2 moment entries, got 1` });
  await assert.rejects(writeCheckpoint({ ...d, representatives: [0, 2, 2] }), { message: `${F}malformed in-memory parameter schema` });
  await assert.rejects(writeCheckpoint({ ...d, entries: [{ ...d.entries[0], step: 0 }, d.entries[1]] }), { message: `${F}zero step counter for parameter 2` });
  await assert.rejects(writeCheckpoint({ ...d, entries: [{ ...d.entries[0], m: [1, 2], v: [1, 2] }, d.entries[1]] }), { message: `${F}moment-size mismatch for parameter 2` });
  await assert.rejects(writeCheckpoint({ ...d, entries: [{ ...d.entries[0], v: [1, 2] }, d.entries[1]] }), { message: `${F}invalid moment payload for parameter 2` });
  await assert.rejects(writeCheckpoint({ ...d, config: { ...modelConfig, kind: 'adamw', weightDecay: -1 } }), { message: `${F}AdamW weight decay must be finite and nonnegative` });
  await assert.rejects(writeCheckpoint({ ...d, shapes: [[2, 3], [2, 3], ['18446744073709551616']] }), { message: `${F}metadata value does not fit in 64 bits: 18446744073709551616` });
  await assert.rejects(writeCheckpoint({ ...d, shapes: [[2, 3], [2, 3], [-1]] }), { name: 'LayoutError', message: 'description.shapes[2][0] must be a nonnegative integer, got -1' });
  const { id, ...noId } = d.entries[0];
  void id;
  await assert.rejects(writeCheckpoint({ ...d, entries: [noId, d.entries[1]] }), { name: 'LayoutError', message: 'description.entries[0].id must be a nonnegative integer, got nothing (the field is missing)' });
  await assert.rejects(writeCheckpoint({ ...d, version: 2 }), { message: `${F}format version 2 cannot hold shared parameter histories (versions 3 to 5 can)` });
  await assert.rejects(writeCheckpoint({ ...d, version: '18446744073709551615' }), { message: `${F}cannot write format version 18446744073709551615; expected 2 through 5` });
  // config is what says which optimizer wrote the file: never invented
  const { config, ...noConfig } = d;
  void config;
  await assert.rejects(writeCheckpoint(noConfig), { name: 'LayoutError',
    message: 'description.config is missing: say which optimizer wrote it, e.g. {"kind":"adamw","beta1":0.9,"beta2":0.999,"epsilon":1e-8,"weightDecay":0.01}' });
  // beside the reference text, the slot and that the description is at fault
  await assert.rejects(writeCheckpoint({ ...d, representatives: [0, 2, 2] }), { slot: 1, subject: 'expected', hint: 'parameter 1: representative 2 follows it' });
});

test('u64 values at 2^53 and 2^64 - 1 survive as decimal strings', async () => {
  for (const big of ['9007199254740992', '18446744073709551615']) {
    const report = await inspect(await model({ randomCounter: big, entries: modelDescription().entries.map((e) => ({ ...e, step: big })) }));
    assert.equal(report.randomCounter, big);
    assert.deepEqual(report.entries.map((e) => e.step), [big, big]);
  }
  const safe = await inspect(await model({ randomCounter: 2 ** 53 - 1 }));
  assert.equal(safe.randomCounter, 2 ** 53 - 1);
});

test('saveCheckpoint writes atomically and leaves no temporary', async () => {
  const file = path.join(tmp, 'saved.ckpt');
  await saveCheckpoint(file, modelDescription());
  assert.deepEqual(new Uint8Array(fs.readFileSync(file)), await model());
  const before = fs.readFileSync(file);
  await assert.rejects(saveCheckpoint(file, { ...modelDescription(), representatives: [0, 2, 2] }), { name: 'CheckpointError', code: 4, message: `${F}malformed in-memory parameter schema` });
  assert.deepEqual(fs.readFileSync(file), before);
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-')), []);
});

test('Schema answers the seed queries through the core', async () => {
  const s = await Schema.create({ shapes: [[5], [5], [2], [5]], requiresGrad: [false, true, true, true], representatives: [null, 1, 2, 1] });
  try {
    assert.equal(s.isWellFormed(), true);
    assert.deepEqual(s.tags(), [0, 2, 3, 2]);
    assert.equal(s.optimizerStateCount, 2);
    assert.equal(s.trainableCount, 3);
    assert.equal(s.hasAliases, true);
    assert.equal(s.representative(0), null);
    assert.equal(s.representative(3), 1);
    assert.equal(s.representative(99), null);
    assert.equal(s.isRepresentative(1), true);
  } finally {
    s.close();
  }
  assert.equal(s.closed, true);
  assert.throws(() => s.tags(), { name: 'TypeError', message: 'this Schema is closed' });
  const chain = await Schema.create({ shapes: [[1], [1], [1]], requiresGrad: [true, true, true], representatives: [0, 0, 1] });
  assert.equal(chain.isWellFormed(), false);
  chain.close();
});

test('a Schema has one verb for freeing it, as a Checkpoint has: close(), which `using` calls', async () => {
  const layout = { shapes: [[2]], requiresGrad: [true] };
  const a = await Schema.create(layout);
  assert.equal(a.dispose, undefined);
  assert.equal('disposed' in a, false);
  a.close();
  assert.equal(a.closed, true);
  assert.throws(() => a.count, { name: 'TypeError', message: 'this Schema is closed' });
  const b = await Schema.create(layout);
  b[Symbol.dispose ?? Symbol.for('Symbol.dispose')]();
  assert.equal(b.closed, true);
  const c = await Schema.create(layout);
  assert.equal(c.closed, false);
  c.close();
  c.close();   // again: nothing
  assert.equal(c.closed, true);
});

test('diff lists every difference, not just the first', async () => {
  const a = await model({ randomCounter: 1 });
  const b = { shapes: [[2, 3], [3, 2], [3], [1]], requiresGrad: [true, false, true, true], representatives: null,
    dtype: 'float64', config: { ...modelConfig, kind: 'adamw', beta1: 0.8 }, keepsRandomCounter: false };
  const fields = (await diff(a, b)).map((d) => `${d.field}${d.slot ?? ''}`);
  assert.deepEqual(fields, ['count', 'shape1', 'requiresGrad1', 'representative1', 'slot3', 'dtype', 'config.kind', 'config.beta1', 'randomCounter']);
  assert.deepEqual(await diff(a, await model({ randomCounter: 2 })), []);
});

test('bad arguments are TypeErrors or LayoutErrors, never crashes', async () => {
  await assert.rejects(inspect({}), { name: 'TypeError',
    message: 'a checkpoint source must be a Uint8Array, an ArrayBuffer, a Blob or File, an http(s) URL, or (in Node) a file path, file: URL or descriptor' });
  await assert.rejects(check(await model(), { shapes: 'x', requiresGrad: [] }), { name: 'LayoutError', message: 'layout.shapes must be an array, got the string "x"' });
  await assert.rejects(check(await model(), { ...modelLayout, dtype: 'int8' }), { name: 'LayoutError', message: 'layout.dtype must be "float32" or "float64", got the string "int8"' });
  await assert.rejects(inspect(path.join(tmp, 'missing.ckpt')), { code: 'ENOENT' });
});

test('progress and cancellation during a statistics scan', async () => {
  const big = await writeCheckpoint({ shapes: [[1 << 20]], requiresGrad: [true], config: modelConfig,
    entries: [{ id: 0, step: 1, m: new Float32Array(1 << 20), v: new Float32Array(1 << 20) }] });
  const seen = [];
  await inspect(big, { stats: true, onProgress: (p) => seen.push(p) });
  assert.ok(seen.length >= 2, 'progress is reported per chunk');
  // relative to the scan: its bytes (the entries), not file offsets
  assert.equal(seen.at(-1).done, seen.at(-1).total);
  assert.equal(seen.at(-1).total, 24 + 2 * 4 * (1 << 20));   // the one entry: its header and payloads
  const controller = new AbortController();
  await assert.rejects(inspect(big, { stats: true, signal: controller.signal, onProgress: () => controller.abort() }), { name: 'AbortError' });
});

test('entryStats reads one entry and agrees with the full scan; a tied slot gives its owner\'s', async () => {
  const bytes = await model({ randomCounter: 1 });
  const full = await inspect(bytes, { stats: true });
  for (const e of full.entries) assert.deepEqual(await entryStats(bytes, e.id), { slot: e.id, owner: e.id, ...e });
  assert.deepEqual(await entryStats(bytes, 1), { slot: 1, owner: 0, ...full.entries[0] });
  await assert.rejects(entryStats(bytes, 3), { code: 41 });
  const progress = [];
  await entryStats(bytes, 0, { onProgress: (p) => progress.push(p) });
  assert.deepEqual(progress.at(-1), { done: 48, total: 48 }, 'progress over the entry\'s two payloads');
});

test('saveCheckpoint: a write that fails halfway leaves the old file and no temporary', async () => {
  const { atomicWrite } = await import('../../js/node-io.js');
  const file = path.join(tmp, 'halfway.ckpt');
  await saveCheckpoint(file, modelDescription());
  const before = fs.readFileSync(file);
  const bytes = await model({ randomCounter: 77 });
  await assert.rejects(atomicWrite(file, (write) => {
    write(bytes.subarray(0, 100));
    throw new Error('ENOSPC: no space left on device (simulated)');
  }), { message: 'ENOSPC: no space left on device (simulated)' });
  assert.deepEqual(fs.readFileSync(file), before);
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-')), []);
  // The rename itself failing (the destination is a directory) also leaves nothing behind.
  const dir = path.join(tmp, 'a-directory');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'keep'), 'x');
  await assert.rejects(saveCheckpoint(dir, modelDescription()), { code: 'EISDIR' });
  assert.deepEqual(fs.readdirSync(dir), ['keep']);
  assert.deepEqual(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-')), []);
});

test('columns agree with the JSON report, for partial and complete files', async () => {
  const files = [
    await model(),
    await model({ randomCounter: '18446744073709551615' }),
    await writeCheckpoint(untiedDescription()),
    (await model()).slice(0, 150),   // a partial schema
    (await model()).slice(0, 185),   // tags cut short
  ];
  const n = (x) => (typeof x === 'bigint' ? (x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x.toString()) : x);
  for (const bytes of files) {
    const ck = await open(bytes);
    try {
      const report = ck.report;
      const c = ck.columns();
      const s = report.schema;
      assert.equal(c.n, s.shapes.length);
      for (let i = 0; i < c.n; i++) {
        assert.deepEqual(Array.from(c.dims.subarray(Number(c.dimStart[i]), Number(c.dimStart[i + 1])), n), s.shapes[i]);
        assert.equal(n(c.sizes[i]), s.sizes[i]);
      }
      assert.deepEqual(Array.from(c.flags, (f) => f === 1), s.requiresGrad);
      assert.deepEqual(c.reps && Array.from(c.reps, (r) => (r === (1n << 64n) - 1n ? null : n(r))), s.effectiveRepresentatives);
      assert.equal(c.entries.length, 6 * report.entries.length);
      report.entries.forEach((e, k) => assert.deepEqual(Array.from(c.entries.subarray(6 * k, 6 * k + 4), n), [e.id, e.step, e.count, e.offset]));
    } finally {
      ck.close();
    }
  }
});

test('statistics: the SIMD and the scalar wasm builds agree bit for bit', async () => {
  let seed = 99;
  const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) | 0) >>> 0);
  for (const dtype of ['float32', 'float64']) {
    const n = 10007;   // not a multiple of any vector width
    const words = dtype === 'float32' ? Uint32Array.from({ length: 2 * n }, rand)
      : BigUint64Array.from({ length: 2 * n }, () => (BigInt(rand()) << 32n) | BigInt(rand()));
    const bytes = new Uint8Array(words.buffer);
    const half = bytes.length / 2;
    // Make sure every class is present: zeros, subnormals, infinities, negatives, ordinary values.
    const f = dtype === 'float32' ? new Float32Array(words.buffer) : new Float64Array(words.buffer);
    // m: every class (the masked path); v: finite values only (the lean path), subnormals included.
    f.set([0, -0, 1e-40, -Infinity, Infinity, -1.5, 2.5, NaN], 100);
    for (let k = n; k < 2 * n; k++) if (!Number.isFinite(f[k])) f[k] = k % 3 ? -1e-41 : 0.5;
    const file = await writeCheckpoint({ shapes: [[n]], requiresGrad: [true], dtype, config: modelConfig,
      entries: [{ id: 0, step: 1, m: bytes.subarray(0, half), v: bytes.subarray(half) }] });
    const simd = await inspect(file, { stats: true, variant: 'simd' });
    const plain = await inspect(file, { stats: true, variant: 'nosimd' });
    assert.deepEqual(simd, plain);
    const { m, v } = simd.entries[0];
    assert.ok(m.nan > 0 && m.inf > 0 && m.zero >= 2 && m.negative > 0, JSON.stringify(m));
    assert.ok(v.nan === 0 && v.inf === 0 && v.negative > 0, JSON.stringify(v));
  }
});

test('check and diff take a layout JSON file by path, as the CLI does (named .json, or starting with {)', async () => {
  const bytes = await model();
  const named = path.join(tmp, 'layout.json');
  fs.writeFileSync(named, JSON.stringify(modelLayout));
  assert.equal((await check(bytes, named)).ok, true);
  const bare = path.join(tmp, 'layout-without-extension');
  fs.writeFileSync(bare, `  ${JSON.stringify({ ...modelLayout, representatives: null })}`);
  await assert.rejects(check(bytes, bare), { message: `${F}storage alias mismatch for parameter 1` });
  assert.deepEqual((await diff(bytes, named)).length, 0);
  const broken = path.join(tmp, 'broken.json');
  fs.writeFileSync(broken, '{"shapes": [[1]');
  await assert.rejects(check(bytes, broken), { name: 'LayoutError', message: `${broken} is not valid JSON: ${jsonError('{"shapes": [[1]')}` });
});

test('the report built from columns is the core\'s JSON report, on every file of the case table', async () => {
  const { table, makeFile } = await import('./table.mjs');
  const { open } = await import('../../js/index.js');
  let compared = 0;
  for (const c of table.cases) {
    for (const recipe of [c.file, c.state].filter(Boolean)) {
      const ck = await open(await makeFile(recipe));
      try {
        assert.deepEqual(ck.report, JSON.parse(ck.reportText()), c.name);
        compared++;
      } finally {
        ck.close();
      }
    }
  }
  assert.ok(compared > 140);
});

test('a PNG, an .npz, a .safetensors, a pickle, a GGUF: what the file is and what to do; a torch.save zip or legacy file is read', async () => {
  const src = put('hint-src.ckpt', await model());
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
    [Buffer.from([0x80, 0x02, 0x7d, 0x71, 0x00, 0x2e, 0, 0, 0, 0]), 'this looks like a Python pickle (a legacy torch.save file?), not a TorchLean checkpoint: read it with torch.load'],
    [Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(40)]), 'this is a GGUF model file (llama.cpp), not a checkpoint'],
  ];
  for (const [bytes, hint] of cases) {
    const report = await inspect(new Uint8Array(bytes));
    assert.equal(report.ok, false);
    assert.equal(report.error.hint, hint);
  }
  // a torch.save zip and a legacy torch.save pickle are read as PyTorch files (here cut short)
  const legacy = Buffer.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x00]);
  for (const [bytes, code] of [[Buffer.concat([zipHead, name, Buffer.alloc(20)]), 51], [legacy, 55]]) {
    const report = await inspect(new Uint8Array(bytes));
    assert.deepEqual([report.family, report.error.code, report.error.hint], ['PyTorch', code, null]);
  }
  // a safetensors file is read as one (a model-state family); loaded as TLADAMF, its hint says what it is
  assert.equal((await inspect(safetensors)).family, 'safetensors');
  const loaded = await check(safetensors, { shapes: [[1]], requiresGrad: [true], representatives: null, family: 'TLADAMF' }).catch((e) => e);
  assert.equal(loaded.hint, 'this is a safetensors file, a model state: ckptscope inspect reads it');
});

test('a truncated file is called incomplete, the shortfall from the core', async () => {
  const whole = await model();
  const report = await inspect(whole.slice(0, 300));
  assert.equal(report.error.message, 'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)');
  assert.equal(report.error.hint, 'the file ends at least 3 bytes early: an incomplete copy or download?');
  // a payload cut short: the bytes it misses
  const payloadCut = await inspect(whole.slice(0, 200), { stats: true });
  assert.equal(payloadCut.error.code, 1);
  assert.equal(payloadCut.error.hint, 'the file ends at least 7 bytes early: an incomplete copy or download?');
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
  assert.deepEqual([...(await readEntry(await writeCheckpoint(d), 0)).m], [1e40, Infinity]);
});

test('a custom {size, read} source as check\'s layout is read as a checkpoint, not taken for a layout', async () => {
  const bytes = await model();
  const custom = { size: bytes.length, read: (offset, dest) => { const n = Math.max(0, Math.min(dest.length, bytes.length - offset)); dest.set(bytes.subarray(offset, offset + n)); return n; } };
  const result = await check(bytes, custom);
  assert.equal(result.ok, true);
  const other = await model();
  other[100] ^= 0xff;   // some other file: still a checkpoint source, the verdict by reading it
  await assert.rejects(check(bytes, { ...custom, read: (offset, dest) => { const n = Math.max(0, Math.min(dest.length, other.length - offset)); dest.set(other.subarray(offset, offset + n)); return n; } }),
    { name: 'CheckpointError', code: 10, subject: 'expected', offset: 95, message: `${F}invalid \`requiresGrad\` flag 280375465082881` });
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
  await assert.rejects(check(ck, layout), { name: 'TypeError', message: 'this Checkpoint is closed' });
});

test('positiveNumber reads a learning rate as text by the CLI\'s rule', async () => {
  const { positiveNumber } = await import('../../js/index.js');
  assert.equal(positiveNumber('3e-4'), 0.0003);
  assert.equal(positiveNumber('0.5'), 0.5);
  for (const text of ['0x10', 'Infinity', '', ' ', '0', '-1e-3', '1e400', 'fast']) assert.ok(Number.isNaN(positiveNumber(text)), text);
});
