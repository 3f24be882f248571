// Issue 18 ("what a new user and an attacker meet: round 3"): the API and server points, one
// test each (the CLI's are in cli-hardening.test.mjs, view's in view.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect, health, writeCheckpoint, CheckpointError } from '../../js/index.js';
import { model } from './table.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-round3-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function file(name, bytes) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, bytes);
  return p;
}

/** Files broken before their first slot: an LFS pointer, an unknown version. */
async function brokenBeforeSlots() {
  const badVersion = await model();
  badVersion[7] = 99;
  return [
    [file('lfs.ckpt', 'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), /unsupported checkpoint family/],
    [file('bad-version.ckpt', badVersion), /unsupported format version 99/],
  ];
}

test('18.3: workers: 2 on a file broken before its first slot: the file\'s diagnostic, no crash', async () => {
  for (const [p, diagnostic] of await brokenBeforeSlots()) {
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

/** A checkpoint of `n` slots of `size` float32 elements, moments m = value, v = 1. */
function filled(n, size, value) {
  return writeCheckpoint({
    shapes: Array.from({ length: n }, () => [size]), requiresGrad: Array.from({ length: n }, () => true),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 },
    entries: Array.from({ length: n }, (_, id) => ({ id, step: 1, m: new Float32Array(size).fill(value), v: new Float32Array(size).fill(1) })),
  });
}

test('18.7: with 2 workers, a file renamed over the path mid-run: every thread reads the one file opened', async () => {
  const p = file('latest.ckpt', await filled(16, 1 << 17, 1));
  const next = await filled(16, 1 << 17, 2);   // a trainer's next save: same layout, other values
  const expected = await inspect(p, { stats: true });
  for (const run of [
    (onProgress) => inspect(p, { stats: true, workers: 2, onProgress }),
    (onProgress) => health(p, null, { workers: 2, onProgress }),
  ]) {
    fs.writeFileSync(p, await filled(16, 1 << 17, 1));
    let saved = false;
    const result = await run(() => {
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
