// `ckptscope view` runs the viewer's long passes on its own machine (js/server/server.js /passes/,
// js/server/pass-worker.js): the statistics of every entry and tensor and the health pass come from
// the package in Node with the workers that pay, not from the page reading every byte through
// the browser. The results are the CLI's, bit for bit; no payload byte crosses the network;
// Cancel ends the pass on the server; a viewer without passes (`serve`) reads the files itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { saveCheckpoint, saveState, open, pair } from '../../js/index.js';
import { writeSparse } from '../js/sparse.mjs';
import { startViewer, countServed, until, lcgValues as values } from './browser.mjs';
import { viewerUrl } from '../../js/server/server.js';

const cli = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-passes-'));
const opt = path.join(tmp, 'run.ckpt');
const state = path.join(tmp, 'run.tlsf');
const big = path.join(tmp, 'big.ckpt');
let viewer, plain, busy;
const sent = new Map();   // URL path -> {bytes, requests}

before(async () => {
  // a tie (slot 3 shares slot 0's storage), a NaN, a negative second moment
  const shapes = [[300, 1000], [5], [1000, 200], [300, 1000], [1000]];
  const count = (s) => s.reduce((a, b) => a * b, 1);
  const owners = [0, 1, 2, 4];
  const entries = owners.map((i) => {
    const m = values(count(shapes[i]), 1 + i, 0.01), v = values(count(shapes[i]), 100 + i, 1e-4).map(Math.abs);
    if (i === 2) {
      m[12345] = NaN;
      v[777] = -1e-6;
    }
    return { id: i, step: 40, m, v };
  });
  await saveCheckpoint(opt, { shapes, requiresGrad: shapes.map(() => true), representatives: [0, 1, 2, 0, 4],
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 }, entries });
  const theta = shapes.map((s, i) => values(count(s), 1000 + i, 2));
  theta[3] = theta[0];   // tied: the same values
  await saveState(state, { family: 'TLSF32B', shapes, values: theta });
  writeSparse(big, { slots: 16, elements: 64 << 20 });   // 8 GiB of holes: a pass of seconds
  viewer = await startViewer({ files: [opt, state, big], passes: true });
  plain = await startViewer({ files: [opt, state] });
  busy = await startViewer({ files: [opt, state], passes: true, maxPasses: 0 });   // every pass answered 503
  for (const v of [viewer, plain, busy]) countServed(v.server, sent);
});

after(async () => {
  await viewer?.close();
  await plain?.close();
  await busy?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function cliJson(args) {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
  return JSON.parse(r.stdout);
}

/** The pair verdict in Node once the state file's values were read (its statistics attached). */
async function pairAfterScan() {
  const o = await open(opt), s = await open(state, { stats: true });
  try {
    return await pair(o, s);
  } finally {
    o.close();
    s.close();
  }
}

/** The viewer's own worker protocol from the page (web/rpc.js): open both files, compute every
 *  statistic, run health; the open handles' JSON reports then hold the statistics. */
async function passesInPage(page, [optUrl, stateUrl]) {
  return page.evaluate(async ({ optUrl, stateUrl }) => {
    const { RpcClient } = await import('/rpc.js');
    const rpc = new RpcClient('/worker.js');
    try {
      await rpc.request('open', { role: 'a', source: optUrl });
      await rpc.request('open', { role: 'b', source: stateUrl });
      const scans = [await rpc.request('scan', { role: 'a' }), await rpc.request('scan', { role: 'b' })];
      const reports = [JSON.parse(await rpc.request('reportText', { role: 'a' })), JSON.parse(await rpc.request('reportText', { role: 'b' }))];
      const health = await rpc.request('health', { lr: 1e-3, ratioBand: [1e-6, 1e-3], withState: true });
      const pair = await rpc.request('pair');
      return { server: scans.map((s) => s.server ?? null), reports, health, pair };
    } finally {
      rpc.worker.terminate();
    }
  }, { optUrl, stateUrl });
}

/** The page address of the pair alone (the server's address names the big file too: three files are a run). */
const pairUrl = () => viewerUrl(viewer.server.origin, viewer.server.files.slice(0, 2).map((f) => f.url));

test('in a view page, statistics and health run on the server: the CLI\'s results, no payload byte over the network', async () => {
  const page = await viewer.page({ url: pairUrl() });
  await page.waitForSelector('[data-testid=pair-verdict]');
  await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 60000 });
  const [optUrl, stateUrl] = viewer.server.files.map((f) => f.url);
  sent.clear();
  const got = await passesInPage(page, [optUrl, stateUrl]);
  assert.deepEqual(viewer.server.passLog.slice(-3), [{ kind: 'stats', ended: 'done' }, { kind: 'stats', ended: 'done' }, { kind: 'health', ended: 'done' }]);
  // both scans ran on the server, with the workers `auto` picks for these sizes (one thread)
  assert.deepEqual(got.server, [{ workers: 1 }, { workers: 1 }]);
  assert.deepEqual(got.reports[0], cliJson(['inspect', opt, '--stats', '--json']));
  assert.deepEqual(got.reports[1], cliJson(['inspect', state, '--stats', '--json']));
  const { server, ...health } = got.health;
  assert.deepEqual(server, { workers: 1 });
  assert.deepEqual(health, cliJson(['health', opt, '--state', state, '--lr', '1e-3', '--ratio-band', '1e-6,1e-3', '--json']));
  assert.ok(health.flags.some((f) => f.flag === 'momentsNonFinite'), 'the NaN is flagged');
  // the state file's statistics are attached to the page's handle: the pair verdict warns of the
  // values read, as after a scan in the page
  assert.deepEqual(got.pair, await pairAfterScan());
  // What crossed the network: the opens' headers (under 64 KiB a file), and the values of the
  // tied tensors 0 and 3 (300,000 float32 each) that the page's pair verdict reads; never the
  // other payloads (2.4 MB of moments, 2.4 MB of parameters)
  const headers = 64 * 1024, tied = 2 * 300_000 * 4;
  assert.ok(sent.get(optUrl).bytes < headers, `${optUrl}: ${sent.get(optUrl).bytes} bytes transferred`);
  assert.ok(sent.get(stateUrl).bytes < headers + tied, `${stateUrl}: ${sent.get(stateUrl).bytes} bytes transferred`);
  assert.ok(fs.statSync(opt).size > 4 * headers && fs.statSync(state).size > headers + tied + 4 * headers);
  await page.context().close();
});

