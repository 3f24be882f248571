// The viewer's shape: one view interface (mount, onFiles, onSelect, onLabels), every view
// registered in views.js, views that hold no other view and reach only their own card, a host
// that reaches no card, a store that emits exactly the events it documents; no fact about a file
// computed from text or format in web/ (the package says everything); the worker keeps its
// Checkpoint handles open between requests; the RPC protocol rejects unknown requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { writeCheckpoint } from '../../js/index.js';
import { startViewer, dropBytes, openExample } from './browser.mjs';

const WEB = new URL('../../web/', import.meta.url).pathname;
const inDir = (dir) => fs.readdirSync(path.join(WEB, dir)).filter((f) => f.endsWith('.js')).map((f) => path.join(WEB, dir, f));
const sources = () => [...fs.readdirSync(WEB).filter((f) => f.endsWith('.js')).map((f) => path.join(WEB, f)),
  ...inDir('views'), ...inDir('parts'), ...inDir('worker')];
const read = (file) => fs.readFileSync(file, 'utf8');

// The page's URL space, as the server serves it, for the views imported here: /js/ is the package.
const PAGE_URLS = `let js;
export function initialize(data) { js = data.js; }
export function resolve(specifier, context, next) {
  return next(specifier.startsWith('/js/') ? js + specifier.slice(4) : specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(PAGE_URLS)}`, { data: { js: pathToFileURL(new URL('../../js/', import.meta.url).pathname).href } });

let viewer;
before(async () => {
  viewer = await startViewer();
});
after(() => viewer?.close());

test('one view interface: every module of web/views/ is a view registered in views.js, with mount, onFiles, onSelect, onLabels', async () => {
  const { VIEWS } = await import('../../web/views.js');
  const registry = read(path.join(WEB, 'views.js'));
  const modules = inDir('views');
  assert.ok(modules.length >= 13, `the views are there: ${modules.length}`);
  for (const file of modules) {
    const name = path.basename(file);
    assert.match(registry, new RegExp(`from './views/${name.replace('.', '\\.')}'`), `${name} is registered in views.js`);
    const exported = Object.values(await import(file)).filter((x) => typeof x === 'function' && VIEWS.some((v) => v.View === x));
    assert.ok(exported.length >= 1, `${name} exports a registered view`);
  }
  assert.ok(VIEWS.length >= 13);
  for (const { name, View } of VIEWS) {
    for (const method of ['mount', 'onFiles', 'onSelect', 'onLabels']) assert.equal(typeof View.prototype[method], 'function', `${name}.${method}`);
  }
  assert.equal(new Set(VIEWS.map((v) => v.name)).size, VIEWS.length, 'one name per view');
});

