// The viewer's byte counts: the bytes the viewer says it transferred are the bytes the
// server sent. A counting server (the viewer's own, its answers to /files/ tallied)
// serves large sparse files, counting the body bytes it writes; the header's "N bytes transferred over HTTP in K range requests" is
// compared with the tally exactly, the JSON sniff (what a file is, before it opens) included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, countServed } from './browser.mjs';
import { writeSparse, writeSparseState } from '../js/sparse.mjs';
import { bytes as sizeText, count } from '../../web/format.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-bytes-'));
const opt = path.join(tmp, 'big.ckpt');
const state = path.join(tmp, 'big.tlsf');
let viewer;
const sent = new Map();   // URL path -> {bytes, requests}

before(async () => {
  writeSparse(opt, { slots: 7, elements: 2 ** 28 });        // 15 GB of holes
  writeSparseState(state, { tensors: 7, elements: 2 ** 28 });   // 7.5 GB
  viewer = await startViewer({ files: [opt, state] });
  countServed(viewer.server, sent);
});

after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const shown = async (page, testid) => {
  const m = /([\d,]+) bytes transferred over HTTP in (\d+) range requests?$/.exec(await page.textContent(`[data-testid=${testid}]`));
  assert.ok(m, `the header says what it transferred: ${await page.textContent(`[data-testid=${testid}]`)}`);
  return { bytes: Number(m[1].replaceAll(',', '')), requests: Number(m[2]) };
};

const idle = (page) => page.waitForFunction(() => document.documentElement.dataset.pending === '0');

for (const [which, files] of [['an optimizer file', [0]], ['a model-state file', [1]]]) {
  test(`${which} opened from the address: the bytes and requests shown are the server's`, async () => {
    sent.clear();
    const { url } = viewer.server.files[files[0]];
    const page = await viewer.page({ url: `${viewer.server.origin}/#open=${encodeURIComponent(url)}` });
    await page.waitForSelector('[data-testid=io]');
    await idle(page);
    const got = await shown(page, 'io');
    assert.deepEqual(got, sent.get(url), 'what the header says is what the server sent');
    assert.ok(got.bytes < 64 * 1024 + 64 * 7 * 2, `headers only: ${got.bytes} bytes`);
    await page.context().close();
  });
}

test('an optimizer file and its state file opened together: each header\'s count is what the server sent for that file', async () => {
  sent.clear();
  const page = await viewer.page({ url: viewer.server.viewerUrl });
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  await idle(page);
  const [a, b] = viewer.server.files.map((f) => f.url);
  assert.deepEqual(await shown(page, 'io'), sent.get(a));
  assert.deepEqual(await shown(page, 'io-b'), sent.get(b));
  await page.context().close();
});

/** Count what the viewer's worker reads from Files: FileReaderSync's answers, summed in the worker. */
async function countFileReads(page) {
  const worker = page.workers().find((w) => w.url().endsWith('/worker.js'));
  assert.ok(worker, 'the viewer\'s worker runs');
  await worker.evaluate(() => {
    const read = FileReaderSync.prototype.readAsArrayBuffer;
    self.bytesCounted = 0;
    self.callsCounted = 0;
    FileReaderSync.prototype.readAsArrayBuffer = function (blob) {
      const out = read.call(this, blob);
      self.bytesCounted += out.byteLength;
      self.callsCounted++;
      return out;
    };
  });
  return () => worker.evaluate(() => ({ bytes: self.bytesCounted, calls: self.callsCounted }));
}

