// A distributed checkpoint (DCP) folder open in the viewer, and the model it will be loaded into
// dropped beside it (docs/distributed.md "Pairing with a model"): the core's by-name pairing (the
// package's pair(dir, model)), its verdict, every failure and its note in the core's words. The
// folder is torch 1.13's (tests/fixtures/dcp-torch113); the models tests/c/dcp_pair_models.py's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { viewerAndFolder, dropFiles } from './browser.mjs';
import { text } from './fixtures.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
const { tmp, viewer } = viewerAndFolder('ckptscope-dcp-pair-');
const FOLDER = path.join(tmp, 'ckpt');
fs.cpSync(path.join(ROOT, 'tests/fixtures/dcp-torch113'), FOLDER, { recursive: true });
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/dcp_pair_models.py'), FOLDER, tmp], { stdio: 'ignore' });
const model = (name) => ({ name, bytes: fs.readFileSync(path.join(tmp, name)) });

const failures = (page) => page.locator('#pair [data-testid=pair-failure] [data-testid=error]').allTextContents();

test('a model dropped beside an open DCP folder: paired by name, in the core\'s words', async () => {
  const page = await viewer.page({ width: 1000 });
  await page.setInputFiles('[data-testid=run-folder-input]', FOLDER);
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  await dropFiles(page, [model('model.pt')]);
  await page.waitForSelector('[data-testid=pair-verdict].loads', { timeout: 60000 });
  assert.equal(await text(page, '#pair h2'), 'Distributed checkpoint and the model, by name');
  assert.equal(await text(page, '[data-testid=pair-note]'), 'DCP: the model pairs with this checkpoint by name: same names, shapes and ties');
  assert.deepEqual(await failures(page), []);
  // another model dropped: paired again, every failure listed
  await dropFiles(page, [model('shapes.pt')]);
  await page.waitForSelector('[data-testid=pair-verdict].fails', { timeout: 60000 });
  assert.deepEqual(await failures(page), ['DCP: l1.bias is #[7] in the checkpoint, #[8] in the model',
    'DCP: l2.weight is #[6, 7] in the checkpoint, #[7, 6] in the model']);
  assert.equal(await text(page, '[data-testid=pair-note]'), 'DCP: compared with the model by name: names, shapes and ties');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
