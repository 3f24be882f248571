// The passes `ckptscope view`'s server runs for its page (web/server.js /passes/,
// web/pass-worker.js), as a client meets them: JSON lines of progress, then the statistics as
// the core's packed words (attached to another open handle they give the CLI's report) or the
// health JSON (the CLI's); only the files handed in, only with `passes`; a page that goes away
// ends the pass; bad input answers in the API's own words.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '../../web/server.js';
import { saveCheckpoint, saveState, open } from '../../js/index.js';
import { attachPacked } from '../../js/checkpoint.js';
import { writeSparse } from './sparse.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-passes-'));
const opt = path.join(tmp, 'opt.ckpt'), state = path.join(tmp, 'opt.tlsf'), broken = path.join(tmp, 'broken.ckpt'), big = path.join(tmp, 'big.ckpt');
let server, plain;

before(async () => {
  const shapes = [[40, 50], [7], [40, 50]];
  const n = (s) => s.reduce((a, b) => a * b, 1);
  const wave = (k, i, scale) => Math.sin(k * 0.37 + i) * scale;
  await saveCheckpoint(opt, { shapes, requiresGrad: [true, true, true], representatives: [0, 1, 0],
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 },
    entries: [0, 1].map((id) => ({ id, step: 12, m: Float32Array.from({ length: n(shapes[id]) }, (_, k) => wave(k, id, 1e-3)),
      v: Float32Array.from({ length: n(shapes[id]) }, (_, k) => 1e-6 + Math.abs(wave(k, id, 1e-6))) })) });
  const theta = shapes.map((s, i) => Float32Array.from({ length: n(s) }, (_, k) => wave(k, i, 0.5)));
  theta[2] = Float32Array.from({ length: n(shapes[2]) }, (_, k) => theta[0][k]);   // tied to slot 0: the same values
  await saveState(state, { family: 'TLSF32B', shapes, values: theta });
  fs.writeFileSync(broken, fs.readFileSync(opt).subarray(0, 300));
  writeSparse(big, { slots: 16, elements: 64 << 20 });   // 8 GiB of holes: a pass of seconds
  server = await serve({ port: 0, quiet: true, files: [opt, state, broken, big], passes: true });
  plain = await serve({ port: 0, quiet: true, files: [opt] });
});

after(async () => {
  for (const s of [server, plain]) await new Promise((resolve) => s?.close(resolve));
  fs.rmSync(tmp, { recursive: true, force: true });
});

const urlOf = (s, file) => s.files.find((f) => f.path === file).url;
const passUrl = (s, kind, file, query = '') => `${s.origin}/passes/${kind}${urlOf(s, file).slice('/files'.length)}${query}`;

