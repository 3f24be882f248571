// Files the viewer cannot use, or not all of: what is unknown is said to be unknown, cards say
// only what is really shown, and a file or an address it cannot open gets a card that says why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, writeState, open, exportTensors, exportNpy } from '../../js/index.js';
import { startViewer, dropBytes, dropFiles, openExample, shot, shotAt } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';
import { config, size, entry, llama, text, waitText } from './fixtures.mjs';

let viewer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-broken-files-'));

before(async () => {
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('a file that breaks before its sharing map: ties and trainability are unknown, never "none" or "frozen"', async () => {
  const page = await viewer.page();
  const { description } = llama(4);
  const bytes = await writeCheckpoint(description);
  const ck = await open(bytes.subarray(0, 300));
  const read = ck.columns();
  ck.close();
  assert.ok(read.n > read.flags.length, 'the cut falls between the shapes and the flags');
  await dropBytes(page, bytes.subarray(0, 300), 'cut.ckpt');
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await text(page, '[data-testid=field-ties]'), '—');
  assert.match(await text(page, '[data-testid=map-legend]'), /the sharing map was not read/);
  assert.match(await text(page, '[data-testid=map-legend]'), /not read/);
  assert.doesNotMatch(await text(page, '[data-testid=map-legend]'), /no ties/);
  const last = read.n - 1;
  await page.click(`[data-testid=param-row][data-index="${last}"]`);
  await page.waitForFunction(() => /trainability not read/.test(document.querySelector('[data-testid=map-caption]')?.textContent ?? ''));
  await page.context().close();
});

test('cards keep their content\'s height; a broken file says only what is really shown', async () => {
  const page = await viewer.page({ width: 1440 });
  const height = (sel) => page.locator(sel).evaluate((e) => e.getBoundingClientRect().height);
  assert.ok(await height('#welcome') < 420, 'the welcome card is not stretched to the window (900 px)');
  await shotAt(page, 'welcome');
  await dropBytes(page, new Uint8Array(0), 'empty.ckpt');
  await waitText(page, '#problem [data-testid=error]', 'CUDA Adam checkpoint: truncated checkpoint (wanted 7 bytes, got 0)');
  assert.equal(await text(page, '#problem [data-testid=error-hint]'), 'the file is empty');
  assert.doesNotMatch(await text(page, '#problem'), /shown below/);
  assert.ok(await height('#problem') < 260);
  await shotAt(page, 'empty-file');
  await dropBytes(page, new TextEncoder().encode('version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), 'model.ckpt');
  await page.waitForFunction(() => /Git LFS/.test(document.querySelector('#problem [data-testid=error-hint]')?.textContent));
  assert.doesNotMatch(await text(page, '#problem'), /shown below/);
  assert.ok(await height('#problem') < 320);
  await shotAt(page, 'lfs-pointer');
  // A file broken inside its schema: the slots read are said, and they are there.
  const { description } = llama(2);
  const bytes = await writeCheckpoint(description);
  await dropBytes(page, bytes.slice(0, 300), 'cut.ckpt');
  await page.waitForFunction(() => /slots? read before the error/.test(document.getElementById('problem').textContent));
  const n = Number(await page.locator('[data-testid=param-row]').count());
  assert.ok(n > 0);
  assert.match(await text(page, '#problem'), new RegExp(`the ${n} slots? read before the error`));
  await page.context().close();
});

test('files the viewer cannot use get a card that names them, with why', async () => {
  const page = await viewer.page();
  const one = await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] });
  // a layout with nothing open
  await dropBytes(page, new TextEncoder().encode(JSON.stringify({ shapes: [[3]] })), 'layout.json');
  await page.waitForSelector('[data-testid=notices]:not([hidden])');
  assert.equal(await text(page, '[data-testid=notice]'), 'layout.json: a layout: open a checkpoint first, then drop the layout to see whether it would load.');
  // one checkpoint opens; then three at once are a run (the run card), the open file stays
  await dropBytes(page, one, 'a.ckpt');
  await page.waitForSelector('[data-testid=summary]');
  await page.evaluate((data) => {
    const dt = new DataTransfer();
    for (const name of ['a.ckpt', 'b.ckpt', 'c.ckpt']) dt.items.add(new File([new Uint8Array(data)], name));
    for (const type of ['dragenter', 'dragover', 'drop']) document.querySelector('#dropzone').dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, Array.from(one));
  await page.waitForSelector('[data-testid=run-first]');
  assert.equal(await page.locator('[data-testid=run-pair]').count(), 2);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'a.ckpt');
  // a writer description: JSON, but neither names nor a layout
  await dropBytes(page, new TextEncoder().encode(JSON.stringify({ config, entries: [] })), 'describe.json');
  await page.waitForSelector('[data-testid=notice][data-file="describe.json"]');
  assert.match(await text(page, '[data-testid=notices] h2'), /^A file was not used$/);
  await shotAt(page, 'notices');
  await page.click('[data-testid=notices-close]');
  assert.equal(await page.locator('[data-testid=notices]').isHidden(), true);
  assert.equal(await text(page, '[data-testid=summary] .file'), 'a.ckpt', 'the open file stays');
  await page.context().close();
});

