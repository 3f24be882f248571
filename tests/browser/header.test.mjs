// The header card's step and parameter count: the entries' step (their range when they
// differ) and the sum of the slots' sizes (a state file: of its tensors' counts), exact, against
// the core's report of the same bytes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeCheckpoint, writeState, open } from '../../js/index.js';
import { startViewer, dropBytes } from './browser.mjs';

let viewer;
before(async () => {
  viewer = await startViewer();
});
after(() => viewer?.close());

const config = { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 };
const shapes = [[40, 50], [7], [40, 50], [3, 3, 3]];

function checkpoint(steps) {
  return writeCheckpoint({ shapes, requiresGrad: [true, true, true, false], representatives: [0, 1, 0, null], config,
    entries: [0, 1].map((id, k) => ({ id, step: steps[k], m: new Float32Array(id ? 7 : 2000), v: new Float32Array(id ? 7 : 2000) })) });
}

/** The header's field `key` (its .k label) -> its value text. */
const fields = (page) => page.locator('#summary .field').evaluateAll((l) => Object.fromEntries(l.map((f) => [f.querySelector('.k').textContent, f.querySelector('.v').textContent])));

for (const [steps, key, text] of [[[1200, 1300], 'Steps', '1,200–1,300'], [[1300, 1300], 'Step', '1,300']]) {
  test(`steps ${steps.join(', ')}: "${key}" ${text}, the parameters the sum of the core's slot sizes`, async () => {
    const bytes = await checkpoint(steps);
    const ck = await open(bytes);
    const want = ck.report.schema.sizes.reduce((a, b) => a + b, 0);
    ck.close();
    assert.equal(want, 2000 + 7 + 2000 + 27);
    const page = await viewer.page();
    await dropBytes(page, bytes, 'opt.ckpt');
    await page.waitForSelector('[data-testid=field-params]');
    const got = await fields(page);
    assert.equal(got.Parameters, want.toLocaleString('en-US'));
    assert.equal(got[key], text);
    assert.equal(got[key === 'Step' ? 'Steps' : 'Step'], undefined);
    assert.equal(await page.textContent('[data-testid=field-step]'), text);
    await page.context().close();
  });
}

test('a model-state file: the parameters are the sum of its tensors\' counts; no step', async () => {
  const values = shapes.map((s) => new Float32Array(s.reduce((a, b) => a * b, 1)));
  const bytes = await writeState({ family: 'TLSF32B', shapes, values });
  const ck = await open(bytes);
  const want = ck.report.tensors.reduce((a, t) => a + t.count, 0);
  ck.close();
  const page = await viewer.page();
  await dropBytes(page, bytes, 'model.tlsf');
  await page.waitForSelector('[data-testid=field-params]');
  const got = await fields(page);
  assert.equal(got.Parameters, want.toLocaleString('en-US'));
  assert.equal(got.Step, undefined);
  assert.equal(got.Steps, undefined);
  await page.context().close();
});
