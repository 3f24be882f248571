// Every code of the C core's ckpt_code enumeration (src/ckptscope.h) has a template in
// tests/cases/templates.txt and an entry in docs/diagnostics.md, and neither names a code the
// core does not have: a code added without its text and its documentation fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const read = (path) => fs.readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

function coreCodes() {
  const header = read('src/ckptscope.h');
  const block = header.match(/typedef enum ckpt_code \{([\s\S]*?)\} ckpt_code;/);
  assert.ok(block, 'src/ckptscope.h declares the ckpt_code enumeration');
  const codes = new Map();
  for (const [, name, value] of block[1].matchAll(/(CKPT_E_\w+)\s*=\s*(\d+)/g)) codes.set(Number(value), name);
  return codes;
}

function templateCodes() {
  const codes = new Set();
  for (const line of read('tests/cases/templates.txt').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    codes.add(Number(line.slice(0, line.indexOf('|'))));
  }
  return codes;
}

// "### 19, 20 — beta1, beta2": the codes of each entry heading
function docCodes() {
  const codes = new Set();
  for (const [, list] of read('docs/diagnostics.md').matchAll(/^### ([0-9, ]+) — /gm)) {
    for (const n of list.split(',')) codes.add(Number(n.trim()));
  }
  return codes;
}

const core = coreCodes();

test('the enumeration is read whole (codes 1 to the last, none skipped)', () => {
  assert.ok(core.size >= 49, `only ${core.size} codes read from src/ckptscope.h`);
  for (let c = 1; c <= Math.max(...core.keys()); c++) assert.ok(core.has(c), `code ${c} is missing from the enumeration`);
});

test('every code has a template, and every template a code', () => {
  const templates = templateCodes();
  for (const [code, name] of core) assert.ok(templates.has(code), `${name} (${code}) has no template in tests/cases/templates.txt`);
  for (const code of templates) assert.ok(core.has(code), `tests/cases/templates.txt names code ${code}, which src/ckptscope.h does not have`);
});

test('every code has an entry in docs/diagnostics.md, and every entry a code', () => {
  const docs = docCodes();
  for (const [code, name] of core) assert.ok(docs.has(code), `${name} (${code}) has no "### ${code} — " entry in docs/diagnostics.md`);
  for (const code of docs) assert.ok(core.has(code), `docs/diagnostics.md documents code ${code}, which src/ckptscope.h does not have`);
});
