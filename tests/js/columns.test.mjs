// Every line the CLI writes for a person fits 80 columns. Every command of
// js/cli/args.js's COMMANDS runs on a GPT-2-like pair (149 slots with biases and norms, a tied
// lm_head) named by long realistic names and one 120-character name, under a path of more than
// 100 characters, on broken files and with flagged health, as an 80-column terminal gets it
// (COLUMNS=80); every line of stdout and stderr is checked. The one exception is the rule of js/terminal.js (fitsColumns): a line that is one
// unbreakable token (a path or a name longer than the width) on a line of its own. JSON output
// (--json) is a machine format and is only parsed. Within one table, counts are written one
// way: with thousands separators in every count column or in none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeCheckpoint, writeState, inspect, health } from '../../js/index.js';
import { COMMANDS } from '../../js/cli/args.js';
import { num, numColumns, healthLines } from '../../js/cli/text.js';
import { COLUMNS, displayWidth, fitsColumns, outputColumns, wrapColumns, wrapLine, middleEllipsis } from '../../js/terminal.js';
import { cli, scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-columns-scratch-');

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-columns-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

// A folder deep enough that every file in it has a path of more than 100 characters.
const dir = path.join(tmp, 'experiments', 'gpt2-small-openwebtext-ablation-lr-sweep', 'run-20261130T180455Z-seed-1234', 'checkpoints');
fs.mkdirSync(dir, { recursive: true });
const at = (name) => path.join(dir, name);

// ---- a GPT-2-like pair, small enough for a test: GPT-2's 149 slots, a narrow width ----------

const D = 32, VOCAB = 50257, CTX = 1024, LAYERS = 12;
const slots = [['transformer.wte.weight', [VOCAB, D]], ['transformer.wpe.weight', [CTX, D]]];
for (let l = 0; l < LAYERS; l++) {
  const p = `transformer.h.${l}`;
  slots.push([`${p}.ln_1.weight`, [D]], [`${p}.ln_1.bias`, [D]], [`${p}.attn.c_attn.weight`, [D, 3 * D]], [`${p}.attn.c_attn.bias`, [3 * D]],
    [`${p}.attn.c_proj.weight`, [D, D]], [`${p}.attn.c_proj.bias`, [D]], [`${p}.ln_2.weight`, [D]], [`${p}.ln_2.bias`, [D]],
    [`${p}.mlp.c_fc.weight`, [D, 4 * D]], [`${p}.mlp.c_fc.bias`, [4 * D]], [`${p}.mlp.c_proj.weight`, [4 * D, D]], [`${p}.mlp.c_proj.bias`, [D]]);
}
slots.push(['transformer.ln_f.weight', [D]], ['transformer.ln_f.bias', [D]], ['lm_head.weight', [VOCAB, D]]);
const LONG_NAME = `model.decoder.${'very_long_module_name.'.repeat(4)}attention.query_key_value_projection.weight_scale_inv`.slice(0, 120);
const names = slots.map(([n]) => n);
names[7] = LONG_NAME;   // one 120-character name among the realistic ones
const shapes = slots.map(([, s]) => s);
const n = shapes.length;
const TIED = n - 1;     // lm_head shares the embedding's moments
const sizeOf = (s) => s.reduce((a, b) => a * b, 1);
const STEP = 123_456;

function moments(id, scale = 1) {
  const k = sizeOf(shapes[id]);
  const m = new Float32Array(k), v = new Float32Array(k);
  for (let i = 0; i < k; i++) {
    m[i] = 1e-4 * scale * Math.sin(i + id);
    v[i] = 1e-8 * (1 + Math.cos(i * 0.7 + id) ** 2);
  }
  return { id, step: STEP, m, v };
}

function description({ step = STEP, poison = false } = {}) {
  const entries = [];
  for (let id = 0; id < n; id++) if (id !== TIED) entries.push({ ...moments(id), step });
  if (poison) entries[3].m[5] = NaN;   // a flag that fails, beside the ratio warnings
  return {
    shapes, requiresGrad: shapes.map(() => true), representatives: shapes.map((_, i) => (i === TIED ? 0 : i)),
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.1 }, randomCounter: 987_654_321, entries,
  };
}

function stateDescription() {
  // weights ~0.02, norms 1, biases small: the ratio band flags the biases (warnings)
  return { shapes, values: shapes.map((s, i) => new Float32Array(sizeOf(s)).fill(/bias/.test(names[i]) ? 1e-4 : /ln_/.test(names[i]) ? 1 : 0.02)) };
}

