// inspect --json of a report too long to indent (a slot of a very high rank): the core's one-line
// stream, never a JS string past its limit ("Invalid string length" as an unexpected error).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeState, inspect } from '../../js/index.js';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-rank-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

test('a tensor of rank 2^21: inspect --json is the report, on one line', async () => {
  const rank = 2 ** 21;
  const file = path.join(tmp, 'rank.tlsf');
  fs.writeFileSync(file, await writeState({ shapes: [new Array(rank).fill(1)], values: [[0.5]] }));
  const r = spawnSync(process.execPath, [CLI, 'inspect', file, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n').length, 2);   // one line and its newline
  const report = JSON.parse(r.stdout);
  assert.equal(report.tensors[0].shape.length, rank);
  assert.deepEqual(report, JSON.parse(JSON.stringify(await inspect(file))));
});
