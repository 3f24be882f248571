// A DeepSpeed checkpoint folder open in the viewer, and the new model it will be loaded into
// dropped or picked beside it (docs/viewer.md, docs/deepspeed.md, FORMAT.md 11.6): the core's
// pairing (the package's pair(dir, model)), its verdict, every failure and its note in the core's
// words. The folder and the models are tests/c/deepspeed_seeds.py's (pair-torch: ZeRO-2 over 2
// ranks; the models torch's own nn.Module state dicts: the same, its blocks swapped, its
// embedding resized, its head untied).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { viewerAndFolder, dropFiles, shotAt } from './browser.mjs';
import { text } from './fixtures.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
const { tmp, viewer } = viewerAndFolder('ckptscope-ds-pair-');
execFileSync('/usr/bin/python3', [path.join(ROOT, 'tests/c/deepspeed_seeds.py'), path.join(ROOT, 'tests/fixtures/deepspeed'), tmp], { stdio: 'ignore' });
const FOLDER = path.join(tmp, 'folders', 'pair-torch');
const MODELS = path.join(tmp, 'pair', 'torch');
const model = (name) => ({ name, bytes: fs.readFileSync(path.join(MODELS, name)) });

const P = 'DeepSpeed: ';
/** Each failure: its text, and the checkpoint slot it names (the core's index), as shown. */
const failures = (page) => page.locator('#pair [data-testid=pair-failure]').evaluateAll((lis) => lis.map((li) =>
  [li.querySelector('[data-testid=error]').textContent, li.querySelector('[data-testid=error-slot]')?.textContent ?? null]));

/** The folder opened with Open a run… → A folder…, its DeepSpeed card shown. */
async function openFolder(page) {
  await page.setInputFiles('[data-testid=run-folder-input]', FOLDER);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=ds-facts]'), 'ZeRO-2, stage 2, world size 2, float32 module, DeepSpeed 0.14.4, tag global_step2');
}

test('a model dropped beside an open DeepSpeed folder: the new model pairs, in the core\'s words', async () => {
  const page = await viewer.page({ width: 1000 });
  await openFolder(page);
  await dropFiles(page, [model('net.pt')]);
  await page.waitForSelector('[data-testid=pair-verdict].loads', { timeout: 60000 });
  assert.equal(await text(page, '#pair h2'), 'DeepSpeed checkpoint and the new model');
  assert.equal(await text(page, '#pair .meta'), 'pair-torch loaded into net.pt');
  assert.equal(await text(page, '[data-testid=pair-note]'), `${P}the new model pairs with this checkpoint as DeepSpeed pairs it: same names, shapes, ties and order in every group`);
  assert.deepEqual(await failures(page), []);
  // the folder stays the page's checkpoint: its card, its slots named by its module
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'pair-torch');
  assert.equal(await page.locator('[data-testid=deepspeed]').isHidden(), false);
  await shotAt(page, 'deepspeed-new-model');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('reordered modules, a resized embedding, a tie lost: each failure as the core gives it, the repair said', async () => {
  const page = await viewer.page({ width: 1000 });
  await openFolder(page);
  await dropFiles(page, [model('net-swapped.pt')]);
  await page.waitForSelector('[data-testid=pair-verdict].fails', { timeout: 60000 });
  assert.match(await text(page, '[data-testid=pair-verdict] strong'), /^Does not pair: 1 failure\.$/);
  assert.deepEqual(await failures(page), [[`${P}group 0 position 1: DeepSpeed would load blocks.0.weight's moments and master weights into blocks.1.weight`, 'slot 1 (blocks.0.weight)']]);
  assert.equal(await text(page, '[data-testid=pair-note]'), `${P}only the order or the world size differs: a universal checkpoint (ds_to_universal) loads by name on any world size, without retraining`);
  // another model dropped: paired again, in its place
  await dropFiles(page, [model('net-resized.pt')]);
  await page.waitForFunction(() => document.querySelector('#pair .meta')?.textContent === 'pair-torch loaded into net-resized.pt' && document.querySelector('[data-testid=pair-verdict].fails'), null, { timeout: 60000 });
  assert.deepEqual(await failures(page), [[`${P}emb.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model`, 'slot 0 (emb.weight)'], [`${P}head.weight is #[10, 4] in the checkpoint, #[12, 4] in the new model`, 'slot 5 (head.weight)']]);
  assert.equal(await text(page, '[data-testid=pair-note]'), `${P}compared with the new model as DeepSpeed pairs it: names, shapes, ties and order in every group`);
  // picked with Add model state…: the same path
  await page.setInputFiles('[data-testid=state-input]', path.join(MODELS, 'net-untied.pt'));
  await page.waitForFunction(() => document.querySelector('#pair .meta')?.textContent === 'pair-torch loaded into net-untied.pt' && document.querySelector('[data-testid=pair-verdict].fails'), null, { timeout: 60000 });
  assert.deepEqual(await failures(page), [[`${P}head.weight is tied to emb.weight in the checkpoint, not in the new model`, 'slot 5 (head.weight)']]);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a model.safetensors beside the folder: names and shapes pair, the order not checked (the core\'s warning)', async () => {
  const page = await viewer.page({ width: 1000 });
  await openFolder(page);
  await page.setInputFiles('[data-testid=state-input]', path.join(tmp, 'pair', 'zero2', 'model.safetensors'));
  await page.waitForSelector('#pair [data-testid=pair-verdict]:is(.loads, .fails, .cannot-tell)', { timeout: 60000 });
  assert.deepEqual(await page.locator('#pair [data-testid=warning]').allTextContents(),
    [`warning: ${P}model.safetensors keeps no module order: the order DeepSpeed pairs by is not checked (give --names NAMES.json or a torch.save state dict)`]);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