test('two files dropped together: each is shown or listed as not used, with the core\'s reason', async () => {
  const page = await viewer.page({ width: 800 });
  const opt = { name: 'opt.ckpt', bytes: await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] }) };
  const state = { name: 'model.tlsf', bytes: await writeState({ family: 'TLSF32B', shapes: [[3]], values: [new Float32Array(3)] }) };
  const other = { name: 'model.tlsf.2', bytes: await writeState({ family: 'TLSF32B', shapes: [[2]], values: [new Float32Array(2)] }) };
  const notes = { name: 'notes.txt', bytes: new TextEncoder().encode('lr 3e-4, batch 32, resumed at step 1200\n') };
  const NOTES = 'notes.txt: not used: unsupported checkpoint family: not a TLADAMF, TLSF32B, TLPF32B, safetensors, DCP, DeepSpeed or PyTorch file (this looks like a text file, not a checkpoint).';
  const notices = () => page.locator('[data-testid=notice]').allTextContents();
  for (const [files, shown] of [[[notes, state], 'model.tlsf'], [[state, notes], 'model.tlsf'], [[opt, notes], 'opt.ckpt']]) {
    await page.evaluate(() => document.querySelector('[data-testid=notices]').setAttribute('hidden', ''));
    await dropFiles(page, files);
    await page.waitForSelector('[data-testid=notices]:not([hidden])');
    assert.deepEqual(await notices(), [NOTES], files.map((f) => f.name).join(' and '));
    assert.equal(await text(page, '[data-testid=summary] .title-line .file'), shown);
    assert.equal(await page.locator('#problem').isHidden(), true, 'the file shown is valid: no problem card');
  }
  // two model-state files: the first is shown, the second said
  await dropFiles(page, [state, other]);
  await page.waitForFunction(() => document.querySelector('[data-testid=notice]')?.dataset.file === 'model.tlsf.2');
  assert.deepEqual(await notices(), ['model.tlsf.2: not used: a second model-state file; one goes with an optimizer checkpoint, and model.tlsf (the first) is shown.']);
  assert.equal(await text(page, '[data-testid=summary] .title-line .file'), 'model.tlsf');
  await shotAt(page, 'notices-pair');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('two lists of names or two layouts dropped together: the last applies, the other is said', async () => {
  const page = await viewer.page({ width: 800 });
  const opt = { name: 'opt.ckpt', bytes: await writeCheckpoint({ shapes: [[3]], requiresGrad: [true], config, entries: [entry(0, [3])] }) };
  const json = (name, value) => ({ name, bytes: new TextEncoder().encode(JSON.stringify(value)) });
  await dropFiles(page, [opt, json('old-names.json', ['w_old']), json('names.json', ['w'])]);
  await page.waitForSelector('[data-testid=notices]:not([hidden])');
  assert.deepEqual(await page.locator('[data-testid=notice]').allTextContents(), ['old-names.json: not used: one list of slot names applies, and names.json (the last given) is the one.']);
  await waitText(page, '[data-testid=param-row][data-index="0"] span:nth-child(2)', 'w');
  await dropFiles(page, [opt, json('a.json', { shapes: [[3]] }), json('b.json', { shapes: [[4]] })]);
  await page.waitForFunction(() => document.querySelector('[data-testid=notice]')?.dataset.file === 'a.json');
  assert.deepEqual(await page.locator('[data-testid=notice]').allTextContents(), ['a.json: not used: one layout is compared at a time, and b.json (the last given) is the one.']);
  await page.waitForSelector('[data-testid=verdict]');
  assert.match(await text(page, '#compare .meta'), /b\.json/);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('an address whose file name is not valid percent-encoding gets a clear card', async () => {
  const page = await viewer.page({ url: `${viewer.origin}/#open=/files/0/%25zz` });
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await text(page, '#problem h2'), 'Could not read /files/0/%zz');
  assert.equal(await text(page, '#problem [data-testid=error]'), 'the page address names /files/0/%zz, which is not a file path: "%zz" is not valid percent-encoding (a % must be followed by two hexadecimal digits). Open the address that ckptscope view printed.');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