for (const [which, k] of [['an optimizer file', 0], ['a model-state file', 1]]) {
  test(`${which} dropped: the bytes shown are the bytes read, the JSON sniff's page read once`, async () => {
    const page = await viewer.page();
    const counted = await countFileReads(page);
    await page.setInputFiles('[data-testid=file-input]', [opt, state][k]);   // the file by path: read from disk
    await page.waitForSelector('[data-testid=io]');
    await idle(page);
    const shownBytes = Number(await page.getAttribute('#summary', 'data-bytes-read'));
    const { bytes, calls } = await counted();
    assert.equal(shownBytes, bytes, 'what the header says is what FileReaderSync returned');
    // The sniff (what the file is) reads the first page, which holds the preamble and the
    // schema of these 7 slots; the open reads through the same source: that page once, then
    // each record's header alone.
    assert.ok(bytes < 4096 + 64 * 7 * 2, `headers only, the first page once: ${bytes} bytes in ${calls} reads`);
    await page.context().close();
  });
}
// The count is not the one taken at open. A health pass, an export and statistics
// (Compute all statistics) read payloads; after each, the header says what was sent so far.
test('after a health pass, an export and statistics, the header\'s count is still what the server sent', async () => {
  const small = path.join(tmp, 'small.ckpt');
  // 16 MiB of moments and a little more, read whole by each pass: past the health card's
  // AUTO_ELEMENTS (2 Mi), so nothing reads a payload before the test asks
  const elements = 2 ** 20 + 1024;
  writeSparse(small, { slots: 2, elements });
  const own = await startViewer({ files: [small] });   // a server of this file alone (viewerUrl opens every file served)
  try {
    sent.clear();
    countServed(own.server, sent);
    const { url } = own.server.files[0];
    const page = await own.page({ url: own.server.viewerUrl, acceptDownloads: true });
    await page.waitForSelector('[data-testid=io]');
    await idle(page);
    const opened = await shown(page, 'io');
    assert.deepEqual(opened, sent.get(url), 'at open');
    assert.ok(opened.bytes < 64 * 1024, `the headers only at open: ${opened.bytes} bytes`);
    // each pass: the header's figure is the server's tally; the passes share what the worker
    // has read (its range cache), so only the total is known to grow by at least one payload
    const payload = 2 * 2 * 4 * elements;
    const after = async (what) => {
      await idle(page);
      const got = await shown(page, 'io');
      assert.deepEqual(got, sent.get(url), `after ${what}: what the header says is what the server sent`);
      assert.equal(Number(await page.getAttribute('[data-testid=summary]', 'data-bytes-transferred')), got.bytes);
      console.log(`# after ${what}: ${got.bytes} bytes in ${got.requests} requests`);
      return got;
    };
    await page.click('[data-testid=health-run]');
    await page.waitForFunction(() => !/^(Not run yet|Running)/.test(document.querySelector('[data-testid=health-state]').textContent), null, { timeout: 120000 });
    assert.match(await page.textContent('[data-testid=health-state]'), new RegExp('^2 slots in \\d+ ms: no slot flagged\\. The chart shows the rms of the next step per unit learning rate, ' +
      'rms\\(u\\) \\(log scale\\); add the model-state file and the learning rate to see the update-to-weight ratio\\.$'));
    const health = await after('a health pass');
    // (the open's first page holds the first payload's first bytes: kept, not read again)
    assert.ok(health.bytes >= opened.bytes + payload - 4096, `the health pass read the payloads: ${opened.bytes} -> ${health.bytes} bytes`);
    // each payload byte once: m's growing reads stop where v's began
    assert.ok(health.bytes - opened.bytes <= payload + 64 * 1024, `the health pass read each payload byte once: ${health.bytes - opened.bytes} bytes for ${payload}`);
    const download = page.waitForEvent('download', { timeout: 60000 });
    await page.click('#export-menu summary');
    await page.click('[data-testid=export-safetensors]');
    const saved = fs.statSync(await (await download).path()).size;   // the whole download
    await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Exported small.ckpt'), null, { timeout: 120000 });
    assert.equal(await page.textContent('#status'), `Exported small.ckpt as safetensors (${saved.toLocaleString('en-US')} bytes, streamed to a download).`);
    await after('an export');
    await page.click('[data-testid=scan]');
    await page.waitForFunction(() => /^Statistics for 2 entries in \d+ ms\.$/.test(document.getElementById('status').textContent), null, { timeout: 120000 });
    await after('statistics');
    // those passes' ranges came through the read feed (js/feed.js: streamed requests, counted
    // as they arrive); tests/browser/feed.test.mjs has the synchronous path
    assert.ok(page.workers().some((w) => w.url().endsWith('/js/feed-worker.js')), 'the feed read the ranges');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    await own.close();
  }
});

// Passes over a dropped file read payloads again (the health pass, then statistics): past the
// file's size the header says the total read, counted apart (FileReaderSync's answers), and the
// file's size beside it, never "more of than the file holds".
test('a dropped file read past its size by passes: the total read, exactly, and the file\'s size apart', async () => {
  const small = path.join(tmp, 'dropped.ckpt');
  writeSparse(small, { slots: 2, elements: 2 ** 20 + 1024 });
  const size = fs.statSync(small).size;
  const page = await viewer.page();
  const counted = await countFileReads(page);
  await page.setInputFiles('[data-testid=file-input]', small);
  await page.waitForSelector('[data-testid=io]');
  await idle(page);
  await page.click('[data-testid=health-run]');
  await page.waitForFunction(() => !/^(Not run yet|Running)/.test(document.querySelector('[data-testid=health-state]').textContent), null, { timeout: 120000 });
  await idle(page);
  await page.click('[data-testid=scan]');
  await page.waitForFunction(() => /^Statistics for 2 entries in \d+ ms\.$/.test(document.getElementById('status').textContent), null, { timeout: 120000 });
  await idle(page);
  const { bytes } = await counted();
  assert.ok(bytes > size, `the passes read more than the file holds: ${bytes} of ${size}`);
  const times = (bytes / size).toFixed(1);
  assert.equal(await page.textContent('[data-testid=io]'),
    `${sizeText(size)}; ${count(bytes)} bytes read in all, ${times} times the file's ${count(size)} (each pass reads what it needs again)`);
  assert.equal(Number(await page.getAttribute('#summary', 'data-bytes-read')), bytes);
  await page.context().close();
});
