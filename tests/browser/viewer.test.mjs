// The viewer in Debian's Chromium: files arrive by drag and drop and by the file picker; the
// header, table and sharing map match the file; a corrupted file shows the exact reference
// text and offset; compare mode gives the trainer's verdict; a multi-GB sparse file opens
// without its payloads being read; a million slots stay a few dozen DOM rows; no request
// leaves the origin. Screenshots of each state go to test-artifacts/ (not committed).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, inspect, open } from '../../js/index.js';
import { startViewer, dropBytes, shot } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';

const F = 'CUDA Adam checkpoint: ';
let viewer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-browser-'));

// A tied-embedding layout: slot 0 embedding, 1 frozen, 2..3 trainable, 4 the output head tied to 0.
const layout = {
  shapes: [[8, 4], [4], [4, 4], [4], [8, 4]],
  requiresGrad: [true, false, true, true, true],
  representatives: [0, null, 2, 3, 0],
};
const config = { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
const description = {
  ...layout,
  config,
  randomCounter: 4242,
  entries: [0, 2, 3].map((id) => {
    const n = layout.shapes[id].reduce((a, b) => a * b, 1);
    return { id, step: 10, m: new Float32Array(n).fill(0.25), v: new Float32Array(n).fill(0.0625) };
  }),
};

before(async () => {
  viewer = await startViewer();
});

after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Wait for the slot table to count every slot of the file: its whole text, `N slots`. */
async function expectOpened(page, slots) {
  await page.waitForFunction((text) => document.querySelector('[data-testid=param-count]')?.textContent === text, `${slots.toLocaleString('en-US')} slots`);
}

function onlyOwnOrigin(page) {
  const foreign = page.requests.filter((u) => !u.startsWith(`${viewer.origin}/`) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(foreign, [], 'no request leaves the origin');
  assert.deepEqual(page.consoleErrors, []);
}

test('drop a checkpoint: header, rows and sharing-map links match the file', async () => {
  const page = await viewer.page();
  await dropBytes(page, await writeCheckpoint(description), 'tied.ckpt');
  await expectOpened(page, 5);
  assert.equal(await page.textContent('[data-testid=field-version]'), '4');
  assert.equal(await page.textContent('[data-testid=field-dtype]'), 'float32');
  assert.equal(await page.textContent('[data-testid=field-kind]'), 'AdamW');
  assert.equal(await page.textContent('[data-testid=field-counter]'), '4242');
  assert.equal(await page.locator('[data-testid=param-row]').count(), 5);
  assert.equal(await page.locator('[data-testid=entry-row]').count(), 3);
  const map = page.locator('[data-testid=sharing-map]');
  assert.equal(await map.getAttribute('data-links'), '4>0');
  assert.equal(await map.getAttribute('data-slot-count'), '5');
  assert.equal(await map.getAttribute('data-group-count'), '1');
  assert.match(await page.textContent('[data-testid=param-row][data-index="4"]'), /→ 0/);
  assert.match(await page.textContent('[data-testid=param-row][data-index="1"]'), /frozen/);
  assert.equal(await page.locator('[data-testid=error]').isVisible(), false);
  // Sorting by size: ascending, then descending (ties keep slot order, reversed).
  const firstRow = () => page.getAttribute('[data-testid=param-row] >> nth=0', 'data-index');
  await page.click('button[data-key=size]');
  assert.equal(await firstRow(), '1');
  await page.click('button[data-key=size]');
  assert.equal(await firstRow(), '4');
  await page.click('button[data-filter=frozen]');
  assert.equal(await page.textContent('[data-testid=param-count]'), '1 of 5 slots');
  await page.click('button[data-filter=all]');
  await shot(page, 'drop-tied');
  onlyOwnOrigin(page);
  await page.context().close();
});

test('the file picker, statistics on demand and as a full scan', async () => {
  const page = await viewer.page();
  const file = path.join(tmp, 'picked.ckpt');
  fs.writeFileSync(file, await writeCheckpoint({ ...description, dtype: 'float64', randomCounter: null }));
  await page.setInputFiles('[data-testid=file-input]', file);
  await expectOpened(page, 5);
  assert.equal(await page.textContent('[data-testid=field-version]'), '5');
  assert.equal(await page.textContent('[data-testid=field-dtype]'), 'float64');
  assert.equal(await page.textContent('[data-testid=field-counter]'), 'none (legacy)');
  assert.match(await page.textContent('[data-testid=warning]'), /legacy checkpoint has no random counter/);
  await page.click('[data-testid=entry-row][data-index="1"]');
  await page.waitForSelector('.moment');
  assert.match(await page.textContent('#entry-detail'), /rms\s*2\.5000e-1/);
  await page.click('#scan');
  await page.waitForFunction(() => /Statistics for 3 entries/.test(document.getElementById('status').textContent));
  assert.match(await page.textContent('[data-testid=entry-row][data-index="2"]'), /ok/);
  await shot(page, 'picker-float64-stats');
  onlyOwnOrigin(page);
  await page.context().close();
});

test('a corrupted file shows the exact reference text, the offset and the hex view', async () => {
  const page = await viewer.page();
  const bytes = await writeCheckpoint(description);
  // The tag of slot 4 (the head) pointing at the frozen slot 1.
  const tagsAt = (await inspect(bytes)).offsets.tags;
  new DataView(bytes.buffer).setBigUint64(tagsAt + 8 * 4, 2n, true);
  await dropBytes(page, bytes, 'corrupted.ckpt');
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await page.textContent('[data-testid=error]'), `${F}malformed storage sharing map at parameter 4: representative 1 is frozen`);
  assert.equal(await page.textContent('[data-testid=error-offset]'), String(tagsAt + 32));
  await page.waitForSelector('#problem .hex .hit');
  assert.equal(await page.locator('#problem .hex .hit').count(), 8);
  // The slot the diagnostic names is selected; everything read before the error is shown.
  await page.waitForSelector('[data-testid=param-row].selected[data-index="4"]');
  assert.equal(await page.textContent('[data-testid=field-kind]'), 'AdamW');
  assert.equal(await page.locator('[data-testid=param-row]').count(), 5);
  await shot(page, 'corrupted');
  // A truncated download.
  await dropBytes(page, (await writeCheckpoint(description)).slice(0, 100), 'truncated.ckpt');
  await page.waitForFunction(() => /wanted 8 bytes, got 5/.test(document.querySelector('[data-testid=error]').textContent));
  assert.equal(await page.textContent('[data-testid=error]'), `${F}truncated checkpoint (wanted 8 bytes, got 5)`);
  assert.equal(await page.textContent('[data-testid=error-offset]'), '95');
  // Not a checkpoint at all.
  await dropBytes(page, new TextEncoder().encode('<!DOCTYPE html><html><body>Not found</body></html>'), 'model.ckpt');
  await page.waitForFunction(() => /unsupported checkpoint family/.test(document.querySelector('[data-testid=error]').textContent));
  assert.match(await page.textContent('[data-testid=error-hint]'), /HTML/);
  await shot(page, 'not-a-checkpoint');
  onlyOwnOrigin(page);
  await page.context().close();
});

test('compare mode: the verdict for a matching and a mismatching layout', async () => {
  const page = await viewer.page();
  await dropBytes(page, await writeCheckpoint(description), 'tied.ckpt');
  await expectOpened(page, 5);
  const good = path.join(tmp, 'layout.json');
  fs.writeFileSync(good, JSON.stringify({ ...layout, config, dtype: 'float32' }));
  await page.setInputFiles('[data-testid=expect-input]', good);
  await page.waitForSelector('.verdict.loads');
  assert.match(await page.textContent('[data-testid=verdict]'), /^Loads/);
  await shot(page, 'compare-loads');
  // Dropping a layout JSON while a checkpoint is open compares against it.
  const untied = { ...layout, representatives: [0, null, 2, 3, 4] };
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(untied)), 'untied.json');
  await page.waitForSelector('.verdict.fails');
  assert.equal(await page.textContent('[data-testid=verdict] code'), `${F}storage alias mismatch for parameter 4`);
  await page.waitForSelector('[data-testid=param-row].selected[data-index="4"]');
  assert.match(await page.textContent('#compare .diff'), /slot 4: shares slot 0's storage \(tied\) in this file; has its own storage in the layout/);
  await shot(page, 'compare-fails');
  // Another checkpoint as the destination, dropped on the compare card.
  await dropBytes(page, await writeCheckpoint({ ...description, config: { ...config, beta2: 0.99 } }), 'other.ckpt', '#compare');
  await page.waitForFunction(() => /different optimizer configuration/.test(document.querySelector('[data-testid=verdict]').textContent));
  // The fields that differ: decoded values first, the bit patterns on a second line.
  assert.equal(await page.textContent('[data-testid=config-diff-row] .value'), 'beta2: file 0.999, expected 0.99');
  assert.equal(await page.textContent('[data-testid=config-diff-row] .bits'), 'bits: file 0x3feff7ced916872b, expected 0x3fefae147ae147ae');
  onlyOwnOrigin(page);
  await page.context().close();
});

