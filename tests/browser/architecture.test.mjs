// The viewer's shape: a host over one module per view; no fact about a file computed from text
// or format in web/ (the package says everything); the worker keeps its Checkpoint handles open
// between requests; the RPC protocol rejects unknown requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { writeCheckpoint } from '../../js/index.js';
import { startViewer, dropBytes } from './browser.mjs';

const WEB = new URL('../../web/', import.meta.url).pathname;
const sources = () => [...fs.readdirSync(WEB).filter((f) => f.endsWith('.js') && f !== 'server.js').map((f) => path.join(WEB, f)),
  ...fs.readdirSync(path.join(WEB, 'views')).map((f) => path.join(WEB, 'views', f))];

let viewer;
before(async () => {
  viewer = await startViewer();
});
after(() => viewer?.close());

test('one module per view; app.js a small host; el in dom.js; report-model.js gone', () => {
  for (const f of ['rpc.js', 'state.js', 'worker.js', 'dom.js', 'columns.js']) assert.ok(fs.existsSync(path.join(WEB, f)), f);
  for (const v of ['header', 'params-table', 'entries-table', 'sharing-map', 'stats', 'health', 'hex', 'problem', 'compare', 'state-tensors', 'pair']) {
    assert.ok(fs.existsSync(path.join(WEB, 'views', `${v}.js`)), `views/${v}.js`);
  }
  assert.ok(!fs.existsSync(path.join(WEB, 'report-model.js')));
  assert.ok(!fs.existsSync(path.join(WEB, 'views', 'table.js')));
  const app = fs.readFileSync(path.join(WEB, 'app.js'), 'utf8');
  assert.ok(app.split('\n').length < 566, 'app.js is smaller than the 566 lines it was');
  assert.match(fs.readFileSync(path.join(WEB, 'dom.js'), 'utf8'), /export function el\(/);
});

// Format facts (a magic, a dtype, a stride, a width, a code, the wasm ABI) in js/ and web/ are
// the syntax-tree guard's: tests/js/format-facts.test.mjs.
test('no diagnostic parsed, no innerHTML in web/', () => {
  const rules = [
    [/message\.(match|replace|includes)\b/, 'a diagnostic read as text'],
    [/\/parameter[^/\n]*\\d/, 'a slot regexed out of a diagnostic'],
    [/\.exec\(\s*(r\.)?(error\.)?message/, 'a diagnostic regexed'],
    [/innerHTML|outerHTML|insertAdjacentHTML/, 'markup from strings'],
    [/unhealthy\(/, 'an unhealthy rule of the viewer\'s own (the core counts)'],
  ];
  for (const file of sources()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const [re, what] of rules) assert.doesNotMatch(text, re, `${path.relative(WEB, file)}: ${what}`);
  }
});

test('the worker protocol: unknown types are errors; handles stay open between requests', async () => {
  const page = await viewer.page();
  const description = {
    shapes: [[64, 64], [64]], requiresGrad: [true, true],
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 },
    entries: [0, 1].map((id) => ({ id, step: 3, m: new Float32Array(id ? 64 : 4096).fill(0.5), v: new Float32Array(id ? 64 : 4096).fill(0.25) })),
  };
  const bytes = await writeCheckpoint(description);
  const result = await page.evaluate(async (data) => {
    const { RpcClient } = await import('/rpc.js');
    const rpc = new RpcClient('/worker.js');
    const out = {};
    try {
      await rpc.request('nonsense');
    } catch (err) {
      out.unknown = err.message;
    }
    const file = new File([new Uint8Array(data)], 'x.ckpt');
    const opened = await rpc.request('open', { role: 'a', source: file });
    out.afterOpen = opened.io.bytesRead;
    await rpc.request('stats', { role: 'a', slot: 1 });
    out.afterStats = (await rpc.request('io', { role: 'a' })).bytesRead;
    await rpc.request('stats', { role: 'a', slot: 1 });
    out.afterStatsAgain = (await rpc.request('io', { role: 'a' })).bytesRead;
    const hex = await rpc.request('bytes', { role: 'a', offset: 0, length: 16 });
    out.hexLength = hex.bytes.length;
    out.afterHex = (await rpc.request('io', { role: 'a' })).bytesRead;
    rpc.worker.terminate();
    return out;
  }, Array.from(bytes));
  assert.equal(result.unknown, 'unknown request type "nonsense"');
  // Statistics of slot 1 read its 2 x 64 floats (and a little around them), not the file again.
  assert.ok(result.afterStats - result.afterOpen < bytes.length / 4, JSON.stringify(result));
  assert.equal(result.afterStatsAgain, result.afterStats, 'statistics are kept');
  assert.equal(result.hexLength, 16);
  assert.ok(result.afterHex - result.afterStatsAgain <= 4096, 'the hex view reads its bytes through the open handle\'s source (a page at most)');
  await page.context().close();
});

test('opening another file closes the previous handles', async () => {
  const page = await viewer.page();
  const bytes = await writeCheckpoint({ shapes: [[2]], requiresGrad: [true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, entries: [{ id: 0, step: 1, m: [0, 0], v: [0, 0] }] });
  const out = await page.evaluate(async (data) => {
    const { RpcClient } = await import('/rpc.js');
    const rpc = new RpcClient('/worker.js');
    const f = (name) => new File([new Uint8Array(data)], name);
    await rpc.request('open', { role: 'a', source: f('one.ckpt') });
    await rpc.request('open', { role: 'b', source: f('two.ckpt') });
    await rpc.request('open', { role: 'a', source: f('three.ckpt') });
    let b;
    try {
      await rpc.request('io', { role: 'b' });
      b = 'open';
    } catch (err) {
      b = err.message;
    }
    rpc.worker.terminate();
    return b;
  }, Array.from(bytes));
  assert.equal(out, 'no file is open as the model state');
  await dropBytes(page, bytes, 'x.ckpt');
  await page.context().close();
});
