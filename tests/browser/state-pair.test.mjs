// Model-state files (TLSF32B / TLPF32B) by themselves and with their optimizer checkpoint: the
// tensor table, errors with the hex view, the pair verdict with every failure, tied slots'
// equality, the parameter's statistics beside its moments; and files opened from the page
// address (`ckptscope view`), read over HTTP by range requests, bytes transferred counted.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, writeState } from '../../js/index.js';
import { startViewer, dropBytes, dropFiles, openExample, shot, shotAt } from './browser.mjs';
import { makeFile, writeBase, modelLayout } from '../js/table.mjs';
import { writeSparse } from '../js/sparse.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-state-'));
const viewers = [];
async function viewer(options) {
  const v = await startViewer(options);
  viewers.push(v);
  return v;
}
after(async () => {
  for (const v of viewers) await v.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const text = (page, sel) => page.textContent(sel);
const waitText = (page, sel, want) => page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want });

test('a state file opens by itself: header, tensor rows with names, statistics', async () => {
  const v = await viewer();
  const page = await v.page({ width: 1440 });
  await dropBytes(page, await writeBase('state'), 'model.tlsf');
  await page.waitForSelector('[data-testid=tensor-row]');
  assert.equal(await page.locator('[data-testid=tensor-row]').count(), 3);
  assert.equal(await text(page, '[data-testid=field-version]'), '1');
  assert.match(await text(page, '[data-testid=summary]'), /TorchLean float32 state checkpoint \(TLSF32B\)/);
  assert.equal(await text(page, '#tensor-count'), '3 tensors');
  assert.equal(await page.locator('#params-card').isHidden(), true);
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(['w', 'w_tied', 'b'])), 'names.json');
  await waitText(page, '[data-testid=tensor-row][data-index="2"] span:nth-child(2)', 'b');
  await page.click('[data-testid=tensor-row][data-index="2"]');
  await page.waitForSelector('#tensor-detail .moment');
  assert.match(await text(page, '#tensor-detail'), /^Tensor 2 \(b\): \[3\], 3 values at byte /);
  assert.match(await text(page, '#tensor-detail'), /mean\s*-1\.0000rms/);
  await page.click('#scan-tensors');
  await page.waitForFunction(() => /^Statistics for 3 tensors/.test(document.getElementById('status').textContent));
  assert.match(await text(page, '[data-testid=tensor-row][data-index="0"]'), /5\.00e-1/);
  await shotAt(page, 'state-file');
  await page.context().close();
});

test('a broken state file: the reference text, the field highlighted in the hex view, the tensors read', async () => {
  const v = await viewer();
  const page = await v.page();
  const bytes = await makeFile({ base: 'state', truncate: 100 });
  await dropBytes(page, bytes, 'cut.tlsf');
  await page.waitForSelector('#problem:not([hidden]) .hex .hit');
  assert.match(await text(page, '#problem [data-testid=error]'), /^StateIO: truncated checkpoint/);
  assert.ok(await page.locator('#problem .hex .hit').count() > 0);
  await shot(page, 'state-broken');
  await page.context().close();
});

test('two model-state files dropped on "Add model state…" at once: the one used is named', async () => {
  const v = await viewer();
  const page = await v.page({ width: 1440 });
  await dropBytes(page, await writeBase('model'), 'opt.ckpt');
  await waitText(page, '[data-testid=param-count]', '3 slots');
  const state = await writeBase('state');
  await dropFiles(page, [{ bytes: state, name: 'first.tlsf' }, { bytes: state, name: 'second.tlsf' }], '#state-label');
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  await page.waitForSelector('[data-testid=notice][data-file="second.tlsf"]');
  assert.equal(await text(page, '[data-testid=notice][data-file="second.tlsf"]'), 'second.tlsf: not used: one model-state file goes with the optimizer checkpoint, and first.tlsf (the first picked) is the one used.');
  assert.match(await text(page, '[data-testid=state-summary]'), /first\.tlsf/);
  await page.context().close();
});

test('optimizer and a truncated state file: never pairs; the state file\'s own diagnostic', async () => {
  const v = await viewer();
  const page = await v.page({ width: 1440 });
  const state = await writeBase('state');
  await dropFiles(page, [{ bytes: await writeBase('model'), name: 'opt.ckpt' }, { bytes: state.slice(0, state.length - 3), name: 'cut.tlsf' }]);
  await page.waitForSelector('[data-testid=pair-verdict].fails');
  assert.equal(await text(page, '[data-testid=pair-verdict] h2'), 'Does not pair: cut.tlsf is invalid');
  assert.equal(await text(page, '[data-testid=pair-verdict] [data-testid=error]'), 'StateIO: truncated checkpoint (wanted 12 bytes, got 9)');
  await page.context().close();
});

