// An export streams from the viewer as from the CLI. A > 2 GB sparse file is
// opened in the viewer's page and exported (its service worker answers the download from a
// stream the parsing worker feeds, a few chunks at a time); the download is the CLI's `export` output
// byte for byte (hashed as both stream), and the browser's memory stays bounded meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { startViewer, shotAt } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';

const ELEMENTS = 270_000_000;   // 2 x 4 x 270M: 2.16 GB of moments
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-export-'));
const file = path.join(tmp, 'big.ckpt');
const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
let viewer;

before(async () => {
  writeSparse(file, { slots: 1, elements: ELEMENTS });
  viewer = await startViewer();
});

after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sha256 = async (stream) => {
  const h = crypto.createHash('sha256');
  for await (const chunk of stream) h.update(chunk);
  return h.digest('hex');
};

/** Resident memory of this process's descendants (the browser's processes), in bytes. */
function browserRss() {
  const parent = new Map();
  const rss = new Map();
  for (const pid of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(pid), Number(fields[1]));
      rss.set(Number(pid), Number(fields[21]) * 4096);
    } catch { /* gone */ }
  }
  let total = 0;
  for (const [pid, bytes] of rss) {
    for (let p = parent.get(pid); p; p = parent.get(p)) {
      if (p === process.pid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}

test('a > 2 GB export streams from the viewer: the CLI\'s bytes, memory bounded, progress shown', async () => {
  const cliOut = path.join(tmp, 'cli.safetensors');
  execFileSync(process.execPath, [CLI, 'export', file, cliOut]);
  const size = fs.statSync(cliOut).size;
  assert.ok(size > 2 ** 31, `the export is past 2 GiB (${size} bytes)`);
  const cliHash = await sha256(fs.createReadStream(cliOut));
  fs.rmSync(cliOut);

  const page = await viewer.page({ acceptDownloads: true });
  await page.setInputFiles('[data-testid=file-input]', file);   // the file itself, by path: nothing copied
  assert.equal(await page.evaluate(() => crossOriginIsolated), true, 'the page is cross-origin isolated (COOP + COEP)');
  await page.waitForSelector('#export-menu:not([hidden])');
  const before = browserRss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, browserRss())), 250);
  const wait = page.waitForEvent('download', { timeout: 60000 });
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-safetensors]');
  const download = await wait;
  assert.equal(download.suggestedFilename(), 'big.ckpt.safetensors');
  await page.waitForSelector('[data-testid=export-progress]', { state: 'visible' });
  const got = await sha256(await download.createReadStream());
  clearInterval(sampler);
  assert.equal(got, cliHash, 'the download is the CLI\'s export, byte for byte');
  await page.waitForFunction((n) => document.getElementById('status').textContent.includes(n), `${size.toLocaleString('en-US')} bytes`, { timeout: 20000 });
  assert.match(await page.textContent('#status'), /streamed to a download/);
  const grew = peak - before;
  // the page keeps a few 4 MiB chunks; Chromium's download path buffers more on its own (370 to
  // 420 MiB of the browser's memory seen for this 2.1 GB file): bounded, but not by the page alone
  assert.ok(grew < 640 * 2 ** 20, `memory bounded by a few chunks, not the file: grew ${grew} bytes`);
  await page.context().close();
});

