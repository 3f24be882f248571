// The viewer on a truncated file: a file that ends inside an entry (slot 0's header is there, its
// payload cut) is called what it is, an incomplete file, with the core's words; the cut entry is
// a row marked cut, and a slot tied to it says so. Every fact comes from the core's error (code,
// slot, offset): the texts below are asserted exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { viewerAndFolder, shotAt } from './browser.mjs';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const EXAMPLE = new URL('../../docs/examples/model.json', import.meta.url).pathname;   // 4 slots, 3 tied to 0; entries of slots 0 and 1
const { tmp, viewer } = viewerAndFolder('ckptscope-cut-');

/** The example checkpoint cut to its first `bytes` bytes (a download that stopped). */
function cut(bytes) {
  const whole = path.join(tmp, 'model.ckpt');
  if (!fs.existsSync(whole)) execFileSync(process.execPath, [CLI, 'write', EXAMPLE, whole]);
  const file = path.join(tmp, `cut-${bytes}.ckpt`);
  fs.writeFileSync(file, fs.readFileSync(whole).subarray(0, bytes));
  return file;
}

const text = (page, selector) => page.textContent(selector).then((t) => t.trim());

for (const width of [1440, 800]) {
  test(`slot 0's payload cut: the file is called incomplete, its entry cut, its tied slot too (${width} px)`, async () => {
    const page = await viewer.page({ width });
    await page.setInputFiles('[data-testid=file-input]', cut(300));
    // the problem card: the core's diagnostic and hint
    await page.waitForSelector('[data-testid=error-hint]');
    assert.equal(await text(page, '[data-testid=error]'), 'CUDA Adam checkpoint: truncated checkpoint (wanted 48 bytes, got 13)');
    assert.equal(await text(page, '[data-testid=error-hint]'), 'the file ends at least 35 bytes early: an incomplete copy or download?');
    // opening selects the slot the error names: its panel says what the core says, not "no entry"
    await page.waitForSelector('#entry-detail:not([hidden]) [data-testid=entry-cut]');
    assert.equal(await text(page, '#entry-detail h3'), 'Slot 0: its entry is cut short: the file ends in its field at byte 287');
    assert.equal(await text(page, '[data-testid=entry-cut]'), 'the file ends at least 35 bytes early: an incomplete copy or download?');
    assert.doesNotMatch(await page.textContent('#entries-card'), /no optimizer state entry/);
    // the table: no complete entry, the cut one as a row marked cut, selected
    assert.equal(await text(page, '#entry-count'), '0 of 2 declared');
    assert.equal(await page.locator('[data-testid=entry-row]').count(), 1);
    const row = page.locator('[data-testid=entry-row][data-index="0"]');
    // its cells: the slot, what it is, no figures, the cut mark
    assert.deepEqual(await row.locator(':scope > *').allTextContents(), ['0', 'entry cut short', '', '', '', '', '', '', 'cut']);
    assert.equal(await row.locator('span.unhealthy >> nth=0').getAttribute('title'), 'the file ends at least 35 bytes early: an incomplete copy or download?');
    assert.match(await row.getAttribute('class'), /selected/);
    await shotAt(page, 'cut-entry');
    // slot 3 shares slot 0's moments: its panel names the cut entry it uses
    await page.click('[data-testid=param-row][data-index="3"]');
    await page.waitForFunction(() => document.querySelector('#entry-detail h3')?.textContent.startsWith('Slot 3'));
    assert.equal(await text(page, '#entry-detail h3'), 'Slot 3: slot 0\'s entry, whose moments it shares, is cut short: the file ends in its field at byte 287');
    // slot 1's entry was never reached: not said to be missing from the file
    await page.click('[data-testid=param-row][data-index="1"]');
    await page.waitForFunction(() => document.querySelector('#entry-detail h3')?.textContent.startsWith('Slot 1'));
    assert.equal(await text(page, '#entry-detail h3'), 'Slot 1: no optimizer state entry read before the file ends');
    // a frozen slot is still frozen, not cut
    await page.click('[data-testid=param-row][data-index="2"]');
    await page.waitForFunction(() => document.querySelector('#entry-detail h3')?.textContent.startsWith('Slot 2'));
    assert.equal(await text(page, '#entry-detail h3'), 'Slot 2: frozen, no optimizer state');
    assert.equal(await page.locator('[data-testid=entry-cut]').count(), 0);
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  });
}

test('slot 1\'s payload cut after a complete entry: the complete one is a row as before, the cut one follows', async () => {
  const page = await viewer.page({ width: 1440 });
  await page.setInputFiles('[data-testid=file-input]', cut(470));
  await page.waitForSelector('#entry-detail:not([hidden]) [data-testid=entry-cut]');
  assert.equal(await text(page, '#entry-detail h3'), 'Slot 1: its entry is cut short: the file ends in its field at byte 443');
  assert.equal(await text(page, '[data-testid=entry-cut]'), 'the file ends at least 9 bytes early: an incomplete copy or download?');
  assert.equal(await text(page, '#entry-count'), '1 of 2 declared');
  assert.doesNotMatch(await page.textContent('[data-testid=entry-row][data-index="0"]'), /cut/);
  assert.match(await page.textContent('[data-testid=entry-row][data-index="1"]'), /^1.*cut$/);
  await page.context().close();
});

test('a file cut in an entry\'s id field: the cut row has no slot, and no slot is said to be cut or to have no entry', async () => {
  const page = await viewer.page({ width: 1440 });
  await page.setInputFiles('[data-testid=file-input]', cut(258));
  await page.waitForSelector('[data-testid=error-hint]');
  assert.equal(await text(page, '[data-testid=error-hint]'), 'the file ends at least 5 bytes early: an incomplete copy or download?');
  assert.match(await page.textContent('[data-testid=entry-row][data-index="0"]'), /^—.*cut$/);
  await page.click('[data-testid=param-row][data-index="0"]');
  await page.waitForSelector('#entry-detail:not([hidden]) h3');
  assert.equal(await text(page, '#entry-detail h3'), 'Slot 0: no optimizer state entry read before the file ends');
  await page.context().close();
});
