// The documentation's code runs as written: the README's JS snippet (through
// docs/examples/verify.mjs, which runs every console, js, ts and python block of docs/*.md and
// README.md), and docs/README.md's setup line for a checkout, verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the README\'s blocks run as written (verify.mjs ../README.md)', () => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'docs/examples/verify.mjs'), '../README.md'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^2 examples checked, 0 differ$/m);
});

test('docs/README.md\'s setup line for a checkout runs verbatim there, with no ckptscope on the PATH', async () => {
  const line = fs.readFileSync(path.join(ROOT, 'docs/README.md'), 'utf8').split('\n').find((l) => /#\s*in a checkout\s*$/.test(l));
  assert.ok(line, 'the line is there');
  const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-checkout-'));
  try {
    for (const d of ['docs', 'js', 'package.json']) fs.symlinkSync(path.join(ROOT, d), path.join(checkout, d));
    const PATH = ['/usr/local/bin', '/usr/bin', '/bin'].filter((d) => !fs.existsSync(path.join(d, 'ckptscope'))).join(':');
    const node = path.dirname(process.execPath);
    const r = spawnSync('bash', ['-c', line], { cwd: checkout, encoding: 'utf8', env: { PATH: `${node}:${PATH}`, HOME: checkout }, timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    for (const f of ['model.ckpt', 'state.ckpt', 'unhealthy.ckpt', 'unhealthy-state.ckpt']) {
      assert.equal((await inspect(path.join(checkout, f))).ok, true, f);
    }
  } finally {
    fs.rmSync(checkout, { recursive: true, force: true });
  }
});

test('the README\'s list of commands is --help\'s: every form in its order, and only the options --help gives that form', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = readme.slice(readme.indexOf('The other commands:')).split('```')[1];
  const help = spawnSync(process.execPath, [path.join(ROOT, 'js/cli.js'), '--help'], { encoding: 'utf8' }).stdout;
  // --help's forms: a line `  ckptscope CMD ...` and its continuation lines (indented past the command)
  const forms = [];
  for (const line of help.slice(0, help.indexOf('\n\n')).split('\n')) {
    const m = /^ {2}ckptscope (\S+)(.*)$/.exec(line);
    if (m) forms.push({ command: m[1], synopsis: m[2] });
    else if (forms.length && /^ {10,}\[/.test(line)) forms[forms.length - 1].synopsis += ' ' + line.trim();
  }
  // an option or a whole placeholder (NAMES.json, OUT.safetensors), each a token of its own
  const tokens = (synopsis) => new Set(synopsis.match(/--[a-z-]+|\b[A-Z][A-Za-z0-9_.]*/g) ?? []);
  const commands = forms.filter((f) => !f.command.startsWith('-'));
  // serve and view share the README's last line
  const expected = commands.filter((f) => f.command !== 'view').map((f) => (f.command === 'serve' ? [f, commands.find((g) => g.command === 'view')] : [f]));
  // a README line: `ckptscope CMD SYNOPSIS   description` (the synopsis ends at three blanks)
  const lines = block.split('\n').filter((l) => l.startsWith('ckptscope '));
  assert.equal(lines.length, expected.length, 'one README line per form of --help');
  lines.forEach((line, i) => {
    const [command, ...rest] = line.slice('ckptscope '.length).split(/ {3,}/)[0].split(' ');
    const given = expected[i];
    assert.equal(command, given[0].command, `README line ${i + 1} is --help's form ${i + 1}`);
    const known = new Set(given.flatMap((f) => [...tokens(f.synopsis)]));
    for (const t of tokens(rest.join(' '))) assert.ok(known.has(t), `README: ${command} ${t} is not in --help's form: ${given.map((f) => f.synopsis.trim()).join(' / ')}`);
  });
});

// ---- the pages' references ---------------------------------------------------------------

const read = (rel) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

/** A page's headings (outside fenced blocks), each as written after its #s, with its level. */
function headings(text) {
  const out = [];
  let fence = null;
  for (const line of text.split('\n')) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) fence = fence === null ? f[1] : (line.trim().startsWith(fence) ? null : fence);
    else if (fence === null) {
      const h = /^(#{1,6}) (.+?)\s*$/.exec(line);
      if (h) out.push({ level: h[1].length, text: h[2] });
    }
  }
  return out;
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
 *  hyphens, a repeated anchor numbered -1, -2, ... */
function anchors(text) {
  const seen = new Map(), out = new Set();
  for (const { text: h } of headings(text)) {
    const slug = h.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

/** Every file under a folder of the repository (node_modules, build output and dot folders aside). */
function* filesUnder(rel) {
  for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
    const child = path.posix.join(rel, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'build' && !e.name.startsWith('.')) yield* filesUnder(child);
    } else if (/\.(c|h|js|mjs|cjs|ts|py|sh|txt|json|html|css|md)$/.test(e.name) || e.name === 'CMakeLists.txt') {
      yield child;
    }
  }
}

// "format.md 6", "docs/format.md 4 and 6", "format.md 10.1, 10.2", "FORMAT.md 10.1-10.3": a
// citation of a section by number, and the numbers it names.
const CITATION = /format\.md,? (?:sections? )?(\d+(?:\.\d+)?(?:(?:, | and |-|–)\d+(?:\.\d+)?)*)/gi;

function citations(text) {
  const out = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(CITATION)) for (const n of m[1].split(/, | and |-|–/)) out.push({ line: i + 1, cited: m[0], section: n });
  });
  return out;
}

