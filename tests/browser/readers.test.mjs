// "Will it load in your TorchLean?" and Convert… in Debian's Chromium (docs/format.md 8): a row
// per reader for v2, v4 and v5 files with the core's exact texts, each reader's verdict against a
// tied layout (the ties-ignored warning of v2 and v2-lists), and a conversion offered as the
// core plans it, downloaded and re-opened as the version asked for.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCheckpoint, inspect } from '../../js/index.js';
import { startViewer, dropBytes, shotAt } from './browser.mjs';
import { writeSparse } from '../js/sparse.mjs';

const F = 'CUDA Adam checkpoint: ';
const READERS = ['v2', 'v2-lists', 'v2-v3', 'v2-v4', 'v2-v4-f32', 'v2-v5'];
let viewer;

const untied = { shapes: [[4, 3], [3], [4, 3]], requiresGrad: [true, true, true], representatives: [0, 1, 2] };
const config = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 };
function description(version, { counter = 77 } = {}) {
  return {
    ...untied, config, version, randomCounter: version >= 4 ? counter : null,
    entries: [0, 1, 2].map((id) => {
      const n = untied.shapes[id].reduce((a, b) => a * b, 1);
      return { id, step: 5, m: new Float32Array(n).fill(0.5 + id), v: new Float32Array(n).fill(0.25) };
    }),
  };
}

before(async () => {
  viewer = await startViewer();
});

after(async () => {
  await viewer?.close();
});

/** The rows as shown: {reader: [verdict, text]}. */
function rows(page) {
  return page.$$eval('[data-testid=reader-row]', (trs) => trs.map((tr) => [tr.dataset.reader, tr.dataset.verdict,
    tr.querySelector('[data-testid=reader-text]')?.textContent ?? null,
    [...tr.querySelectorAll('[data-testid=reader-warning]')].map((w) => w.textContent)]));
}

async function openFile(page, bytes, name, version) {
  await dropBytes(page, bytes, name);
  await page.waitForFunction((v) => document.querySelector('[data-testid=field-version]')?.textContent.includes(String(v))
    && document.querySelectorAll('[data-testid=reader-row]').length === 6, version);
}

test('a row per reader for v2, v4 and v5 files: the core\'s verdicts and exact texts', async () => {
  for (const width of [1440, 800]) {
    const page = await viewer.page({ width });
    for (const version of [2, 4, 5]) {
      const bytes = await writeCheckpoint(description(version));
      await openFile(page, bytes, `model-v${version}.ckpt`, version);
      const shown = await rows(page);
      assert.deepEqual(shown.map((r) => r[0]), READERS);
      // The same verdicts and texts as the package's report (the core's), row by row.
      const { readers } = await inspect(bytes);
      assert.deepEqual(shown.map(([name, verdict, text]) => [name, verdict, text]),
        READERS.map((n) => [n, readers[n].reads ? 'reads it' : 'cannot read it', readers[n].reads ? null : readers[n].error.message]));
      if (version === 2) assert.ok(shown.every((r) => r[1] === 'reads it'));
      if (version === 4) {
        assert.deepEqual(shown.filter((r) => r[1] !== 'reads it').map((r) => [r[0], r[2]]), [
          ['v2', `${F}unsupported format version 4; expected 2`],
          ['v2-lists', `${F}unsupported format version 4; expected 2`],
          ['v2-v3', `${F}unsupported format version 4; expected 2 or 3`],
        ]);
      }
      if (version === 5) {
        assert.equal(shown.find((r) => r[0] === 'v2-v4')[2], `${F}unsupported format version 5; expected 2, 3, or 4`);
        assert.deepEqual(shown.filter((r) => r[1] === 'reads it').map((r) => r[0]), ['v2-v5']);
        await shotAt(page, 'readers-v5');
      }
    }
    await page.context().close();
  }
});

