// The JS modules' imports run one way: no module reaches itself again through what it imports,
// statically or by import(), in the package (js/) or the viewer (web/).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

function modules(dir) {
  const out = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...modules(rel));
    else if (e.name.endsWith('.js') && !e.name.startsWith('ckptscope')) out.push(rel);
  }
  return out;
}

/** Each module's relative imports (the page's /js/ URLs are the package's js/ folder). */
function graph(files) {
  const g = new Map();
  for (const f of files) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    const to = [];
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'((?:\.{1,2}|\/js)\/[^']+)'/gm)) {
      to.push(m[1].startsWith('/js/') ? path.normalize(m[1].slice(1)) : path.normalize(path.join(path.dirname(f), m[1])));
    }
    g.set(f, to);
  }
  return g;
}

function cycles(g) {
  const state = new Map(), found = [];
  const visit = (u, stack) => {
    state.set(u, 1);
    stack.push(u);
    for (const v of g.get(u) ?? []) {
      if (state.get(v) === 1) found.push([...stack.slice(stack.indexOf(v)), v].join(' -> '));
      else if (!state.has(v)) visit(v, stack);
    }
    stack.pop();
    state.set(u, 2);
  };
  for (const u of g.keys()) if (!state.has(u)) visit(u, []);
  return found;
}

test('no JS module imports itself back, in js/ and web/', () => {
  const g = graph([...modules('js'), ...modules('web')]);
  assert.ok(g.size > 50, `${g.size} modules read`);
  assert.ok([...g.values()].flat().includes('js/trainer-folder.js'), 'the graph holds the imports');
  assert.deepEqual(cycles(g), []);
});

test('the cycle finder finds a cycle', () => {
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]])), ['a -> b -> c -> a']);
});

/** Each module's static imports only (import() loads on demand, where it runs). */
function staticGraph(files) {
  const g = new Map();
  for (const f of files) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    const to = [];
    for (const m of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith('node:')) to.push(spec);
      else if (spec.startsWith('/js/')) to.push(path.normalize(spec.slice(1)));
      else if (spec.startsWith('.')) to.push(path.normalize(path.join(path.dirname(f), spec)));
    }
    g.set(f, to);
  }
  return g;
}

test('the viewer loads no Node module: nothing web/ imports statically imports node:', () => {
  const g = staticGraph([...modules('js'), ...modules('web')]);
  const seen = new Set(), bad = [];
  const walk = (f, via) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const to of g.get(f) ?? []) {
      if (to.startsWith('node:')) bad.push([...via, f, to].join(' -> '));
      else walk(to, [...via, f]);
    }
  };
  for (const f of g.keys()) if (f.startsWith('web/')) walk(f, []);
  assert.ok(seen.has('js/index.js') && seen.has('js/checkpoint.js'), 'the page imports the package');
  assert.deepEqual(bad, []);
});
