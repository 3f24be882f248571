// A DeepSpeed ZeRO checkpoint in the viewer (docs/viewer.md, docs/deepspeed.md), on the fixture
// folders of tests/fixtures/deepspeed: a save_dir picked with Open a run… → A folder…, its files
// dropped together, `ckptscope view DIR`, and one partition dropped alone. Every fact shown is the
// core's report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { viewerAndFolder, viewFromCli, dropFiles, dropFolder, shotAt } from './browser.mjs';
import { text } from './fixtures.mjs';

const FIXTURES = new URL('../fixtures/deepspeed/', import.meta.url).pathname;
const W2 = path.join(FIXTURES, 'zero2-w2');
const TAG = path.join(W2, 'global_step2');
const MODEL = 'mp_rank_00_model_states.pt';
const RANK = (r) => `zero_pp_rank_${r}_mp_rank_00_optim_states.pt`;
const { tmp, viewer } = viewerAndFolder('ckptscope-ds-view-');

const rows = (page, id) => page.locator(`[data-testid=${id}]`).evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
const file = (name) => ({ name, bytes: fs.readFileSync(path.join(TAG, name)) });

/** The card of zero2-w2 (tests/fixtures/deepspeed/README.md): ZeRO-2 over 2 ranks, one group of
 *  7 trainable parameters, two frozen, head.weight tied to emb.weight. */
async function assertZero2(page) {
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '#deepspeed h2'), 'DeepSpeed ZeRO-2');
  assert.equal(await text(page, '[data-testid=ds-facts]'), 'ZeRO-2, stage 2, world size 2, float32 module, DeepSpeed 0.14.4, tag global_step2');
  assert.deepEqual(await rows(page, 'ds-file'), [
    [MODEL, '—', 'model states', '4,159', '—'],
    [RANK(0), '0', 'optimizer partition', '4,057', '0'],
    [RANK(1), '1', 'optimizer partition', '4,185', '3'],
  ]);
  assert.deepEqual(await rows(page, 'ds-group'), [['0', '0.01', '0.9, 0.999', '1e-8', '0.01', 'no', '7', '180', '0, 3', '2']]);
  assert.equal(await text(page, '[data-testid=ds-engine]'), 'The engine\'s global_steps 2, skipped_steps 0.');
}

/** The parameter table's names and ties, and the sharing map's one tie: head.weight (slot 9)
 *  shares emb.weight's state (shared_params). */
async function assertSlots(page) {
  assert.equal(await text(page, '[data-testid=param-count]'), '10 slots');
  const names = await page.locator('[data-testid=param-row]').evaluateAll((l) => l.map((r) => r.querySelector('span:nth-child(2)').textContent));
  assert.deepEqual(names, ['emb.weight', 'l1.weight', 'l1.bias', 'ln.weight', 'ln.bias', 'l2.weight', 'l2.bias', 'frozen.weight', 'frozen.bias', 'head.weight']);
  assert.equal(await text(page, '[data-testid=param-row][data-index="9"] span:nth-child(6)'), '→ 0 emb.weight');
  assert.equal(await page.getAttribute('[data-testid=sharing-map]', 'data-links'), '9>0');
  assert.match(await text(page, '[data-testid=map-legend]'), /1 tie in 1 group/);
}