test('against a tied layout: each reader\'s verdict, v2 and v2-lists with the ties-ignored warning', async () => {
  const page = await viewer.page({ width: 1440 });
  await openFile(page, await writeCheckpoint(description(2)), 'model-v2.ckpt', 2);
  const tied = { ...untied, representatives: [0, 1, 0] };
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(tied)), 'tied.json');
  await page.waitForSelector('[data-testid=reader-row][data-verdict=loads]');
  const shown = await rows(page);
  const ignored = 'warning: this TorchLean reader has no storage sharing: the layout\'s ties are ignored';
  assert.deepEqual(shown, [
    ['v2', 'loads', null, [ignored]],
    ['v2-lists', 'loads', null, [ignored]],
    ...['v2-v3', 'v2-v4', 'v2-v4-f32', 'v2-v5'].map((n) => [n, 'would not load', `${F}version 2 cannot restore shared parameter histories`, []]),
  ]);
  await shotAt(page, 'readers-layout');
  // A shape that differs: v2-lists prints its shapes as lists.
  const reshaped = { ...untied, shapes: [[3, 4], [3], [4, 3]] };
  await dropBytes(page, new TextEncoder().encode(JSON.stringify(reshaped)), 'reshaped.json');
  await page.waitForFunction(() => document.querySelector('[data-reader="v2-lists"] [data-testid=reader-text]')?.textContent.includes('shape'));
  assert.equal(await page.textContent('[data-reader="v2-lists"] [data-testid=reader-text]'), `${F}shape mismatch for parameter 0 (file=[4, 3], expected=[3, 4])`);
  assert.equal(await page.textContent('[data-reader="v2"] [data-testid=reader-text]'), `${F}shape mismatch for parameter 0 (file=#[4, 3], expected=#[3, 4])`);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('Convert…: lossless targets offered, lossy ones behind a ticked option; the download re-opens as that version', async () => {
  for (const width of [1440, 800]) {
    const page = await viewer.page({ width, acceptDownloads: true });
    const v5 = await writeCheckpoint(description(5, { counter: 4242 }));
    await openFile(page, v5, 'model-v5.ckpt', 5);
    await page.click('#export-menu summary');
    await page.click('[data-testid=export-convert]');
    await page.waitForSelector('[data-testid=convert-target][data-to="2"]');
    const targets = () => page.$$eval('[data-testid=convert-target]', (ls) => ls.map((l) => [l.dataset.to, l.dataset.lossless, l.dataset.allowed,
      l.querySelector('[data-testid=convert-refusal]')?.textContent ?? null]));
    // float32 with a counter: 4 and 5 lose nothing; 2 and 3 would drop the counter.
    const drop = (v) => `version ${v} cannot hold the random counter: --drop-random-counter drops it (stochastic training then cannot resume exactly)`;
    assert.deepEqual(await targets(), [['2', 'false', 'false', drop(2)], ['3', 'false', 'false', drop(3)], ['4', 'true', 'true', null], ['5', 'true', 'true', null]]);
    assert.deepEqual(await page.$$eval('[data-testid=convert-option]', (ls) => ls.map((l) => [l.dataset.option, l.querySelector('input').checked])),
      [['dropRandomCounter', false]]);
    await shotAt(page, 'convert-dialog');
    // Ticking the option makes 2 and 3 possible, marked as such.
    await page.check('[data-option=dropRandomCounter] input');
    await page.waitForSelector('[data-testid=convert-target][data-to="3"][data-allowed=true]');
    assert.deepEqual((await targets()).map((t) => t.slice(0, 3)), [['2', 'false', 'true'], ['3', 'false', 'true'], ['4', 'true', 'true'], ['5', 'true', 'true']]);
    await page.uncheck('[data-option=dropRandomCounter] input');
    await page.waitForSelector('[data-testid=convert-target][data-to="3"][data-allowed=false]');
    // Version 4, downloaded: the same state as version 4 (the package reads it back).
    await page.check('[data-testid=convert-target][data-to="4"] input');
    const wait = page.waitForEvent('download');
    await page.click('[data-testid=convert-go]');
    const download = await wait;
    assert.equal(download.suggestedFilename(), 'model-v5.v4.ckpt');
    const bytes = fs.readFileSync(await download.path());
    assert.equal(bytes.length, (await writeCheckpoint(description(4, { counter: 4242 }))).length);
    assert.deepEqual(bytes, Buffer.from(await writeCheckpoint(description(4, { counter: 4242 }))));   // the reference writer's layout
    await page.waitForFunction(() => /^Saved model-v5\.v4\.ckpt: version 4, float32 moments/.test(document.querySelector('[data-testid=convert-result]').textContent));
    await page.click('[data-testid=convert-close]');
    // Re-opened: version 4, and now v2-v4 and v2-v4-f32 read it.
    await openFile(page, bytes, 'model-v5.v4.ckpt', 4);
    assert.deepEqual((await rows(page)).filter((r) => r[1] === 'reads it').map((r) => r[0]), ['v2-v4', 'v2-v4-f32', 'v2-v5']);
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  }
});

