// The documentation's code runs as written: the README's JS snippet (through
// docs/examples/verify.mjs, which runs every console, js, ts and python block of docs/*.md and
// README.md), and docs/README.md's setup line for a checkout, verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the README\'s blocks run as written (verify.mjs ../README.md)', () => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'docs/examples/verify.mjs'), '../README.md'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^2 examples checked, 0 differ$/m);
});

test('docs/README.md\'s setup line for a checkout runs verbatim there, with no ckptscope on the PATH', async () => {
  const line = fs.readFileSync(path.join(ROOT, 'docs/README.md'), 'utf8').split('\n').find((l) => /#\s*in a checkout\s*$/.test(l));
  assert.ok(line, 'the line is there');
  const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-checkout-'));
  try {
    for (const d of ['docs', 'js', 'package.json']) fs.symlinkSync(path.join(ROOT, d), path.join(checkout, d));
    const PATH = ['/usr/local/bin', '/usr/bin', '/bin'].filter((d) => !fs.existsSync(path.join(d, 'ckptscope'))).join(':');
    const node = path.dirname(process.execPath);
    const r = spawnSync('bash', ['-c', line], { cwd: checkout, encoding: 'utf8', env: { PATH: `${node}:${PATH}`, HOME: checkout }, timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    for (const f of ['model.ckpt', 'state.ckpt', 'unhealthy.ckpt', 'unhealthy-state.ckpt']) {
      assert.equal((await inspect(path.join(checkout, f))).ok, true, f);
    }
  } finally {
    fs.rmSync(checkout, { recursive: true, force: true });
  }
});
