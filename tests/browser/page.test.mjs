// The page around the cards: the Examples menu (and every menu of the bar in a narrow window),
// plurals in every count, and the header drawn from the report for every family.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, writeState, open, exportTensors, exportNpy } from '../../js/index.js';
import { startViewer, dropBytes, openExample, shot, shotAt } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';
import { config, size, entry, llama, text, waitText } from './fixtures.mjs';

let viewer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-page-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('the page names what it reads: optimizer checkpoints, not one family\'s', async () => {
  const page = await viewer.page();
  assert.equal(await page.title(), 'ckptscope — optimizer checkpoint viewer');
  assert.equal(await text(page, '.bar .tagline'), 'Optimizer checkpoints, inside out');
  await page.context().close();
});

test('the Examples menu closes on an outside click and on Escape', async () => {
  const page = await viewer.page();
  await page.click('#examples-menu summary');
  assert.equal(await page.getAttribute('#examples-menu', 'open'), '');
  await page.mouse.click(30, 700);
  assert.equal(await page.getAttribute('#examples-menu', 'open'), null);
  await page.click('#examples-menu summary');
  await page.keyboard.press('Escape');
  assert.equal(await page.getAttribute('#examples-menu', 'open'), null);
  await page.context().close();
});

test('at 800 px every menu of the top bar opens inside the window, its buttons in view', async () => {
  const page = await viewer.page({ width: 800 });
  await openExample(page, 'pair');   // the Export… menu is there once a file is open
  await page.waitForSelector('#bar-views details.menu');
  for (const menu of ['#examples-menu', '#run-menu', '#bar-views details.menu']) {
    await page.click(`${menu} > summary`);
    const box = await page.locator(`${menu} .menu-body`).evaluate((b) => {
      const r = b.getBoundingClientRect();
      return { left: r.left, right: r.right, width: document.documentElement.clientWidth };
    });
    assert.ok(box.left >= 0 && box.right <= box.width, `${menu}: ${JSON.stringify(box)}`);
    await page.keyboard.press('Escape');
  }
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('plurals: one slot, one entry, one warning', async () => {
  const page = await viewer.page();
  await dropBytes(page, await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] }), 'one.ckpt');
  await waitText(page, '[data-testid=param-count]', '1 slot');
  assert.equal(await text(page, '#entry-count'), '1');
  assert.equal(await text(page, '[data-testid=summary] .badge.warn'), '1 warning');
  await page.context().close();
});

test('the header is drawn from the report for every family (family, name, version, dtype)', async () => {
  const page = await viewer.page();
  const files = [
    ['opt.ckpt', await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] })],
    ['state.tlsf', await writeState({ family: 'TLSF32B', shapes: [[3]], values: [new Float32Array(3).fill(1)] })],
    ['params.tlpf', await writeState({ family: 'TLPF32B', shapes: [[3]], values: [new Float32Array(3).fill(1)] })],
  ];
  for (const [name, bytes] of files) {
    const ck = await open(bytes);
    const s = ck.summary;
    ck.close();
    await dropBytes(page, bytes, name);
    await page.waitForFunction((n) => document.querySelector('[data-testid=summary] .file')?.textContent === n, name);
    const summary = await text(page, '[data-testid=summary]');
    assert.ok(summary.includes(`${s.name} (${s.family})`), `${name}: ${summary}`);
    assert.equal(await text(page, '[data-testid=field-version]'), String(s.version));
    assert.equal(await text(page, '[data-testid=field-dtype]'), s.dtype === undefined || s.dtype === null ? '—' : String(s.dtype), `${name}: the report's dtype`);
  }
  await page.context().close();
});
