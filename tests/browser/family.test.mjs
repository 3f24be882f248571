// The fourth-family proof in the viewer (docs/architecture.md "Adding a family"): the page
// given the core built with the test-only family TLSF64B (js/ckptscope-tlsf64b.wasm, made by
// `bash scripts/build.sh family`) in place of the default build shows a TLSF64B file's header,
// its float64 dtype and its tensors, with no file of web/ or js/ changed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startViewer, dropBytes } from './browser.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FAMILY_WASM = path.join(ROOT, 'js/ckptscope-tlsf64b.wasm');
const viewer = await startViewer();
after(() => viewer.close());

// The file, written by the package running the same build (the JS writer knows the family from it).
function tlsf64bBytes() {
  const script = `import { writeState } from ${JSON.stringify(path.join(ROOT, 'js/index.js'))};
    const b = await writeState({ family: 'TLSF64B', shapes: [[3], []], values: [[1.5, -2, 1e300], [0.1]] });
    process.stdout.write(Buffer.from(b).toString('base64'));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: 'tlsf64b' } });
  assert.equal(r.status, 0, r.stderr);
  return Buffer.from(r.stdout, 'base64');
}

test('the viewer with the TLSF64B build shows a TLSF64B file: family, version, dtype float64, its tensors', async () => {
  assert.ok(fs.existsSync(FAMILY_WASM), `${FAMILY_WASM} is missing: run bash scripts/build.sh family`);
  const bytes = tlsf64bBytes();
  const context = await viewer.browser.newContext({ viewport: { width: 1280, height: 900 } });
  // every load of the core (the page's and its worker's) gets the build with the fourth family
  await context.route('**/js/ckptscope.wasm', (route) => route.fulfill({ path: FAMILY_WASM, contentType: 'application/wasm' }));
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(`${viewer.origin}/`);
    await page.waitForSelector('#examples button', { state: 'attached' });
    await dropBytes(page, bytes, 'model.tlsf64b');
    await page.waitForSelector('[data-testid="field-dtype"]');
    const summary = await page.locator('[data-testid="summary"]').innerText();
    assert.match(summary, /TLSF64B/);
    assert.match(summary, /TorchLean float64 state checkpoint/);
    assert.equal((await page.locator('[data-testid="field-version"]').innerText()).trim().split('\n').pop().trim(), '1');
    assert.match(await page.locator('[data-testid="field-dtype"]').innerText(), /float64/);
    await page.waitForSelector('[data-testid="tensor-row"]');
    assert.equal(await page.locator('[data-testid="tensor-row"]').count(), 2);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