const files = {};
test('the GPT-2-like files', async () => {
  const opt = await writeCheckpoint(description());
  files.opt = at('gpt2-small-step-000123456.optimizer.ckpt');
  fs.writeFileSync(files.opt, opt);
  files.next = at('gpt2-small-step-000123457.optimizer.ckpt');
  fs.writeFileSync(files.next, await writeCheckpoint(description({ step: STEP + 1 })));
  files.state = at('gpt2-small-step-000123456.model-state.tlsf');
  fs.writeFileSync(files.state, await writeState(stateDescription()));
  files.poisoned = at('gpt2-small-step-000123456.poisoned.ckpt');
  fs.writeFileSync(files.poisoned, await writeCheckpoint(description({ poison: true })));
  files.cut = at('gpt2-small-step-000123456.cut-in-a-payload.ckpt');
  fs.writeFileSync(files.cut, opt.subarray(0, Math.floor(opt.length * 0.6)));
  const bad = Uint8Array.from(opt.subarray(0, 4096));
  bad[0] = 0x50;   // not the magic
  files.badMagic = at('gpt2-small-step-000123456.bad-magic.ckpt');
  fs.writeFileSync(files.badMagic, bad);
  files.names = at('gpt2-small.slot-names.json');
  fs.writeFileSync(files.names, JSON.stringify(names));
  // a layout that differs: another width, one slot frozen
  const layout = { shapes: shapes.map((s) => (s.length === 2 && s[1] === D ? [s[0], 2 * D] : s)), requiresGrad: shapes.map((_, i) => i !== 5), representatives: description().representatives };
  files.otherLayout = at('gpt2-small-wider-embedding-and-frozen-bias.layout.json');
  fs.writeFileSync(files.otherLayout, JSON.stringify(layout));
  files.sameLayout = at('gpt2-small.layout.json');
  fs.writeFileSync(files.sameLayout, JSON.stringify({ shapes, requiresGrad: layout.requiresGrad.map(() => true), representatives: layout.representatives }));
  files.otherConfig = at('gpt2-small-other-betas.optimizer.ckpt');
  fs.writeFileSync(files.otherConfig, await writeCheckpoint({ ...description(), config: { kind: 'adamw', beta1: 0.85, beta2: 0.95, epsilon: 1e-6, weightDecay: 0 } }));
  files.desc = at('gpt2-small.description-for-write.json');
  fs.writeFileSync(files.desc, JSON.stringify({ shapes: [[3, 2], [2]], requiresGrad: [true, true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [0, 0, 0, 0, 0, 0], v: [0, 0, 0, 0, 0, 0] }, { id: 1, step: 1, m: [0, 0], v: [0, 0] }] }));
  files.runDir = path.join(dir, 'run-folder-with-two-consecutive-optimizer-checkpoints-of-one-training-run');
  fs.mkdirSync(files.runDir);
  fs.copyFileSync(files.opt, path.join(files.runDir, 'step-123456.ckpt'));
  fs.copyFileSync(files.next, path.join(files.runDir, 'step-123457.ckpt'));
  for (const f of Object.values(files)) assert.ok(f.length > 100, f);
});

// ---- the runs: every command, each a few ways ----------------------------------------------

