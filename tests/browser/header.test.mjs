// One number style per column (an index plain, a count or step grouped, in every table), and
// the header card's step and parameter counts: the entries' step (their range when they
// differ), the trainable parameters (a tied storage once) and the frozen slots' or buffers'
// elements apart, the core's report's elementCounts of the same bytes (a state file: its
// tensors' stored values); a GPT with a tied head and mask buffers, made by torch, counted as
// torch counts its parameters.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, writeState, open } from '../../js/index.js';
import { startViewer, dropBytes, dropFiles } from './browser.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-header-'));
let viewer;
before(async () => {
  execFileSync('/usr/bin/python3', [new URL('../c/gpt_seeds.py', import.meta.url).pathname, tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const config = { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 };
const shapes = [[40, 50], [7], [40, 50], [3, 3, 3]];

function checkpoint(steps) {
  return writeCheckpoint({ shapes, requiresGrad: [true, true, true, false], representatives: [0, 1, 0, null], config,
    entries: [0, 1].map((id, k) => ({ id, step: steps[k], m: new Float32Array(id ? 7 : 2000), v: new Float32Array(id ? 7 : 2000) })) });
}

/** The header's field `key` (its .k label) -> its value text. */
const fields = (page) => page.locator('#summary .field').evaluateAll((l) => Object.fromEntries(l.map((f) => [f.querySelector('.k').textContent, f.querySelector('.v').textContent])));

for (const [steps, key, text] of [[[1200, 1300], 'Steps', '1,200–1,300'], [[1300, 1300], 'Step', '1,300']]) {
  test(`steps ${steps.join(', ')}: "${key}" ${text}; the trainable parameters, slot 2's tied storage once, the frozen slot apart`, async () => {
    const bytes = await checkpoint(steps);
    const ck = await open(bytes);
    const want = ck.report.elementCounts;
    ck.close();
    assert.deepEqual(want, { owned: 2000 + 7, tied: 2000, frozen: 27 });
    const page = await viewer.page();
    await dropBytes(page, bytes, 'opt.ckpt');
    await page.waitForSelector('[data-testid=field-params]');
    const got = await fields(page);
    assert.equal(got['Trainable parameters'], '2,007');
    assert.equal(got['Frozen or buffers'], '27');
    assert.equal(got.Parameters, undefined);
    assert.equal(got[key], text);
    assert.equal(got[key === 'Step' ? 'Steps' : 'Step'], undefined);
    assert.equal(await page.textContent('[data-testid=field-step]'), text);
    await page.context().close();
  });
}

test('a model-state file: its stored values, the sum of its tensors\' counts; no step', async () => {
  const values = shapes.map((s) => new Float32Array(s.reduce((a, b) => a * b, 1)));
  const bytes = await writeState({ family: 'TLSF32B', shapes, values });
  const ck = await open(bytes);
  const want = ck.report.tensors.reduce((a, t) => a + t.count, 0);
  ck.close();
  const page = await viewer.page();
  await dropBytes(page, bytes, 'model.tlsf');
  await page.waitForSelector('[data-testid=field-values]');
  const got = await fields(page);
  assert.equal(got['Stored values'], want.toLocaleString('en-US'));
  assert.equal(got.Parameters, undefined);
  assert.equal(got.Step, undefined);
  assert.equal(got.Steps, undefined);
  await page.context().close();
});

test('a GPT with lm_head tied to wte and a mask buffer per layer: its parameters as torch counts them, the buffers apart', async () => {
  const facts = JSON.parse(fs.readFileSync(path.join(tmp, 'facts.json'), 'utf8'));
  assert.deepEqual(facts, { parameters: 7520, stateDictValues: 8448, buffers: 128 });
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, ['gpt.opt.pt', 'gpt.model.bin'].map((name) => ({ bytes: fs.readFileSync(path.join(tmp, name)), name })));
  // a state dict does not say that attn.bias is a buffer: the pair cannot tell, and says on what it holds
  await page.waitForSelector('[data-testid=pair-verdict].cannot-tell');
  assert.equal(await page.textContent('[data-testid=pair-condition]'), 'PyTorch: h.0.attn.bias and h.1.attn.bias have no optimizer state: the pair holds only if the training code does not train them (frozen parameters, or buffers: --frozen h.0.attn.bias,h.1.attn.bias says so); if it trains them, torch\'s load_state_dict refuses this state (loaded state dict contains a parameter group that doesn\'t match the size of optimizer\'s group)');
  await page.waitForFunction(() => document.querySelector('[data-testid=field-params]')?.textContent === '7,520');
  const got = await fields(page);
  assert.equal(got['Trainable parameters'], '7,520');   // sum(p.numel() for p in model.parameters())
  assert.equal(got['Frozen or buffers'], '128');   // the two attn.bias masks
  assert.equal(await page.getAttribute('[data-testid=field-params]', 'title'),
    'the elements the optimizer updates, a tied slot\'s shared storage once: sum(p.numel() for p in model.parameters() if p.requires_grad)');
  // the model's own header counts what its file stores: the tied copy and the buffers too
  const state = await page.locator('#state-summary .field').evaluateAll((l) => Object.fromEntries(l.map((f) => [f.querySelector('.k').textContent, f.querySelector('.v').textContent])));
  assert.equal(state['Stored values'], '8,448');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

/** Scroll every scrolling box under `sel` to its end (the virtual tables draw the rows in view). */
const scrollDown = (page, sel) => page.evaluate((sel) => {
  for (const e of document.querySelectorAll(`${sel}, ${sel} *`)) if (e.scrollHeight > e.clientHeight + 4) e.scrollTop = e.scrollHeight;
}, sel);

test('slot 1000 in the slot and entry tables: one style, the index plain; steps grouped', async () => {
  const n = 1001;
  const bytes = await writeCheckpoint({ shapes: Array(n).fill([1]), requiresGrad: Array(n).fill(true), representatives: Array.from({ length: n }, (_, i) => i), config,
    entries: Array.from({ length: n }, (_, id) => ({ id, step: 1234, m: new Float32Array(1), v: new Float32Array(1) })) });
  const page = await viewer.page();
  await dropBytes(page, bytes, 'wide.ckpt');
  await page.waitForSelector('[data-testid=entry-row]');
  await scrollDown(page, '#entries');
  await scrollDown(page, '#params');
  const entry = page.locator('[data-testid=entry-row][data-index="1000"]');
  const param = page.locator('[data-testid=param-row][data-index="1000"]');
  await entry.waitFor();
  await param.waitFor();
  const cells = (row) => row.locator('span').evaluateAll((l) => l.map((s) => s.textContent));
  const [e, p] = [await cells(entry), await cells(param)];
  assert.deepEqual([e[0], e[2]], ['1000', '1,234'], 'entries: slot, step');
  assert.deepEqual([p[0], p[6]], ['1000', '1,234'], 'slots: slot, step');
  await page.context().close();
});

test('the run view\'s steps grouped as every step column is: 999, 1,000, 1,001', async () => {
  const page = await viewer.page();
  const files = await page.evaluate(async () => {
    const { adamSeries } = await import('/examples.js');
    return (await adamSeries({ saves: [999, 1000, 1001] })).filter((f) => f.name.endsWith('.ckpt')).map((f) => ({ name: f.name, data: Array.from(f.bytes) }));
  });
  await dropFiles(page, files.map((f) => ({ name: f.name, bytes: new Uint8Array(f.data) })));
  await page.waitForSelector('[data-testid=run-first]');
  assert.deepEqual(await page.locator('[data-testid=run-file] td:nth-child(2)').allTextContents(), ['999', '1,000', '1,001']);
  await page.click('[data-testid=run-pair] >> nth=0 >> summary');
  await page.waitForSelector('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot]');
  const row = await page.locator('[data-testid=run-pair] >> nth=0 >> [data-testid=run-slot] >> nth=0').evaluate((tr) => [...tr.cells].map((td) => td.textContent));
  assert.deepEqual(row.slice(2, 4), ['999→1,000', '1']);
  await page.context().close();
});
