// Shared set-up for the browser tests: Debian's Chromium through playwright-core, a fresh
// profile, the viewer served on a free loopback port, every request recorded.
import { before, after } from 'node:test';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../js/server/server.js';

export const ARTIFACTS = path.resolve(new URL('../../test-artifacts', import.meta.url).pathname);
const CLI = new URL('../../js/cli.js', import.meta.url).pathname;

export async function startViewer({ files = [], passes = false, maxPasses } = {}) {
  const server = await serve({ port: 0, quiet: true, files, passes, maxPasses });
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],   // playwright gives each launch a fresh profile
  });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  return {
    origin,
    browser,
    server,
    /** A fresh page at `url` (the viewer's root by default) once the examples are there. */
    async page({ colorScheme = 'light', width = 1280, height = 900, url = `${origin}/`, acceptDownloads = false } = {}) {
      const context = await browser.newContext({ viewport: { width, height }, colorScheme, acceptDownloads });
      // A save dialog has no automation: exports go the other way the viewer has, a download
      // streamed by its service worker (web/parts/save-stream.js), which tests can read.
      await context.addInitScript(() => delete window.showSaveFilePicker);
      const page = await context.newPage();
      page.requests = [];
      page.consoleErrors = [];
      context.on('request', (r) => page.requests.push(r.url()));
      page.on('console', (m) => m.type() === 'error' && page.consoleErrors.push(m.text()));
      page.on('pageerror', (e) => page.consoleErrors.push(String(e)));
      await page.goto(url);
      await page.waitForSelector('#examples button', { state: 'attached' });
      return page;
    },
    async close() {
      await browser.close();
      await new Promise((r) => server.close(r));
    },
  };
}

/** For a test file: a temporary folder named from `prefix`, made now so that the file may fill it
 *  as it loads, and one viewer its tests share, started before them; after them the viewer is
 *  closed and the folder removed. `viewer.page()` is the started viewer's page(). */
