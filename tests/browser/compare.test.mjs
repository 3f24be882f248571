// Compare mode (Will it load into…): configuration differences decoded, a malformed layout
// named as the input at fault, and a control that leaves the mode.
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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-compare-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('compare: configuration differences decoded, a malformed layout named as at fault, a close control', async () => {
  const page = await viewer.page();
  const { description, names } = llama(2);
  await dropBytes(page, await writeCheckpoint(description), 'small-llama.ckpt');
  await waitText(page, '[data-testid=param-count]', '15 slots');
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
  await waitText(page, '[data-testid=param-row][data-index="14"] span:nth-child(2)', 'lm_head.weight');
  // A layout with another beta2 and the head untied: which fields differ, by name.
  const layout = { shapes: description.shapes, requiresGrad: description.requiresGrad, representatives: description.representatives.map((r, i) => (r === null ? null : i)), config: { ...config, beta2: 0.95 } };
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(layout)), 'other.json');
  await page.waitForSelector('.verdict.fails');
  assert.equal(await text(page, '[data-testid=verdict] [data-testid=error]'), 'CUDA Adam checkpoint: checkpoint belongs to a different optimizer configuration');
  assert.deepEqual(await page.locator('[data-testid=config-diff-row] .value').allTextContents(), ['beta2: file 0.999, expected 0.95']);
  assert.deepEqual(await page.locator('[data-testid=config-diff-row] .bits').allTextContents(), ['bits: file 0x3feff7ced916872b, expected 0x3fee666666666666']);
  assert.deepEqual((await page.locator('[data-testid=difference]').allTextContents()).sort(), [
    'beta2: 0.999 vs 0.95 (bits 0x3feff7ced916872b vs 0x3fee666666666666)',
    "slot 14 lm_head.weight: shares slot 0's storage (tied) in this file; has its own storage in the layout",
  ]);
  await shotAt(page, 'compare-config');
  // A malformed layout: the layout is at fault; its first broken slot and the reason.
  const bad = { ...layout, config, representatives: layout.representatives.map((r, i) => (i === 3 ? 99 : r)) };
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(bad)), 'bad-layout.json');
  await page.waitForSelector('[data-testid=error-subject]');
  assert.equal(await text(page, '[data-testid=error-subject]'), 'The layout (bad-layout.json) is at fault, not the checkpoint: it is not a layout the trainer could hold.');
  assert.equal(await text(page, '[data-testid=verdict] [data-testid=error-slot]'), 'first broken slot 3 (model.layers.0.self_attn.v_proj.weight)');
  assert.equal(await text(page, '[data-testid=verdict] [data-testid=error-hint]'), 'Reason: parameter 3: representative 99 is out of range');
  await shotAt(page, 'compare-malformed-layout');
  // Close leaves compare mode; opening another file clears it too.
  await page.click('[data-testid=compare-close]');
  assert.equal(await page.locator('#compare').isHidden(), true);
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(layout)), 'other.json');
  await page.waitForSelector('#compare:not([hidden]) .verdict.fails');
  await dropBytes(page, await writeCheckpoint(description), 'again.ckpt');
  await page.waitForFunction(() => document.querySelector('[data-testid=summary] .file')?.textContent === 'again.ckpt');
  assert.equal(await page.locator('#compare').isHidden(), true);
  await page.context().close();
});
