// The run view (docs/viewer.md, docs/runs.md): checkpoints of one run dropped or picked together
// are ordered and paired by the package's rules and shown as a timeline, one row per consecutive
// pair (a compact list: a pair opens to its slot table on a click; a pair too far apart to tell
// is marked apart), the first bad file named with the core's text. The files are made in the page by the
// examples' AdamW run (web/examples.js adamSeries: float32, a frozen slot, a warmup schedule,
// saved at k = 1 and k = 4); every figure the page shows is compared with the package's run()
// on the same bytes, here in Node.
import { test, before, after } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { run } from '../../js/index.js';
import { startViewer, dropFiles, openExample, shotAt } from './browser.mjs';
import { sci } from '../../web/format.js';

let viewer;
before(async () => {
  viewer = await startViewer();
});
after(() => viewer?.close());

const text = (page, sel) => page.textContent(sel);

/** The examples' run, made in the page: [{name, bytes}]. */
async function series(page, options) {
  const files = await page.evaluate(async (o) => {
    const { adamSeries } = await import('/examples.js');
    return (await adamSeries(o)).map((f) => ({ name: f.name, data: Array.from(f.bytes) }));
  }, options);
  return files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.data) }));
}

const byName = (files, name) => files.find((f) => f.name === name).bytes;