export function viewerAndFolder(prefix) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let started;
  before(async () => {
    started = await startViewer();
  });
  after(async () => {
    await started?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  return { tmp, viewer: { page: (options) => started.page(options) } };
}

/** `ckptscope view ARGS --no-open --port 0` run in the folder `cwd`: the page URL it prints, and
 *  the process to stop. */
export async function viewFromCli(cwd, ...args) {
  const child = spawn(process.execPath, [CLI, 'view', ...args, '--no-open', '--port', '0'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let outText = '', errText = '';
  child.stderr.on('data', (d) => (errText += d));
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      outText += d;
      if (outText.includes('\n')) resolve(outText.split('\n')[0]);
    });
    child.on('exit', (code) => reject(new Error(`view exited ${code}: ${errText}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/** Drop bytes on the page as a File, the way a user's drag and drop arrives. */
export async function dropBytes(page, bytes, name, selector = '#dropzone') {
  await page.evaluate(({ data, name, selector }) => {
    const file = new File([new Uint8Array(data)], name);
    const dt = new DataTransfer();
    dt.items.add(file);
    const target = document.querySelector(selector);
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
  }, { data: Array.from(bytes), name, selector });
}

export async function shot(page, name, { fullPage = true, idle = true } = {}) {
  // The worker idle (no request pending: a view that changes the page's height during a
  // full-page capture stalls it), then two frames: the views drawn after the last change.
  if (idle) await page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 20000 }).catch(() => {});
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  // Screenshots are for people to look at, not assertions: a full-page capture that stalls (headless
  // Chromium does, now and then, after a sideways scroll or under load) falls back to the viewport.
  const file = path.join(ARTIFACTS, `${name}.png`);
  try {
    await page.screenshot({ path: file, fullPage, timeout: 10000 });
  } catch (err) {
    if (err.name !== 'TimeoutError') throw err;
    try {
      if (fullPage) await page.screenshot({ path: file, timeout: 10000 });
      else throw err;
    } catch (again) {
      if (again.name !== 'TimeoutError') throw again;
      // Said, not failed: what the test asserts was asserted before the picture.
      process.stderr.write(`screenshot ${name} not taken: the capture stalled twice\n`);
    }
  }
}

/** Drop several files at once (an optimizer checkpoint and its model-state file). */
export async function dropFiles(page, files, selector = '#dropzone') {
  await page.evaluate(({ files, selector }) => {
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(new File([new Uint8Array(f.data)], f.name));
    const target = document.querySelector(selector);
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
  }, { files: files.map((f) => ({ data: Array.from(f.bytes), name: f.name })), selector });
}

/** Open a built-in example from the Examples menu. */
export async function openExample(page, name) {
  await page.click('#examples-menu summary');
  await page.click(`[data-example="${name}"]`);
}

/** Where a test's screenshots of a state go: `${name}-${width}.png`. */
export async function shotAt(page, name, options) {
  const { width } = page.viewportSize();
  await shot(page, `${name}-${width}`, options);
}

/** Count, per URL path, the body bytes `server` writes for /files/ and its requests, into
 *  `sent` (a Map: path -> {bytes, requests}): the counting server the viewer's byte counts are
 *  checked against. A response cut short (a cancelled range) counts what was written. */
export function countServed(server, sent) {
  server.prependListener('request', (req, res) => {
    if (req.method !== 'GET' || !req.url.startsWith('/files/')) return;
    let body = 0;   // the body's bytes as written to the socket
    const { write, end } = res;
    res.write = function (chunk, ...rest) {
      body += chunk.length;
      return write.call(this, chunk, ...rest);
    };
    res.end = function (chunk, ...rest) {
      if (chunk && typeof chunk !== 'function') body += chunk.length;
      return end.call(this, chunk, ...rest);
    };
    res.on('close', () => {
      const t = sent.get(req.url) ?? { bytes: 0, requests: 0 };
      t.bytes += body;
      t.requests++;
      sent.set(req.url, t);
    });
  });
}

/** Wait until `ok()` holds (a state of the test's own process: a server's counts, its passes),
 *  checking it again as the event loop turns; fail naming `what` if it never does. */
export async function until(ok, what, ms = 20000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** n float32 values in [-scale/2, scale/2) that are not all alike, from a seeded LCG. */
export function lcgValues(n, seed, scale) {
  const out = new Float32Array(n);
  let x = seed >>> 0;
  for (let k = 0; k < n; k++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[k] = ((x / 2 ** 32) - 0.5) * scale;
  }
  return out;
}

/** Drop the folder `dir` as Chromium gives a dropped folder: a DataTransfer whose item is a
 *  directory entry (webkitGetAsEntry), read with createReader().readEntries() in batches and
 *  file(); the entries are made on the page from the folder's files (a test cannot drag from
 *  the desktop). */
export async function dropFolder(page, dir) {
  const tree = (d) => fs.readdirSync(d, { withFileTypes: true }).map((e) => (e.isDirectory()
    ? { name: e.name, entries: tree(path.join(d, e.name)) }
    : { name: e.name, data: Array.from(fs.readFileSync(path.join(d, e.name))) }));
  await page.evaluate((root) => {
    const entry = (node) => (node.entries
      ? { isFile: false, isDirectory: true, name: node.name, createReader: () => {
        const batches = [node.entries.slice(0, 1).map(entry), node.entries.slice(1).map(entry), []];
        return { readEntries: (ok) => setTimeout(() => ok(batches.shift())) };
      } }
      : { isFile: true, isDirectory: false, name: node.name, file: (ok) => setTimeout(() => ok(new File([new Uint8Array(node.data)], node.name))) });
    const dt = { items: [{ webkitGetAsEntry: () => entry(root) }], files: [new File([], root.name)] };
    const target = document.querySelector('#dropzone');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      const ev = new Event(type, { bubbles: true, cancelable: true });
      Object.defineProperty(ev, 'dataTransfer', { value: dt });
      target.dispatchEvent(ev);
    }
  }, { name: path.basename(dir), entries: tree(dir) });
}
