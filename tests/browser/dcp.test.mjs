// A distributed checkpoint in the viewer (docs/viewer.md, docs/distributed.md), on the fixture
// tests/fixtures/dcp-torch113 (torch 1.13's save_state_dict over 2 ranks): the folder dropped,
// picked with Open a run… → A folder…, and served by `ckptscope view DIR`, at 800 px wide. The
// DCP card, its data files, its tensors with their chunk maps coloured by rank; every fact the
// core's report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { viewerAndFolder, viewFromCli, dropFiles, dropFolder, shotAt } from './browser.mjs';
import { text } from './fixtures.mjs';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const DIR = path.join(FIXTURES, 'dcp-torch113');
const NAMES = ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias'];
const { tmp, viewer } = viewerAndFolder('ckptscope-dcp-view-');

const rows = (page, id) => page.locator(`[data-testid=${id}]`).evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));

/** The DCP card of the fixture: its facts, its two data files (rank, bytes, records), its group,
 *  a row per tensor of the model part with a chunk map of two boxes, rank 0's over the first rows
 *  and rank 1's over the rest, and the legend of the two ranks. */
async function assertCard(page) {
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '#dcp h2'), 'Distributed checkpoint (DCP)');
  assert.equal(await text(page, '[data-testid=dcp-facts]'), 'unversioned metadata, classes of torch 1.13, optimizer keys nested (N), no planner_data');
  assert.deepEqual(await rows(page, 'dcp-file-row'), [['__0_0.distcp', '0', '24,599', '33'], ['__1_0.distcp', '1', '17,821', '23']]);
  assert.equal(await text(page, '[data-testid=dcp-keys]'), 'Keys: 9 model keys, 24 optimizer keys, 0 other keys.');
  assert.deepEqual(await rows(page, 'dcp-group'), [['0', '0.01', '0.9, 0.999', '—', '—', '7']]);
  assert.deepEqual((await rows(page, 'dcp-bytes-row')).map((r) => r[0]), ['optim.param_groups.0.lr', 'optim.param_groups.0.betas', 'optim.param_groups.0.params']);
  const entries = await rows(page, 'dcp-entry-row');
  assert.deepEqual(entries.map((r) => r[0]), NAMES);
  assert.deepEqual(entries[0].filter((_, k) => k !== 3), ['emb.weight', '[11, 6]', 'F32', '0, 1', '2', 'yes']);
  assert.deepEqual(entries[2].filter((_, k) => k !== 3), ['l1.bias', '[7]', 'F32', '0, 1', '2', 'yes']);
  assert.deepEqual(entries[7].filter((_, k) => k !== 3), ['frozen.weight', '[6, 6]', 'F32', '0, 1', '—', 'no']);
  assert.deepEqual(await page.locator('[data-testid=chunk-legend-item]').allTextContents(), ['rank 0', 'rank 1']);
  // a chunk map per tensor: each chunk a box coloured by its rank, over the global shape
  assert.equal(await page.locator('[data-testid=dcp-entry-row] [data-testid=chunk-map]').count(), 9);
  const boxes = (k) => page.locator('[data-testid=dcp-entry-row]').nth(k).locator('rect.chunk').evaluateAll((rs) => rs.map((r) => ({
    rank: r.dataset.rank, fill: r.getAttribute('fill'), x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'), h: +r.getAttribute('height'), title: r.querySelector('title').textContent })));
  const emb = await boxes(0);   // [11, 6]: rows 0-5 on rank 0, rows 6-10 on rank 1
  assert.deepEqual(emb.map((b) => [b.rank, b.x, b.w]), [['0', 0, 160], ['1', 0, 160]]);
  assert.notEqual(emb[0].fill, emb[1].fill);
  assert.ok(Math.abs(emb[0].h / emb[1].h - 6 / 5) < 1e-9, 'the boxes split the rows 6 : 5');
  assert.equal(emb[1].y, emb[0].h);
  assert.equal(emb[0].title, 'offsets [0, 0], sizes [6, 6]: __0_0.distcp, rank 0, 875 bytes at byte 1,357');
  assert.equal(emb[1].title, 'offsets [6, 0], sizes [5, 6]: __1_0.distcp, rank 1, 811 bytes at byte 0');
  const bias = await boxes(2);   // [7]: a bar, elements 0-3 on rank 0, 4-6 on rank 1
  assert.deepEqual(bias.map((b) => [b.rank, b.y, b.h]), [['0', 0, 14], ['1', 0, 14]]);
  assert.ok(Math.abs(bias[0].w / bias[1].w - 4 / 3) < 1e-9, 'the bar splits 4 : 3');
  assert.equal(await text(page, '[data-testid=dcp-entry-row]:nth-child(3) figcaption'), '7 elements');
  assert.equal(await text(page, '[data-testid=dcp-entry-row]:nth-child(1) figcaption'), '11 rows × 6 columns');
  assert.equal(await page.locator('[data-testid=dcp-failure]').count(), 0);
}

/** The usual cards read it too: the summary, the parameter table's 9 slots, the 7 moment
 *  entries; health says, in the core's words, why it cannot read this folder (torch 1.13 saved
 *  its groups' lr and betas, not eps or weight_decay). */
async function assertUsual(page, name) {
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), name);
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'valid');
  assert.equal(await text(page, '[data-testid=param-count]'), '9 slots');
  assert.equal(await text(page, '#entry-count'), '7');
  await page.waitForFunction(() => !/^(Not run yet|Running)/.test(document.querySelector('[data-testid=health-state]')?.textContent ?? 'Not run yet'), null, { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=health-state]'),
    'The health pass failed: DCP: parameter group 0 keeps no eps (it keeps lr, betas): health, export, run and diff read each trained tensor with its group\'s betas and eps');
}

