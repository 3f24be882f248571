// A DeepSpeed ZeRO checkpoint in the viewer (docs/viewer.md, docs/deepspeed.md), on the fixture
// folders of tests/fixtures/deepspeed: a save_dir picked with Open a run… → A folder…, its files
// dropped together, `ckptscope view DIR`, and one partition dropped alone. Every fact shown is the
// core's report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, dropFiles, shotAt } from './browser.mjs';
import { text } from './fixtures.mjs';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const FIXTURES = new URL('../fixtures/deepspeed/', import.meta.url).pathname;
const W2 = path.join(FIXTURES, 'zero2-w2');
const TAG = path.join(W2, 'global_step2');
const MODEL = 'mp_rank_00_model_states.pt';
const RANK = (r) => `zero_pp_rank_${r}_mp_rank_00_optim_states.pt`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-ds-view-'));
let viewer;
before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

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