test('optimizer and state dropped together: the pair verdict; the parameter beside its moments', async () => {
  const v = await viewer();
  const page = await v.page({ width: 1440 });
  await dropFiles(page, [{ bytes: await writeBase('state'), name: 'model.tlsf' }, { bytes: await writeBase('model'), name: 'opt.ckpt' }]);
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=pair-verdict]'), "Pairs, in structure: same slots, same shapes, same ties; the values are not compared: `run` with both steps' state files compares them");
  // The optimizer is the main file whatever the order; the state file has its own header.
  assert.match(await text(page, '[data-testid=summary] .file'), /^opt\.ckpt$/);
  assert.match(await text(page, '[data-testid=state-summary]'), /model\.tlsf/);
  assert.deepEqual(await page.locator('[data-testid=tie-equality]').allTextContents(), ['slot 1 and slot 0: saved values equal']);
  await page.click('[data-testid=param-row][data-index="1"]');
  await page.waitForFunction(() => document.querySelectorAll('#entry-detail .moment').length === 3);
  assert.match(await text(page, '#entry-detail'), /θ \(the parameter, from the state file\)/);
  assert.match(await text(page, '#entry-detail h3'), /^Slot 1: tied: it shares slot 0's moments/);
  // the status line's bytes are the optimizer's (the file the header shows), state first or not
  assert.match(await text(page, '#status'), /^Opened model\.tlsf and opt\.ckpt in \d+ ms \(opt\.ckpt: /);
  // a layout dropped now is the optimizer's question, not the state file's
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(modelLayout)), 'layout.json');
  await page.waitForSelector('#compare:not([hidden]) .verdict.loads, #compare:not([hidden]) .verdict.fails');
  assert.match(await text(page, '#compare'), /opt\.ckpt into layout\.json/);
  await shotAt(page, 'pair');
  await page.context().close();
});

test('"Add model state…" and a pair that does not pair: every failure, the warnings, tied slots that differ', async () => {
  const v = await viewer();
  const page = await v.page();
  await dropBytes(page, await writeBase('model'), 'opt.ckpt');
  await waitText(page, '[data-testid=param-count]', '3 slots');
  // an optimizer checkpoint given as the model state is refused with words, nothing else changes
  const other = path.join(tmp, 'other.ckpt');
  fs.writeFileSync(other, await writeBase('model'));
  await page.setInputFiles('[data-testid=state-input]', other);
  await page.waitForSelector('[data-testid=notice][data-file="other.ckpt"]');
  assert.match(await text(page, '[data-testid=notice]'), /^other\.ckpt: an optimizer checkpoint, not a model-state file/);
  assert.equal(await page.locator('#pair').isVisible(), false);
  const state = path.join(tmp, 'short.tlsf');
  fs.writeFileSync(state, await writeBase('state-short'));
  await page.setInputFiles('[data-testid=state-input]', state);
  await page.waitForSelector('[data-testid=pair-verdict].fails');
  assert.equal(await text(page, '[data-testid=pair-verdict] > strong'), 'Does not pair: 2 failures.');
  assert.deepEqual(await page.locator('[data-testid=pair-failure] [data-testid=error]').allTextContents(), [
    'state file has 2 tensors, the optimizer checkpoint has 3 parameter slots',
    'parameter 1: state shape [3, 2] differs from the optimizer\'s #[2, 3]',
  ]);
  // The mismatched example: tied values that differ, and a warning about the frozen slot.
  await openExample(page, 'mismatched');
  await page.waitForFunction(() => document.querySelector('[data-testid=state-summary] .file')?.textContent === 'drifted.tlsf');
  await page.waitForSelector('[data-testid=pair-verdict].fails');
  assert.equal(await text(page, '[data-testid=pair-verdict] > strong'), 'Does not pair: 1 failure.');
  assert.equal(await text(page, '[data-testid=pair-failure] [data-testid=error]'), 'parameter 10 is tied to parameter 0 but their saved values differ (first at element 5)');
  assert.equal(await text(page, '[data-testid=pair-failure] [data-testid=error-slot]'), 'slot 10 (head.weight)');
  // The verdict reads the state file's headers and tied values only (docs/format.md 6): the frozen
  // slot's NaN is warned about once its values are read, by the statistics of every tensor.
  assert.equal(await page.locator('#pair [data-testid=warning]').count(), 0);
  await page.click('#scan-tensors');
  await page.waitForSelector('#pair [data-testid=warning]');
  assert.equal(await text(page, '#pair [data-testid=warning]'), 'warning: parameter 1 (frozen): its saved values hold 1 NaN and 0 infinite values');
  assert.equal(await text(page, '[data-testid=tie-equality]'), 'slot 10 head.weight and slot 0 embed.weight: saved values differ (failure 1 above)');
  // the failure's byte is in the state file: named, and its bytes shown
  assert.match(await text(page, '[data-testid=pair-failure]'), /\(4 bytes of drifted\.tlsf\)/);
  assert.equal(await page.locator('[data-testid=pair-failure] .hex').count(), 1);
  // A state file that does not pair is not used by the health pass (docs/health.md): the frozen
  // slot is "frozen", its NaN parameter unread there, and the pass says why.
  await page.waitForSelector('[data-testid=health-row][data-index="1"]');
  assert.equal(await text(page, '[data-testid=health-row][data-index="1"] span:nth-child(3)'), 'frozen');
  assert.match(await text(page, '[data-testid=health-state]'), /\(the files do not pair: see above\)/);
  assert.equal(await text(page, '[data-testid=health-run]'), 'Run again');
  await shotAt(page, 'pair-mismatched');
  await page.context().close();
});