test('a continuous run (the Examples menu): 0 broken, the gradient rms of the one-step pair, k = 4 after it', async () => {
  const page = await viewer.page({ width: 1440 });
  const files = await series(page);
  await openExample(page, 'run');
  await page.waitForSelector('[data-testid=run-first][data-first=""]');
  assert.equal(await text(page, '[data-testid=run-first]'), 'One run: every pair continuous, no file flagged.');
  // the package's run on the same bytes
  const want = await run(['step-3', 'step-4', 'step-8'].map((s) => byName(files, `${s}.ckpt`)), { states: ['step-3', 'step-4', 'step-8'].map((s) => byName(files, `${s}.tlsf`)) });
  assert.equal(want.first, null);
  const pairs = page.locator('[data-testid=run-pair]');
  assert.equal(await pairs.count(), 2);
  assert.deepEqual(await pairs.evaluateAll((l) => l.map((x) => x.dataset.continuous)), ['true', 'true']);
  assert.deepEqual(await pairs.evaluateAll((l) => l.map((x) => x.open)), [false, false], 'a compact list: the pairs closed');
  assert.equal(await page.locator('[data-testid=run-slot]').count(), 0, 'no slot table before a pair is opened');
  const line = await text(page, '[data-testid=run-pair] >> nth=0 >> summary');
  const m = line.match(/^0 → 1 step-3\.ckpt → step-4\.ckpt: continuous \(worst (\S+) at slot (\d+)[^,]*, power (\S+), lr on 3 slots\)$/);
  assert.ok(m, line);
  assert.equal(m[3], sci(want.pairs[0].power, 3));
  await page.click('[data-testid=run-pair] >> nth=0 >> summary');
  await page.click('[data-testid=run-pair] >> nth=1 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=1 >> [data-testid=run-slot]');
  await page.waitForSelector('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]');
  const rows = await page.locator('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]').evaluateAll((l) => l.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((r) => r[0]), ['0', '1', '3'], 'the slots that own optimizer state (2 is frozen)');
  want.pairs[0].slots.forEach((s, k) => {
    assert.deepEqual(rows[k].slice(2, 5), [`${s.stepA}→${s.stepB}`, '1', '0']);
    assert.equal(rows[k][7], sci(s.power, 3), 'the slot\'s power');
    assert.equal(rows[k][8], sci(s.gradient.rms), 'rms(g) of the one-step pair');
    assert.equal(rows[k][10], sci(s.lr, 4), 'the learning rate the step used');
  });
  assert.equal(rows[0][10], '8.000e-4');
  const later = await page.locator('[data-testid=run-pair] >> nth=1 >> [data-testid=run-slot]').evaluateAll((l) => l.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(later.map((r) => [r[3], r[4], r[8]]), [['4', '0', ''], ['4', '0', ''], ['4', '0', '']], 'k = 4: no gradient');
  const chart = page.locator('[data-testid=run-chart]');
  assert.equal(await chart.getAttribute('data-broken'), '0,0');
  assert.equal(await chart.getAttribute('data-pairs'), 'continuous,continuous');
  assert.equal(await chart.getAttribute('data-mode'), 'rms', 'no learning rate yet: rms(u)');
  await shotAt(page, 'run');
  // the recovered learning rate, used for the ratios (health's, with the parameters)
  await page.click('[data-testid=run-use-lr]');
  await page.waitForSelector('[data-testid=run-chart][data-mode=ratio]');
  assert.equal(await page.inputValue('[data-testid=run-lr]'), '0.0008');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a slot in a pair opens that checkpoint at that slot; the run stays', async () => {
  const page = await viewer.page({ width: 800 });
  await openExample(page, 'run');
  await page.waitForSelector('[data-testid=run-first][data-first=""]');
  await page.click('[data-testid=run-pair] >> nth=0 >> summary');
  await page.click('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot][data-slot="3"]');
  await page.waitForSelector('[data-testid=param-row].selected[data-index="3"]');
  assert.equal(await text(page, '[data-testid=summary] .file'), 'step-4.ckpt');
  await page.waitForSelector('[data-testid=pair-verdict].loads');   // with its model-state file
  assert.equal(await page.locator('[data-testid=run-pair]').count(), 2);
  await shotAt(page, 'run');
  await page.context().close();
});

test('an optimizer reset: dropped in any order, the run is ordered by the number in the name and names the first bad file', async () => {
  const page = await viewer.page({ width: 1440 });
  const files = await series(page, { saves: [3, 4, 12], reset: 10 });
  await dropFiles(page, [files[4], files[1], files[2], files[0], files[3], files[5]]);
  await page.waitForSelector('[data-testid=run-first]:not([data-first=""])');
  const want = await run(['step-3', 'step-4', 'step-12'].map((s) => byName(files, `${s}.ckpt`)));
  assert.equal(want.first, 2);
  assert.equal(want.pairs[1].verdict, 'slot 0: step 2 in B is before step 4 in A');
  assert.equal(await page.getAttribute('[data-testid=run-first]', 'data-first'), '2');
  assert.match(await text(page, '[data-testid=run-first]'), /^Something breaks at file 2 \(step-12\.ckpt\): slot 0: step 2 in B is before step 4 in A/);
  assert.deepEqual(await page.locator('[data-testid=run-file] td:last-child').allTextContents(), ['step-3.ckpt', 'step-4.ckpt', 'step-12.ckpt']);
  assert.deepEqual(await page.locator('[data-testid=run-file] td:nth-child(6)').allTextContents(), ['step-3.tlsf', 'step-4.tlsf', 'step-12.tlsf'], 'states paired by stem');
  assert.equal(await text(page, '[data-testid=run-pair] >> nth=1 >> [data-testid=run-pair-verdict]'), 'NOT continuous: slot 0: step 2 in B is before step 4 in A');
  await shotAt(page, 'run-reset');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a pair too far apart to tell (β2 = 0.95, k = 100): its own line, mark and verdict, not an all-clear', async () => {
  const page = await viewer.page({ width: 1440 });
  const files = await series(page, { saves: [3, 4, 104], beta2: 0.95 });
  await dropFiles(page, files);
  await page.waitForSelector('[data-testid=run-first][data-cannot-tell="1"]');
  const want = await run(['step-3', 'step-4', 'step-104'].map((s) => byName(files, `${s}.ckpt`)));
  assert.deepEqual(want.pairs.map((p) => p.continuous), [true, null]);
  assert.equal(want.first, null);
  assert.equal(await page.getAttribute('[data-testid=run-first]', 'data-first'), '');
  assert.equal(await text(page, '[data-testid=run-first]'), 'Nothing breaks, but 1 pair of 2 cannot tell (too far apart): not shown to be one run.');
  assert.equal(await page.getAttribute('[data-testid=run-first]', 'class'), 'verdict unknown');
  const pairs = page.locator('[data-testid=run-pair]');
  assert.deepEqual(await pairs.evaluateAll((l) => l.map((x) => [x.dataset.continuous, x.dataset.state, x.className])),
    [['true', 'continuous', 'run-pair good'], ['null', 'cannot-tell', 'run-pair unknown']]);
  assert.equal(await text(page, '[data-testid=run-pair] >> nth=1 >> [data-testid=run-pair-verdict]'), `cannot tell: ${want.pairs[1].verdict}; 3 of 3 slots cannot tell`);
  assert.equal(want.pairs[1].verdict, 'slot 0: steps 4\u2192104 are too far apart to tell (\u03b21^k = 2.66e-05, \u03b22^k = 0.00592)');
  assert.equal(await page.getAttribute('[data-testid=run-chart]', 'data-pairs'), 'continuous,cannot-tell');
  // opened: each slot that cannot tell, with its text
  await page.click('[data-testid=run-pair] >> nth=1 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=1 >> [data-testid=run-slot]');
  const slots = page.locator('[data-testid=run-pair] >> nth=1 >> [data-testid=run-slot]');
  assert.deepEqual(await slots.evaluateAll((l) => l.map((tr) => tr.className)), want.pairs[1].slots.map(() => 'unknown'));
  assert.deepEqual(await page.locator('[data-testid=run-pair] >> nth=1 >> tr.message').allTextContents(), want.pairs[1].slots.map((s) => s.cannotTell));
  await shotAt(page, 'run-cannot-tell');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('many pairs stay a compact list: a page of lines, not of tables', async () => {
  const page = await viewer.page({ width: 1440 });
  const files = await series(page, { saves: [3, 4, 5, 6, 7, 8, 9, 10] });
  await dropFiles(page, files);
  await page.waitForSelector('[data-testid=run-first][data-first=""]');
  assert.equal(await page.locator('[data-testid=run-pair]').count(), 7);
  const closed = await page.locator('[data-testid=run-pairs]').evaluate((x) => x.getBoundingClientRect().height);
  await page.click('[data-testid=run-pair] >> nth=3 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=3 >> [data-testid=run-slot]');
  const opened = await page.locator('[data-testid=run-pairs]').evaluate((x) => x.getBoundingClientRect().height);
  assert.equal(await page.locator('[data-testid=run-slot]').count(), 3, 'only the opened pair\'s slots');
  assert.ok(opened > closed, `${opened} px opened, ${closed} px closed`);
  assert.ok(closed < 7 * 40, `seven lines take ${closed} px`);
  await page.context().close();
});

test('a checkpoint of a run with another β2: the configuration difference is the verdict', async () => {
  const page = await viewer.page({ width: 1440 });
  const a = await series(page), b = await series(page, { beta2: 0.99 });
  await page.setInputFiles('[data-testid=run-input]', [a[0], a[2], b[4]].map((f) => ({ name: f.name, mimeType: 'application/octet-stream', buffer: Buffer.from(f.bytes) })));
  await page.waitForSelector('[data-testid=run-first]:not([data-first=""])');
  const want = await run([a[0].bytes, a[2].bytes, b[4].bytes]);
  assert.equal(want.pairs[1].verdict, 'beta2: 0.999 vs 0.99 (bits 0x3feff7ced916872b vs 0x3fefae147ae147ae)');
  assert.equal(await text(page, '[data-testid=run-first]'), `Something breaks at file 2 (step-8.ckpt): ${want.pairs[1].verdict} Open it`);
  assert.equal(await page.getAttribute('[data-testid=run-chart]', 'data-broken'), '0,');
  await page.context().close();
});

test('Cancel stops a run that reads large files; the card says so', async () => {
  const page = await viewer.page({ width: 1440 });
  const { writeCheckpoint } = await import('../../js/index.js');
  const n = 4 * 1024 * 1024;   // 32 MiB of moments per file: the passes take a while
  const m = new Float32Array(n).fill(1e-3), v = new Float32Array(n).fill(1e-4);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-run-view-'));
  const files = [];
  for (const step of [1, 2, 3]) {
    const bytes = await writeCheckpoint({ shapes: [[n]], requiresGrad: [true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, entries: [{ id: 0, step, m, v }] });
    files.push(path.join(dir, `big-${step}.ckpt`));
    fs.writeFileSync(files.at(-1), bytes);
  }
  after(() => fs.rmSync(dir, { recursive: true, force: true }));   // the page reads them from disk
  await page.setInputFiles('[data-testid=run-input]', files);
  await page.click('[data-testid=run-cancel]');
  await page.waitForFunction(() => document.querySelector('[data-testid=run-state]').textContent === 'Run cancelled.');
  assert.equal(await page.locator('[data-testid=run-pair]').count(), 0);
  assert.equal(await page.locator('[data-testid=run-cancel]').isHidden(), true);
  // the worker was replaced: another run works
  await openExample(page, 'run');
  await page.waitForSelector('[data-testid=run-first][data-first=""]');
  await page.context().close();
});

test('a folder (A folder…): its checkpoints in run order, each with the state file of its stem; other files named as not used', async () => {
  const page = await viewer.page({ width: 800 });
  const files = await series(page, { saves: [3, 4, 12] });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-run-folder-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of files) fs.writeFileSync(path.join(dir, f.name), f.bytes);
  fs.writeFileSync(path.join(dir, 'extra.tlsf'), byName(files, 'step-4.tlsf'));
  await page.setInputFiles('[data-testid=run-folder-input]', dir);
  await page.waitForSelector('[data-testid=run-first][data-first=""]');
  assert.deepEqual(await page.locator('[data-testid=run-file] td:last-child').allTextContents(), ['step-3.ckpt', 'step-4.ckpt', 'step-12.ckpt']);
  assert.deepEqual(await page.locator('[data-testid=run-file] td:nth-child(6)').allTextContents(), ['step-3.tlsf', 'step-4.tlsf', 'step-12.tlsf']);
  await page.waitForSelector('[data-testid=notice][data-file="extra.tlsf"]');
  assert.equal(await text(page, '[data-testid=notice]'), 'extra.tlsf: a model-state file, but no optimizer checkpoint is named extra: not used');
  await shotAt(page, 'run-folder');
  await page.context().close();
});
