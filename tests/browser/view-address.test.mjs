// Files named by the page address, as `ckptscope view` gives them (js/server/server.js viewerUrl):
// every one is sorted as a drop is: a NAMES.json (served as the names the CLI read) labels the
// slots, a checkpoint and its state open as a pair, three or more checkpoints open as a run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../js/index.js';
import { viewerUrl } from '../../js/server/server.js';
import { startViewer } from './browser.mjs';
import { writeBase } from '../js/table.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-address-'));
const viewers = [];
after(async () => {
  for (const v of viewers) await v.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function viewer(files) {
  const v = await startViewer({ files, passes: true });
  viewers.push(v);
  return v;
}

const text = (page, sel) => page.textContent(sel);
const waitText = (page, sel, want) => page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want });

test('OPT STATE NAMES.json from the address: the pair, and the names label the slots', async () => {
  const opt = path.join(tmp, 'opt.ckpt'), state = path.join(tmp, 'opt.tlsf');
  fs.writeFileSync(opt, await writeBase('model'));
  fs.writeFileSync(state, await writeBase('state'));
  const names = ['w', 'w_tied', 'b'];
  const v = await viewer([opt, state, { path: path.join(tmp, 'names.json'), names }]);
  const page = await v.page({ url: v.server.viewerUrl, width: 1440 });
  await page.waitForSelector('[data-testid=pair-verdict]');
  await waitText(page, '[data-testid=param-row][data-index="2"] span:nth-child(2)', 'b');
  assert.deepEqual(await page.locator('[data-testid=param-row] span:nth-child(2)').allTextContents(), names);
  assert.match(await text(page, '[data-testid=state-summary]'), /opt\.tlsf/);
  await page.context().close();
});

test('four checkpoints and names from the address: one run, every file in it, the slots named', async () => {
  // the examples' AdamW run, made by the page's own writers, then served as files
  const maker = await viewer([]);
  const made = await maker.page();
  const series = await made.evaluate(async () => {
    const { adamSeries } = await import('/examples.js');
    return (await adamSeries({ saves: [3, 4, 8, 9] })).map((f) => ({ name: f.name, data: Array.from(f.bytes) }));
  });
  await made.context().close();
  const paths = series.map((f) => {
    const p = path.join(tmp, f.name);
    fs.writeFileSync(p, new Uint8Array(f.data));
    return p;
  });
  const want = await run(paths.filter((p) => p.endsWith('.ckpt')));
  const names = ['fc.weight', 'fc.bias', 'embed.frozen', 'out.weight'];
  const v = await viewer([...paths, { path: path.join(tmp, 'run-names.json'), names }]);
  assert.equal(v.server.viewerUrl, viewerUrl(v.server.origin, v.server.files.map((f) => f.url)));
  const page = await v.page({ url: v.server.viewerUrl, width: 1440 });
  await page.waitForSelector('[data-testid=run-first]');
  assert.deepEqual(await page.locator('[data-testid=run-file] td:last-child').allTextContents(), ['step-3.ckpt', 'step-4.ckpt', 'step-8.ckpt', 'step-9.ckpt']);
  assert.deepEqual(await page.locator('[data-testid=run-file] td:nth-child(6)').allTextContents(), ['step-3.tlsf', 'step-4.tlsf', 'step-8.tlsf', 'step-9.tlsf'], 'states paired by stem');
  assert.equal(await page.locator('[data-testid=run-pair]').count(), want.pairs.length);
  assert.equal(want.pairs.length, 3);
  await page.click('[data-testid=run-pair] >> nth=0 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]');
  const rows = await page.locator('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]').evaluateAll((l) => l.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
  assert.deepEqual(rows, [['0', 'fc.weight'], ['1', 'fc.bias'], ['3', 'out.weight']]);
  await page.context().close();
});