/** The JSON lines of a pass, in order. */
async function lines(url) {
  const r = await fetch(url);
  assert.equal(r.status, 200, url);
  assert.equal(r.headers.get('content-type'), 'application/x-ndjson; charset=utf-8');
  assert.equal(r.headers.get('content-security-policy')?.startsWith("default-src 'self'"), true);
  return (await r.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

function cliJson(args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
  return JSON.parse(r.stdout);
}

test('statistics: packed words that, attached to another open handle, give the CLI\'s report', async () => {
  for (const file of [opt, state]) {
    const got = await lines(passUrl(server, 'stats', file));
    assert.deepEqual(got.at(-1), { done: { workers: 1 } });
    const packed = got.filter((m) => m.packed).map((m) => m.packed);
    assert.ok(packed.length > 0);
    const ck = await open(file);
    try {
      for (const { from, words } of packed) attachPacked(ck, from, words.map((w) => new BigUint64Array(Uint8Array.from(Buffer.from(w, 'base64')).buffer)));
      assert.deepEqual(JSON.parse(ck.reportText()), cliJson(['inspect', file, '--stats', '--json']));
    } finally {
      ck.close();
    }
  }
});

test('health: the CLI\'s JSON, with the state file, lr and ratio band given', async () => {
  const got = await lines(passUrl(server, 'health', opt, `?state=${encodeURIComponent(urlOf(server, state))}&lr=1e-3&band=1e-6,1e-3`));
  const last = got.at(-1);
  assert.deepEqual(last.done, { workers: 1 });
  assert.deepEqual(last.result, cliJson(['health', opt, '--state', state, '--lr', '1e-3', '--ratio-band', '1e-6,1e-3', '--json']));
  const alone = (await lines(passUrl(server, 'health', opt))).at(-1);
  assert.deepEqual(alone.result, cliJson(['health', opt, '--json']));
});

test('bad input is answered in the API\'s words; an invalid file is left to the page', async () => {
  assert.deepEqual((await lines(passUrl(server, 'health', opt, '?lr=abc'))).at(-1),
    { error: { name: 'RangeError', message: 'lr must be a positive finite number, got NaN', code: null, offset: null } });
  assert.deepEqual((await lines(passUrl(server, 'health', opt, '?lr=1e-3&band=1e-3'))).at(-1),
    { error: { name: 'TypeError', message: 'ratioBand must be [low, high], two numbers, got [0.001]', code: null, offset: null } });
  assert.deepEqual(await lines(passUrl(server, 'stats', broken)), [{ unsplit: true }]);
});

test('only the files handed in, only these passes, only with `passes`', async () => {
  const token = urlOf(server, opt).split('/')[2];
  for (const target of [
    `/passes/export${urlOf(server, opt).slice('/files'.length)}`,
    `/passes/stats/${'0'.repeat(32)}/opt.ckpt`,
    `/passes/stats/${token}/other.ckpt`,
    `/passes/stats/${token}`,
    '/passes/',
    `/passes/health${urlOf(server, opt).slice('/files'.length)}?state=/etc/passwd`,
    `/passes/health${urlOf(server, opt).slice('/files'.length)}?state=${encodeURIComponent(`/files/${'0'.repeat(32)}/opt.tlsf`)}`,
  ]) {
    const r = await fetch(server.origin + target);
    assert.equal(r.status, 404, target);
    await r.arrayBuffer();
  }
  const r = await fetch(passUrl(plain, 'stats', opt));
  assert.equal(r.status, 404, 'a server without passes (serve) runs none');
  await r.arrayBuffer();
});

test('a page that goes away ends the pass on the server', async () => {
  const url = new URL(passUrl(server, 'stats', big));
  await new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      assert.equal(res.statusCode, 200);
      res.once('data', () => req.destroy());   // the first progress line: the pass runs; go away
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.on('close', resolve);
    req.setTimeout(30000, () => reject(new Error('no progress from the pass')));
  });
  for (const end = Date.now() + 20000; server.passesRunning > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  assert.equal(server.passesRunning, 0);
  assert.deepEqual(server.passLog.at(-1), { kind: 'stats', ended: 'cancelled' });
});

test('at most 4 passes at once: a fifth is answered 503, and runs once one has ended', async () => {
  const url = new URL(passUrl(server, 'stats', big));
  const started = [];
  for (let k = 0; k < 4; k++) {
    started.push(await new Promise((resolve, reject) => {
      const req = http.get(url, (res) => {
        assert.equal(res.statusCode, 200);
        res.once('data', () => resolve(req));
        res.on('error', () => {});
      });
      req.on('error', reject);
    }));
  }
  assert.equal(server.passesRunning, 4);
  const refused = await fetch(url);
  assert.equal(refused.status, 503);
  assert.equal(await refused.text(), '4 passes run already: try again when one has ended\n');
  for (const req of started) req.destroy();
  for (const end = Date.now() + 20000; server.passesRunning > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  assert.equal(server.passesRunning, 0);
  const r = await fetch(passUrl(server, 'stats', opt));
  assert.equal(r.status, 200);
  await r.text();
});
