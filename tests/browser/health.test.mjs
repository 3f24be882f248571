// The health view: the package's health pass over an optimizer file and its model state (the
// realistic example made by running Adam on synthetic gradients, one slot corrupted), the
// learning rate, the chart (ratio with the flag band, or rms(u) without parameters), rows with
// flagged slots first, selection from the chart; legible at 10,000 slots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeCheckpoint, writeState } from '../../js/index.js';
import { startViewer, dropBytes, dropFiles, openExample, shotAt } from './browser.mjs';

let viewer;
before(async () => {
  viewer = await startViewer();
});
after(() => viewer?.close());

const text = (page, sel) => page.textContent(sel);
const attr = (page, sel, name) => page.getAttribute(sel, name);

test('the training example: ratio per slot with the flag band, flagged slots first, the learning rate', async () => {
  const page = await viewer.page({ width: 1440 });
  await openExample(page, 'training');
  await page.waitForSelector('[data-testid=health-chart][data-mode=ratio]');
  assert.equal(await page.inputValue('[data-testid=lr-input]'), '0.001');
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-slot-count'), '30');
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-flagged'), '16,29');
  // Flagged slots first: the corrupted one (moments no gradient history gives), then the
  // logit scale whose weights dwarf its updates.
  const rows = await page.locator('[data-testid=health-row]').evaluateAll((r) => r.slice(0, 3).map((x) => x.dataset.index));
  assert.deepEqual(rows, ['16', '29', '0']);
  assert.match(await text(page, '[data-testid=health-row][data-index="16"]'), /moments inconsistent, ratio above 1e-2/);
  assert.match(await text(page, '[data-testid=health-row][data-index="29"]'), /ratio below 1e-5/);
  const flags = await page.locator('[data-testid=health-flag]').allTextContents();
  assert.equal(flags.length, 3);
  assert.match(flags[0], /^flag: slot 16 block1\.mlp\.up\.weight: parameter 16: \d+ elements with \|m\| beyond what any gradient history gives/);
  // the core grades each flag: the ratio band's are warnings, said as such, and
  // the band the pass used is stated
  const severities = await page.locator('[data-testid=health-flag]').evaluateAll((l) => l.map((x) => x.dataset.severity));
  assert.deepEqual(severities, ['failure', 'warning', 'warning']);
  assert.match(flags[1], /^warning: slot 16 [^:]+: parameter 16: update-to-weight ratio \S+ is above 1e-2 at lr 0\.001$/);
  assert.match(flags[2], /^warning: slot 29 [^:]+: parameter 29: update-to-weight ratio \S+ is below 1e-5 at lr 0\.001$/);
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-ratio-band'), '0.00001,0.01');
  assert.match(await text(page, '[data-testid=health-state]'), /ratio warnings fire outside 1e-5…1e-2, the shaded band/);
  await shotAt(page, 'health');
  await page.setViewportSize({ width: 800, height: 900 });   // and narrow: the warnings and the band fit
  await shotAt(page, 'health');
  await page.setViewportSize({ width: 1440, height: 900 });
  // Another learning rate: the ratios move with it.
  await page.fill('[data-testid=lr-input]', '3e-5');
  await page.press('[data-testid=lr-input]', 'Enter');
  await page.waitForFunction(() => /at lr 0\.00003/.test(document.querySelector('[data-testid=health-state]').textContent));
  assert.match(await attr(page, '[data-testid=health-chart]', 'data-flagged'), /(^|,)16(,|$)/);
  // No learning rate: the step per unit lr, which needs none.
  await page.fill('[data-testid=lr-input]', '');
  await page.press('[data-testid=lr-input]', 'Enter');
  await page.waitForSelector('[data-testid=health-chart][data-mode=rms]');
  await page.fill('[data-testid=lr-input]', 'fast');
  await page.press('[data-testid=lr-input]', 'Enter');
  assert.equal(await text(page, '[data-testid=health-state]'), 'The learning rate must be a positive number, not "fast".');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the ratio band: typed beside the learning rate, the core\'s band for the flags, the chart and the words; a band that is none refused in the core\'s words', async () => {
  const page = await viewer.page({ width: 1440 });
  await openExample(page, 'training');
  await page.waitForSelector('[data-testid=health-chart][data-mode=ratio]');
  assert.equal(await page.inputValue('[data-testid=ratio-band-input]'), '');
  // a band above slot 29's tiny ratio and below slot 16's: the same two warnings; a band that
  // takes in slot 16 leaves it the failure alone
  await page.fill('[data-testid=ratio-band-input]', '1e-6, 0.5');
  await page.press('[data-testid=ratio-band-input]', 'Enter');
  await page.waitForFunction(() => /ratio warnings fire outside 1e-6…5e-1, the shaded band/.test(document.querySelector('[data-testid=health-state]').textContent));
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-ratio-band'), '0.000001,0.5');
  const flags = await page.locator('[data-testid=health-flag]').allTextContents();
  assert.ok(!flags.some((f) => /above 1e-2/.test(f)), flags.join('\n'));
  assert.ok(!flags.some((f) => /slot 29 /.test(f)), 'slot 29\'s ratio is inside 1e-6…0.5');
  // the band's rule is the core's: its words, not the viewer's
  await page.fill('[data-testid=ratio-band-input]', '1e-2, 1e-5');
  await page.press('[data-testid=ratio-band-input]', 'Enter');
  await page.waitForFunction(() => /failed/.test(document.querySelector('[data-testid=health-state]').textContent));
  assert.equal(await text(page, '[data-testid=health-state]'), 'The health pass failed: the ratio band LO,HI needs LO below HI, got 1e-2,1e-5');
  await page.fill('[data-testid=ratio-band-input]', 'wide');
  await page.press('[data-testid=ratio-band-input]', 'Enter');
  assert.equal(await text(page, '[data-testid=health-state]'), 'The ratio band is two numbers, low and high (e.g. 1e-5, 1e-2), not "wide".');
  // empty: the default band again
  await page.fill('[data-testid=ratio-band-input]', '');
  await page.press('[data-testid=ratio-band-input]', 'Enter');
  await page.waitForFunction(() => /ratio warnings fire outside 1e-5…1e-2, the shaded band/.test(document.querySelector('[data-testid=health-state]').textContent));
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-ratio-band'), '0.00001,0.01');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a click on the chart selects the slot in the table and the sharing map', async () => {
  const page = await viewer.page({ width: 1440 });
  await openExample(page, 'training');
  await page.waitForSelector('[data-testid=health-chart][data-mode=ratio]');
  const canvas = page.locator('[data-testid=health-chart] canvas');
  const box = await canvas.boundingBox();
  const x = 52 + ((16 + 0.5) / 30) * (box.width - 52 - 12);
  await canvas.hover({ position: { x, y: box.height / 2 } });
  await page.waitForFunction(() => /^slot 16 block1\.mlp\.up\.weight · ratio /.test(document.querySelector('[data-testid=health-caption]').textContent));
  await canvas.click({ position: { x, y: box.height / 2 } });
  await page.waitForSelector('[data-testid=param-row].selected[data-index="16"]');
  assert.match(await text(page, '#map-status'), /^slot 16 block1\.mlp\.up\.weight \[96, 24\]: owns its optimizer history/);
  assert.match(await text(page, '[data-testid=selection]'), /^slot 16 block1\.mlp\.up\.weight/);
  await page.context().close();
});

test('without a state file: rms(u) per slot and the consistency counts', async () => {
  const page = await viewer.page();
  const examples = await page.evaluate(async () => {
    const { RpcClient } = await import('/rpc.js');
    const rpc = new RpcClient('/worker.js');
    const list = await rpc.request('examples');
    rpc.worker.terminate();
    const t = list.find((e) => e.name === 'training');
    return { bytes: Array.from(t.files[0].bytes), labels: t.labels };
  });
  await dropBytes(page, new Uint8Array(examples.bytes), 'run.ckpt');
  await page.waitForSelector('[data-testid=health-chart][data-mode=rms]');
  assert.match(await text(page, '[data-testid=health-state]'), /add the model-state file and the learning rate to see the update-to-weight ratio/);
  assert.equal(await attr(page, '[data-testid=health-row]', 'data-index'), '16');
  const cells = await page.locator('[data-testid=health-row][data-index="16"] span').allTextContents();
  assert.equal(cells[2], 'moments inconsistent');
  assert.equal(cells[3], '', 'no ratio without parameters');
  assert.match(cells[8], /^\d{3}$/, 'the elements beyond c·√v');
  assert.equal(cells[6], '', 'no rms(θ) without parameters');
  await page.context().close();
});

test('10,000 slots: the chart aggregates per pixel column, the rows stay few in the DOM', async () => {
  const page = await viewer.page({ width: 1440 });
  const n = 10000;
  const shapes = Array.from({ length: n }, () => [4]);
  const m = new Float32Array(4).fill(0.001), v = new Float32Array(4).fill(1e-4);
  const entries = shapes.map((_, i) => ({ id: i, step: 50, m: i === 7777 ? new Float32Array(4).fill(1) : m, v }));
  const opt = await writeCheckpoint({ shapes, requiresGrad: shapes.map(() => true), config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, entries });
  const state = await writeState({ family: 'TLSF32B', shapes, values: shapes.map((_, i) => new Float32Array(4).fill(i % 100 === 0 ? 10 : 1)) });
  await dropFiles(page, [{ bytes: opt, name: 'big.ckpt' }, { bytes: state, name: 'big.tlsf' }]);
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  await page.fill('[data-testid=lr-input]', '1e-3');
  await page.press('[data-testid=lr-input]', 'Enter');
  await page.waitForSelector('[data-testid=health-chart][data-mode=ratio]');
  assert.equal(await attr(page, '[data-testid=health-chart]', 'data-slot-count'), String(n));
  console.log(`# ${await text(page, '[data-testid=health-state]')}`);
  assert.equal(await attr(page, '[data-testid=health-row]', 'data-index'), '7777');
  assert.ok(await page.locator('[data-testid=health-row]').count() < 60);
  await shotAt(page, 'health-10000');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