// Once skipped: the first export of a fresh page now and then gave no download event (1 of 12
// runs of this test on the old code; 0 of 18 since, 6 of them with a core kept busy). The page
// posted the download's port to the service worker and at once pointed a frame at /download/{id};
// the two reach the worker by different routes, and when the frame's request came first it got
// "no such download" (404), no download began and the export waited forever. The page now points
// the frame only once the worker says it holds the port, and a step that does not answer fails
// with a message (web/parts/save-stream.js).
test('a streamed export stops on Cancel, and when the download is cancelled; the file stays open', async () => {
  const page = await viewer.page({ acceptDownloads: true, width: 1440 });
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('#export-menu:not([hidden])');
  const exportOnce = async () => {
    const wait = page.waitForEvent('download', { timeout: 60000 });
    await page.click('#export-menu summary');
    await page.click('[data-testid=export-safetensors]');
    const download = await wait;
    await page.waitForSelector('[data-testid=export-cancel]', { state: 'visible' });
    return download;
  };
  const cancelled = 'Export of big.ckpt cancelled.';
  // the viewer's Cancel: the worker stops at its next chunk, the download fails
  let download = await exportOnce();
  await shotAt(page, 'export-progress', { idle: false });
  await page.click('[data-testid=export-cancel]');
  await page.waitForFunction((t) => document.getElementById('status').textContent === t, cancelled);
  assert.ok(await download.failure(), 'the download did not complete');
  assert.equal(await page.locator('[data-testid=export-progress]').isVisible(), false);
  // the browser's cancel of the download stops the export too
  await page.evaluate(() => (document.getElementById('status').textContent = ''));
  await page.setViewportSize({ width: 800, height: 900 });
  download = await exportOnce();
  await shotAt(page, 'export-progress', { idle: false });
  await download.cancel();
  await page.waitForFunction((t) => document.getElementById('status').textContent === t, cancelled);
  // the worker was not replaced: the open file answers at once
  await page.click('[data-testid=param-row][data-index="0"]');
  await page.waitForSelector('#entry-detail');
  await shotAt(page, 'export-cancelled');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

/** The page reloaded with a service worker that never answers (it holds no port and says
 *  nothing), big.ckpt open. */
async function withSilentServiceWorker(page) {
  await page.context().addInitScript(() => {
    const registration = { active: { postMessage() {} } };   // holds no port, says nothing
    Object.defineProperty(ServiceWorkerContainer.prototype, 'ready', { get: () => Promise.resolve(registration) });
    ServiceWorkerContainer.prototype.register = () => Promise.resolve(registration);
  });
  await page.reload();
  await page.waitForSelector('#examples button', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('#export-menu:not([hidden])');
}

// A service worker that never answers (stubbed in the page): the export ends after the 30 s it
// gives the worker, with a message that says what to do, not a progress bar that waits forever.
// The page's clock is the test's (playwright's fake timers): the test moves it on.
test('a service worker that does not answer: the export fails with a message, no wait without end', async () => {
  const page = await viewer.page({ acceptDownloads: true });
  await page.clock.install();
  await withSilentServiceWorker(page);
  let downloads = 0;
  page.on('download', () => downloads++);
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-safetensors]');
  await page.waitForSelector('[data-testid=export-cancel]', { state: 'visible' });
  const status = () => page.textContent('#status');
  await page.clock.runFor(29_000);
  assert.doesNotMatch(await status(), /failed/, 'before its 30 s the export still waits');
  await page.clock.runFor(1_000);
  const said = 'Export failed: the viewer\'s service worker did not answer: reload the page and export again';
  await page.waitForFunction((t) => document.getElementById('status').textContent === t, said, { timeout: 10000 });
  assert.equal(downloads, 0);
  assert.equal(await page.locator('[data-testid=export-progress]').isVisible(), false);
  // the file stays open
  await page.click('[data-testid=param-row][data-index="0"]');
  await page.waitForSelector('#entry-detail');
  await page.context().close();
});

// Cancel works from the click on: while the service worker has not answered yet (stubbed silent
// here), Cancel ends the export as cancelled at once, not 30 s later as failed.
test('Cancel while the service worker has not answered: cancelled, no download, the file stays open', async () => {
  const page = await viewer.page({ acceptDownloads: true });
  await withSilentServiceWorker(page);
  let downloads = 0;
  page.on('download', () => downloads++);
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-safetensors]');
  await page.waitForSelector('[data-testid=export-cancel]', { state: 'visible' });
  await page.click('[data-testid=export-cancel]');
  await page.waitForFunction(() => /cancelled|failed/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
  assert.equal(await page.textContent('#status'), 'Export of big.ckpt cancelled.');
  assert.equal(downloads, 0);
  assert.equal(await page.locator('[data-testid=export-progress]').isVisible(), false);
  await page.click('[data-testid=param-row][data-index="0"]');
  await page.waitForSelector('#entry-detail');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

// A browser stops a service worker that has had no event for a while (Firefox after 30 s), and
// the download's port messages are not its events: while a download runs, the page messages the
// worker every 10 s (web/parts/save-stream.js), and stops when it ends. The page's clock is
// Playwright's, run forward; the worker counts the messages (self.keepAlives, web/sw.js). A
// message reaches the worker after the clock has run, so the count is read once the worker has
// answered a message the test sent after the clock's: one page's messages to one worker are
// handled in order, so every message before it has been counted.
async function keepAlivesCounted(page, worker) {
  await page.evaluate(async () => {
    const { port1, port2 } = new MessageChannel();
    const answered = new Promise((resolve) => (port1.onmessage = resolve));
    (await navigator.serviceWorker.ready).active.postMessage({ type: 'download', id: 'order-probe', name: 'probe' }, [port2]);
    await answered;
    port1.close();
  });
  return worker.evaluate(() => self.keepAlives);
}

test('a streamed export keeps the service worker alive while it runs, and stops doing so when it ends', async () => {
  const page = await viewer.page({ acceptDownloads: true });
  await page.clock.install();
  await page.reload();
  await page.waitForSelector('#examples button', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('#export-menu:not([hidden])');
  const wait = page.waitForEvent('download', { timeout: 60000 });
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-safetensors]');
  const download = await wait;
  const worker = page.context().serviceWorkers().find((w) => w.url().endsWith('/sw.js'));
  assert.ok(worker, 'the viewer\'s service worker runs');
  // the page starts its messages once the download began, before the first chunk's progress
  await page.waitForFunction(() => document.querySelector('[data-testid=export-progress]').hasAttribute('value'));
  const before = await worker.evaluate(() => self.keepAlives);
  await page.clock.runFor(25_000);   // two periods of the page's clock: two messages
  const during = await keepAlivesCounted(page, worker);
  assert.equal(during - before, 2);
  await download.cancel();
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Export of big.ckpt cancelled.');
  await page.clock.runFor(25_000);
  assert.equal(await keepAlivesCounted(page, worker), during, 'no message once the download ended');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
