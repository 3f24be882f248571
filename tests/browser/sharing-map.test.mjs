// The sharing map: a slot the sharing rule rejects looks broken everywhere it is shown, only
// tied groups are coloured, and every tied slot is labelled without overlaps, at any width.
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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-sharing-map-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
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

/** The slot-index labels the map placed: [{slot, left, right}] in CSS pixels, and its width. */
async function axisLabels(page) {
  const [list, width] = await page.locator('[data-testid=sharing-map]').evaluate((m) => [m.dataset.axisLabels, Number(m.dataset.canvasWidth)]);
  return { width, labels: list.split(',').filter(Boolean).map((x) => {
    const [slot, span] = x.split(':');
    const [left, right] = span.split('-').map(Number);
    return { slot: Number(slot), left, right };
  }) };
}

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

test('a tied head as the last slot: its name is drawn whole, down to the left of its slot, at 800 px', async () => {
  // a GPT's state-dict order: the head tied to the embedding comes last, at the map's right edge
  const names = ['transformer.wte.weight', 'transformer.wpe.weight'];
  const shapes = [[50, 16], [8, 16]];
  for (let l = 0; l < 2; l++) {
    for (const p of ['ln_1.weight', 'ln_1.bias', 'attn.c_attn.weight', 'attn.c_attn.bias', 'attn.c_proj.weight', 'attn.c_proj.bias']) {
      names.push(`transformer.h.${l}.${p}`);
      shapes.push(p.endsWith('bias') || p.startsWith('ln') ? [16] : [16, 16]);
    }
  }
  names.push('transformer.ln_f.weight', 'transformer.ln_f.bias', 'lm_head.weight');
  shapes.push([16], [16], [50, 16]);
  const n = shapes.length;
  const representatives = shapes.map((_, i) => (i === n - 1 ? 0 : i));
  const entries = shapes.map((s, i) => (i < n - 1 ? entry(i, s) : null)).filter(Boolean);
  const page = await viewer.page({ width: 800 });
  await dropBytes(page, await writeCheckpoint({ shapes, requiresGrad: shapes.map(() => true), representatives, config, entries }), 'gpt.ckpt');
  await waitText(page, '[data-testid=param-count]', `${n} slots`);
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(names)), 'names.json');
  await page.waitForFunction((n) => document.querySelector('[data-testid=sharing-map]')?.dataset.names?.includes(`${n - 1}:`), n);
  const drawn = (await page.locator('[data-testid=sharing-map]').getAttribute('data-names')).split('\n');
  assert.ok(drawn.includes(`${n - 1}:lm_head.weight`), drawn.join(' | '));
  assert.ok(drawn.some((d) => d.startsWith('0:')), 'the owner is named too');
  await shotAt(page, 'map-tied-head');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
