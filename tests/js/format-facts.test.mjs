// The ABI the core describes (src/abi.c) is complete, and no JS or web file restates a fact of
// the format or of the ABI (tests/js/format-facts.mjs): the guard finds planted facts, and the
// tree has none but the findings listed below, each with the reason it is still there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadBinding } from '../../js/binding.js';
import { facts, check, parse, checkTree } from './format-facts.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;

// Findings still in the tree, exactly: the guard fails when one more appears and when one of
// these goes (then delete its line).
const KNOWN = [
  // The example files are written through the public API as a user writes them: a dtype and a
  // family are the API's own vocabulary there (docs/api.md), not a format fact re-derived.
  ['web/examples.js', 'a dtype name', "'float64'"],
  ['web/examples.js', 'a dtype name', "'float64'"],
];

test('the ABI names every ckpt_code of ckptscope.h, with its number', async () => {
  const { abi } = await loadBinding();
  const header = fs.readFileSync(path.join(ROOT, 'src/ckptscope.h'), 'utf8');
  const body = header.slice(header.indexOf('typedef enum ckpt_code {'), header.indexOf('} ckpt_code;'));
  const declared = Object.fromEntries([...body.matchAll(/\bCKPT_(?:E_)?(\w+)\s*=\s*(\d+)/g)].map((m) => [m[1], Number(m[2])]));
  assert.ok(Object.keys(declared).length > 40, 'the enum was read');
  assert.deepEqual(abi.codes, declared);
});

test('the ABI describes families, dtypes and the rows the JS reads, as the core has them', async () => {
  const { abi } = await loadBinding();
  assert.ok(abi.families.length >= 3);
  for (const f of abi.families) {
    if (f.fixedMagic) assert.equal(f.magic.length, 7, f.magic);
    assert.ok(f.kind === 'optimizer' || f.kind === 'state', f.kind);
    assert.ok(f.elementDtype === null || abi.dtype(f.elementDtype), `${f.magic}: ${f.elementDtype}`);
  }
  for (const d of abi.dtypes) assert.equal(d.FloatArray.BYTES_PER_ELEMENT, d.width, d.name);
  assert.deepEqual(abi.words.entryRow, ['id', 'step', 'count', 'offset', 'mOffset', 'vOffset']);
  assert.deepEqual(abi.words.tensorRow, ['count', 'offset', 'dataOffset']);
  assert.equal(abi.NONE, (1n << 64n) - 1n);
});

test('the guard finds each fact planted in js/ and web/, and passes what is not one', async () => {
  const f = await facts();
  const planted = [
    ['js/planted.js', "const dtype = meta.dtype === 'float64' ? 1 : 0;", 'a dtype name'],
    ['js/planted.js', "if (magic === 'TLADAMF') go();", 'a family magic'],
    ['js/planted.js', 'const FAMILY = { any: 0, TLADAMF: 1 };', 'a family magic (as a key)'],
    ['js/planted.js', 'const step = cols.entries[6 * k + 1];', 'a column stride in an index'],
    ['js/planted.js', 'const total = cols.tensors.length / 3;', 'a column stride dividing a length'],
    ['js/planted.js', 'const bytes = count * 8;', 'an element width in arithmetic'],
    ['js/planted.js', 'const end = offset + 4 * n;', 'an element width in arithmetic'],
    ['js/planted.js', 'const info = core.malloc(48);', 'a width or struct size in an allocation'],
    ['js/planted.js', 'const out = core.malloc(n * 8);', 'a width or struct size in an allocation'],
    ['js/planted.js', 'if (err.code === 37) stop();', 'a code by number'],
    ['js/planted.js', 'const Codes = { CANCELLED: 37 };', 'a code by number'],
    ['js/planted.js', 'throw new CheckpointError({ message, code: 3 });', 'a code by number'],
    ['js/planted.js', 'const p = core.exports.w_columns_new(file);', 'a wasm export called outside js/binding.js'],
    ['js/planted.js', "import { loadCore } from './wasm.js';", 'the raw core loaded outside js/binding.js'],
    ['web/planted.js', "import { Binding } from '/js/binding.js';", 'web/ reaching past the package (/js/index.js)'],
    ['web/planted.js', 'const count = list[k * 3 + 0];', 'a column stride in an index'],
    ['web/planted.js', 'export const ENTRY_FIELDS = 6;', 'a column stride (named)'],
  ];
  const clean = [
    'const row = parts[3];',
    'const shape = [4 * width, width];',
    "const help = 'any family (TLADAMF, TLSF32B)';",
    "import { open } from '/js/index.js';",
    'if (err.code === 0) ok();',
  ];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-facts-'));
  try {
    const cases = [...planted.map(([file, code, what]) => ({ file, code, what })), ...clean.map((code) => ({ file: 'js/clean.js', code, what: null }))];
    const paths = cases.map((_, i) => path.join(dir, `case${i}.js`));
    cases.forEach((c, i) => fs.writeFileSync(paths[i], `${c.code}\n`));
    const trees = parse(paths);
    cases.forEach((c, i) => {
      const found = check(trees.get(paths[i]), c.file, f).map((x) => x.what);
      if (c.what) assert.ok(found.includes(c.what), `${c.code}: found ${JSON.stringify(found)}, wanted ${c.what}`);
      else assert.deepEqual(found, [], c.code);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('no JS or web file states a format or ABI fact but the known ones', async () => {
  const found = (await checkTree()).map((x) => [x.file, x.what, x.text]);
  assert.ok((await import('./format-facts.mjs')).guardedFiles().length > 40, 'the guard reads js/ and web/');
  assert.deepEqual(found, KNOWN, JSON.stringify(found, null, 1));
});

test("Checkpoint's methods are the ones index.d.ts declares: the package's plumbing is not its API", async () => {
  const { Checkpoint } = await import('../../js/index.js');
  const types = fs.readFileSync(path.join(ROOT, 'js/index.d.ts'), 'utf8');
  const body = types.slice(types.indexOf('export class Checkpoint {'));
  const declared = [...body.slice(0, body.indexOf('\n}')).matchAll(/^\s+(?:readonly\s+)?(\w+)[(:]/gm)].map((m) => m[1]).sort();
  const own = Object.getOwnPropertyNames(Checkpoint.prototype).filter((k) => k !== 'constructor').sort();
  assert.ok(declared.includes('columns') && declared.includes('close'), 'the declaration was read');
  assert.deepEqual(own, declared);
});