test('opened from the address (ckptscope view): range requests over HTTP, the bytes transferred for a 20 GB file', async () => {
  const big = path.join(tmp, 'sparse-20gb.ckpt');
  const size = writeSparse(big, { slots: 5, elements: 2 ** 29 });
  const v = await viewer({ files: [big] });
  const page = await v.page({ url: v.server.viewerUrl });
  await waitText(page, '[data-testid=param-count]', '5 slots');
  const transferred = Number(await page.getAttribute('[data-testid=summary]', 'data-bytes-transferred'));
  console.log(`# ${size.toLocaleString('en-US')}-byte file opened over HTTP: ${transferred.toLocaleString('en-US')} bytes transferred (${await text(page, '[data-testid=io]')})`);
  assert.ok(transferred > 0 && transferred < 64 * 1024, `transferred ${transferred}`);
  assert.match(await text(page, '[data-testid=io]'), /^21,474,836,831 bytes \(20\.0 GiB\); [\d,]+ bytes transferred over HTTP in \d+ range requests?$/);
  assert.equal(await page.locator('[data-testid=entry-row]').count(), 5);
  // Every request stayed on the page's own server.
  assert.deepEqual(page.requests.filter((u) => !u.startsWith(`${v.server.origin}/`)), []);
  assert.deepEqual(page.consoleErrors, []);
  await shot(page, 'url-20gb');
  await page.context().close();
  fs.rmSync(big);
});

test('an optimizer file and its state file from the address open as a pair', async () => {
  const opt = path.join(tmp, 'opt step 5.ckpt'), state = path.join(tmp, 'model#5.tlsf');
  fs.writeFileSync(opt, await writeBase('model'));
  fs.writeFileSync(state, await writeState({ family: 'TLSF32B', shapes: [[2, 3], [2, 3], [3]], values: [new Float32Array(6).fill(0.5), new Float32Array(6).fill(0.5), new Float32Array(3).fill(-1)] }));
  const v = await viewer({ files: [opt, state] });
  const page = await v.page({ url: v.server.viewerUrl });
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=summary] .file'), 'opt step 5.ckpt');
  assert.match(await text(page, '[data-testid=state-summary] .file'), /^model#5\.tlsf$/);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('from the address (ckptscope view): a checkpoint and a layout JSON compare; two optimizer checkpoints compare', async () => {
  const opt = path.join(tmp, 'tied.ckpt'), layout = path.join(tmp, 'untied.json'), other = path.join(tmp, 'again.ckpt');
  fs.writeFileSync(opt, await writeBase('model'));
  fs.writeFileSync(layout, JSON.stringify({ ...modelLayout, representatives: [0, 1, 2] }));
  fs.writeFileSync(other, await writeBase('model'));
  const v = await viewer({ files: [opt, layout] });
  let page = await v.page({ url: v.server.viewerUrl });
  await page.waitForSelector('#compare:not([hidden]) .verdict.fails');
  assert.match(await text(page, '#compare'), /tied\.ckpt into untied\.json/);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'tied.ckpt');
  await page.context().close();
  const v2 = await viewer({ files: [opt, other] });
  page = await v2.page({ url: v2.server.viewerUrl });
  await page.waitForSelector('#compare:not([hidden]) .verdict.loads');
  assert.match(await text(page, '#compare'), /tied\.ckpt into again\.ckpt/);
  assert.equal(await page.locator('#pair').isVisible(), false);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a file the server does not have: the problem view says which URL and what the server answered', async () => {
  const file = path.join(tmp, 'gone.ckpt');
  fs.writeFileSync(file, await writeCheckpoint({ shapes: [[1]], requiresGrad: [true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, entries: [{ id: 0, step: 1, m: [0], v: [0] }] }));
  const v = await viewer({ files: [file] });
  // `view` opened the file once and serves that: removing it changes nothing
  fs.rmSync(file);
  const served = await v.page({ url: v.server.viewerUrl });
  await served.waitForSelector('[data-testid=field-version]');
  await served.context().close();
  // an address naming a file the server does not serve (a stale link, another view's token)
  const stale = v.server.viewerUrl.replace(/%2Ffiles%2F[^%]+%2F/, '%2Ffiles%2Fnot-a-token%2F');
  assert.notEqual(stale, v.server.viewerUrl);
  const page = await v.page({ url: stale });
  await page.waitForSelector('#problem:not([hidden])');
  assert.match(await text(page, '#problem h2'), /^Could not read gone\.ckpt/);
  assert.match(await text(page, '#problem [data-testid=error]'), /gone\.ckpt: HTTP 404/);
  await page.context().close();
});