const out = (name) => at(`out-${name}`);
const CASES = {
  inspect: () => [
    ['inspect', files.opt],
    ['inspect', files.opt, '--names', files.names],
    ['inspect', files.opt, '--stats', '--names', files.names],
    ['inspect', files.state, '--stats', '--names', files.names],
    ['inspect', files.cut, '--names', files.names],
    ['inspect', files.badMagic],
    ['inspect', files.opt, '--json'],
    ['inspect', files.names],
  ],
  check: () => [
    ['check', files.opt, '--expect', files.sameLayout],
    ['check', files.opt, '--expect', files.otherLayout, '--names', files.names],
    ['check', files.opt, '--expect', files.otherConfig],
    ['check', files.opt, '--expect', files.otherLayout, '--reader', 'all'],
    ['check', files.cut, '--expect', files.sameLayout],
    ['check', files.opt, '--state', files.state, '--names', files.names],
    ['check', files.next, '--state', files.opt],
    ['check', files.badMagic, '--state', files.state],
    ['check', files.opt, files.state],
  ],
  diff: () => [
    ['diff', files.opt, files.otherLayout, '--names', files.names],
    ['diff', files.opt, files.sameLayout],
    ['diff', files.opt, files.otherConfig],
    ['diff', files.opt, files.cut],
  ],
  health: () => [
    ['health', files.opt],
    ['health', files.opt, '--names', files.names],
    ['health', files.opt, '--state', files.state, '--lr', '6e-4', '--names', files.names],
    ['health', files.poisoned, '--state', files.state, '--lr', '6e-4', '--names', files.names, '--strict'],
    ['health', files.opt, '--state', files.state, '--lr', '6e-4', '--json'],
    ['health', files.cut, '--state', files.state],
    ['health', files.state, files.opt],
  ],
  export: () => [
    ['export', files.opt, out('moments-with-their-names-for-numpy.safetensors'), '--names', files.names],
    ['export', files.state, out('model-state-tensors-for-numpy.npz')],
    ['export', files.cut, out('never-written.npz')],
    ['export', files.opt, out('wrong-extension.bin')],
  ],
  write: () => [
    ['write', files.desc, out('written-from-the-description.ckpt')],
    ['write', files.names, out('not-a-description.ckpt')],
  ],
  convert: () => [
    ['convert', files.opt, out('converted-for-the-oldest-reader.ckpt'), '--to', 'oldest'],
    ['convert', files.opt, out('converted-for-v2-v4.ckpt'), '--for', 'v2-v4'],
    ['convert', files.opt, out('converted-untied-for-v2.ckpt'), '--for', 'v2', '--untie', '--random-counter', '7'],
    ['convert', files.cut, out('never-converted.ckpt'), '--to', '5'],
  ],
  run: () => [
    ['run', files.opt, files.next],
    ['run', files.opt, files.next, '--state', files.state, files.state, '--lr', '6e-4'],
    ['run', files.runDir],
    ['run', files.runDir, '--slots', '--names', files.names],
    ['run', files.opt, files.next, '--slots', '--names', files.names],
    ['run', files.next, files.opt, files.poisoned],
    ['run', files.opt, files.next, '--grad', out('gradient-of-the-one-step.safetensors'), '--names', files.names],
    ['run', files.opt, files.next, '--json'],
  ],
  serve: () => [['serve', '--port', '0'], ['serve', files.opt]],
  view: () => [['view', files.opt, files.state, files.names, '--port', '0', '--no-open'], ['view', at('no-such-file-in-this-deep-folder.ckpt')]],
};

// Every command, its --help, no arguments at all, and the CLI's own help.
const everyCommand = () => [
  // bare `serve` would listen on 8080: its case gives --port 0
  ...COMMANDS.flatMap((c) => [...CASES[c](), [c, '--help'], ...(c === 'serve' ? [] : [[c]])]),
  ['--help'], [], ['--version'], ['inspekt', files.opt],
];

const KEEPS_RUNNING = new Set(['serve', 'view']);
// What an 80-column terminal gets (a pipe without COLUMNS keeps each message whole on one line).
const TERMINAL = { ...process.env, COLUMNS: '80' };

/** A command's output: spawned, and for serve/view stopped once it has said where it is. */
async function runCli(args) {
  if (!KEEPS_RUNNING.has(args[0]) || args.includes('--help')) {
    const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20, env: TERMINAL });
    return { stdout: r.stdout, stderr: r.stderr, status: r.status };
  }
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: TERMINAL });
  let stdout = '', stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const status = await new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGTERM'), 20_000);
    const poll = setInterval(() => {
      if (/http:\/\//.test(stdout) && (args[0] === 'serve' || /browser/.test(stderr))) child.kill('SIGINT');
    }, 50);
    child.on('exit', (code) => (clearTimeout(timer), clearInterval(poll), resolve(code)));
  });
  return { stdout, stderr, status };
}

/** The lines of a text that break the rule, with their width. */
const tooWide = (text) => text.split('\n').filter((l) => !fitsColumns(l, COLUMNS)).map((l) => `${displayWidth(l)} columns: ${l}`);

// ---- counts in one table: separators in all or none ----------------------------------------