test('a 20 GB sparse file opens (header and table) without reading its payloads', async () => {
  const page = await viewer.page();
  const file = path.join(tmp, 'sparse.ckpt');
  const size = writeSparse(file, { slots: 5, elements: 2 ** 29 });   // 5 x 4 GiB of payload
  assert.ok(size > 20 * 2 ** 30);
  await page.setInputFiles('[data-testid=file-input]', file);
  await expectOpened(page, 5);
  const bytesRead = Number(await page.getAttribute('[data-testid=summary]', 'data-bytes-read'));
  assert.ok(bytesRead < 64 * 1024, `read ${bytesRead} bytes of ${size}`);
  assert.equal(await page.locator('[data-testid=entry-row]').count(), 5);
  assert.match(await page.textContent('[data-testid=entry-row][data-index="4"]'), /536,870,912/);
  // Offsets past 4 GB are exact: header and schema take 7 + 8 (8 + 4 * 5) bytes.
  const fifth = 7 + 8 * (8 + 4 * 5) + 4 * (24 + 8 * 2 ** 29);
  assert.ok(fifth > 2 ** 34);
  assert.match(await page.textContent('[data-testid=entry-row][data-index="4"]'), new RegExp(fifth.toLocaleString('en-US')));
  console.log(`# ${await page.textContent('#status')}`);
  await shot(page, 'sparse-20gb');
  // A statistics scan over it shows progress and can be cancelled.
  await page.click('#scan');
  await page.waitForSelector('[data-testid=stats-progress]:not([hidden])');
  await page.waitForFunction(() => document.querySelector('[data-testid=stats-progress]').value > 0);
  await shot(page, 'sparse-scan-progress', { idle: false });
  await page.click('#cancel-scan');
  await page.waitForFunction(() => /cancelled/.test(document.getElementById('status').textContent));
  // The page still works after the worker was replaced.
  await dropBytes(page, await writeCheckpoint(description), 'tied.ckpt');
  await expectOpened(page, 5);
  onlyOwnOrigin(page);
  await page.context().close();
  fs.rmSync(file);
});

