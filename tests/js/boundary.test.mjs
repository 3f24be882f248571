// The wasm/JS boundary: every 64-bit argument is exact or refused before the core sees it, a
// file-controlled size never wraps in wasm's 32-bit size_t, a closed handle can
// never make a check pass or read freed memory, failing reads leak nothing, errors live on the
// handle, and slots resolve as a user expects (a tied slot gives its owner's moments).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, inspect, check, readEntry, entryStats, writeCheckpoint, Schema, loadCore, writeState, exportTensors } from '../../js/index.js';
import { model, modelLayout, modelDescription, F } from './table.mjs';
import { scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-boundary-scratch-');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-boundary-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

test('slot ids: exact to 2^64 - 1 as a bigint or a decimal string; never through a double', async () => {
  const bytes = await model();
  const ck = await open(bytes);
  try {
    for (const id of ['18446744073709551615', 18446744073709551615n, '18446744073709550592', 2n ** 64n - 1024n]) {
      await assert.rejects(ck.entry(id), { name: 'CheckpointError', code: 41, message: `no parameter ${BigInt(id)}: the file has 3 slots` });
      await assert.rejects(ck.stats(id), { name: 'CheckpointError', code: 41, message: `no parameter ${BigInt(id)}: the file has 3 slots` });
    }
    const past53 = (x) => `slot ${x} is past 2^53 - 1 and not exact as a number: pass a bigint or a decimal string`;
    const whole = (x) => `slot must be a whole number, got ${x}`;
    for (const [bad, message] of [[2 ** 64, past53('18446744073709552000')], [2 ** 53, past53('9007199254740992')], [-1, 'slot must not be negative, got -1'],
      [-0.5, whole('-0.5')], [1.5, whole('1.5')], [NaN, whole('NaN')], [Infinity, whole('Infinity')],
      ['18446744073709551616', 'slot 18446744073709551616 does not fit in 64 bits'], [2n ** 64n, 'slot 18446744073709551616 does not fit in 64 bits'],
      [-1n, 'slot must not be negative, got -1n']]) {
      await assert.rejects(ck.entry(bad), { name: 'RangeError', message }, String(bad));
    }
    for (const bad of ['-1', '1e3', '0x10', ' 1', '']) {
      await assert.rejects(ck.entry(bad), { name: 'TypeError', message: `slot must be a nonnegative integer, got ${JSON.stringify(bad)}` }, bad);
    }
    for (const [bad, shown] of [[null, 'null'], [undefined, 'undefined'], [{}, '[object Object]'], [[1], '1'], [true, 'true']]) {
      await assert.rejects(ck.entry(bad), { name: 'TypeError', message: `slot must be a nonnegative integer (a number, bigint or decimal string), got ${shown}` }, shown);
    }
    // the module is intact: a real entry still reads, and inspect still works
    const e = await ck.entry('2');
    assert.deepEqual([...e.m], [-0.5, -0.5, -0.5]);
  } finally {
    ck.close();
  }
  assert.equal((await inspect(bytes)).ok, true);
  const none = { name: 'CheckpointError', code: 41, message: 'no parameter 18446744073709551615: the file has 3 slots' };
  await assert.rejects(readEntry(bytes, '18446744073709551615'), none);
  await assert.rejects(entryStats(bytes, '18446744073709551615'), none);
});

test('Schema.representative: exact arguments, RangeError for -1, NaN, 2^64', async () => {
  const s = await Schema.create({ shapes: [[2], [2]], requiresGrad: [true, true], representatives: [0, 0] });
  try {
    assert.equal(s.representative(1), 0);
    assert.equal(s.representative('18446744073709551615'), null);
    for (const [bad, message] of [[-1, 'slot must not be negative, got -1'], [NaN, 'slot must be a whole number, got NaN'],
      [2 ** 64, 'slot 18446744073709552000 is past 2^53 - 1 and not exact as a number: pass a bigint or a decimal string'], [0.5, 'slot must be a whole number, got 0.5']]) {
      assert.throws(() => s.representative(bad), { name: 'RangeError', message }, String(bad));
    }
    assert.throws(() => s.representative('x'), { name: 'TypeError', message: 'slot must be a nonnegative integer, got "x"' });
  } finally {
    s.close();
  }
});

test('a closed Schema cannot make a check pass; one closed during a check is freed after it', async () => {
  const bad = (await model()).slice(0, 200);
  const schema = await Schema.create(modelLayout);
  schema.close();
  const closed = { name: 'TypeError', message: 'this Schema is closed' };
  await assert.rejects(check(bad, schema), closed);
  await assert.rejects(check(await model(), schema), closed);
  // closed from inside the check (the source's read callback): the core keeps using a live
  // schema, the verdict is the trainer's, and the schema is freed when the core is done.
  const live = await Schema.create(modelLayout);
  const bytes = await model();
  let reads = 0;
  const source = { size: bytes.length, read(offset, dest) { reads++; live.close(); const n = Math.min(dest.length, bytes.length - offset); dest.set(bytes.subarray(offset, offset + n)); return n; } };
  assert.equal((await check(source, live)).ok, true);
  assert.ok(reads > 0);
  assert.equal(live.closed, true);
  assert.throws(() => live.tags(), { name: 'TypeError', message: 'this Schema is closed' });
  const broken = { ...source, size: 200, read(offset, dest) { return source.read(offset, dest.subarray(0, Math.max(0, Math.min(dest.length, 200 - offset)))); } };
  const again = await Schema.create(modelLayout);
  await assert.rejects(check({ ...broken, read(o, d) { again.close(); return broken.read(o, d); } }, again), { name: 'CheckpointError', code: 1, message: `${F}truncated checkpoint (wanted 8 bytes, got 1)`,
    hint: 'the file ends at least 7 bytes early: an incomplete copy or download?' });
});

test('a closed Checkpoint throws; one closed during a scan is released after it', async () => {
  const bytes = await writeCheckpoint({ shapes: [[1 << 20]], requiresGrad: [true], config: modelDescription().config,
    entries: [{ id: 0, step: 1, m: new Float32Array(1 << 20).fill(1), v: new Float32Array(1 << 20).fill(2) }] });
  const ck = await open(bytes);
  const stats = await ck.stats(0, { onProgress: () => ck.close() });
  assert.equal(stats.m.mean, 1);
  assert.equal(ck.closed, true);
  await assert.rejects(ck.entry(0), { name: 'TypeError', message: 'this Checkpoint is closed' });
  assert.throws(() => ck.report, { name: 'TypeError', message: 'this Checkpoint is closed' });
  ck.close();   // twice is fine
});

test('a frozen slot has no optimizer state; a tied slot says whose moments it gives', async () => {
  const desc = { shapes: [[2], [2], [3], [2]], requiresGrad: [false, true, true, true], representatives: [null, 1, 2, 1],
    config: modelDescription().config, entries: [{ id: 1, step: 3, m: [1, 2], v: [3, 4] }, { id: 2, step: 4, m: [5, 6, 7], v: [8, 9, 10] }] };
  const ck = await open(await writeCheckpoint(desc));
  try {
    await assert.rejects(ck.entry(0), { name: 'CheckpointError', code: 40, slot: 0, message: 'parameter 0 is frozen: it has no optimizer state' });
    await assert.rejects(ck.stats(0), { name: 'CheckpointError', code: 40, slot: 0, message: 'parameter 0 is frozen: it has no optimizer state' });
    const tied = await ck.entry(3);
    assert.deepEqual([tied.slot, tied.owner, tied.step, [...tied.m]], [3, 1, 3, [1, 2]]);
    assert.deepEqual((await ck.stats(3)).owner, 1);
    await assert.rejects(ck.tensor(0), { code: 49, message: 'this is a CUDA Adam checkpoint (TLADAMF): it holds optimizer state, not model tensors' });
  } finally {
    ck.close();
  }
});

test('error.slot for every slot-specific diagnostic of the case table', async () => {
  const { table, makeFile } = await import('./table.mjs');
  let checked = 0;
  for (const c of table.cases.filter((c) => c.inspect && c.inspect.code)) {
    const report = await inspect(await makeFile(c.file), { stats: !!c.file.stats });
    assert.equal(report.error.slot, c.inspect.slot, c.name);
    if (c.inspect.slot !== null) checked++;
  }
  assert.ok(checked >= 30, `${checked} slot-specific cases`);
});

test('failing reads leak nothing: wasm memory stays flat over repeated failures', async () => {
  const n = 8 << 20;   // 32 MiB per moment
  const bytes = await writeCheckpoint({ shapes: [[n]], requiresGrad: [true], config: modelDescription().config,
    entries: [{ id: 0, step: 1, m: new Float32Array(n), v: new Float32Array(n) }] });
  const file = path.join(tmp, 'shrinks.ckpt');
  fs.writeFileSync(file, bytes);
  const ck = await open(file);
  fs.truncateSync(file, bytes.length - 1000);   // the file shrinks under the open handle
  const core = await loadCore();
  const shrunk = { name: 'CheckpointError', code: 1, message: `${F}truncated checkpoint (wanted 33554432 bytes, got 33553432)`,
    hint: 'the file ends at least 1000 bytes early: an incomplete copy or download?' };
  await assert.rejects(ck.entry(0), shrunk);
  const after = core.memoryBytes;
  for (let k = 0; k < 40; k++) await assert.rejects(ck.entry(0), shrunk);
  assert.equal(core.memoryBytes, after, '40 failed 64 MiB reads grew nothing');
  ck.close();
  // and a read that is refused up front (too large to copy) allocates nothing either
  const huge = await open(hugeEntryFile());
  await assert.rejects(huge.entry(0), { name: 'RangeError',
    message: 'parameter 0\'s moments are 8589934592 bytes each: too large to copy into memory at once (use stats(), which streams)' });
  assert.equal(core.memoryBytes, after);
  huge.close();
});

/** A sparse file whose one entry claims 2^31 float32 elements (8 GiB per moment). */
function hugeEntryFile() {
  const file = path.join(tmp, 'huge-entry.ckpt');
  const count = 2n ** 31n;
  const head = Buffer.alloc(7 + 8 * 12);
  head.write('TLADAMF');
  const words = [2n, 0n, 0x3feccccccccccccdn, 0x3feff7ced916872bn, 0x3e45798ee2308c3an, 0n, 1n, 1n, count, count, 1n, 1n];
  words.forEach((w, k) => head.writeBigUInt64LE(w, 7 + 8 * k));
  const entry = Buffer.alloc(24);
  entry.writeBigUInt64LE(0n, 0);
  entry.writeBigUInt64LE(1n, 8);
  entry.writeBigUInt64LE(count, 16);
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, head);
  fs.writeSync(fd, entry);
  fs.ftruncateSync(fd, head.length + 24 + 2 * 4 * Number(count));
  fs.closeSync(fd);
  return file;
}

