// A name-keyed optimizer (FSDP, docs/pytorch.md "Name-keyed optimizer files (FSDP)") in the
// viewer, on files torch makes at test time (tests/c/fsdp_names_seeds.py): alone, its state by
// name; dropped with its model, the pair by name (the passing text, no positional pairing, the
// frozen parameter not in the optimizer); with a model that does not pair, the failures.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, dropFiles } from './browser.mjs';
import { text } from './fixtures.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-fsdp-view-'));
const seeds = new URL('../c/fsdp_names_seeds.py', import.meta.url).pathname;
let viewer;
before(async () => {
  execFileSync('/usr/bin/python3', [seeds, tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const file = (name) => ({ bytes: fs.readFileSync(path.join(tmp, name)), name });
const rows = (page, sel) => page.locator(sel).allInnerTexts();

test('a name-keyed optimizer alone: its state by name, in FSDP\'s stored order', async () => {
  const page = await viewer.page({ width: 900 });
  await dropFiles(page, [file('names.pt')]);
  await page.waitForSelector('[data-testid=torch]:not([hidden])');
  const got = await rows(page, '[data-testid=torch-index]');
  assert.equal(got.length, 7);
  assert.equal(got[0], '0\t0\temb.weight\t[10, 4]\tfloat32\t2');
  assert.equal(got[1], '1\t0\tnorm.weight\t[4]\tfloat32\t2');
  assert.match(await text(page, '#torch h3:last-of-type'), /^State by name \(7 parameters\)$/);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('with its model: paired by name, no positional pairing; with a renamed model, every failure', async () => {
  const page = await viewer.page({ width: 900 });
  await dropFiles(page, [file('names.pt'), file('model.pt')]);
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=positional-verdict]'),
    'The optimizer keys its state by parameter names: a load by name gives each parameter its own state, whatever the order.');
  assert.equal(await text(page, '[data-testid=not-in-optimizer]'), 'Not in the optimizer (frozen, or buffers): pos.');
  const got = await rows(page, '[data-testid=torch-index]');
  assert.equal(got[1], '1\t0\tnorm.weight\t6\t[4]\tfloat32\t2');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();

  const bad = await viewer.page({ width: 900 });
  await dropFiles(bad, [file('names.pt'), file('renamed.pt')]);
  await bad.waitForSelector('[data-testid=pair-verdict].fails');
  const verdict = await text(bad, '#pair');
  for (const t of ['DCP: blocks.1.lin.weight is in the checkpoint, not in the model', 'DCP: blocks.1.lin.bias is in the checkpoint, not in the model',
    'DCP: norm.weight is #[4] in the checkpoint, #[5] in the model']) assert.ok(verdict.includes(t), `${t}\n${verdict}`);
  await bad.context().close();
});