test('a million slots stay a few dozen DOM rows; the map aggregates them', async () => {
  const page = await viewer.page();
  // v2, one million frozen scalars and one trainable slot: 32 MB of schema.
  const n = 1_000_000;
  const shapes = Array.from({ length: n }, () => []);
  const requiresGrad = Array.from({ length: n }, (_, i) => i === 0);
  const bytes = await writeCheckpoint({ shapes, requiresGrad, config, entries: [{ id: 0, step: 1, m: [0], v: [0] }] });
  const file = path.join(tmp, 'million.ckpt');
  fs.writeFileSync(file, bytes);
  await page.setInputFiles('[data-testid=file-input]', file);
  await expectOpened(page, n);
  assert.ok(await page.locator('[data-testid=param-row]').count() < 60);
  assert.equal(await page.getAttribute('[data-testid=sharing-map]', 'data-slot-count'), String(n));
  // Scroll to the end of the table: the last slot is rendered on demand.
  await page.evaluate(() => { const t = document.getElementById('params'); t.scrollTop = t.scrollHeight; });
  await page.waitForSelector(`[data-testid=param-row][data-index="${n - 1}"]`);
  // The trainable filter leaves one row; sorting a million rows by size and back.
  await page.click('button[data-filter=trainable]');
  await page.waitForFunction(() => document.querySelector('[data-testid=param-count]').textContent === '1 of 1,000,000 slots');
  await page.click('button[data-filter=all]');
  await expectOpened(page, n);
  await page.click('button[data-key=size]');
  await page.click('button[data-key=size]');
  await page.waitForSelector(`[data-testid=param-row][data-index="${n - 1}"]`);
  await page.click('button[data-filter=trainable]');
  await shot(page, 'million-slots');
  onlyOwnOrigin(page);
  await page.context().close();
});