test('the Scan button and the health card say where the pass ran', async () => {
  const page = await viewer.page({ url: pairUrl() });
  await page.waitForSelector('[data-testid=pair-verdict]');
  await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 60000 });
  // each pass done (its result names its duration), then its whole text: the duration is its one variable part
  await page.click('[data-testid=scan]');
  await page.waitForFunction(() => /^Statistics for .* in \d+ ms/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
  assert.match(await page.textContent('#status'), /^Statistics for 4 entries in \d+ ms, computed by ckptscope view on this machine \(1 thread\)\.$/);
  await page.click('[data-testid=health-run]');
  await page.waitForFunction(() => /^\d+ slots in \d+ ms/.test(document.querySelector('[data-testid=health-state]')?.textContent ?? ''), null, { timeout: 60000 });
  assert.match(await page.textContent('[data-testid=health-state]'), new RegExp('^5 slots in \\d+ ms, computed by ckptscope view on this machine \\(1 thread\\): 3 slots flagged\\. ' +
    'The chart shows the rms of the next step per unit learning rate, rms\\(u\\) \\(log scale\\); enter the learning rate to see the update-to-weight ratio\\.$'));
  await page.context().close();
});

test('Cancel ends the pass on the server', async () => {
  const page = await viewer.page({ url: `${viewer.origin}/#open=${encodeURIComponent(viewer.server.files[2].url)}` });
  await page.waitForSelector('[data-testid=scan]');
  await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 60000 });
  await page.click('[data-testid=scan]');
  await until(() => viewer.server.passesRunning === 1, 'the pass runs on the server');
  await page.click('#cancel-scan');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Statistics scan cancelled: statistics are not computed.');
  await until(() => viewer.server.passesRunning === 0, 'the pass on the server ended');
  assert.deepEqual(viewer.server.passLog.at(-1), { kind: 'stats', ended: 'cancelled' });
  await page.context().close();
});

for (const [what, which] of [['a viewer without passes (`serve`)', () => plain], ['a view whose server runs as many passes as it will (503)', () => busy]]) {
  test(`${what}: the page reads the files itself, with the same results`, async () => {
    const plain = which();
    const page = await plain.page({ url: plain.server.viewerUrl });
    await page.waitForSelector('[data-testid=pair-verdict]');
    await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 60000 });
    sent.clear();
    const got = await passesInPage(page, plain.server.files.map((f) => f.url));
    assert.deepEqual(got.server, [null, null]);
    assert.equal(got.health.server, undefined);
    assert.equal(plain.server.passLog.length, 0, 'no pass ran on the server');
    // the page's own scan attaches what it computed too: the same reports
    assert.deepEqual(got.reports[0], cliJson(['inspect', opt, '--stats', '--json']));
    assert.deepEqual(got.reports[1], cliJson(['inspect', state, '--stats', '--json']));
    assert.deepEqual(got.health, cliJson(['health', opt, '--state', state, '--lr', '1e-3', '--ratio-band', '1e-6,1e-3', '--json']));
    assert.deepEqual(got.pair, await pairAfterScan());
    const transferred = [...sent.values()].reduce((n, t) => n + t.bytes, 0);
    assert.ok(transferred > fs.statSync(opt).size, `the page read the payloads itself (${transferred} bytes)`);
    await page.context().close();
  });
}
