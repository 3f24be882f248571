// Convert… of a DeepSpeed folder in Debian's Chromium (docs/viewer.md, docs/deepspeed.md "As
// PyTorch or TorchLean files: convert"): the fixture folder tests/fixtures/deepspeed/zero2-w2,
// opened with Open a run… → A folder…, written as its torch.optim optimizer.pt and fp32 model
// (torch.save and safetensors) and as a TLADAMF file. Each download streams through the viewer's
// service worker and is, byte for byte, what the package's Node API writes for the same folder and
// options; a refusal (a missing kind, a folder that fails a check) is the core's text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { viewerAndFolder, shotAt } from './browser.mjs';
import { text, waitText } from './fixtures.mjs';
import { consolidate, convert, open, universalPlan, convertToUniversal } from '../../js/index.js';

const FIXTURES = new URL('../fixtures/deepspeed/', import.meta.url).pathname;
const W2 = path.join(FIXTURES, 'zero2-w2');
const RANK = (r) => `zero_pp_rank_${r}_mp_rank_00_optim_states.pt`;
const { tmp, viewer } = viewerAndFolder('ckptscope-convert-ds-');
const at = (name) => path.join(tmp, name);
const KIND = 'the file does not say whether its optimizer is Adam or AdamW (its groups have no decoupled_weight_decay): --kind adam|adamw says it';
/** The page with the folder `dir` picked, its card's Convert… dialog open. */
async function openDialog(dir, width = 1280) {
  const page = await viewer.page({ width, acceptDownloads: true });
  await page.setInputFiles('[data-testid=run-folder-input]', dir);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden]) [data-testid=ds-convert]', { timeout: 60000 });
  await page.click('[data-testid=ds-convert]');
  await page.waitForSelector('[data-testid=convert-dialog][data-direction=deepspeed]');
  return page;
}

/** Click `selector` and read the download: {name, bytes}. */
async function saveAndRead(page, selector) {
  await page.waitForSelector(`${selector}:not([disabled])`);
  const wait = page.waitForEvent('download', { timeout: 60000 });
  await page.click(selector);
  const download = await wait;
  const stream = await download.createReadStream();
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return { name: download.suggestedFilename(), bytes: Buffer.concat(chunks) };
}

/** A size as the dialog says it (web/format.js bytes). */
const size = (n) => `${n.toLocaleString('en-US')} bytes${n >= 1024 ? ` (${(n / 1024).toFixed(1)} KiB)` : ''}`;
const result = (page, start) => page.waitForFunction((start) => document.querySelector('[data-testid=convert-result]').textContent.startsWith(start), start);