/** Nothing wider than the window. */
async function assertFits(page) {
  const wide = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(wide[0] <= wide[1], `the page is ${wide[0]} px wide in a ${wide[1]} px window`);
}

test('a DCP folder dropped at 800 px: the DCP card, its data files, each tensor\'s chunk map by rank, the parameter table', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, DIR);
  await assertCard(page);
  await assertUsual(page, 'dcp-torch113');
  await assertFits(page);
  await page.locator('#dcp').scrollIntoViewIfNeeded();
  await shotAt(page, 'dcp-folder');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DCP folder picked with Open a run… → A folder…: the same checkpoint', async () => {
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', DIR);
  await assertCard(page);
  await assertUsual(page, 'dcp-torch113');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DCP folder missing a data file: the core\'s failure in the card and the problem card, the file said missing', async () => {
  const missing = path.join(tmp, 'missing');
  fs.cpSync(DIR, missing, { recursive: true });
  fs.rmSync(path.join(missing, '__1_0.distcp'));
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, missing);
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  const gone = 'DCP: __1_0.distcp is missing: it holds 23 records (the first: model.emb.weight)';
  assert.deepEqual(await page.locator('[data-testid=dcp-failure]').allTextContents(), [gone]);
  assert.equal(await text(page, '#dcp h3:last-of-type'), 'Fails a check');
  assert.deepEqual(await rows(page, 'dcp-file-row'), [['__0_0.distcp', '0', '24,599', '33'], ['__1_0.distcp', '1', 'missing', '23']]);
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'invalid');
  assert.match(await text(page, '#problem'), new RegExp(`^Why this file is broken${gone.replace(/[.()]/g, '\\$&')}`));
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a column-sharded folder with a tie (the core\'s seeds, torch >= 2.3 classes): the chunks side by side, the tie named, health at the groups\' lr', async () => {
  const seeds = path.join(tmp, 'seeds');
  execFileSync('/usr/bin/python3', [new URL('../c/dcp_core_seeds.py', import.meta.url).pathname, seeds], { stdio: 'ignore' });
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, path.join(seeds, 'columns'));
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=dcp-facts]'), 'metadata version 1.0.0, classes of torch>=2.3, optimizer keys flattened (F), planner_data kept');
  const entries = await rows(page, 'dcp-entry-row');
  assert.deepEqual(entries.map((r) => [r[0], r[4], r[6]]), [['b.weight', '0, 1', 'yes'], ['a.weight', '0', 'no'], ['c.weight', '1', 'tied to b.weight']]);
  // b.weight [2, 3]: columns 0-1 on rank 0, column 2 on rank 1, side by side over both rows
  const boxes = await page.locator('[data-testid=dcp-entry-row]').nth(0).locator('rect.chunk').evaluateAll((rs) => rs.map((r) => [r.dataset.rank, +r.getAttribute('x'), +r.getAttribute('y'), +r.getAttribute('width'), +r.getAttribute('height')]));
  assert.equal(boxes.length, 2);
  assert.deepEqual(boxes.map((b) => [b[0], b[2]]), [['0', 0], ['1', 0]]);
  assert.equal(boxes[0][4], boxes[1][4]);
  assert.ok(Math.abs(boxes[0][3] / boxes[1][3] - 2) < 1e-9, 'the columns split 2 : 1');
  assert.equal(boxes[1][1], boxes[0][3]);
  await page.waitForFunction(() => !/^(Not run yet|Running)/.test(document.querySelector('[data-testid=health-state]')?.textContent ?? 'Not run yet'), null, { timeout: 60000 });
  assert.match(await text(page, '[data-testid=health-state]'), /^3 slots in \d+ ms: 1 slot flagged\. The chart shows the update-to-weight ratio at the optimizer's param groups' lr 0\.001 /);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a .metadata or a data file dropped alone: the index with its files missing, or the last record, and the core\'s note', async () => {
  let page = await viewer.page({ width: 800 });
  await dropFiles(page, [{ name: '.metadata', bytes: fs.readFileSync(path.join(DIR, '.metadata')) }]);
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=dcp-facts]'), 'the index (.metadata) alone, unversioned metadata, classes of torch 1.13, optimizer keys nested (N), no planner_data');
  assert.equal(await text(page, '[data-testid=dcp-note]'), 'DCP: this is the index of a distributed checkpoint; its data is in 2 files (__0_0.distcp, …) that are not here');
  assert.deepEqual(await rows(page, 'dcp-file-row'), [['__0_0.distcp', '0', 'missing', '33'], ['__1_0.distcp', '1', 'missing', '23']]);
  assert.deepEqual(await rows(page, 'dcp-group'), [['0', '—', '—', '—', '—', '—']]);
  // the records' checks need the data files: no all-clear
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'cannot tell');
  assert.equal(await page.locator('[data-testid=dcp-entry-row] [data-testid=chunk-map]').count(), 9);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();

  page = await viewer.page({ width: 800 });
  await dropFiles(page, [{ name: '__1_0.distcp', bytes: fs.readFileSync(path.join(DIR, '__1_0.distcp')) }]);
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=dcp-facts]'), 'a data file alone');
  assert.equal(await text(page, '[data-testid=dcp-record]'), 'Its last record: 747 bytes at byte 17,074, a float32 tensor of shape [3].');
  // the viewer gives the core the file's name; a file dropped alone has no folder to name
  assert.equal(await text(page, '[data-testid=dcp-note]'), 'DCP: __1_0.distcp is a data file of a distributed checkpoint: torch.save records back to back, found only through the folder\'s .metadata; open its folder');
  assert.equal(await page.locator('[data-testid=dcp-keys]').count(), 0);
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'cannot tell');
  assert.equal(await page.locator('[data-testid=dcp-entry-row]').count(), 0);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('ckptscope view DIR: the folder read through the served files', async () => {
  const served = await viewFromCli(FIXTURES, 'dcp-torch113');
  try {
    const page = await viewer.page({ width: 800, url: served.url });
    await assertCard(page);
    await assertUsual(page, 'dcp-torch113');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    served.stop();
  }
});
