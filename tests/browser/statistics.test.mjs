// Statistics in the viewer: what does not exist yet is never counted (the health card computes
// the statistics it needs, with progress and Cancel), one number format per column, and an
// entry's own statistics with the core's progress.
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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-statistics-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('"NaN / unhealthy" computes the statistics it needs (progress, Cancel) and never says 0 before they exist', async () => {
  const page = await viewer.page();
  await openExample(page, 'float64');
  await waitText(page, '[data-testid=param-count]', '5 slots');
  await page.click('button[data-filter=unhealthy]');
  // While the scan runs the count says so; then the one unhealthy slot.
  assert.notEqual(await text(page, '[data-testid=param-count]'), '0 of 5 slots');
  await waitText(page, '[data-testid=param-count]', '1 of 5 slots');
  assert.equal(await page.locator('[data-testid=param-row]').count(), 1);
  assert.equal(await page.getAttribute('[data-testid=param-row]', 'data-index'), '3');
  assert.match(await text(page, '[data-testid=param-row]'), /1 NaN, 1 v<0/);
  // A huge file: the scan shows progress and can be cancelled; the filter then says plainly that
  // statistics are not computed, and offers to compute them.
  const file = path.join(tmp, 'sparse.ckpt');
  writeSparse(file, { slots: 3, elements: 2 ** 28 });
  await page.setInputFiles('[data-testid=file-input]', file);
  await waitText(page, '[data-testid=param-count]', '3 slots');
  await page.click('button[data-filter=unhealthy]');
  await page.waitForSelector('#scan-line:not([hidden]) [data-testid=stats-progress]');
  assert.equal(await text(page, '[data-testid=param-count]'), 'statistics are being computed…');
  await page.waitForFunction(() => document.querySelector('[data-testid=stats-progress]').value > 0);
  await page.click('#cancel-scan');
  await waitText(page, '[data-testid=param-count]', 'statistics not computed yet: Compute statistics');
  assert.equal(await page.locator('[data-testid=compute-stats]').count(), 1);
  assert.equal(await page.locator('[data-testid=param-row]').count(), 0);
  await page.context().close();
  fs.rmSync(file);
});

test('one number format per statistics column', async () => {
  const page = await viewer.page();
  await openExample(page, 'float64');
  await waitText(page, '[data-testid=param-count]', '5 slots');
  await page.click('#scan');
  await page.waitForFunction(() => /^Statistics for 5 entries/.test(document.getElementById('status').textContent));
  for (const col of [6, 7, 8]) {
    const texts = await page.locator(`[data-testid=entry-row] span:nth-child(${col})`).allTextContents();
    assert.equal(texts.length, 5, `column ${col} has a cell per entry`);
    // three significant digits, the exponent written only when it is not 0 (never 1.13e0)
    for (const t of texts) assert.match(t, /^(-?\d\.\d\d(e-?[1-9]\d*)?|0)$/, `column ${col}: ${texts.join(' | ')}`);
  }
  await page.context().close();
});

test('per-entry statistics: the core\'s progress and Cancel; the m̂/v̂ figures; one number format', async () => {
  const page = await viewer.page();
  const file = path.join(tmp, 'big-entry.ckpt');
  writeSparse(file, { slots: 2, elements: 2 ** 28 });
  await page.setInputFiles('[data-testid=file-input]', file);
  await waitText(page, '[data-testid=param-count]', '2 slots');
  await page.click('[data-testid=entry-row][data-index="1"]');
  await page.waitForFunction(() => document.querySelector('[data-testid=entry-progress]')?.value > 0);
  assert.match(await text(page, '#entry-detail'), /Computing statistics… \d+%/);
  await shot(page, 'entry-progress', { idle: false });
  await page.click('#entry-detail button:has-text("Cancel")');
  await page.waitForFunction(() => /cancelled/.test(document.getElementById('entry-detail').textContent));
  fs.rmSync(file);
  // A 4-million-element entry: a click gives its figures.
  const n = 4 * 1024 * 1024;
  const m = new Float32Array(n).fill(0.01), v = new Float32Array(n).fill(1e-4);
  const bytes = await writeCheckpoint({ shapes: [[n]], requiresGrad: [true], config, entries: [{ id: 0, step: 100, m, v }] });
  fs.writeFileSync(file, bytes);
  await page.setInputFiles('[data-testid=file-input]', file);
  await waitText(page, '[data-testid=param-count]', '1 slot');
  await page.click('[data-testid=entry-row]');
  await page.waitForSelector('#entry-detail .moment');
  assert.match(await text(page, '#entry-detail .bias'), /^Next step t = 101: m̂ = m \/ \(1 − β1\^101\)/);
  assert.doesNotMatch(await text(page, '#entry-detail'), /\de0\b/, 'one number format: no e0');
  await page.context().close();
  fs.rmSync(file);
});