test('134,217,727 scalar slots in a 3 GiB stream: answered cleanly, and the module still works', async () => {
  // v2 header, then n slots of {rank 0, size 1, flag 1}: generated as it is read, never stored.
  const n = 134_217_727n;
  const header = Buffer.alloc(7 + 8 * 7);
  header.write('TLADAMF');
  [2n, 0n, 0x3feccccccccccccdn, 0x3feff7ced916872bn, 0x3e45798ee2308c3an, 0n, n].forEach((w, k) => header.writeBigUInt64LE(w, 7 + 8 * k));
  const tile = Buffer.alloc(24 * 65536);   // 65,536 slots, copied out a piece at a time
  for (let k = 0; k < 65536; k++) (tile.writeBigUInt64LE(1n, 24 * k + 8), tile.writeBigUInt64LE(1n, 24 * k + 16));
  const size = header.length + 24 * Number(n) + 8;
  const source = {
    size,
    read(offset, dest) {
      const end = Math.min(size, offset + dest.length);
      for (let at = offset; at < end;) {
        if (at < header.length) {
          const k = Math.min(end, header.length) - at;
          dest.set(header.subarray(at, at + k), at - offset);
          at += k;
        } else {
          const rel = (at - header.length) % tile.length, k = Math.min(tile.length - rel, end - at);
          dest.set(tile.subarray(rel, rel + k), at - offset);
          at += k;
        }
      }
      return end - offset;
    },
  };
  assert.ok(size > 3 * 2 ** 30);
  const ck = await open(source);
  try {
    const { error } = ck.summary;
    // Either the whole schema fits (then the entry count is what is missing) or memory runs out
    // with words that say where; nothing wraps, nothing crashes.
    if (error.code === 36) {
      assert.match(error.message, /^out of memory at parameter \d+ of the 134217727 the file declares$/);
      assert.equal(ck.summary.schema, null, 'the partial layout is dropped to leave memory for the report');
    } else {
      assert.equal(error.message, `${F}expected 134217727 moment entries, got 0`);
      assert.equal(ck.summary.slotCount, 134217727);
      // 134 million slots of JSON fit in no JavaScript string: said in words, not a crash
      assert.throws(() => ck.report, { name: 'RangeError',
        message: 'the JSON report of 134217727 slots is too large for one JavaScript string: use columns() for the per-slot arrays, writeReport() to stream it, or `ckptscope inspect --json`' });
    }
  } finally {
    ck.close();
  }
  assert.equal((await inspect(await model())).ok, true, 'the module still works');
});

