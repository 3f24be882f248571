// Over HTTP the viewer's worker reads through the read feed (js/feed.js: streamed
// range requests in a worker of their own, into shared memory) when the page is cross-origin
// isolated, and by synchronous requests when it is not (a viewer hosted without the headers).
// Either way the statistics and the health pass are the CLI's, bit for bit, and the bytes and
// requests the source counts are what the server sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { saveCheckpoint, saveState } from '../../js/index.js';
import { startViewer, countServed, until, lcgValues as values } from './browser.mjs';

const cli = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-feed-'));
const opt = path.join(tmp, 'run.ckpt');
const state = path.join(tmp, 'run.tlsf');
let isolated, plain;
const sent = new Map();   // URL path -> {bytes, requests}

before(async () => {
  // 41 MiB of moments: ranges that grow to several MiB, several in flight for the health pass
  const shapes = [[2_000_000], [5], [3000, 1000], [1000]];
  const count = (s) => s.reduce((a, b) => a * b, 1);
  const entries = shapes.map((s, i) => {
    const m = values(count(s), 1 + i, 0.01), v = values(count(s), 100 + i, 1e-4).map(Math.abs);
    if (i === 2) {
      m[12345] = NaN;
      v[777] = -1e-6;
    }
    return { id: i, step: 40, m, v };
  });
  await saveCheckpoint(opt, { shapes, requiresGrad: shapes.map(() => true), config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, entries });
  await saveState(state, { family: 'TLSF32B', shapes, values: shapes.map((s, i) => values(count(s), 1000 + i, 2)) });
  isolated = await startViewer({ files: [opt, state] });
  plain = await startViewer({ files: [opt, state] });
  for (const v of [isolated, plain]) countServed(v.server, sent);
  // a viewer hosted without the isolation headers: no shared memory, so no feed
  plain.server.prependListener('request', (req, res) => {
    const { writeHead } = res;
    res.writeHead = function (status, headers = {}) {
      const rest = { ...headers };
      delete rest['Cross-Origin-Opener-Policy'];
      delete rest['Cross-Origin-Embedder-Policy'];
      return writeHead.call(this, status, rest);
    };
  });
});

after(async () => {
  await isolated?.close();
  await plain?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** JSON with the values JSON has no words for (bigints, NaN, infinities) spelled out. */
const exact = (x) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));

function cliJson(args) {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
  return JSON.parse(r.stdout);
}

for (const [how, which] of [['through the feed (a cross-origin-isolated page)', 'isolated'], ['by synchronous requests (a page without the isolation headers)', 'plain']]) {
  test(`over HTTP ${how}: statistics and health are the CLI's, the counts the server's`, async () => {
    const viewer = which === 'isolated' ? isolated : plain;
    const page = await viewer.page({ url: viewer.server.viewerUrl });
    await page.waitForSelector('[data-testid=pair-verdict].loads');
    await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 60000 });
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), which === 'isolated');
    const worker = page.workers().find((w) => w.url().endsWith('/worker.js'));
    assert.ok(worker, 'the viewer\'s worker runs');
    sent.clear();
    const [optUrl, stateUrl] = viewer.server.files.map((f) => f.url);
    // The package in the viewer's worker (the same module instances the viewer uses): each file
    // by its own counted source, statistics of every entry and tensor, then the health pass.
    const got = await worker.evaluate(async ({ optUrl, stateUrl }) => {
      const { open, health, HttpSource } = await import('/js/index.js');
      const { Feed } = await import('/js/plumbing.js');
      const feed = await Feed.start();
      const src = (url) => HttpSource.open(new URL(url, location.href).href, { feed });
      const exact = (x) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
      const a = src(optUrl), b = src(stateUrl);
      const o = await open(a, { stats: true }), s = await open(b, { stats: true });
      const stats = [o.reportText(), s.reportText()];
      o.close();
      s.close();
      const c = src(optUrl), d = src(stateUrl);
      const h = exact(await health(c, d, { lr: 1e-3 }));
      return {
        reads: [a.reads, b.reads, c.reads, d.reads],
        stats,
        health: h,
        counts: Object.fromEntries([[optUrl, [a, c]], [stateUrl, [b, d]]].map(([url, srcs]) => [url, { bytes: srcs.reduce((n, x) => n + x.bytesTransferred, 0), requests: srcs.reduce((n, x) => n + x.requests, 0) }])),
      };
    }, { optUrl, stateUrl });
    const via = which === 'isolated' ? 'feed' : 'sync';
    assert.deepEqual(got.reads, [via, via, via, via]);
    assert.deepEqual(JSON.parse(got.stats[0]), cliJson(['inspect', opt, '--stats', '--json', '--workers', '1']));
    assert.deepEqual(JSON.parse(got.stats[1]), cliJson(['inspect', state, '--stats', '--json', '--workers', '1']));
    const { health } = await import('../../js/index.js');
    assert.equal(got.health, exact(await health(opt, state, { lr: 1e-3, workers: 1 })), 'the health pass is the one-thread pass in Node');
    assert.deepEqual(JSON.parse(got.health, (_, v) => (v === 'NaN' ? NaN : v)).slots.length, 4);
    // what each source says it transferred is what the server sent (the sources' counts wait
    // for the feed's reads in flight); the server counts a response at its 'close' event, which
    // can come after the page has its answer: wait for as many responses closed as the page made
    for (const url of [optUrl, stateUrl]) {
      await until(() => (sent.get(url)?.requests ?? 0) >= got.counts[url].requests, `${got.counts[url].requests} responses of ${url} closed`);
    }
    assert.deepEqual(got.counts[optUrl], sent.get(optUrl));
    assert.deepEqual(got.counts[stateUrl], sent.get(stateUrl));
    const size = fs.statSync(opt).size;
    assert.ok(got.counts[optUrl].bytes >= 2 * (size - 4096) && got.counts[optUrl].bytes <= 2 * size + 2 * 64 * 1024, `each payload byte once per pass: ${got.counts[optUrl].bytes} for 2 x ${size}`);
    assert.equal(page.workers().some((w) => w.url().endsWith('/js/feed-worker.js')), which === 'isolated', 'the feed\'s worker runs where the page is isolated');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  });
}

test('through the feed, a request that fails is an HttpError naming the URL, as a synchronous one is', async () => {
  const own = await startViewer({ files: [opt] });
  try {
    const page = await own.page({ url: own.server.viewerUrl });
    await page.waitForSelector('[data-testid=io]');
    await page.waitForFunction(() => document.documentElement.dataset.pending === '0');
    const worker = page.workers().find((w) => w.url().endsWith('/worker.js'));
    const href = new URL(own.server.files[0].url, own.origin).href;
    // the source opens (its first request), then the server goes away
    await worker.evaluate(async (href) => {
      const { HttpSource } = await import('/js/index.js');
      const { Feed } = await import('/js/plumbing.js');
      self.feedSource = HttpSource.open(href, { feed: await Feed.start() });
    }, href);
    own.server.closeAllConnections();
    await new Promise((resolve) => own.server.close(resolve));
    const got = await worker.evaluate(() => {
      try {
        self.feedSource.read(1 << 20, new Uint8Array(4096));
        return null;
      } catch (err) {
        return { name: err.name, message: err.message, url: err.url, reads: self.feedSource.reads };
      }
    });
    assert.equal(got?.name, 'HttpError');
    assert.equal(got.url, href);
    assert.equal(got.reads, 'feed');
    assert.match(got.message, new RegExp(`^${href.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the request failed \\(.+\\): is the server still running\\?$`));
    await page.context().close();
  } finally {
    await own.browser.close();
  }
});