test('the worker sends the package\'s summary and columns as they are; the exported report is the core\'s', async () => {
  const page = await viewer.page();
  const big = await writeCheckpoint({ ...description, randomCounter: '18446744073709551615', entries: description.entries.map((e) => ({ ...e, step: String(2n ** 60n) })) });
  for (const bytes of [await writeCheckpoint(description), (await writeCheckpoint(description)).slice(0, 200), big]) {
    const inWorker = await page.evaluate(async ({ data }) => {
      const { RpcClient } = await import('/rpc.js');
      const rpc = new RpcClient('/worker.js');
      const { summary, columns } = await rpc.request('open', { role: 'a', source: new File([new Uint8Array(data)], 'x.ckpt') });
      const report = await rpc.request('reportText', { role: 'a' });
      rpc.worker.terminate();
      const { FileColumns } = await import('/columns.js');
      const cols = new FileColumns(summary, columns);
      const arrays = Object.fromEntries(Object.entries(columns).map(([k, v]) => [k, ArrayBuffer.isView(v) ? Array.from(v, String) : v]));
      const entries = Array.from({ length: cols.entryTotal }, (_, k) => cols.entry(k));
      return { summary, arrays, report, entries };
    }, { data: Array.from(bytes) });
    const ck = await open(bytes);
    assert.deepEqual(inWorker.summary, ck.summary);
    const cols = ck.columns();
    assert.deepEqual(inWorker.arrays, Object.fromEntries(Object.entries(cols).map(([k, v]) => [k, ArrayBuffer.isView(v) ? Array.from(v, String) : v])));
    assert.equal(inWorker.report, ck.reportText());
    const report = ck.report;
    assert.deepEqual(inWorker.entries.map(({ id, step, count, offset }) => ({ id, step, count, offset })), report.entries.map(({ id, step, count, offset }) => ({ id, step, count, offset })));
    ck.close();
  }
  onlyOwnOrigin(page);
  await page.context().close();
});

test('keyboard: the table and the map move the selection with arrow keys', async () => {
  const page = await viewer.page({ colorScheme: 'dark' });
  await dropBytes(page, await writeCheckpoint(description), 'tied.ckpt');
  await expectOpened(page, 5);
  await page.focus('#params');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.waitForSelector('[data-testid=param-row].selected[data-index="1"]');
  await page.focus('#sharing-map canvas');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('[data-testid=param-row].selected[data-index="2"]');
  assert.match(await page.textContent('#map-status'), /slot 2 \[4, 4\]: owns its optimizer history/);
  await shot(page, 'keyboard-dark');
  onlyOwnOrigin(page);
  await page.context().close();
});