test('writer arguments: a version of 2^64 - 1 is refused with the writer\'s text, not truncated', async () => {
  await assert.rejects(writeCheckpoint({ ...modelDescription(), version: '18446744073709551615' }),
    { message: `${F}cannot write format version 18446744073709551615; expected 2 through 5` });
  await assert.rejects(writeCheckpoint({ ...modelDescription(), version: 2 ** 64 }),
    { name: 'LayoutError', message: 'description.version is 18446744073709552000, past 2^53 - 1: write it as a decimal string to keep it exact' });
});

test('numbers in the JSON report: exact at every digit count, a decimal string past 2^53 - 1', async () => {
  const steps = [1n, 9n, 10n, 99n, 100n, 12345n, 4294967295n, 4294967296n, 2n ** 53n - 1n, 2n ** 53n, 10n ** 19n, 2n ** 64n - 1n];
  const d = modelDescription();
  for (const step of steps) {
    const bytes = await writeCheckpoint({ ...d, entries: d.entries.map((e) => ({ ...e, step })) });
    for (const stats of [false, true]) {   // from the core's columns, and the core's JSON text
      const report = await inspect(bytes, { stats });
      const want = step <= 2n ** 53n - 1n ? Number(step) : String(step);
      assert.deepEqual(report.entries.map((e) => e.step), d.entries.map(() => want), `step ${step}, stats ${stats}`);
    }
  }
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
  const src = put('nul-names.ckpt', await model());
  await assert.rejects(exportTensors(src, { format: 'safetensors', names: ['a\0b', 'b', 'c'] }), { name: 'LayoutError', message: 'names[0] holds a NUL character: a name cannot' });
});

test('a sparse file declaring rank 2^28: memory bounded by the bytes left, the truncation diagnostic as before', async () => {
  const bytes = await model();
  new DataView(bytes.buffer, bytes.byteOffset).setBigUint64(63, 1n << 28n, true);   // slot 0's rank
  const p = put('rank.ckpt', bytes);
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
  assert.equal(out.error.message, `${F}truncated checkpoint (wanted 8 bytes, got 1)`);
  assert.equal(out.error.slot, 0);
  assert.ok(out.grown < 8 * 2 ** 20, `WebAssembly memory grew by ${out.grown} bytes`);
});
