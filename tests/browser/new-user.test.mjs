// What a new user of the viewer meets, one test each: statistics that do not
// exist are never counted, broken ties look broken, compare mode says which fields differ and
// which input is at fault and can be left, names stay readable at 800 px and hidden columns are
// reachable, cards do not stretch, the sharing map colours only tied groups, one number format
// per column, names JSON recognised, menus close, plurals, per-entry progress, exports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, writeState, open, exportTensors, exportNpy } from '../../js/index.js';
import { startViewer, dropBytes, openExample, shot, shotAt } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';

let viewer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-newuser-'));
const config = { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
const size = (s) => s.reduce((a, b) => a * b, 1);
const entry = (id, shape, step = 10) => ({ id, step, m: new Float32Array(size(shape)).fill(0.001 * (id + 1)), v: new Float32Array(size(shape)).fill(1e-4) });

/** A 200-slot Llama-like model: long names sharing prefixes, the output head tied to the embedding. */
function llama(layers = 39) {
  const names = ['model.embed_tokens.weight'], shapes = [[32, 8]];
  for (let l = 0; l < layers; l++) {
    for (const p of ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj']) {
      names.push(`model.layers.${l}.${p}.weight`);
      shapes.push([8, 8]);
    }
  }
  names.push('model.norm.weight', 'model.norm.bias', 'model.rotary.inv_freq', 'lm_head.weight');
  shapes.push([8], [8], [4], [32, 8]);
  const n = shapes.length;
  const requiresGrad = shapes.map((_, i) => i !== n - 2);
  const representatives = shapes.map((_, i) => (i === n - 2 ? null : i === n - 1 ? 0 : i));
  const entries = shapes.map((s, i) => (representatives[i] === i ? entry(i, s) : null)).filter(Boolean);
  return { names, description: { shapes, requiresGrad, representatives, config, randomCounter: 7, entries } };
}

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const text = (page, sel) => page.textContent(sel);
const waitText = (page, sel, want) => page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want });

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

test('a slot the sharing-map rule rejects looks broken in the map, the legend, the header and the table', async () => {
  const page = await viewer.page();
  await openExample(page, 'corrupted');
  await page.waitForSelector('#problem:not([hidden])');
  const map = page.locator('[data-testid=sharing-map]');
  assert.equal(await map.getAttribute('data-broken-count'), '1');
  assert.equal(await map.getAttribute('data-broken-links'), '10>1');
  assert.equal(await map.getAttribute('data-link-count'), '0');
  assert.equal(await map.getAttribute('data-links'), '');
  assert.equal(await text(page, '[data-testid=broken-ties]'), '1 broken tie (slot 10): the sharing-map rule rejects it');
  assert.doesNotMatch(await text(page, '[data-testid=map-legend]'), /1 tie in 1 group|no ties/);
  assert.equal(await text(page, '[data-testid=field-ties]'), '1 broken tie');
  assert.equal(await text(page, '[data-testid=param-row][data-index="10"] span:nth-child(6)'), 'broken → 1 pos.weight');
  await page.click('button[data-filter=broken]');
  await waitText(page, '[data-testid=param-count]', '1 of 12 slots');
  // The slot the error names is selected (the core's slot, not a regex over its text).
  assert.match(await text(page, '[data-testid=selection]'), /^slot 10 head\.weight · \[64, 16\]/);
  await shotAt(page, 'corrupted-example');
  await page.context().close();
});