test('Open a run… → A folder… on a DeepSpeed save_dir: the checkpoint, its DeepSpeed card, its named slots and tie', async () => {
  const page = await viewer.page({ width: 1000 });
  await page.setInputFiles('[data-testid=run-folder-input]', W2);
  await assertZero2(page);
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'zero2-w2');
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'valid');
  await assertSlots(page);
  assert.equal(await page.locator('[data-testid=ds-failure]').count(), 0);
  assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
  // health reads each parameter from its fragments, its fp32 master weights as the parameters,
  // at the groups' stored lr: the CLI's 5 ratio warnings
  await page.waitForFunction(() => !/^(Not run yet|Running)/.test(document.querySelector('[data-testid=health-state]').textContent), null, { timeout: 60000 });
  assert.match(await text(page, '[data-testid=health-state]'),
    /^10 slots in \d+ ms: 5 slots flagged\. The chart shows the update-to-weight ratio at the optimizer's param groups' lr 0\.01 \(log scale; ratio warnings fire outside /);
  assert.equal(await page.locator('[data-testid=health-chart]').getAttribute('data-mode'), 'ratio');
  await shotAt(page, 'deepspeed-folder');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DeepSpeed save_dir dropped as a folder: the same checkpoint as picked', async () => {
  const page = await viewer.page({ width: 1000 });
  await dropFolder(page, W2);
  await assertZero2(page);
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'zero2-w2');
  await assertSlots(page);
  assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a DeepSpeed folder that fails a check, or warns: the core\'s failures and warnings, word for word', async () => {
  const norank = path.join(tmp, 'norank'), nolatest = path.join(tmp, 'nolatest');
  fs.cpSync(W2, norank, { recursive: true });
  fs.rmSync(path.join(norank, 'global_step2', RANK(1)));
  fs.cpSync(W2, nolatest, { recursive: true });
  fs.rmSync(path.join(nolatest, 'latest'));
  let page = await viewer.page({ width: 1000 });
  await page.setInputFiles('[data-testid=run-folder-input]', norank);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  const missing = `DeepSpeed: rank 1 of 2 is missing: no ${RANK(1)}`;
  assert.deepEqual(await page.locator('[data-testid=ds-failure]').allTextContents(), [missing]);
  assert.equal(await text(page, '#deepspeed h3:last-of-type'), 'Fails a check');
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'invalid');
  assert.match(await text(page, '#problem'), new RegExp(`^Why this file is broken${missing.replace(/[.]/g, '\\.')}`));
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();

  page = await viewer.page({ width: 1000 });
  await page.setInputFiles('[data-testid=run-folder-input]', nolatest);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.deepEqual(await page.locator('[data-testid=warning]').allTextContents(),
    ['DeepSpeed: nolatest has no latest file: DeepSpeed\'s load_checkpoint() without a tag loads nothing; reading global_step2']);
  assert.equal(await text(page, '[data-testid=summary] .badge'), 'valid');
  assert.equal(await page.locator('[data-testid=ds-failure]').count(), 0);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the files of a tag folder dropped together: one checkpoint, a missing rank said, a file it does not read listed', async () => {
  let page = await viewer.page({ width: 1000 });
  await dropFiles(page, [file(MODEL), file(RANK(0)), file(RANK(1)), { name: 'notes.txt', bytes: Buffer.from('hi') }]);
  await assertZero2Files(page);
  assert.deepEqual(await page.locator('[data-testid=notice]').allTextContents(),
    ['notes.txt: not used: a DeepSpeed checkpoint dropped as files is read from its model states and optimizer partitions.']);
  await assertSlots(page);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();

  // a partition with its model states: read as the checkpoint, never one of them left out
  page = await viewer.page({ width: 1000 });
  await dropFiles(page, [file(MODEL), file(RANK(1))]);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), `${MODEL} and ${RANK(1)}`);
  assert.deepEqual((await rows(page, 'ds-file')).map((r) => r[0]), [MODEL, RANK(1)]);
  assert.deepEqual(await page.locator('[data-testid=ds-failure]').allTextContents(), [`DeepSpeed: rank 0 of 2 is missing: no ${RANK(0)}`]);
  assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

/** zero2-w2's tag folder's three files dropped as files: no tag, the rest as the folder's. */
async function assertZero2Files(page) {
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=ds-facts]'), 'ZeRO-2, stage 2, world size 2, float32 module, DeepSpeed 0.14.4');
  assert.deepEqual((await rows(page, 'ds-file')).map((r) => r[0]), [MODEL, RANK(0), RANK(1)]);
  assert.equal(await page.locator('[data-testid=ds-failure]').count(), 0);
}

test('one partition dropped alone: the core\'s note says to open its folder', async () => {
  const page = await viewer.page({ width: 1000 });
  await dropFiles(page, [file(RANK(1))]);
  await page.waitForSelector('[data-testid=deepspeed]:not([hidden])', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=ds-facts]'), 'ZeRO-2, stage 2, rank 1 of 2, DeepSpeed 0.14.4');
  assert.equal(await text(page, '[data-testid=ds-note]'),
    'DeepSpeed: this file is partition 1 of 2 of a DeepSpeed ZeRO-2 optimizer: each parameter\'s state is split across the 2 files of its folder; open its folder');
  assert.equal(await page.locator('[data-testid=ds-file]').count(), 0);
  assert.deepEqual(await rows(page, 'ds-group'), [['0', '0.01', '0.9, 0.999', '1e-8', '0.01', 'no', '—', '90', '3', '2']]);
  assert.deepEqual(await page.locator('[data-testid=warning]').allTextContents(),
    ['PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: "deepspeed.runtime.fp16.loss_scaler.LossScaler", "__builtin__.getattr", "deepspeed.runtime.zero.config.ZeroStageEnum", "deepspeed.utils.tensor_fragment.fragment_address"']);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('ckptscope view SAVE_DIR and view TAGDIR: the checkpoint, read through the served files', async () => {
  const save = await viewFromCli(FIXTURES, 'zero2-w2');
  try {
    const page = await viewer.page({ width: 1000, url: save.url });
    await assertZero2(page);
    await assertSlots(page);
    assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'zero2-w2');
    assert.equal(await page.locator('[data-testid=notices]').isHidden(), true, 'view serves only what the core reads');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    save.stop();
  }
  const tag = await viewFromCli(FIXTURES, 'zero2-w2/global_step2');
  try {
    const page = await viewer.page({ width: 1000, url: tag.url });
    await assertZero2Files(page);
    assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'global_step2');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    tag.stop();
  }
});
