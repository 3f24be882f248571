// The Llama-7B-like pair (tests/js/llama.mjs: a 54 GB optimizer file, its tied variant and a
// 27 GB state file, sparse) opened through sources that count what they are asked for: a Node
// file, a Blob read with FileReaderSync and an HTTP server answering range requests (stand-ins
// for the two browser APIs, backed by the same sparse file). Opening reads the headers only
// (docs/performance.md "Big files": at most 64 KiB + 64 bytes per slot and entry), the counts the sources
// keep for a viewer to show are the bytes they gave, and statistics and the health pass read
// every payload byte exactly once (on a small file of the same structure, byte by byte).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, inspect, health, exportTensors, HttpSource, BlobSource } from '../../js/index.js';
import { writeLlama, llamaSlots, openBound } from './llama.mjs';
import { CountingFile, withBlobReader, withServer } from './counting.mjs';
import { writeSparse } from './sparse.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-scale-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

const files = {
  optimizer: { kind: 'optimizer' },
  tied: { kind: 'optimizer', tied: true },
  state: { kind: 'state' },
};
for (const [name, options] of Object.entries(files)) {
  files[name].path = path.join(dir, `llama-${name}.${options.kind === 'state' ? 'tlsf' : 'ckpt'}`);
  files[name].layout = writeLlama(files[name].path, options);
}

/** Bytes of [offset, offset + n) that lie in the layout's payloads. */
function payloadBytes(layout, reads) {
  let total = 0;
  for (const [offset, n] of reads) {
    for (const [a, b] of layout.payloads) total += Math.max(0, Math.min(b, offset + n) - Math.max(a, offset));
  }
  return total;
}

test('the sparse 7B-like files cost no disk: headers only', () => {
  for (const { path: file, layout } of Object.values(files)) {
    const st = fs.statSync(file);
    assert.equal(st.size, layout.size);
    // a block at most per record header (the file system allocates whole blocks)
    assert.ok(st.blocks * 512 <= 4096 * (layout.headers.length + 8), `${file}: ${st.blocks * 512} bytes on disk`);
  }
  assert.equal(files.optimizer.layout.params, 6_738_415_616);
  assert.ok(files.optimizer.layout.size > 53e9 && files.state.layout.size > 26e9);
});

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file from a Node file reads its headers only`, async () => {
    const src = new CountingFile(file);
    const ck = await open(src);
    try {
      assert.equal(ck.ok, true, ck.summary.error?.message);
      assert.equal(ck.summary.slotCount ?? ck.summary.tensorCount, 291);
      assert.equal(ck.summary.entryCount ?? ck.summary.tensorCount, layout.entries ?? layout.tensors);
    } finally {
      ck.close();
    }
    const bytes = src.bytes;
    assert.ok(bytes <= openBound(layout), `${bytes} bytes read, bound ${openBound(layout)}`);
    // One read per record after a payload, of a record header's size (32 bytes: an entry's 24
    // and 8 of its payload at most); the only other payload bytes read are the schema's last
    // read-ahead, into the first payload.
    assert.ok(src.log.length <= (layout.entries ?? layout.tensors) + 8, `${src.log.length} reads`);
    const tail = src.log.filter(([offset]) => offset > layout.payloads[0][0]);
    assert.ok(tail.every(([, n]) => n <= 32), JSON.stringify(tail.filter(([, n]) => n > 32)));
    assert.ok(payloadBytes(layout, tail) <= 8 * tail.length);
  });
}

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file from a Blob reads its headers only, and bytesRead says so`, () =>
    withBlobReader(file, async (blob, log) => {
      const src = new BlobSource(blob);
      const core = [];   // what the core asks for
      const read = src.read.bind(src);
      src.read = (offset, dest) => (core.push([offset, dest.length]), read(offset, dest));
      const ck = await open(src);
      assert.equal(ck.ok, true);
      ck.close();
      const counted = log.reduce((s, [, n]) => s + n, 0);
      assert.equal(src.bytesRead, counted);
      assert.ok(counted <= openBound(layout), `${counted} bytes read in ${log.length} reads, bound ${openBound(layout)}`);
      assert.ok(log.length <= (layout.entries ?? layout.tensors) + 8, `${log.length} reads`);
      // no more than the core asked for: the Blob's reads never grow past the core's own
      // (a page per small read that follows, or doubling on top of the core's read-ahead, read
      // payload bytes to skip them: 37,952 B for the optimizer file where the core asks 25,664)
      const asked = core.reduce((a, [, n]) => a + n, 0);
      assert.ok(counted <= asked, `${counted} bytes read where the core asked for ${asked}`);
    }));
}

for (const [name, { path: file, layout }] of Object.entries(files)) {
  test(`opening the 7B-like ${name} file over HTTP transfers its headers only, and the source's counts are the server's`, () =>
    withServer(file, async (served) => {
      const src = HttpSource.open(`http://127.0.0.1/${name}`);
      const ck = await open(src);
      assert.equal(ck.ok, true);
      ck.close();
      assert.equal(src.bytesTransferred, served.bytes);
      assert.equal(src.requests, served.requests);
      assert.ok(served.bytes <= openBound(layout), `${served.bytes} bytes in ${served.requests} requests, bound ${openBound(layout)}`);
      assert.ok(served.requests <= (layout.entries ?? layout.tensors) + 8, `${served.requests} requests`);
    }));
}

// ---- every payload byte once ----------------------------------------------------------------

const small = {
  tied: { kind: 'optimizer', tied: true, scale: 64 },
  optimizer: { kind: 'optimizer', scale: 64 },
  state: { kind: 'state', scale: 64 },
};
for (const [name, options] of Object.entries(small)) {
  small[name].path = path.join(dir, `small-${name}`);
  small[name].layout = writeLlama(small[name].path, options);
}

