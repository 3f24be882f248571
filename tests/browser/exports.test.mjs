// The viewer's exports: the report is the core's JSON, and safetensors and .npy bytes are the
// package's for the same file and names.
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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-exports-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
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
  // a small file's statistics follow the health pass the viewer runs on open: the report has them
  const ck = await open(bytes, { stats: true });
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