test('a file that breaks before its sharing map: ties and trainability are unknown, never "none" or "frozen"', async () => {
  const page = await viewer.page();
  const { description } = llama(4);
  const bytes = await writeCheckpoint(description);
  const ck = await open(bytes.subarray(0, 300));
  const read = ck.columns();
  ck.close();
  assert.ok(read.n > read.flags.length, 'the cut falls between the shapes and the flags');
  await dropBytes(page, bytes.subarray(0, 300), 'cut.ckpt');
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await text(page, '[data-testid=field-ties]'), '—');
  assert.match(await text(page, '[data-testid=map-legend]'), /the sharing map was not read/);
  assert.match(await text(page, '[data-testid=map-legend]'), /not read/);
  assert.doesNotMatch(await text(page, '[data-testid=map-legend]'), /no ties/);
  const last = read.n - 1;
  await page.click(`[data-testid=param-row][data-index="${last}"]`);
  await page.waitForFunction(() => /trainability not read/.test(document.querySelector('[data-testid=map-caption]')?.textContent ?? ''));
  await page.context().close();
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

test('cards keep their content\'s height; a broken file says only what is really shown', async () => {
  const page = await viewer.page({ width: 1440 });
  const height = (sel) => page.locator(sel).evaluate((e) => e.getBoundingClientRect().height);
  assert.ok(await height('#welcome') < 420, 'the welcome card is not stretched to the window (900 px)');
  await shotAt(page, 'welcome');
  await dropBytes(page, new Uint8Array(0), 'empty.ckpt');
  await waitText(page, '#problem [data-testid=error]', 'CUDA Adam checkpoint: truncated checkpoint (wanted 7 bytes, got 0)');
  assert.equal(await text(page, '#problem [data-testid=error-hint]'), 'the file is empty');
  assert.doesNotMatch(await text(page, '#problem'), /shown below/);
  assert.ok(await height('#problem') < 260);
  await shotAt(page, 'empty-file');
  await dropBytes(page, new TextEncoder().encode('version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), 'model.ckpt');
  await page.waitForFunction(() => /Git LFS/.test(document.querySelector('#problem [data-testid=error-hint]')?.textContent));
  assert.doesNotMatch(await text(page, '#problem'), /shown below/);
  assert.ok(await height('#problem') < 320);
  await shotAt(page, 'lfs-pointer');
  // A file broken inside its schema: the slots read are said, and they are there.
  const { description } = llama(2);
  const bytes = await writeCheckpoint(description);
  await dropBytes(page, bytes.slice(0, 300), 'cut.ckpt');
  await page.waitForFunction(() => /slots? read before the error/.test(document.getElementById('problem').textContent));
  const n = Number(await page.locator('[data-testid=param-row]').count());
  assert.ok(n > 0);
  assert.match(await text(page, '#problem'), new RegExp(`the ${n} slots? read before the error`));
  await page.context().close();
});

/** The colour of the mark of slot i in the map (no names loaded: marks 36 px above the bottom). */
function markColors(page, slots) {
  return page.evaluate((slots) => {
    const c = document.querySelector('#sharing-map canvas');
    const g = c.getContext('2d');
    const n = Number(document.getElementById('sharing-map').dataset.slotCount);
    const dpr = c.width / c.clientWidth;
    const w = c.clientWidth, h = c.clientHeight, pad = 14;
    return slots.map((i) => {
      const x = Math.round((pad + ((i + 0.5) / n) * (w - 2 * pad)) * dpr);
      const y = Math.round((h - 36 + 8) * dpr);
      return Array.from(g.getImageData(x, y, 1, 1).data).join(',');
    });
  }, slots);
}

test('the sharing map colours only tied groups and stays legible at 10, 200 and 10,000 slots', async () => {
  const page = await viewer.page({ width: 1440 });
  const { description } = llama();
  await dropBytes(page, await writeCheckpoint(description), 'llama-200.ckpt');
  await waitText(page, '[data-testid=param-count]', '200 slots');
  assert.equal(await page.getAttribute('[data-testid=sharing-map]', 'data-links'), '199>0');
  assert.match(await text(page, '[data-testid=map-legend]'), /1 tie in 1 group/);
  const [a, b, c, tiedOwner, tiedAlias, frozen] = await markColors(page, [5, 50, 120, 0, 199, 198]);
  for (const color of [a, tiedOwner]) assert.notEqual(color.split(',')[3], '0', 'the marks are drawn where they are sampled');
  assert.equal(a, b, 'untied trainable slots share one colour');
  assert.equal(b, c);
  assert.equal(tiedOwner, tiedAlias, 'a tied group has one colour');
  assert.notEqual(tiedOwner, a, 'and it stands out');
  assert.notEqual(frozen, a);
  // The caption is HTML above the map, not drawn through the arcs.
  const canvas = page.locator('#sharing-map canvas');
  const box = await canvas.boundingBox();
  await canvas.hover({ position: { x: 14 + (199.5 / 200) * (box.width - 28), y: box.height - 30 } });
  await page.waitForFunction(() => /^slot 199 /.test(document.getElementById('map-status').textContent));
  assert.equal(await text(page, '#map-status'), 'slot 199 [32, 8]: tied to slot 0');
  await shotAt(page, 'map-200');
  // 10 and 10,000 slots: labels at a legible density, aggregated marks.
  for (const n of [10, 10000]) {
    const shapes = Array.from({ length: n }, () => [2]);
    const reps = shapes.map((_, i) => (i === n - 1 ? 0 : i));
    const bytes = await writeCheckpoint({ shapes, requiresGrad: shapes.map(() => true), representatives: reps, config, entries: reps.map((r, i) => (r === i ? entry(i, [2]) : null)).filter(Boolean) });
    await dropBytes(page, bytes, `map-${n}.ckpt`);
    await waitText(page, '[data-testid=param-count]', `${n.toLocaleString('en-US')} slots`);
    assert.equal(await page.getAttribute('[data-testid=sharing-map]', 'data-link-count'), '1');
    await shotAt(page, `map-${n}`);
  }
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
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

test('plurals: one slot, one entry, one warning', async () => {
  const page = await viewer.page();
  await dropBytes(page, await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] }), 'one.ckpt');
  await waitText(page, '[data-testid=param-count]', '1 slot');
  assert.equal(await text(page, '#entry-count'), '1');
  assert.equal(await text(page, '[data-testid=summary] .badge.warn'), '1 warning');
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

test('exports: the report is the core\'s JSON; safetensors bytes are the package\'s', async () => {
  const page = await viewer.page({ acceptDownloads: true });
  const { description, names } = llama(2);
  const bytes = await writeCheckpoint(description);
  await dropBytes(page, bytes, 'small-llama.ckpt');
  await waitText(page, '[data-testid=param-count]', '15 slots');
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
  await waitText(page, '[data-testid=param-row][data-index="14"] span:nth-child(2)', 'lm_head.weight');
  const read = async (download) => fs.readFileSync(await download.path());
  let wait = page.waitForEvent('download');
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-report]');
  const ck = await open(bytes);
  assert.equal(String(await read(await wait)), ck.reportText());
  ck.close();
  wait = page.waitForEvent('download');
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-safetensors]');
  const got = await read(await wait);
  assert.deepEqual(new Uint8Array(got), await exportTensors(bytes, { format: 'safetensors', names }));
  // One entry's v as .npy, from its statistics panel (a tied slot: its owner's).
  await page.click('[data-testid=param-row][data-index="14"]');
  await page.waitForSelector('[data-testid=export-v]');
  wait = page.waitForEvent('download');
  await page.click('[data-testid=export-v]');
  const npy = await wait;
  assert.equal(npy.suggestedFilename(), 'small-llama.ckpt.lm_head.weight.v.npy');
  assert.deepEqual(new Uint8Array(await read(npy)), await exportNpy(bytes, 14, 'v'));
  await page.context().close();
});

/** The slot-index labels the map placed: [{slot, left, right}] in CSS pixels, and its width. */
async function axisLabels(page) {
  const [list, width] = await page.locator('[data-testid=sharing-map]').evaluate((m) => [m.dataset.axisLabels, Number(m.dataset.canvasWidth)]);
  return { width, labels: list.split(',').filter(Boolean).map((x) => {
    const [slot, span] = x.split(':');
    const [left, right] = span.split('-').map(Number);
    return { slot: Number(slot), left, right };
  }) };
}

test('the sharing map labels every tied slot, no label overlaps another or leaves the map, at 800 and 1440 px', async () => {
  const { description, names } = llama();
  // more ties: every fifth layer's o_proj tied to the first layer's, the head to the embedding
  const reps = description.representatives.map((r, i) => (i > 4 && i % 25 === 4 ? 4 : r));
  const tied = { ...description, representatives: reps, entries: description.entries.filter((e) => reps[e.id] === e.id) };
  const tiedSlots = reps.flatMap((r, i) => (r !== null && r !== i ? [i, r] : []));
  for (const width of [800, 1440]) {
    const page = await viewer.page({ width });
    await dropBytes(page, await writeCheckpoint(tied), 'llama-tied.ckpt');
    await waitText(page, '[data-testid=param-count]', '200 slots');
    await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
    await page.waitForSelector('[data-testid=param-row][data-index="1"] span[data-full]');
    const { width: w, labels } = await axisLabels(page);
    assert.ok(w > 0 && labels.length > 0, 'the map placed its labels');
    for (const slot of new Set(tiedSlots)) assert.ok(labels.some((l) => l.slot === slot), `tied slot ${slot} is labelled at ${width} px`);
    const sorted = [...labels].sort((x, y) => x.left - y.left);
    for (let k = 0; k < sorted.length; k++) {
      assert.ok(sorted[k].left >= 0 && sorted[k].right <= w, `label ${sorted[k].slot} inside the map (${sorted[k].left}-${sorted[k].right} of ${w})`);
      if (k) assert.ok(sorted[k].left > sorted[k - 1].right, `labels ${sorted[k - 1].slot} and ${sorted[k].slot} do not overlap`);
    }
    await shotAt(page, 'map-tied-names');
    await page.context().close();
  }
});

test('files the viewer cannot use get a card that names them, with why', async () => {
  const page = await viewer.page();
  const one = await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] });
  // a layout with nothing open
  await dropBytes(page, new TextEncoder().encode(JSON.stringify({ shapes: [[3]] })), 'layout.json');
  await page.waitForSelector('[data-testid=notices]:not([hidden])');
  assert.equal(await text(page, '[data-testid=notice]'), 'layout.json: a layout: open a checkpoint first, then drop the layout to see whether it would load.');
  // one checkpoint opens; then three at once are a run (the run card), the open file stays
  await dropBytes(page, one, 'a.ckpt');
  await page.waitForSelector('[data-testid=summary]');
  await page.evaluate((data) => {
    const dt = new DataTransfer();
    for (const name of ['a.ckpt', 'b.ckpt', 'c.ckpt']) dt.items.add(new File([new Uint8Array(data)], name));
    for (const type of ['dragenter', 'dragover', 'drop']) document.querySelector('#dropzone').dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, Array.from(one));
  await page.waitForSelector('[data-testid=run-first]');
  assert.equal(await page.locator('[data-testid=run-pair]').count(), 2);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'a.ckpt');
  // a writer description: JSON, but neither names nor a layout
  await dropBytes(page, new TextEncoder().encode(JSON.stringify({ config, entries: [] })), 'describe.json');
  await page.waitForSelector('[data-testid=notice][data-file="describe.json"]');
  assert.match(await text(page, '[data-testid=notices] h2'), /^A file was not used$/);
  await shotAt(page, 'notices');
  await page.click('[data-testid=notices-close]');
  assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'a.ckpt', 'the open file stays');
  await page.context().close();
});

test('an address whose file name is not valid percent-encoding gets a clear card', async () => {
  const page = await viewer.page({ url: `${viewer.origin}/#open=/files/0/%25zz` });
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await text(page, '#problem h2'), 'Could not read /files/0/%zz');
  assert.equal(await text(page, '#problem [data-testid=error]'), 'the page address names /files/0/%zz, which is not a file path: "%zz" is not valid percent-encoding (a % must be followed by two hexadecimal digits). Open the address that ckptscope view printed.');
  assert.deepEqual(page.consoleErrors, []);
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