/** Payload bytes never read, payload bytes read again (each read past the first), and bytes
 *  read outside payloads. */
function coverage(layout, log) {
  const times = new Uint8Array(layout.size);
  for (const [offset, n] of log) for (let k = offset; k < offset + n; k++) times[k]++;
  let missing = 0, again = 0, outside = 0;
  const inPayload = new Uint8Array(layout.size);
  for (const [a, b] of layout.payloads) inPayload.fill(1, a, b);
  for (let k = 0; k < layout.size; k++) {
    if (!inPayload[k]) outside += times[k];
    else if (times[k] === 0) missing++;
    else again += times[k] - 1;
  }
  return { missing, again, outside };
}

test('statistics read every payload byte exactly once (the 7B-like structure, 1/64 scale)', async () => {
  for (const { path: file, layout } of Object.values(small)) {
    const src = new CountingFile(file);
    const report = await inspect(src, { stats: true });
    src.close();
    assert.equal(report.ok, true);
    // one pass: the payload bytes a header read took along are not read again
    assert.deepEqual(coverage(layout, src.log), { missing: 0, again: 0, outside: coverage(layout, src.log).outside });
    assert.ok(coverage(layout, src.log).outside <= openBound(layout));
  }
});

// (untied: a tied slot's step is its owner's moments with its own parameters, so the owner's
// moments serve two slots)
test('the health pass reads every payload byte of both files once', async () => {
  const opt = new CountingFile(small.optimizer.path), state = new CountingFile(small.state.path);
  await health(opt, state, { lr: 1e-4 });
  opt.close();
  state.close();
  // The pass reads each payload byte once; opening the files read a few of them already (the
  // schema's last read-ahead, up to 8 bytes behind each record header).
  for (const [src, { layout }] of [[opt, small.optimizer], [state, small.state]]) {
    const { missing, again } = coverage(layout, src.log);
    assert.equal(missing, 0);
    assert.ok(again <= 16384 + 8 * layout.payloads.length, `${layout.kind}: ${again} payload bytes read again`);
  }
});

// ---- passes over the slots --------------------------------------------------------------------

test('names are checked by sorting: the first failing slot in slot order, with the first slot of its name', async () => {
  const names = llamaSlots({ scale: 64 }).map((s) => s.name);
  const bad = (edit) => {
    const copy = names.slice();
    edit(copy);
    return copy;
  };
  const file = small.state.path;
  await assert.rejects(exportTensors(file, { names: bad((x) => { x[200] = x[7]; x[250] = x[7]; }) }),
    { name: 'CheckpointError', slot: 200, message: 'slots 7 and 200 have the same name' });
  await assert.rejects(exportTensors(file, { names: bad((x) => { x[250] = x[9]; x[100] = ''; }) }),
    { name: 'CheckpointError', slot: 100, message: 'name 100 is empty: every slot needs a name of its own' });
  await assert.rejects(exportTensors(file, { names: bad((x) => { x[3] = x[290]; x[120] = '__metadata__'; }) }),
    { name: 'CheckpointError', slot: 120, message: 'name 120 is __metadata__ (reserved): every slot needs a name of its own' });
  await assert.rejects(exportTensors(file, { names: bad((x) => { x[5] = 'z'; x[4] = 'z'; x[2] = 'z'; }) }),
    { name: 'CheckpointError', slot: 4, message: 'slots 2 and 4 have the same name' });
});

test('exporting picked slots of the tied 7B-like optimizer file (1/64 scale): owners, in slot order, once each', async () => {
  const names = llamaSlots({ scale: 64 }).map((s) => s.name);
  const bytes = await exportTensors(small.tied.path, { names, slots: [290, 3, 0, 3, 999], format: 'safetensors' });
  const len = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  // slot 290 (lm_head) is tied to slot 0: not an owner, nothing of its own (docs/export.md);
  // a slot given twice or past the end changes nothing
  assert.deepEqual(Object.keys(header).filter((k) => k !== '__metadata__'),
    [`${names[0]}.exp_avg`, `${names[0]}.exp_avg_sq`, `${names[3]}.exp_avg`, `${names[3]}.exp_avg_sq`]);
});

test('a file of 100 entries of 512 KiB opens in its headers (the read-ahead once grew to 1 MiB per entry: 47.5 of its 50 MiB)', async () => {
  const file = path.join(dir, 'hundred.ckpt');
  const size = writeSparse(file, { slots: 100, elements: 65536 });
  const src = new CountingFile(file);
  const ck = await open(src);
  assert.equal(ck.ok, true);
  ck.close();
  assert.ok(size > 50 * 2 ** 20);
  assert.ok(src.bytes <= 65536 + 64 * 200, `${src.bytes} bytes in ${src.log.length} reads`);
});

test('a run of tiny slots (4 elements each) opens in a few reads, not a read per entry', async () => {
  // 20,000 entries of 24 header bytes and 32 payload bytes: once read with a record header each
  // (one read per entry: a million such slots took 0.95 s natively, 465,354 preads); the read
  // goes on through payloads of at most 40 bytes, growing to 64 KiB
  const file = path.join(dir, 'tiny.ckpt');
  writeSparse(file, { slots: 20000, elements: 4 });
  const src = new CountingFile(file);
  const ck = await open(src);
  assert.equal(ck.ok, true);
  assert.equal(ck.summary.entryCount, 20000);
  ck.close();
  assert.ok(src.log.length < 100, `${src.log.length} reads`);
  assert.ok(src.bytes <= 65536 + 64 * 40000, `${src.bytes} bytes`);
});
