// A Hugging Face Trainer's folders in the viewer (docs/viewer.md, docs/pytorch.md), made by torch
// at test time (tests/c/trainer_run_seeds.py): an output folder picked with Open a run… → A
// folder… is a run of its checkpoint-N folders by N, each optimizer with its own model, the
// recovered learning rate beside the one trainer_state.json logged; a checkpoint-N/ folder is its
// optimizer with its model, the kind training_args.bin says; `ckptscope view DIR` serves either,
// and the page opens them the same way.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { viewerAndFolder, viewFromCli, shotAt } from './browser.mjs';
import { text, waitText } from './fixtures.mjs';

const { tmp, viewer } = viewerAndFolder('ckptscope-trainer-view-');
const out = path.join(tmp, 'out');
before(() => {
  execFileSync('/usr/bin/python3', [new URL('../c/trainer_run_seeds.py', import.meta.url).pathname, tmp], { stdio: 'ignore' });
});

const SCHEDULER = 'not used: a Trainer run reads each checkpoint-N folder\'s optimizer, model, training_args.bin, trainer_state.json and config.json.';

/** The run card of `out`: four checkpoint folders by N, each with its own model, the logged rate. */
async function assertOutRun(page) {
  await page.waitForSelector('[data-testid=run-first]', { timeout: 60000 });
  assert.equal(await text(page, '[data-testid=run-first]'), 'One run: every pair continuous, no file flagged.');
  assert.deepEqual(await page.locator('[data-testid=run-file] td:last-child').allTextContents(), ['checkpoint-10', 'checkpoint-11', 'checkpoint-20', 'checkpoint-100']);
  assert.deepEqual(await page.locator('[data-testid=run-file] td:nth-child(2)').allTextContents(), ['10', '11', '20', '100']);
  assert.match(await text(page, '[data-testid=run-state]'), /^4 checkpoints in run order \(each checkpoint-N folder's optimizer with its model\), 3 consecutive pairs, in \d+ ms\.$/);
  assert.deepEqual(await page.locator('[data-testid=run-pair-logged]').allTextContents(), [' lr 9.100e-3 agrees with the one logged at step 10: 9.100e-3']);
  assert.deepEqual(await page.locator('[data-testid=run-pair-verdict]').allTextContents(), ['continuous', 'continuous', 'continuous']);
}

test('Open a run… → A folder… on a Trainer output folder: its checkpoint-N folders by N, trainer_state.json read, not refused', async () => {
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', out);
  await assertOutRun(page);
  // the run's slots are named by its models
  await page.click('[data-testid=run-pair] >> nth=0 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]');
  assert.equal(await page.locator('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot] >> nth=0').evaluate((tr) => tr.cells[1].textContent), '0.weight');
  // what the run does not read is said, file by file; trainer_state.json and training_args.bin are read
  const notices = await page.locator('[data-testid=notice]').evaluateAll((l) => l.map((li) => [li.dataset.file, li.textContent]));
  assert.deepEqual(notices.sort(), ['10', '100', '11', '20'].sort().map((n) => [`out/checkpoint-${n}/scheduler.pt`, `out/checkpoint-${n}/scheduler.pt: ${SCHEDULER}`]));
  // a file of the run opens with its model, the kind its folder's training_args.bin says
  await page.click('[data-testid=run-file] >> nth=1 >> button');
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'out/checkpoint-11/optimizer.pt');
  assert.equal(await text(page, '[data-testid=field-kind]'), 'AdamW');
  await shotAt(page, 'trainer-run');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a checkpoint-N/ folder picked whole: its optimizer with its model, AdamW as its training_args.bin says', async () => {
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', path.join(out, 'checkpoint-10'));
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '#pair .meta'), 'optimizer.pt with pytorch_model.bin');
  assert.equal(await text(page, '[data-testid=field-kind]'), 'AdamW');
  assert.equal(await text(page, '[data-testid=torch] h3'), 'AdamW, 1 param group');
  const notices = await page.locator('[data-testid=notice]').allTextContents();
  assert.deepEqual(notices.sort(), [
    'scheduler.pt: not opened: a Trainer folder\'s optimizer.pt is shown with its pytorch_model.bin.',
    'trainer_state.json: not opened: a Trainer folder\'s optimizer.pt is shown with its pytorch_model.bin.',
  ]);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('ckptscope view OUTPUT_DIR and view checkpoint-N/: the run, and the pair with its kind', async () => {
  const run = await viewFromCli(tmp, 'out');
  try {
    const page = await viewer.page({ width: 800, url: run.url });
    await assertOutRun(page);
    assert.equal(await page.locator('[data-testid=notices]').isHidden(), true, 'view serves only what the run reads');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    run.stop();
  }
  const one = await viewFromCli(tmp, 'out/checkpoint-10');
  try {
    const page = await viewer.page({ width: 800, url: one.url });
    await page.waitForSelector('[data-testid=pair-verdict].loads');
    assert.equal(await text(page, '#pair .meta'), 'optimizer.pt with pytorch_model.bin');
    await waitText(page, '[data-testid=field-kind]', 'AdamW');
    assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    one.stop();
  }
});
