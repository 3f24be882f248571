// What opening a DeepSpeed folder reads (docs/performance.md "DeepSpeed folders"): at most, over
// all its files together, their central directories, their data.pkl members, 128 bytes a storage
// record and 64 KiB. Counted through counting sources (tests/js/ds-counting.mjs), the bound read
// from the zips with fs (tests/js/zip-facts.mjs); on DeepSpeed's own folders
// (tests/fixtures/deepspeed) and on folders bench/deepspeed_writer.py writes (ZeRO-2 and ZeRO-3,
// 4 ranks, a GPT-2-small-sized model, sparse: 1.7 GB each, a few hundred KB on disk), opened
// and paired with a model.safetensors.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { open, pair } from '../../js/index.js';
import { CountingFile } from './counting.mjs';
import { countedFolder } from './ds-counting.mjs';
import { openBoundOf } from './zip-facts.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = path.join(ROOT, 'tests/fixtures/deepspeed');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-ds-open-'));
test.after(() => fs.rmSync(scratch, { recursive: true, force: true }));

const written = (stage) => {
  const dir = path.join(scratch, `gpt2-z${stage}-w4`);
  if (!fs.existsSync(dir)) execFileSync('/usr/bin/python3', [path.join(ROOT, 'bench/deepspeed_writer.py'), 'sparse', 'gpt2', '4', String(stage), dir], { stdio: 'ignore' });
  return dir;
};

/** A sparse model.safetensors (BF16) of the report's names and shapes; its header's length. */
function modelFor(report, file) {
  const header = {};
  let at = 0;
  report.names.forEach((name, i) => {
    const shape = report.schema.shapes[i];
    const bytes = 2 * shape.reduce((a, x) => a * x, 1);
    header[name] = { dtype: 'BF16', shape, data_offsets: [at, at + bytes] };
    at += bytes;
  });
  const text = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(text.length));
  fs.writeFileSync(file, Buffer.concat([head, text]));
  fs.truncateSync(file, 8 + text.length + at);
  return text.length;
}

async function within(dir, how) {
  const c = await countedFolder(dir);
  const r = await how(c.source);
  const { bound } = openBoundOf(c.zips);
  assert.ok(c.bytes() <= bound, `${dir}: read ${c.bytes()} B, bound ${bound} B ${JSON.stringify(c.perFile())}`);
  return { r, bytes: c.bytes(), bound, files: c.zips.length };
}

const opened = async (src) => {
  const ck = await open(src);
  const r = ck.report;
  ck.close();
  return r;
};

test('opening DeepSpeed\'s own folders reads within the bound', async () => {
  const folders = fs.readdirSync(FIXTURES).filter((n) => /^zero\d-w\d(-bf16)?$/.test(n));
  assert.ok(folders.length >= 6);
  for (const name of folders) {
    const { r } = await within(path.join(FIXTURES, name), opened);
    assert.equal(r.family, 'DeepSpeed', name);
    assert.equal(r.ok, true, name);
  }
});

test('opening and pairing a writer-made ZeRO-2 and ZeRO-3 folder of 4 ranks reads within the bound, not a 64 KiB tail per file', async () => {
  for (const stage of [2, 3]) {
    const dir = written(stage);
    const o = await within(dir, opened);
    assert.equal(o.r.ok, true);
    assert.equal(o.r.deepspeed.kind, `ZeRO-${stage}`);
    assert.equal(o.r.deepspeed.worldSize, 4);
    assert.ok(o.files >= 5);
    // one 64 KiB tail per file alone would pass the 64 KiB of the bound
    assert.ok(o.bytes < o.bound - 65536 + 4096 * o.files, `${o.bytes} B`);
    // pairing with the model it will be loaded into (its model.safetensors, bf16, sparse): the
    // folder within the same bound, the model's 8 bytes and header
    const model = path.join(scratch, `model-z${stage}.safetensors`);
    const headerLength = modelFor(o.r, model);
    const m = new CountingFile(model);
    const p = await within(dir, (src) => pair(src, m));
    m.close();
    assert.equal(p.r.pairs, true);
    assert.ok(m.bytes <= 8 + headerLength, `${m.bytes} B of the model`);
  }
});
