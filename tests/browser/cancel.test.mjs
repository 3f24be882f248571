// The viewer's long passes (Scan: statistics of every entry; the health pass)
// stop on Cancel, and the files stay open: the next pass runs on them.
// A pair of large sparse files (8 GiB of moments, 4 GiB of parameters: holes, read as zeros)
// served by the viewer's server, as `ckptscope view OPT STATE` does.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer } from './browser.mjs';
import { writeSparse, writeSparseState } from '../js/sparse.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-cancel-'));
const opt = path.join(tmp, 'big.ckpt');
const state = path.join(tmp, 'big.tlsf');
let viewer;

before(async () => {
  writeSparse(opt, { slots: 8, elements: 2 ** 27 });
  writeSparseState(state, { tensors: 8, elements: 2 ** 27 });
  viewer = await startViewer({ files: [opt, state] });
});

after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The header card's size and byte count after the cancels: what opening the file read (the new
 *  worker opened it again; the cancelled passes' reads went with the worker that was ended). */
const IO_LINE = {
  served: '8,589,935,111 bytes (8.0 GiB); 4,320 bytes transferred over HTTP in 8 range requests',
  dropped: '8,589,935,111 bytes (8.0 GiB); 4,320 of 8,589,935,111 bytes read',
};

const idle = (page) => page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 30000 });

/** Click `selector` (a Cancel button) and wait for the text of `said` to be `text` (the pass
 *  stopped: the worker running it is ended and a new one opens the files); then the worker is
 *  idle again. The wait has the test's own timeout: a pass that does not stop fails it. */
async function cancel(page, selector, said, text) {
  await page.click(selector);
  await page.waitForFunction(({ said, text }) => document.querySelector(said).textContent === text, { said, text }, { timeout: 10000 });
  await idle(page);
}

for (const how of ['served', 'dropped']) {
  test(`${how} files: Cancel stops the health pass and Scan; the files stay open`, async () => {
    const page = await viewer.page(how === 'served' ? { url: viewer.server.viewerUrl } : undefined);
    if (how === 'dropped') await page.setInputFiles('[data-testid=file-input]', [opt, state]);
    await page.waitForSelector('[data-testid=pair-verdict].loads');
    await page.waitForSelector('[data-testid=health-run]');
    await idle(page);
    assert.ok(await page.isHidden('[data-testid=health-cancel]'), 'no Cancel while nothing runs');

    await page.click('[data-testid=health-run]');
    await page.waitForSelector('[data-testid=health-cancel]', { state: 'visible' });
    // the pass is under way: its progress has moved past 0% and not reached 100%
    await page.waitForFunction(() => /^Running the health pass… [1-9]\d?%$/.test(document.querySelector('[data-testid=health-state]').textContent), null, { timeout: 30000 });
    await cancel(page, '[data-testid=health-cancel]', '[data-testid=health-state]', 'Health pass cancelled.');
    assert.ok(await page.isHidden('[data-testid=health-cancel]'));

    // the files are open in the new worker: Scan reads them (its progress moves), then stops too
    await page.click('#scan');
    await page.waitForFunction(() => Number(document.getElementById('stats-progress').value) > 0, null, { timeout: 30000 });
    await cancel(page, '#cancel-scan', '#status', 'Statistics scan cancelled: statistics are not computed.');
    assert.ok(await page.isHidden('#scan-line'));
    assert.equal(await page.textContent('[data-testid=io]'), IO_LINE[how], 'the file\'s header is still shown');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  });
}
