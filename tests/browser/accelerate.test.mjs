// Accelerate save_state folders in the viewer (docs/distributed.md "Accelerate folders"), laid
// out as Accelerate's source writes them (tests/c/accelerate_seeds.py): a save_state folder
// picked or dropped whole opens its pair 0, optimizer.bin with its model, its other files said
// and not opened; an FSDP sharded save dropped whole is one DCP checkpoint of its two folders; a
// project picked whole is a run of its checkpoints/checkpoint_{k} folders by k.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, dropFolder } from './browser.mjs';
import { text } from './fixtures.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-accelerate-view-'));
let viewer;
before(async () => {
  execFileSync('/usr/bin/python3', [new URL('../c/accelerate_seeds.py', import.meta.url).pathname, tmp], { stdio: 'ignore' });
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('a save_state folder picked whole: optimizer.bin with its model.safetensors, the other files said', async () => {
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', path.join(tmp, 'plain'));
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '#pair .meta'), 'optimizer.bin with model.safetensors');
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'optimizer.bin');
  const notices = await page.locator('[data-testid=notice]').allTextContents();
  const shown = 'not opened: an Accelerate folder\'s optimizer.bin is shown with its model.safetensors.';
  assert.deepEqual(notices.sort(), ['custom_checkpoint_0.pkl', 'random_states_0.pkl', 'random_states_1.pkl', 'scaler.pt', 'scheduler.bin'].map((n) => `${n}: ${shown}`));
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a save_state folder of two pairs dropped as a folder: pair 0 shown, pair 1\'s files said', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, path.join(tmp, 'two'));
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '#pair .meta'), 'optimizer.bin with pytorch_model.bin');
  const notices = await page.locator('[data-testid=notice]').allTextContents();
  assert.deepEqual(notices.sort(), ['optimizer_1.bin', 'pytorch_model_1.bin', 'random_states_0.pkl']
    .map((n) => `${n}: not opened: an Accelerate folder's optimizer.bin is shown with its pytorch_model.bin.`));
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a project picked whole: a run of its checkpoint_{k} folders by k, each optimizer with its own model', async () => {
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', path.join(tmp, 'project'));
  await page.waitForSelector('[data-testid=run-first]', { timeout: 60000 });
  assert.deepEqual(await page.locator('[data-testid=run-file] td:last-child').allTextContents(), ['checkpoint_0', 'checkpoint_1', 'checkpoint_2', 'checkpoint_10']);
  assert.deepEqual(await page.locator('[data-testid=run-pair-verdict]').allTextContents(), ['continuous', 'continuous', 'continuous']);
  assert.equal(await text(page, '[data-testid=run-first]'), 'One run: every pair continuous, no file flagged.');
  assert.match(await text(page, '[data-testid=run-state]'), /^4 checkpoints in run order \(each checkpoint_K folder's optimizer with its model\), 3 consecutive pairs, in \d+ ms\.$/);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('an FSDP sharded save dropped as a folder: one DCP checkpoint, its optimizer part from optimizer_0/ and its model part from pytorch_model_fsdp_0/', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, path.join(tmp, 'fsdp-sharded'));
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=dcp-note]'), 'DCP: one checkpoint of two DCP folders: the model part from pytorch_model_fsdp_0, the optimizer part from optimizer_0');
  const files = await page.locator('[data-testid=dcp-file-row]').evaluateAll((trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.deepEqual(files, ['optimizer_0/__0_0.distcp', 'optimizer_0/__1_0.distcp', 'pytorch_model_fsdp_0/__0_0.distcp', 'pytorch_model_fsdp_0/__1_0.distcp']);
  const entries = await page.locator('[data-testid=dcp-entry-row]').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[tr.cells.length - 1].textContent]));
  assert.deepEqual(entries, [['emb.weight', 'yes'], ['l1.weight', 'yes'], ['l1.bias', 'yes'], ['ln.weight', 'yes'], ['ln.bias', 'yes'],
    ['l2.weight', 'yes'], ['l2.bias', 'yes'], ['frozen.weight', 'no'], ['frozen.bias', 'no'], ['head.weight', 'tied to emb.weight']]);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('optimizer_0/ dropped alone: the viewer reaches no folder beside it, so it is an optimizer part without a model part', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFolder(page, path.join(tmp, 'fsdp-sharded', 'optimizer_0'));
  await page.waitForSelector('[data-testid=dcp-card]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=dcp-keys]'), 'Keys: 0 model keys, 32 optimizer keys, 0 other keys.');
  assert.equal(await page.locator('[data-testid=dcp-note]').count(), 0);
  assert.equal(await page.locator('[data-testid=dcp-entry-row]').count(), 0);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
