// Convert… between PyTorch and TorchLean in Debian's Chromium (docs/pytorch.md, docs/viewer.md):
// a TLADAMF file with its model-state file written as a torch.save file at the lr typed, a
// PyTorch optimizer paired with its model written as a TLADAMF file with the options its
// refusals name. The files are made at test time (tests/c/torch_pair_seeds.py, the CLI's
// `write` of docs/examples); each download streams through the viewer's service worker (made in
// memory on a page without cross-origin isolation) and is the CLI's `convert` output for the same
// options, byte for byte; a refusal is the core's text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, dropFiles, shotAt } from './browser.mjs';
import { text, waitText } from './fixtures.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-convert-torch-'));
const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const EXAMPLES = new URL('../../docs/examples/', import.meta.url).pathname;
const at = (name) => path.join(tmp, name);
const cli = (...args) => execFileSync(process.execPath, [CLI, ...args], { cwd: tmp, encoding: 'utf8' });
let viewer;

before(async () => {
  execFileSync('/usr/bin/python3', [new URL('../c/torch_pair_seeds.py', import.meta.url).pathname, tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  // model.ckpt: AdamW, slots [owner, owner, frozen, tied to 0]; state.ckpt its model-state file;
  // other-state.ckpt another model's (three tensors)
  for (const [json, file] of [['model.json', 'model.ckpt'], ['state.json', 'state.ckpt'], ['unhealthy-state.json', 'other-state.ckpt']]) {
    cli('write', path.join(EXAMPLES, json), at(file));
  }
  viewer = await startViewer();
});

after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const file = (name) => ({ bytes: fs.readFileSync(at(name)), name });
const KIND = 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it';
const NO_LR = 'a PyTorch optimizer file holds the learning rate and TorchLean does not store it: give it with --lr X';

/** The page with `names` dropped, the Convert… dialog open. */
async function openDialog(names) {
  const page = await viewer.page({ width: 1280, acceptDownloads: true });
  await dropFiles(page, names.map(file));
  await page.waitForSelector('#export-menu:not([hidden]) [data-testid=export-convert]', { state: 'attached' });
  await page.click('#export-menu summary');
  await page.click('[data-testid=export-convert]');
  await page.waitForSelector('[data-testid=convert-dialog]');
  return page;
}

/** Click Convert and read the download: {name, bytes}. */
async function convertAndRead(page) {
  const wait = page.waitForEvent('download', { timeout: 60000 });
  await page.click('[data-testid=convert-go]');
  const download = await wait;
  const stream = await download.createReadStream();
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return { name: download.suggestedFilename(), bytes: Buffer.concat(chunks) };
}

const refusal = (page) => page.textContent('[data-testid=convert-dialog] [data-testid=convert-refusal]');
const goEnabled = (page) => page.waitForSelector('[data-testid=convert-go]:not([disabled])');

test('a TLADAMF file with its model-state file, for PyTorch: no lr is the core\'s refusal; at the lr typed, the CLI\'s torch.save bytes', async () => {
  const page = await openDialog(['model.ckpt', 'state.ckpt']);
  await page.waitForSelector('[data-testid=convert-target][data-to="2"]');
  assert.equal(await text(page, '[data-testid=convert-torch-state]'),
    'Paired first with state.ckpt, the model-state file open beside it: a pair that does not fit is refused.');
  await page.check('[data-testid=convert-torch-target] input');
  // the lr is required: the core's own text
  await waitText(page, '[data-testid=convert-torch] [data-testid=convert-refusal]', NO_LR);
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  // a value that is no number is said before the core sees it
  await page.fill('[data-testid=convert-lr]', 'fast');
  await waitText(page, '[data-testid=convert-torch] [data-testid=convert-refusal]', 'lr takes a number, not fast');
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  await page.fill('[data-testid=convert-lr]', '3e-4');
  await goEnabled(page);
  assert.equal(await page.locator('[data-testid=convert-torch] [data-testid=convert-refusal]').count(), 0);
  await shotAt(page, 'convert-torch-out');
  const got = await convertAndRead(page);
  assert.equal(got.name, 'model.pt');
  cli('convert', 'model.ckpt', 'model.pt', '--lr', '3e-4', '--state', 'state.ckpt');
  assert.ok(got.bytes.equals(fs.readFileSync(at('model.pt'))), 'the download is the CLI\'s convert output, byte for byte');
  await page.waitForFunction(() => document.querySelector('[data-testid=convert-result]').textContent.startsWith('Saved model.pt:'));
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Saved model.pt: a torch.save file of the optimizer's state_dict, ${got.bytes.length.toLocaleString('en-US')} bytes (${(got.bytes.length / 1024).toFixed(1)} KiB), streamed to a download.`);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a TLADAMF file with a model-state file that does not pair: the pairing\'s failure, and no conversion', async () => {
  const page = await openDialog(['model.ckpt', 'other-state.ckpt']);
  await page.check('[data-testid=convert-torch-target] input');
  await page.fill('[data-testid=convert-lr]', '1e-3');
  await waitText(page, '[data-testid=convert-torch] [data-testid=convert-refusal]', 'state file has 3 tensors, the optimizer checkpoint has 4 parameter slots');
  assert.equal(await text(page, '[data-testid=convert-torch] [data-testid=convert-hint]'),
    'hint: convert checks the pair as `check --state` does: give the model-state file of this checkpoint, or leave --state out');
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a PyTorch optimizer with its model, for TorchLean: the weight-decay and kind refusals, each filled, then the CLI\'s TLADAMF bytes', async () => {
  const page = await openDialog(['lm.opt.pt', 'lm.model.bin']);
  assert.equal(await page.getAttribute('[data-testid=convert-dialog]', 'data-direction'), 'torchlean');
  // every option it needs, in one refusal
  await waitText(page, '[data-testid=convert-refusal]',
    `the groups' weight decays differ (group 0: 0.1, group 1: 0): TorchLean's file holds one configuration: --weight-decay X gives every slot one; ${KIND}`);
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  await page.fill('[data-testid=convert-weight-decay]', '0.1');
  // what is left: the kind
  await waitText(page, '[data-testid=convert-refusal]', KIND);
  await page.selectOption('[data-testid=convert-kind]', 'adamw');
  await goEnabled(page);
  assert.equal(await page.locator('[data-testid=convert-refusal]').count(), 0);
  await shotAt(page, 'convert-torch-in');
  const got = await convertAndRead(page);
  assert.equal(got.name, 'lm.opt.ckpt');
  cli('convert', 'lm.opt.pt', 'cli.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1');
  assert.ok(got.bytes.equals(fs.readFileSync(at('cli.ckpt'))), 'the download is the CLI\'s convert output, byte for byte');
  await page.waitForFunction(() => document.querySelector('[data-testid=convert-result]').textContent.startsWith('Saved lm.opt.ckpt:'));
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Saved lm.opt.ckpt: version 3, float32 moments, ${got.bytes.length.toLocaleString('en-US')} bytes (${(got.bytes.length / 1024).toFixed(1)} KiB), streamed to a download. Open it to see which readers load it.`);
  // version 2 cannot hold the tie: its refusal names untie; ticked, version 2 is written
  await page.selectOption('[data-testid=convert-version]', '2');
  await waitText(page, '[data-testid=convert-refusal]',
    'version 2 cannot hold tied parameters: --untie gives every alias its own copy of its owner\'s moments and step (loadable only where the model\'s weights are untied too)');
  await page.check('[data-testid=convert-untie]');
  await goEnabled(page);
  const v2 = await convertAndRead(page);
  cli('convert', 'lm.opt.pt', 'cli2.ckpt', '--state', 'lm.model.bin', '--kind', 'adamw', '--weight-decay', '0.1', '--to', '2', '--untie');
  assert.ok(v2.bytes.equals(fs.readFileSync(at('cli2.ckpt'))), 'version 2, untied: the CLI\'s bytes');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a PyTorch optimizer whose kind the file does not say, and amsgrad: each refusal names its option, the option given converts', async () => {
  let page = await openDialog(['mlp.opt.pt', 'mlp.model.bin']);
  await waitText(page, '[data-testid=convert-refusal]', KIND);
  await page.selectOption('[data-testid=convert-kind]', 'adam');
  await goEnabled(page);
  const mlp = await convertAndRead(page);
  cli('convert', 'mlp.opt.pt', 'mlp.ckpt', '--state', 'mlp.model.bin', '--kind', 'adam');
  assert.ok(mlp.bytes.equals(fs.readFileSync(at('mlp.ckpt'))), 'the CLI\'s bytes');
  // betas that are not two numbers are said before the core sees them
  await page.fill('[data-testid=convert-betas]', '0.9');
  await waitText(page, '[data-testid=convert-refusal]', 'betas take B1,B2 (two numbers), not 0.9');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();

  page = await openDialog(['cnn.opt.pt', 'cnn.model.bin']);
  // every option missing, named at once
  await waitText(page, '[data-testid=convert-refusal]',
    'amsgrad\'s max_exp_avg_sq has no place in TorchLean\'s Adam: --drop-amsgrad leaves it out (the next steps then divide by the second moment, not its running maximum); the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it');
  await page.check('[data-testid=convert-drop-amsgrad]');
  await page.selectOption('[data-testid=convert-kind]', 'adam');
  await goEnabled(page);
  const cnn = await convertAndRead(page);
  cli('convert', 'cnn.opt.pt', 'cnn.ckpt', '--state', 'cnn.model.bin', '--kind', 'adam', '--drop-amsgrad');
  assert.ok(cnn.bytes.equals(fs.readFileSync(at('cnn.ckpt'))), 'the CLI\'s bytes');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a file holding both converts as its optimizer paired with its own model: the CLI\'s bytes without --state', async () => {
  const page = await openDialog(['lm.both.pt']);
  await page.fill('[data-testid=convert-weight-decay]', '0.1');
  await page.selectOption('[data-testid=convert-kind]', 'adamw');
  await goEnabled(page);
  const got = await convertAndRead(page);
  assert.equal(got.name, 'lm.both.ckpt');
  cli('convert', 'lm.both.pt', 'both.ckpt', '--kind', 'adamw', '--weight-decay', '0.1');
  assert.ok(got.bytes.equals(fs.readFileSync(at('both.ckpt'))), 'the CLI\'s bytes');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a page without cross-origin isolation converts in memory: the same bytes, saved as a download', async () => {
  const plain = await startViewer();
  try {
    // a viewer hosted without the isolation headers: no shared memory, so no stream
    plain.server.prependListener('request', (req, res) => {
      const { writeHead } = res;
      res.writeHead = function (status, headers = {}) {
        const rest = { ...headers };
        delete rest['Cross-Origin-Opener-Policy'];
        delete rest['Cross-Origin-Embedder-Policy'];
        return writeHead.call(this, status, rest);
      };
    });
    const page = await plain.page({ acceptDownloads: true });
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
    await dropFiles(page, [file('rt.opt.pt'), file('rt.model.bin')]);
    await page.waitForSelector('#export-menu:not([hidden]) [data-testid=export-convert]', { state: 'attached' });
    await page.click('#export-menu summary');
    await page.click('[data-testid=export-convert]');
    await waitText(page, '[data-testid=convert-refusal]', KIND);
    await page.selectOption('[data-testid=convert-kind]', 'adamw');
    await page.selectOption('[data-testid=convert-version]', '5');
    await goEnabled(page);
    const got = await convertAndRead(page);
    assert.equal(got.name, 'rt.opt.ckpt');
    cli('convert', 'rt.opt.pt', 'rt5.ckpt', '--state', 'rt.model.bin', '--kind', 'adamw', '--to', '5');
    assert.ok(got.bytes.equals(fs.readFileSync(at('rt5.ckpt'))), 'the CLI\'s bytes');
    await page.waitForFunction(() => document.querySelector('[data-testid=convert-result]').textContent.startsWith('Saved rt.opt.ckpt:'));
    assert.equal(await text(page, '[data-testid=convert-result]'),
      `Saved rt.opt.ckpt: version 5, float32 moments, ${got.bytes.length.toLocaleString('en-US')} bytes (${(got.bytes.length / 1024).toFixed(1)} KiB). Open it to see which readers load it.`);
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    await plain.close();
  }
});