// A table: a header line of column names, then its rows, up to a blank line. Counts are the
// cells that are whole numbers of 4 digits or more; each is written 1,234,567 or 1234567.
const SEPARATED = /^\d{1,3}(,\d{3})+$/, PLAIN = /^\d{4,}$/;
function mixedTables(text) {
  const bad = [];
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n');
    const start = lines.findIndex((l) => /^[\s!]*(slot|tensor|file)  /.test(l));
    if (start < 0) continue;
    const cells = lines.slice(start + 1).flatMap((l) => l.trim().split(/\s+/));
    const sep = cells.filter((c) => SEPARATED.test(c)), plain = cells.filter((c) => PLAIN.test(c));
    if (sep.length && plain.length) bad.push(`${lines[start].trim()}: ${sep[0]} beside ${plain[0]}`);
  }
  return bad;
}

test('the rule: a line fits in columns, or is one unbreakable token on a line of its own', () => {
  assert.equal(COLUMNS, 80);
  assert.equal(displayWidth('transformer.h.11.mlp.c_proj.weight'), 34);
  assert.equal(displayWidth('名前'), 4, 'East Asian wide characters take two columns');
  assert.equal(displayWidth('e\u0301'), 1, 'a combining mark takes none');
  assert.equal(displayWidth('🚀'), 2);
  assert.ok(fitsColumns('x'.repeat(80), 80));
  assert.ok(!fitsColumns('x '.repeat(40) + 'x', 80));
  assert.ok(!fitsColumns('名'.repeat(40) + ' x', 80), 'a wide character is two columns');
  assert.ok(fitsColumns('/a/path/' + 'x'.repeat(120), 80), 'one token');
  assert.ok(fitsColumns('    ' + 'x'.repeat(120), 80), 'one token, indented');
  assert.ok(!fitsColumns('wrote ' + 'x'.repeat(120), 80), 'a token beside words is not alone');
  // wrapping: a hanging indent; a token too long for the line goes on a line of its own
  assert.deepEqual(wrapLine('flag: ' + 'word '.repeat(20).trim(), 30),
    ['flag: word word word word word', '  word word word word word', '  word word word word word', '  word word word word word']);
  assert.deepEqual(wrapLine(`wrote ${'p'.repeat(90)} (10 bytes)`, 80), ['wrote', `  ${'p'.repeat(90)}`, '  (10 bytes)']);
  assert.deepEqual(wrapLine('short', 80), ['short']);
  assert.equal(middleEllipsis('transformer.h.11.mlp.c_proj.weight', 30), 'transformer.h.1….c_proj.weight');
  assert.equal(displayWidth(middleEllipsis(LONG_NAME, 25)), 25);
  // the width: a terminal's own when it is wider, else COLUMNS when wider, else 80
  assert.equal(outputColumns({ isTTY: true, columns: 120 }, {}), 120);
  assert.equal(outputColumns({ isTTY: true, columns: 60 }, {}), 80);
  assert.equal(outputColumns({ isTTY: false, columns: 200 }, {}), 80);
  assert.equal(outputColumns({}, { COLUMNS: '100' }), 100);
  assert.equal(outputColumns({}, { COLUMNS: '40' }), 80);
  // messages wrap on a terminal or with COLUMNS; a pipe without it keeps each one whole
  assert.equal(wrapColumns({ isTTY: true, columns: 100 }, {}), 100);
  assert.equal(wrapColumns({}, { COLUMNS: '80' }), 80);
  assert.equal(wrapColumns({}, {}), Infinity);
});

test('every command has cases here', () => {
  for (const c of COMMANDS) assert.ok(CASES[c], `no case for ${c}: add its runs to CASES`);
});

test('every line of every command fits 80 columns; one number format a table', async () => {
  const failures = [];
  for (const args of everyCommand()) {
    const r = await runCli(args);
    const shown = args.map((a) => (a.startsWith(dir) ? a.slice(dir.length + 1) || '.' : a)).join(' ');
    assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, `${shown}: no stack trace`);
    assert.ok(r.stdout.length + r.stderr.length > 0, `${shown}: says something`);
    if (args.includes('--json')) JSON.parse(r.stdout);   // machine output: parsed, not wrapped
    else failures.push(...tooWide(r.stdout).map((l) => `${shown} (stdout) ${l}`), ...mixedTables(r.stdout).map((l) => `${shown}: ${l}`));
    failures.push(...tooWide(r.stderr).map((l) => `${shown} (stderr) ${l}`));
  }
  assert.deepEqual(failures, []);
});