test('views never hold each other or reach outside their card; the host never reaches inside a card', () => {
  for (const file of inDir('views')) {
    const text = read(file);
    const name = path.basename(file);
    assert.doesNotMatch(text, /from '\.\/[^']+'/, `${name} imports no other view (helpers live in web/parts/)`);
    assert.doesNotMatch(text, /\$\(|getElementById|document\.querySelector/, `${name} reaches only the DOM it built`);
  }
  for (const file of inDir('parts')) assert.doesNotMatch(read(file), /\$\(|getElementById|document\.querySelector/, `${path.basename(file)} reaches only the DOM it is given`);
  // The host and the inputs use the page's chrome only: ids written in index.html, none in a card.
  const html = read(path.join(WEB, 'index.html'));
  const chrome = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]));
  assert.equal([...html.matchAll(/class="card\b/g)].length, 1, 'index.html holds one card (the welcome); the views build theirs');
  for (const f of ['app.js', 'inputs.js']) {
    const ids = [...read(path.join(WEB, f)).matchAll(/\$\('([^']+)'\)/g)].map((m) => m[1]);
    assert.ok(ids.length > 0, `${f} uses the chrome`);
    for (const id of ids) assert.ok(chrome.has(id), `${f}: #${id} is the page's chrome, not inside a view's card`);
  }
  const app = read(path.join(WEB, 'app.js'));
  assert.ok(app.split('\n').length < 200, 'app.js is a small host');
  assert.doesNotMatch(app, /from '\.\/views\//, 'the host knows the views through the registry only');
  assert.match(read(path.join(WEB, 'dom.js')), /export function el\(/);
});

test('the store emits exactly the events it documents, in order, and refuses others', async () => {
  const { Store, EVENTS } = await import('../../web/state.js');
  const documented = Object.keys(EVENTS);
  // every documented event is emitted somewhere in web/, and nothing else is emitted or heard
  const all = sources().map(read).join('\n');
  const emitted = new Set([...all.matchAll(/\bemit\('([a-z]+)'/g)].map((m) => m[1]));
  const heard = new Set([...all.matchAll(/\bstore\.on\('([a-z]+)'/g)].map((m) => m[1]));
  assert.deepEqual([...emitted].sort(), [...documented].sort(), 'emitted = documented');
  for (const e of heard) assert.ok(documented.includes(e), `heard ${e} is documented`);
  // at run time: each setter says what it changed, and only that
  const store = new Store();
  const got = [];
  for (const e of documented) store.on(e, (d) => got.push([e, d]));
  const file = { name: 'x', cols: { kind: 'optimizer' } };
  store.setFiles({ a: file });
  store.select(3, 'table');
  store.setLabels(['w']);
  store.hover(2);
  store.setExpected({ name: 'l.json' });
  store.setPair({ pairs: true });
  store.setNotices([{ name: 'n', text: 't' }]);
  store.emit('stats', { kind: 'optimizer' });
  store.emit('io');
  store.openRun([{ name: 'a.ckpt' }, { name: 'b.ckpt' }]);
  assert.deepEqual(got.map(([e]) => e), ['files', 'select', 'labels', 'hover', 'expected', 'pair', 'notices', 'stats', 'io', 'run']);
  assert.equal(store.files.a, file, 'a run leaves the open files');
  assert.deepEqual(new Set(got.map(([e]) => e)), new Set(documented), 'every documented event can be emitted');
  assert.equal(store.optimizer, file);
  assert.throws(() => store.emit('compare'), /the store has no event "compare"/);
  assert.throws(() => store.on('health', () => {}), /the store has no event "health"/);
  // an event emitted while another is delivered waits until every listener had the first
  const order = [];
  const nested = new Store();
  nested.on('files', () => {
    order.push('files 1');
    nested.select(1, 'problem');
  });
  nested.on('files', () => order.push('files 2'));
  nested.on('select', () => order.push('select'));
  nested.setFiles({});
  assert.deepEqual(order, ['files 1', 'files 2', 'select']);
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
  // the views and their parts name no element type: the report says it (report.dtype)
  const typed = [/'b?float(16|32|64)'|Float(16|32)Array/, 'an element type stated by the viewer'];
  for (const file of sources()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const [re, what] of rules) assert.doesNotMatch(text, re, `${path.relative(WEB, file)}: ${what}`);
    if (/\/(views|parts)\//.test(file)) assert.doesNotMatch(text, typed[0], `${path.relative(WEB, file)}: ${typed[1]}`);
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

test('every viewer hook (data-testid) is there once its state is shown', async () => {
  const page = await viewer.page();
  const present = async (hooks) => {
    for (const hook of hooks) assert.ok(await page.locator(`[data-testid=${hook}]`).count() > 0, `data-testid=${hook}`);
  };
  await present(['dropzone', 'file-input', 'expect-input', 'state-input', 'stats-progress']);
  await openExample(page, 'training');
  await page.waitForSelector('[data-testid=health-row]');
  await present(['summary', 'field-version', 'field-dtype', 'field-kind', 'field-counter', 'param-count', 'param-row', 'sharing-map', 'entry-row',
    'tensor-row', 'pair-verdict', 'lr-input', 'health-row', 'health-chart']);
  await openExample(page, 'float64');
  await page.waitForSelector('[data-testid=warning]');
  await openExample(page, 'compare');
  await page.waitForSelector('[data-testid=verdict] [data-testid=error]');
  await present(['verdict', 'error', 'error-offset', 'reader-row']);
  await page.context().close();
});

test('the worker dispatches: one module per kind of request in web/worker/, worker.js only imports and serves', () => {
  const worker = read(path.join(WEB, 'worker.js'));
  const modules = [...worker.matchAll(/from '\.\/worker\/([a-z-]+\.js)'/g)].map((m) => m[1]);
  assert.deepEqual(modules, ['files.js', 'stats.js', 'check.js', 'health.js', 'export.js', 'run.js', 'convert.js', 'convert-torch.js', 'convert-deepspeed.js']);
  assert.ok(worker.split('\n').length < 40, 'worker.js is a small dispatcher');
  for (const file of sources()) assert.ok(read(file).split('\n').length <= 600, `${path.relative(WEB, file)} is at most 600 lines`);
});
