// The fourth-family proof, end to end (docs/architecture.md "Adding a family"):
// the core built with the test-only family TLSF64B (tests/c/family_tlsf64b.c: a descriptor and
// its reader in one module, added by the build alone: `bash scripts/build.sh family`) is loaded
// by the package unchanged (CKPTSCOPE_WASM=tlsf64b), and the JS API, the report and the CLI see
// the new family: its name, its float64 elements, its tensors, its export, its diagnostics.
process.env.CKPTSCOPE_WASM = 'tlsf64b';   // before the package loads its core

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'js/cli.js');
const WASM = path.join(ROOT, 'js/ckptscope-tlsf64b.wasm');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-family-'));

test('the build with the fourth family is there (bash scripts/build.sh family makes it)', () => {
  assert.ok(fs.existsSync(WASM), `${WASM} is missing: run bash scripts/build.sh family`);
});

const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: 'tlsf64b' } });

test('the JS API writes, opens and reads a TLSF64B file: the family table is the core\'s', async () => {
  const { writeState, open } = await import('../../js/index.js');
  const values = [[1.5, -2, 1e300], [0.1]];   // 1e300 and 0.1 exist only in float64
  const bytes = await writeState({ family: 'TLSF64B', shapes: [[3], []], values });
  const file = path.join(tmp, 'model.tlsf64b');
  fs.writeFileSync(file, bytes);
  const ck = await open(file);
  try {
    assert.equal(ck.ok, true);
    assert.equal(ck.summary.family, 'TLSF64B');
    assert.equal(ck.summary.name, 'TorchLean float64 state checkpoint');
    assert.equal(ck.summary.dtype, 'float64');
    assert.equal(ck.summary.tensorCount, 2);
    const t0 = await ck.tensor(0);
    assert.ok(t0.values instanceof Float64Array);
    assert.deepEqual([...t0.values], values[0]);
    assert.deepEqual([...(await ck.tensor(1)).values], values[1]);
  } finally {
    ck.close();
  }
});

test('the CLI inspects it (summary and report), exports it as F64, and speaks its texts', () => {
  const file = path.join(tmp, 'model.tlsf64b');
  const summary = cli('inspect', file);
  assert.equal(summary.status, 0, summary.stderr);
  assert.match(summary.stdout, /^.*model\.tlsf64b: TorchLean float64 state checkpoint \(TLSF64B\) version 1, float64, 95 bytes\n/);
  const report = JSON.parse(cli('inspect', file, '--json', '--stats').stdout);
  assert.equal(report.family, 'TLSF64B');
  assert.equal(report.dtype, 'float64');
  assert.deepEqual(report.tensors.map((t) => [t.shape, t.count, t.values.max]), [[[3], 3, 1e300], [[], 1, 0.1]]);
  const out = path.join(tmp, 'model.safetensors');
  const exported = cli('export', file, out);
  assert.equal(exported.status, 0, exported.stderr);
  const st = fs.readFileSync(out);
  const header = JSON.parse(st.subarray(8, 8 + Number(st.readBigUInt64LE(0))).toString('utf8'));
  assert.equal(header.slot0.dtype, 'F64');
  assert.deepEqual(header.slot0.shape, [3]);
  // its own texts and width: a payload cut short is 3 × 8 bytes wanted, in the family's words
  const cut = path.join(tmp, 'cut.tlsf64b');
  fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 60));
  const broken = cli('inspect', cut);
  assert.equal(broken.status, 1);
  assert.match(broken.stdout, /StateIO: truncated checkpoint \(wanted 24 bytes, got 13\)/);
});

test('the default build does not know it (the family comes with its build, nowhere else)', () => {
  const plain = spawnSync(process.execPath, [CLI, 'inspect', path.join(tmp, 'model.tlsf64b')], { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: 'simd' } });
  assert.equal(plain.status, 1);
  assert.match(plain.stdout, /unsupported checkpoint family/);
});