/** The section numbers docs/format.md has: "## N. Title" and "### N.M Title". */
function formatSections() {
  const out = new Set();
  for (const { level, text } of headings(read('docs/format.md'))) {
    const m = level === 2 ? /^(\d+)\. /.exec(text) : level === 3 ? /^(\d+\.\d+) /.exec(text) : null;
    if (m) out.add(m[1]);
  }
  return out;
}

test('citations are read whole: a list, a range and a lone number, and nothing else', () => {
  assert.deepEqual(citations('/* (format.md 4 and 6) */\n// FORMAT.md 10.1-10.3; docs/format.md, section 9.\nformat.md 4 step 4, format.md 10.3, 10.5: x').map((c) => `${c.line}:${c.section}`),
    ['1:4', '1:6', '2:10.1', '2:10.3', '2:9', '3:4', '3:10.3', '3:10.5']);
  assert.deepEqual(citations('see format.md#4-the-optimizer-family and FORMAT.md\'s list'), []);
});

test('every citation "format.md N" or "N.M" in src/, js/, web/, tests/, bench/ and wasm/ is a heading of docs/format.md', () => {
  const sections = formatSections();
  for (const n of ['1', '4', '8']) assert.ok(sections.has(n), `docs/format.md's headings were read (section ${n})`);
  const cited = [];
  for (const dir of ['src', 'js', 'web', 'tests', 'bench', 'wasm']) {
    // this file's citations are examples of the form, not references
    for (const file of filesUnder(dir)) if (file !== 'tests/js/docs.test.mjs') for (const c of citations(read(file))) cited.push({ file, ...c });
  }
  assert.ok(cited.length > 100, `only ${cited.length} citations found`);
  const missing = cited.filter((c) => !sections.has(c.section)).map((c) => `${c.file}:${c.line}: ${c.cited} (no section ${c.section})`);
  assert.deepEqual(missing, [], `docs/format.md has no heading "## N. " or "### N.M " for:\n${missing.join('\n')}`);
});

test('every link of docs/*.md and README.md reaches a file, and a #anchor a heading of its page', () => {
  const pages = [...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'README.md'];
  const broken = [];
  let checked = 0;
  for (const page of pages) {
    const text = read(page).replace(/^\s*```[\s\S]*?^\s*```/gm, '');
    for (const [, href] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;   // http:, mailto:
      const [file, anchor] = href.split('#');
      const target = file ? path.posix.normalize(path.posix.join(path.posix.dirname(page), file)) : page;
      checked++;
      if (!fs.existsSync(path.join(ROOT, target))) broken.push(`${page}: ${href} (no file ${target})`);
      else if (anchor !== undefined && target.endsWith('.md') && !anchors(read(target)).has(anchor)) broken.push(`${page}: ${href} (no such heading in ${target})`);
    }
  }
  assert.ok(checked > 100, `only ${checked} links found`);
  assert.deepEqual(broken, []);
});

test('every text of the PyTorch, safetensors, zip and Trainer-file readers is in docs/format.md as written', () => {
  // tests/cases/templates.txt holds the core's diagnostics, code|template, with the placeholders
  // docs/format.md section 10 uses ({n}, {str}, {#}, ...)
  const prefixes = ['PyTorch: ', 'safetensors: ', 'zip: ', 'training_args.bin: ', 'trainer_state.json: ', 'model.safetensors.index.json: ', 'pytorch_model.bin.index.json: '];
  const texts = read('tests/cases/templates.txt').split('\n')
    .filter((l) => /^\d+\|/.test(l)).map((l) => l.slice(l.indexOf('|') + 1))
    .filter((t) => prefixes.some((p) => t.startsWith(p)));
  assert.ok(texts.length > 100, `only ${texts.length} texts read`);
  const format = read('docs/format.md').replace(/\n\s*/g, ' ');
  const missing = texts.filter((t) => !format.includes(`\`${t}\``));
  assert.deepEqual(missing, [], 'texts docs/format.md does not show, each as `text`');
});
