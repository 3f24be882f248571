// Issue 18 ("what a new user and an attacker meet: round 3"): the API and server points, one
// test each (the CLI's are in cli-hardening.test.mjs, view's in view.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect, health, CheckpointError } from '../../js/index.js';
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