test('a shortened name is not lost: it is printed in full once, on a line of its own if need be', async () => {
  const r = spawnSync(process.execPath, [CLI, 'inspect', files.opt, '--stats', '--names', files.names], { encoding: 'utf8', env: TERMINAL });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  for (const name of names) assert.ok(lines.some((l) => l.includes(name)), `${name} in full`);
  assert.ok(lines.some((l) => l.trim() === LONG_NAME), 'the 120-character name on a line of its own');
  assert.equal(lines.filter((l) => l.trim() === LONG_NAME).length, 1, 'once, not once a table');
  const h = spawnSync(process.execPath, [CLI, 'health', files.poisoned, '--names', files.names], { encoding: 'utf8' });
  assert.ok(h.stdout.split('\n').some((l) => l.includes('transformer.h.0.ln_2.weight')), h.stdout);
  // a pipe without COLUMNS: the message whole on one line, for scripts and grep
  const target = out('piped-and-whole.ckpt');
  const { COLUMNS: _, ...piped } = process.env;
  const w = spawnSync(process.execPath, [CLI, 'write', files.desc, target], { encoding: 'utf8', env: piped });
  assert.equal(w.stdout, `wrote ${target} (${fs.statSync(target).size} bytes)\n`);
  const t = spawnSync(process.execPath, [CLI, 'write', files.desc, target], { encoding: 'utf8', env: TERMINAL });
  assert.equal(t.stdout, `wrote\n  ${target}\n  (${fs.statSync(target).size} bytes)\n`);
});

test('one notation per column: a column of numbers reads all fixed or all with exponents', () => {
  assert.deepEqual(numColumns([[1, 1.176e-3], [2, 8.407e-4], [3, null]], [1]).map((r) => r[1]), ['1.176e-3', '8.407e-4', '']);
  assert.deepEqual(numColumns([[0.0196], [0.05657], [0]], [0]).map((r) => r[0]), ['0.0196', '0.05657', '0']);
  assert.deepEqual(numColumns([[123456], [1.5], ['NaN']], [0]).map((r) => r[0]), ['1.235e+5', '1.5e+0', 'NaN']);
  assert.equal(num(1.176e-3), '0.001176', 'a number alone: fixed when it reads well fixed');
  assert.equal(num(8.407e-4), '8.407e-4');
  // ratios on both sides of 1e-3 (an lr near the middle of the usual band): one notation
  const slot = (i, ratio) => ({ slot: i, owner: i, step: 5, flags: [], update: { rms: 0.05, maxAbs: 0.1 }, param: { rms: 0.03 }, ratio, neverUpdated: 0, inconsistent: 0 });
  const lines = healthLines({ ok: true, pairs: true, lr: 5e-4, c: 7.27, slots: [slot(0, 1.176e-3), slot(1, 8.407e-4)], flags: [], error: null }, 'a.ckpt', 'a.tlsf');
  const rows = lines.filter((l) => /^\s+[01]\s+owner/.test(l)).map((l) => l.trim().split(/\s+/).at(-1));
  assert.deepEqual(rows, ['1.176e-3', '8.407e-4']);
});

test('the summary, --stats and health tables fit 80 columns (bit patterns two a line, statistics a table of their own)', async () => {
  // a GPT-2-like shape: wide sizes and steps, no names
  const n = 6;
  const size = 768 * 4;
  const desc = {
    shapes: Array.from({ length: n }, () => [768, 4]), requiresGrad: Array.from({ length: n }, () => true),
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.1 },
    entries: Array.from({ length: n }, (_, id) => ({ id, step: 123_456, m: new Float32Array(size).fill(-1.234567e-5 * (id + 1)), v: new Float32Array(size).fill(1.5e-9 * (id + 1)) })),
  };
  const opt = put('wide80.ckpt', await writeCheckpoint(desc));
  const state = put('wide80.tlsf', await writeState({ shapes: desc.shapes, values: desc.shapes.map(() => new Float32Array(size).fill(-0.0123456)) }));
  for (const args of [['inspect', opt], ['inspect', opt, '--stats'], ['inspect', state, '--stats'], ['health', opt, '--state', state, '--lr', '1e-3']]) {
    const r = cli(args);
    assert.ok(r.status === 0 || r.status === 1, r.stderr);
    // every line but the first (it holds the file's path) and the flag lines (the core's texts)
    for (const line of r.stdout.split('\n').slice(1).filter((l) => !/^(flag|warning): /.test(l))) {
      assert.ok(line.length <= 80, `${args[0]} ${args.slice(2).join(' ')}: ${line.length} columns: ${line}`);
    }
  }
});
