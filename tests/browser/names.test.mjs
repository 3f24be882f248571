// Slot names in the viewer: a JSON array is names (not a layout), a count that differs is said
// plainly, and long names stay readable and distinct at 800 px.
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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-names-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('slot names: a JSON array is names, not a layout; a count that differs is said plainly', async () => {
  const page = await viewer.page();
  const { description, names } = llama(2);
  await dropBytes(page, await writeCheckpoint(description), 'small-llama.ckpt');
  await waitText(page, '[data-testid=param-count]', '15 slots');
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names.slice(0, 12))), 'names.json');
  await page.waitForSelector('[data-testid=names-warning]:not([hidden])');
  assert.equal(await text(page, '[data-testid=names-warning]'), '12 names in names.json for 15 slots: slots 12 to 14 have no name. The names may belong to another model.');
  assert.equal(await page.locator('#compare').isHidden(), true, 'not taken as a layout');
  assert.equal(await text(page, '[data-testid=param-row][data-index="0"] span:nth-child(2)'), 'model.embed_tokens.weight');
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
  await page.waitForSelector('[data-testid=names-warning][hidden]', { state: 'attached' });
  // a .json that is not JSON is said to be so; the open file stays
  await dropBytes(page, new TextEncoder().encode('{"shapes": [[2, 3]'), 'broken.json');
  await page.waitForSelector('[data-testid=notices]:not([hidden])');
  assert.match(await text(page, '[data-testid=notice][data-file="broken.json"]'), /^broken\.json: broken\.json is not valid JSON/);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'small-llama.ckpt');
  await page.context().close();
});

test('at 800 px names stay readable and distinct, the full name is on hover and in the selection, hidden columns are reachable', async () => {
  const page = await viewer.page({ width: 800 });
  const { description, names } = llama();
  await dropBytes(page, await writeCheckpoint(description), 'llama-200.ckpt');
  await waitText(page, '[data-testid=param-count]', '200 slots');
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
  await page.waitForSelector('[data-testid=param-row][data-index="1"] span[data-full="model.layers.0.self_attn.q_proj.weight"]');
  const cells = await page.locator('[data-testid=param-row] span:nth-child(2)').evaluateAll((spans) => spans.map((s) => ({ shown: s.textContent, full: s.dataset.full, title: s.title })));
  assert.ok(cells.length >= 10, `name cells are there to check: ${cells.length}`);
  const shown = cells.map((c) => c.shown);
  assert.equal(new Set(shown).size, shown.length, `names shown are distinct: ${shown.slice(0, 8).join(' | ')}`);
  for (const c of cells) {
    assert.ok(c.shown.length >= 20 || c.shown === c.full, `readable: ${c.shown}`);
    if (c.shown !== c.full) assert.equal(c.title, c.full, 'the full name on hover');
  }
  await page.click('[data-testid=param-row][data-index="6"]');
  assert.match(await text(page, '[data-testid=selection]'), /^slot 6 model\.layers\.1\.self_attn\.q_proj\.weight · /);
  // Columns out of view: said, and reachable.
  const hint = await text(page, '[data-testid=scroll-hint] [data-testid=more-columns]');
  assert.match(hint, /^\d+ more columns? →$/);
  await page.click('[data-testid=scroll-hint] [data-testid=more-columns]');
  await page.waitForFunction(() => document.getElementById('params').scrollLeft > 0);
  // The view as it is (headless Chromium's full-page capture stalls after a sideways scroll).
  await page.locator('#params-card').scrollIntoViewIfNeeded();
  await shotAt(page, 'llama-200-scrolled', { fullPage: false });
  await page.click('[data-testid=scroll-hint] button:has-text("←")');
  await page.waitForFunction(() => document.getElementById('params').scrollLeft === 0);
  await page.context().close();
});