test('Convert… of a file past what the page holds: planned, and the CLI named for the bytes', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-readers-'));
  try {
    const file = path.join(tmp, 'big.ckpt');
    const size = writeSparse(file, { slots: 2, elements: 2 ** 27 });   // 2 GiB of payload, sparse
    const page = await viewer.page({ width: 1440 });
    await page.setInputFiles('[data-testid=file-input]', file);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reader-row]').length === 6);
    await page.click('[data-testid=readers-convert]');
    await page.waitForSelector('[data-testid=convert-target][data-lossless=true]');
    const version = Number(await page.textContent('[data-testid=field-version]'));
    assert.equal(await page.getAttribute(`[data-testid=convert-target][data-to="${version}"]`, 'data-lossless'), 'true');
    await page.check(`[data-testid=convert-target][data-to="${version}"] input`);
    const note = await page.textContent('[data-testid=convert-too-big]');
    assert.match(note, /^This file is 2,147,\d{3},\d{3} bytes \(2\.0 GiB\): the viewer converts files up to 400 MiB in memory\./);
    assert.ok(note.endsWith(`\`ckptscope convert big.ckpt OUT --to ${version}\` streams any size to disk.`), note);
    assert.equal(await page.isDisabled('[data-testid=convert-go]'), true);
    assert.ok(size > 2 * 2 ** 30);
    await shotAt(page, 'convert-too-big');
    assert.deepEqual(page.consoleErrors, []);
    await page.context().close();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('Convert… to version 2 from float64 moments, ties and a counter: every option it needs, ticked, then the rounding reported', async () => {
  const page = await viewer.page({ width: 1440, acceptDownloads: true });
  const tied = { shapes: [[4, 3], [3], [4, 3]], requiresGrad: [true, true, true], representatives: [0, 1, 0] };
  const bytes = await writeCheckpoint({
    ...tied, config, dtype: 'float64', randomCounter: 9,
    entries: [0, 1].map((id) => {
      const n = tied.shapes[id].reduce((a, b) => a * b, 1);
      return { id, step: 5, m: new Float64Array(n).fill(0.1), v: new Float64Array(n).fill(0.01) };
    }),
  });
  await openFile(page, bytes, 'f64.ckpt', 5);
  await page.click('[data-testid=readers-convert]');
  await page.waitForSelector('[data-testid=convert-target][data-to="2"]');
  // Only version 5 loses nothing; version 2's refusal is the core's first one.
  assert.deepEqual(await page.$$eval('[data-testid=convert-target]', (ls) => ls.map((l) => [l.dataset.to, l.dataset.lossless])),
    [['2', 'false'], ['3', 'false'], ['4', 'false'], ['5', 'true']]);
  assert.equal(await page.textContent('[data-to="2"] [data-testid=convert-refusal]'),
    'version 2 cannot hold float64 moments: --round-to-float32 rounds them (the largest relative error is reported)');
  // Offered: what some version needs (the file has a counter: none is supplied).
  assert.deepEqual(await page.$$eval('[data-testid=convert-option]', (ls) => ls.map((l) => l.dataset.option)), ['dropRandomCounter', 'untie', 'roundToFloat32']);
  await page.check('[data-option=roundToFloat32] input');
  await page.waitForSelector('[data-testid=convert-target][data-to="4"][data-allowed=true]');
  assert.equal(await page.textContent('[data-to="2"] [data-testid=convert-refusal]'),
    'version 2 cannot hold the random counter: --drop-random-counter drops it (stochastic training then cannot resume exactly)');
  await page.check('[data-option=dropRandomCounter] input');
  await page.waitForSelector('[data-testid=convert-target][data-to="3"][data-allowed=true]');
  assert.equal(await page.textContent('[data-to="2"] [data-testid=convert-refusal]'),
    'version 2 cannot hold tied parameters: --untie gives every alias its own copy of its owner\'s moments and step (loadable only where the model\'s weights are untied too)');
  await page.check('[data-option=untie] input');
  await page.waitForSelector('[data-testid=convert-target][data-to="2"][data-allowed=true]');
  await page.check('[data-testid=convert-target][data-to="2"] input');
  const wait = page.waitForEvent('download');
  await page.click('[data-testid=convert-go]');
  const download = await wait;
  assert.equal(download.suggestedFilename(), 'f64.v2.ckpt');
  const out = await inspect(fs.readFileSync(await download.path()));
  assert.deepEqual([out.version, out.dtype, out.randomCounter, out.schema.representatives], [2, 'float32', null, null]);
  await page.waitForFunction(() => /^Saved f64\.v2\.ckpt: version 2, float32 moments, .*; moments rounded to float32, largest relative error \d/.test(document.querySelector('[data-testid=convert-result]').textContent));
  await shotAt(page, 'convert-lossy');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