test('a DeepSpeed folder as optimizer.pt and its fp32 model (torch.save, then safetensors): the Node API\'s consolidate bytes', async () => {
  const page = await openDialog(W2);
  assert.equal(await text(page, '[data-testid=convert-dialog] h2'), 'Convert zero2-w2');
  assert.equal(await page.isChecked('[data-testid=ds-target-pair] input'), true);
  assert.equal(await text(page, '[data-testid=ds-save-optimizer]'), 'Save zero2-w2-optimizer.pt');
  assert.equal(await text(page, '[data-testid=ds-save-model]'), 'Save zero2-w2-model.pt');
  assert.equal(await page.isDisabled('[data-testid=convert-kind]'), true);
  await shotAt(page, 'convert-deepspeed-pair');
  await consolidate(W2, at('zero2-w2-optimizer.pt'), at('zero2-w2-model.pt'));
  const opt = await saveAndRead(page, '[data-testid=ds-save-optimizer]');
  assert.equal(opt.name, 'zero2-w2-optimizer.pt');
  assert.ok(opt.bytes.equals(fs.readFileSync(at('zero2-w2-optimizer.pt'))), 'the optimizer download is consolidate\'s, byte for byte');
  await result(page, 'Saved zero2-w2-optimizer.pt:');
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Saved zero2-w2-optimizer.pt: the torch.optim state dict, ${size(opt.bytes.length)}, streamed to a download.`);
  const model = await saveAndRead(page, '[data-testid=ds-save-model]');
  assert.equal(model.name, 'zero2-w2-model.pt');
  assert.ok(model.bytes.equals(fs.readFileSync(at('zero2-w2-model.pt'))), 'the model download is consolidate\'s, byte for byte');
  await result(page, 'Saved zero2-w2-model.pt:');
  // the model as safetensors
  await page.selectOption('[data-testid=ds-model-format]', 'safetensors');
  assert.equal(await text(page, '[data-testid=ds-save-model]'), 'Save zero2-w2-model.safetensors');
  await consolidate(W2, at('o2.pt'), at('zero2-w2-model.safetensors'));
  const st = await saveAndRead(page, '[data-testid=ds-save-model]');
  assert.equal(st.name, 'zero2-w2-model.safetensors');
  assert.ok(st.bytes.equals(fs.readFileSync(at('zero2-w2-model.safetensors'))), 'the safetensors download is consolidate\'s, byte for byte');
  await result(page, 'Saved zero2-w2-model.safetensors:');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DeepSpeed folder as TLADAMF: the missing kind is the core\'s refusal; with the options typed, the Node API\'s convert bytes', async () => {
  const page = await openDialog(W2);
  await page.check('[data-testid=ds-target-tladamf] input');
  await waitText(page, '[data-testid=convert-dialog] [data-testid=convert-refusal]', KIND);
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  assert.equal(await page.isHidden('[data-testid=ds-save-optimizer]'), true);
  // a value that is no number is said before the core sees it
  await page.waitForSelector('[data-testid=convert-kind] option[value=adamw]', { state: 'attached' });
  await page.selectOption('[data-testid=convert-kind]', 'adamw');
  await page.fill('[data-testid=convert-eps]', 'tiny');
  await waitText(page, '[data-testid=convert-dialog] [data-testid=convert-refusal]', 'eps takes a number, not tiny');
  await page.fill('[data-testid=convert-eps]', '');
  await page.waitForSelector('[data-testid=convert-go]:not([disabled])');
  await shotAt(page, 'convert-deepspeed-tladamf');
  const got = await saveAndRead(page, '[data-testid=convert-go]');
  assert.equal(got.name, 'zero2-w2.ckpt');
  const want = await convert(W2, at('zero2-w2.ckpt'), { to: 'oldest', kind: 'adamw' });
  assert.ok(got.bytes.equals(fs.readFileSync(at('zero2-w2.ckpt'))), 'the download is convert\'s, byte for byte');
  await result(page, 'Saved zero2-w2.ckpt:');
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Saved zero2-w2.ckpt: TLADAMF version ${want.version}, ${want.dtype} moments, ${size(got.bytes.length)}, streamed to a download. Open it to see which readers load it.`);
  // version 4 needs a random counter the folder does not hold: the core's refusal names it; with
  // one typed, and a weight decay, the bytes convert writes with them
  await page.fill('[data-testid=convert-weight-decay]', '0.05');
  await page.selectOption('[data-testid=convert-version]', '4');
  await waitText(page, '[data-testid=convert-dialog] [data-testid=convert-refusal]',
    'version 4 always holds a random counter and the file has none: --random-counter N supplies one');
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  await page.fill('[data-testid=convert-random-counter]', '7');
  const wd = await saveAndRead(page, '[data-testid=convert-go]');
  await convert(W2, at('wd.ckpt'), { to: 4, kind: 'adamw', weightDecay: 0.05, randomCounter: 7 });
  assert.ok(wd.bytes.equals(fs.readFileSync(at('wd.ckpt'))), 'with --to 4 --weight-decay 0.05 --random-counter 7, convert\'s bytes');
  await result(page, 'Saved zero2-w2.ckpt: TLADAMF version 4,');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a ZeRO-3 bf16 folder: optimizer.pt and model.safetensors, the Node API\'s consolidate bytes', async () => {
  const dir = path.join(FIXTURES, 'zero3-w2-bf16');
  const page = await openDialog(dir);
  await page.selectOption('[data-testid=ds-model-format]', 'safetensors');
  await consolidate(dir, at('zero3-w2-bf16-optimizer.pt'), at('zero3-w2-bf16-model.safetensors'));
  const opt = await saveAndRead(page, '[data-testid=ds-save-optimizer]');
  assert.equal(opt.name, 'zero3-w2-bf16-optimizer.pt');
  assert.ok(opt.bytes.equals(fs.readFileSync(at('zero3-w2-bf16-optimizer.pt'))), 'the optimizer download is consolidate\'s, byte for byte');
  await result(page, 'Saved zero3-w2-bf16-optimizer.pt:');
  const model = await saveAndRead(page, '[data-testid=ds-save-model]');
  assert.equal(model.name, 'zero3-w2-bf16-model.safetensors');
  assert.ok(model.bytes.equals(fs.readFileSync(at('zero3-w2-bf16-model.safetensors'))), 'the model download is consolidate\'s, byte for byte');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DeepSpeed folder that fails a check: Convert… shows its own diagnostic and saves nothing', async () => {
  const norank = at('norank');
  fs.cpSync(W2, norank, { recursive: true });
  fs.rmSync(path.join(norank, 'global_step2', RANK(1)));
  const ck = await open(norank);
  const error = ck.summary.error.message;
  ck.close();
  await assert.rejects(consolidate(norank, at('n.pt'), at('m.pt')), (err) => err.message === error);
  const page = await openDialog(norank, 800);
  await waitText(page, '[data-testid=convert-dialog] [data-testid=convert-refusal]', error);
  assert.equal(await page.isDisabled('[data-testid=ds-save-optimizer]'), true);
  assert.equal(await page.isDisabled('[data-testid=ds-save-model]'), true);
  await page.check('[data-testid=ds-target-tladamf] input');
  await page.waitForSelector('[data-testid=convert-kind] option[value=adamw]', { state: 'attached' });
  await page.selectOption('[data-testid=convert-kind]', 'adamw');
  await waitText(page, '[data-testid=convert-dialog] [data-testid=convert-refusal]', error);
  assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
  // the 800 px layout: the dialog fits the page's width
  const box = await page.locator('[data-testid=convert-dialog]').boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 800, `the dialog fits 800 px: ${JSON.stringify(box)}`);
  await shotAt(page, 'convert-deepspeed-refused');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

// Cancel works from the click on: with the service worker stubbed silent (it never answers, as in
// export-stream.test.mjs), Cancel ends the conversion as cancelled at once, nothing downloaded.
// The dialog opens here from the Export menu.
test('Convert… from the Export menu; Cancel while the download has not begun: cancelled, nothing saved, the dialog usable', async () => {
  const page = await viewer.page({ acceptDownloads: true });
  await page.context().addInitScript(() => {
    const registration = { active: { postMessage() {} } };
    Object.defineProperty(ServiceWorkerContainer.prototype, 'ready', { get: () => Promise.resolve(registration) });
    ServiceWorkerContainer.prototype.register = () => Promise.resolve(registration);
  });
  await page.reload();
  await page.waitForSelector('#examples button', { state: 'attached' });
  await page.setInputFiles('[data-testid=run-folder-input]', W2);
  await page.waitForSelector('#export-menu:not([hidden]) [data-testid=export-convert]', { state: 'attached', timeout: 60000 });
  await page.click('#export-menu summary');
  assert.equal(await text(page, '[data-testid=export-convert]'), 'Convert… (optimizer.pt and model, or TorchLean TLADAMF)');
  await page.click('[data-testid=export-convert]');
  await page.waitForSelector('[data-testid=convert-dialog][data-direction=deepspeed]');
  let downloads = 0;
  page.on('download', () => downloads++);
  assert.equal(await page.isHidden('[data-testid=convert-cancel]'), true);
  await page.waitForSelector('[data-testid=ds-save-optimizer]:not([disabled])');
  await page.click('[data-testid=ds-save-optimizer]');
  await page.waitForSelector('[data-testid=convert-cancel]', { state: 'visible' });
  assert.equal(await page.isDisabled('[data-testid=ds-save-model]'), true);
  await page.click('[data-testid=convert-cancel]');
  await waitText(page, '[data-testid=convert-result]', 'Conversion cancelled.');
  assert.equal(downloads, 0);
  assert.equal(await page.isHidden('[data-testid=convert-cancel]'), true);
  assert.equal(await page.isHidden('[data-testid=convert-progress]'), true);
  await page.waitForSelector('[data-testid=ds-save-model]:not([disabled])');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

/** A page whose showDirectoryPicker answers the origin's private file system (a folder dialog has
 *  no automation), the folder `dir` open and its Convert… dialog showing. */
async function withFolderPicker(dir, picker = true) {
  const page = await viewer.page({ width: 1280 });
  await page.context().addInitScript((picker) => {
    if (picker) window.showDirectoryPicker = () => navigator.storage.getDirectory();
    else delete window.showDirectoryPicker;
  }, picker);
  await page.reload();
  await page.waitForSelector('#examples button', { state: 'attached' });
  await page.setInputFiles('[data-testid=run-folder-input]', dir);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden]) [data-testid=ds-convert]', { timeout: 60000 });
  await page.click('[data-testid=ds-convert]');
  await page.waitForSelector('[data-testid=convert-dialog][data-direction=deepspeed]');
  return page;
}

/** Every file under the private file system's root: {path: bytes}. */
async function privateFiles(page) {
  const listed = await page.evaluate(async () => {
    const out = {};
    const walk = async (dir, at) => {
      for await (const [name, h] of dir.entries()) {
        if (h.kind === 'directory') await walk(h, `${at}${name}/`);
        else out[`${at}${name}`] = Array.from(new Uint8Array(await (await h.getFile()).arrayBuffer()));
      }
    };
    await walk(await navigator.storage.getDirectory(), '');
    return out;
  });
  return Object.fromEntries(Object.entries(listed).map(([k, v]) => [k, Buffer.from(v)]));
}

test('where the page can write a folder: the universal checkpoint, file for file convertToUniversal\'s; ZeRO-3 refused in the core\'s words', async () => {
  const page = await withFolderPicker(W2);
  await page.check('[data-testid=ds-target-universal] input');
  await page.waitForSelector('[data-testid=ds-save-universal]:not([disabled])');
  assert.equal(await page.isHidden('[data-testid=ds-save-optimizer]'), true);
  await page.click('[data-testid=ds-save-universal]');
  await result(page, 'Wrote ');
  const { tag, files, warnings } = await universalPlan(W2);
  const out = at('universal');
  fs.mkdirSync(out);
  await convertToUniversal(W2, path.join(out, tag));
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Wrote ${tag}: a DeepSpeed universal checkpoint of ${files.length} files, and latest_universal naming it, into the folder picked.${warnings.map((w) => `warning: ${w}`).join('')}`);
  // the fixture's model states have no universal_checkpoint_info: the core's warning, as it is
  assert.deepEqual(await page.locator('[data-testid=convert-warning]').allTextContents(), warnings.map((w) => `warning: ${w}`));
  assert.deepEqual(warnings, ['DeepSpeed: the model states have no universal_checkpoint_info (ds_to_universal refuses them); written as for an empty one']);
  const got = await privateFiles(page);
  const want = { latest_universal: fs.readFileSync(path.join(out, 'latest_universal')) };
  for (const f of files) want[`${tag}/${f}`] = fs.readFileSync(path.join(out, tag, ...f.split('/')));
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const k of Object.keys(want)) assert.ok(got[k].equals(want[k]), `${k}: convertToUniversal's bytes`);
  // written again into the same folder: refused, the folder there kept
  await page.click('[data-testid=ds-save-universal]');
  await result(page, 'Conversion failed:');
  assert.equal(await text(page, '[data-testid=convert-result]'),
    `Conversion failed: ${tag} is already in the folder picked: a universal checkpoint is written as a new folder`);
  assert.equal(Object.keys(await privateFiles(page)).length, Object.keys(want).length);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
  // ZeRO-3: the core's refusal, the button unavailable
  const z3 = path.join(FIXTURES, 'zero3-w2');
  const refused = await universalPlan(z3).then(() => null, (err) => err.message);
  assert.ok(refused);
  const p3 = await withFolderPicker(z3);
  await p3.check('[data-testid=ds-target-universal] input');
  await waitText(p3, '[data-testid=convert-dialog] [data-testid=convert-refusal]', refused);
  assert.equal(await p3.isDisabled('[data-testid=ds-save-universal]'), true);
  await shotAt(p3, 'convert-deepspeed-universal-refused');
  assert.deepEqual(p3.consoleErrors, []);
  await p3.context().close();
});

test('where the page cannot write a folder (no showDirectoryPicker): no universal checkpoint offered', async () => {
  const page = await withFolderPicker(W2, false);
  assert.equal(await page.locator('[data-testid=ds-target-universal]').count(), 0);
  await page.context().close();
});

// Cancel while the universal checkpoint is written: the folder picked is the private file system's
// root behind a gate that holds the creation of UTAG/ until the test has clicked Cancel; the
// UTAG/ begun is removed, latest_universal never written.
test('Cancel while the universal checkpoint is written: cancelled, the folder begun removed', async () => {
  const page = await viewer.page({ width: 1280 });
  await page.context().addInitScript(() => {
    let release;
    window.gate = new Promise((r) => (release = r));
    window.release = release;
    window.showDirectoryPicker = async () => {
      const root = await navigator.storage.getDirectory();
      return {
        kind: 'directory',
        name: root.name,
        getDirectoryHandle: async (name, options) => {
          const d = await root.getDirectoryHandle(name, options);
          if (options?.create) await window.gate;
          return d;
        },
        getFileHandle: (...a) => root.getFileHandle(...a),
        removeEntry: (...a) => root.removeEntry(...a),
      };
    };
  });
  await page.reload();
  await page.waitForSelector('#examples button', { state: 'attached' });
  await page.setInputFiles('[data-testid=run-folder-input]', W2);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden]) [data-testid=ds-convert]', { timeout: 60000 });
  await page.click('[data-testid=ds-convert]');
  await page.check('[data-testid=ds-target-universal] input');
  await page.waitForSelector('[data-testid=ds-save-universal]:not([disabled])');
  await page.click('[data-testid=ds-save-universal]');
  await page.waitForSelector('[data-testid=convert-cancel]', { state: 'visible' });
  await page.click('[data-testid=convert-cancel]');
  await page.evaluate(() => window.release());
  await waitText(page, '[data-testid=convert-result]', 'Conversion cancelled.');
  const names = await page.evaluate(async () => {
    const out = [];
    for await (const name of (await navigator.storage.getDirectory()).keys()) out.push(name);
    return out;
  });
  assert.deepEqual(names, [], 'nothing left in the folder picked, not even an empty UTAG/');
  assert.equal(await page.isHidden('[data-testid=convert-cancel]'), true);
  await page.waitForSelector('[data-testid=ds-save-universal]:not([disabled])');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
