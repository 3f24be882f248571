// A safetensors file dropped on the viewer: its header (family, dtype) comes from the report
// alone and its tensors are listed with their own names, the core's default build, with no
// family name in web/views/.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startViewer, dropBytes } from './browser.mjs';

const viewer = await startViewer();
after(() => viewer.close());

function safetensors(tensors) {
  const header = {};
  let at = 0;
  for (const [name, dtype, shape, bytes] of tensors) {
    header[name] = { dtype, shape, data_offsets: [at, at + bytes.length] };
    at += bytes.length;
  }
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  let p = 8 + text.length;
  for (const [, , , bytes] of tensors) out.set(bytes, p), (p += bytes.length);
  return out;
}

test('the viewer shows a dropped safetensors file: its family, its dtype, its named tensors', async () => {
  const bf16 = new Uint8Array(new Uint16Array([0x3f80, 0xc020, 0x0000, 0x4040, 0x3f00, 0x3e80]).buffer);
  const f32 = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const bytes = safetensors([['model.embed_tokens.weight', 'BF16', [2, 3], bf16], ['model.norm.weight', 'BF16', [3], bf16.subarray(0, 6)], ['lm_head.bias', 'BF16', [1], bf16.subarray(0, 2)]]);
  const mixed = safetensors([['w', 'F32', [3], f32], ['b', 'BF16', [1], bf16.subarray(0, 2)]]);
  const context = await viewer.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(`${viewer.origin}/`);
    await page.waitForSelector('#examples button', { state: 'attached' });
    await dropBytes(page, bytes, 'model.safetensors');
    await page.waitForSelector('[data-testid="tensor-row"]');
    const summary = await page.locator('[data-testid="summary"]').innerText();
    assert.match(summary, /safetensors file/);
    assert.match(await page.locator('[data-testid="field-dtype"]').innerText(), /bfloat16/);
    assert.equal(await page.locator('[data-testid="tensor-row"]').count(), 3);
    const rows = await page.locator('[data-testid="tensor-row"]').allInnerTexts();
    assert.match(rows[0], /model\.embed_tokens\.weight/);
    assert.match(rows[2], /lm_head\.bias/);
    // a file of two dtypes: no single dtype in the header, its tensors still listed
    await dropBytes(page, mixed, 'mixed.safetensors');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="tensor-row"]').length === 2);
    // tensor 1: its name b, shape [1], one value at data offset 131, statistics on a click
    assert.deepEqual(await page.locator('[data-testid="tensor-row"]').nth(1).locator(':scope > *').allTextContents(), ['1', 'b', '[1]', '1', '131', '', 'click row', '', '', '']);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
