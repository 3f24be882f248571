// The CLI as a subprocess: the shared case table through `inspect`, `check --expect` and
// `check --state` (exit status, the exact diagnostic on stderr, the offset on stdout), `--json`
// against the API's report, `diff`, `write`, and the exit codes 0 / 1 / 2. No stack trace, ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect, check, pair, writeCheckpoint, health } from '../../js/index.js';
import { table, makeFile, makeLayout, writeBase, expectedError, pickError, model } from './table.mjs';
import { cli, scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-cli-scratch-');

const F = 'CUDA Adam checkpoint: ';
const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-cli-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

// JSON.stringify writes -0 as 0: a layout's -0.0 must reach the file as -0.
const layoutJSON = (layout) => JSON.stringify(layout, (k, v) => (Object.is(v, -0) ? '__minus_zero__' : v)).replaceAll('"__minus_zero__"', '-0');

let serial = 0;
function file(name, bytes) {
  const p = path.join(tmp, `${serial++}-${name.replace(/[^\w.-]+/g, '_')}`);
  fs.writeFileSync(p, bytes);
  return p;
}

/** The lines the CLI writes for a diagnostic `d` of the case table (the reference text, where it
 *  is, the configuration's differences, whose fault, the hint), written out here so that every
 *  line the CLI prints for a case is compared exactly. */
function diagnostic(d, { layout = null } = {}) {
  const lines = [d.message];
  const where = [];
  if (d.offset !== null && d.offset !== undefined) where.push(`at byte ${d.offset}`);
  if (d.slot !== null && d.slot !== undefined) where.push(`slot ${d.slot}`);
  if (where.length) lines.push(where.join(', '));
  for (const c of d.configDiff ?? []) lines.push(`  ${c.field}: file ${c.file}, expected ${c.expected}`);
  for (const c of (d.configDiff ?? []).filter((c) => c.fileBits)) lines.push(`  bits: ${c.field} file ${c.fileBits}, expected ${c.expectedBits}`);
  if (d.subject === 'expected' && layout) lines.push(`the layout ${layout} is at fault, not the checkpoint${d.hint ? `: ${d.hint}` : ''}`);
  else if (d.hint) lines.push(`hint: ${d.hint}`);
  return lines;
}

const text = (lines) => lines.map((l) => `${l}\n`).join('');
const warningLines = (ws) => (ws ?? []).map((w) => `warning: ${w}`);

/** The readers' line of `inspect`: a case's reader verdicts ({code}) or a report's ({reads}). */
function loadsIn(readers) {
  const reads = (r) => r.reads ?? r.code === 0;
  const yes = Object.keys(readers).filter((n) => reads(readers[n]));
  const not = Object.keys(readers).filter((n) => !reads(readers[n]));
  return yes.length ? `loads in: ${yes.join(', ')}${not.length ? ` (not ${not.join(', ')})` : ''}` : 'loads in: none of the TorchLean readers';
}

// Each case states the outcome's fields that matter to it; the API's answer for the same file
// holds the rest (a hint, a warning the case leaves to another): the CLI's text is compared,
// exactly and whole, with the two together, after the API's is checked against what the case
// states (as tests/js/cases.test.mjs does).
const stated = (apiError, want) => {
  assert.deepEqual(pickError(apiError, want), expectedError(want));
  return { ...apiError, ...want };
};

for (const c of table.cases) {
  test(`cli case: ${c.name}`, async () => {
    const p = file(`${c.name}.ckpt`, await makeFile(c.file));
    if (c.readers) return readerCase(c, p);
    if (c.inspect) return inspectCase(c, p);
    if (c.load) return loadCase(c, p);
    return pairCase(c, p);
  });
}

/** inspect FILE [--stats]: the summary's warnings and its verdict block (the readers' line with
 *  it), exactly; on a broken file the reference text alone on stderr. */
async function inspectCase(c, p) {
  const want = c.inspect;
  const report = await inspect(p, { stats: !!c.file.stats });
  const r = run('inspect', p, ...(c.file.stats ? ['--stats'] : []));
  const lines = r.stdout.split('\n');
  assert.deepEqual(lines.filter((l) => l.startsWith('warning: ')), warningLines(want.warnings ?? report.warnings), r.stdout);
  const verdict = r.stdout.slice(r.stdout.indexOf('\nverdict: ') + 1);
  const readers = want.readers ?? report.readers;
  const readersLine = readers ? [loadsIn(readers)] : [];
  if (want.code === 0) {
    assert.equal(report.error, null);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(verdict, text(['verdict: valid', ...readersLine]));
    return;
  }
  const d = stated(report.error, want);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, text([d.message]));
  assert.equal(verdict, text([`verdict: invalid at byte ${d.offset ?? '-'}`, ...diagnostic(d), ...readersLine]));
}

/** check FILE --expect LAYOUT: the verdict on stdout, the diagnostic on stderr, exactly. */
async function loadCase(c, p) {
  const want = c.load;
  const description = makeLayout(c.expect);
  const layout = file(`${c.name}.json`, layoutJSON(description));
  const r = run('check', p, '--expect', layout);
  if (want.code === 0) {
    const result = await check(p, description);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, text([`${p}: loads into ${layout}`]));
    assert.equal(r.stderr, text(warningLines(want.warnings ?? result.warnings)));
    return;
  }
  const err = await check(p, description).then(() => assert.fail('the API loads it'), (e) => e);
  const d = stated(err, want);
  assert.equal(r.status, 1, r.stderr);
  const why = diagnostic(d, { layout });
  if (d.subject === 'expected') {   // the layout at fault: no verdict on the file
    assert.equal(r.stdout, '');
  } else {
    assert.equal(r.stdout, text([`${p}: does not load into ${layout}`, ...why]));
  }
  assert.equal(r.stderr, text(why));
}

/** check OPT --state STATE: the pairing verdict with every failure, exactly; files that cannot be
 *  paired at all: why, and a broken file's own diagnostic (the API's for that file). */
async function pairCase(c, p) {
  const want = c.pair;
  const s = file(`${c.name}.state`, await makeFile(c.state));
  const r = run('check', p, '--state', s);
  if (!want.failures && want.code !== 0) {
    const err = await pair(p, s).then(() => assert.fail('the API pairs them'), (e) => e);
    const d = stated(err, want);
    if (err.result?.invalid) {
      // an invalid file never pairs: its own diagnostic first, naming it, then the verdict
      const name = err.result.invalid === 'state' ? s : p;
      const why = diagnostic(d);
      why[0] = `${name}: ${why[0]}`;
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.stdout, text([...why, `${p} does not pair with ${s}: ${name} is invalid, and an invalid file never pairs`]));
      assert.equal(r.stderr, text(why));
      return;
    }
    // not a verdict: a file in the wrong place is a usage error; swapped files get the command meant
    const swapped = (await inspect(s)).family === 'TLADAMF' ? `: did you mean \`ckptscope check ${s} --state ${p}\`?` : '';
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, '');
    const own = err.fileError ? diagnostic(err.fileError) : [];
    assert.equal(r.stderr, text([`ckptscope: cannot pair ${p} with ${s}: ${d.message}${swapped}`, ...own]));
    return;
  }
  // the CLI pairs the files as given (no statistics computed): the API's verdict on the same
  const result = await pair(p, s);
  if (!c.state.stats && want.warnings) assert.deepEqual(result.warnings, want.warnings);
  const warnings = warningLines(result.warnings);
  if (want.code === 0) {
    assert.equal(result.pairs, true);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, text([`${p} pairs with ${s}: same slots, same shapes, same ties; the values are not compared: \`run\` with both steps' state files compares them`, ...warnings]));
    assert.equal(r.stderr, '');
    return;
  }
  const d = stated(result.error, want);
  const failures = result.failures.map((f, k) => stated(f, want.failures[k]));
  assert.equal(failures.length, want.failures.length);
  assert.equal(r.status, 1, r.stderr);
  const n = failures.length;
  assert.equal(r.stdout, text([
    `${p} does not pair with ${s}: ${n} failure${n === 1 ? '' : 's'}`,
    ...failures.map((f) => `  ${f.message}${f.offset !== null ? ` (state file, byte ${f.offset})` : ''}`),
    ...warnings,
  ]));
  assert.equal(r.stderr, text([d.message]));
}

test('cli inspect --json is the API report, for both families, with and without statistics', async () => {
  for (const [base, stats] of [['model-v4', false], ['model-v4', true], ['unhealthy', true], ['state', true], ['param', false]]) {
    const p = file(`${base}.ckpt`, await writeBase(base));
    const r = run('inspect', p, '--json', ...(stats ? ['--stats'] : []));
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), await inspect(p, { stats }));
  }
});

test('cli summary is a table a person reads at a glance', async () => {
  const r = run('inspect', file('summary.ckpt', await writeBase('model-v4')));
  assert.match(r.stdout, /CUDA Adam checkpoint \(TLADAMF\) version 4, float32, 335 bytes/);
  assert.match(r.stdout, /optimizer\s+Adam\s+beta1 0\.9\s+beta2 0\.999\s+epsilon 1e-8\s+weight decay 0/);
  assert.match(r.stdout, /random counter\s+5/);
  assert.match(r.stdout, /slot\s+shape\s+size\s+trainable\s+representative\s+step/);
  assert.match(r.stdout, /\n\s+1\s+\[2, 3\]\s+6\s+yes\s+shares 0/);
  const names = file('names.json', JSON.stringify(['embed.weight', 'head.weight', 'bias']));
  const n = run('inspect', file('named.ckpt', await writeBase('model')), '--names', names);
  assert.match(n.stdout, /\n\s+1\s+head\.weight\s+\[2, 3\]\s+6\s+yes\s+shares 0/);
  const short = run('inspect', file('named2.ckpt', await writeBase('model')), '--names', file('two.json', '["a", "b"]'));
  assert.match(short.stderr, /warning: .*two\.json has 2 names for 3 slots/);
  const s = run('inspect', file('state.tlsf', await writeBase('state')));
  assert.match(s.stdout, /TorchLean float32 state checkpoint \(TLSF32B\) version 1, float32, 171 bytes/);
  assert.match(s.stdout, /tensor\s+shape\s+count\s+offset/);
});

test('cli check: a configuration mismatch says which fields differ, decoded first, bits second', async () => {
  const p = file('cfg.ckpt', await writeBase('model'));
  const layout = file('cfg.json', JSON.stringify(makeLayout({ like: 'model', config: { kind: 'adam', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0 } })));
  const r = run('check', p, '--expect', layout);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}checkpoint belongs to a different optimizer configuration\nat byte 15\n` +
    '  beta2: file 0.999, expected 0.95\n  bits: beta2 file 0x3feff7ced916872b, expected 0x3fee666666666666\n');
});

test('cli check: a malformed layout names the layout as at fault, its slot and reason', async () => {
  const p = file('mal.ckpt', await writeBase('model'));
  const layout = file('mal.json', JSON.stringify(makeLayout({ like: 'model', representatives: [0, 2, 2] })));
  const r = run('check', p, '--expect', layout);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}malformed in-memory parameter schema\nslot 1\nthe layout ${layout} is at fault, not the checkpoint: parameter 1: representative 2 follows it\n`);
  // no verdict on the file: the layout is at fault, not the checkpoint
  assert.equal(r.stdout, '');
});

test('cli check: a v4 file does not load into a float64 destination (format.md 4 step 4)', async () => {
  const p = file('v4.ckpt', await writeBase('model-v4'));
  const r = run('check', p, '--expect', file('f64.json', JSON.stringify(makeLayout({ like: 'model', dtype: 'float64' }))));
  assert.equal(r.status, 1);
  assert.equal(r.stderr.split('\n')[0], `${F}moment dtype differs from the destination`);
});

test('cli check --state: pairs, does not pair (every failure), cannot pair', async () => {
  const opt = file('opt.ckpt', await writeBase('model'));
  let r = run('check', opt, '--state', file('ok.tlsf', await writeBase('state')));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /pairs with/);
  r = run('check', opt, '--state', file('short.tlsf', await writeBase('state-short')));
  assert.equal(r.status, 1);
  assert.match(r.stdout, /does not pair with .*: 2 failures\n  state file has 2 tensors, the optimizer checkpoint has 3 parameter slots \(state file, byte 15\)\n  parameter 1: state shape \[3, 2\] differs from the optimizer's #\[2, 3\]/);
  r = run('check', file('st.tlsf', await writeBase('state')), '--state', opt);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /the first file is not an optimizer checkpoint/);
});

test('cli diff: differences exit 1, none exit 0; configuration decoded first', async () => {
  const a = file('da.ckpt', await writeBase('model'));
  const b = file('db.json', JSON.stringify(makeLayout({ like: 'model', shapes: [[2, 3], [2, 3], [4]] })));
  let r = run('diff', a, b);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /parameter 2: shape #\[3\] vs #\[4\]/);
  assert.match(r.stdout, /parameter 2: size 3 vs 4/);
  r = run('diff', a, a);
  assert.equal(r.status, 0);
  r = run('diff', a, file('adamw.ckpt', await writeBase('adamw')));
  assert.equal(r.status, 1);
  assert.match(r.stdout, /optimizer: adam vs adamw\n  beta2: 0\.999 vs 0\.95 \(bits 0x3feff7ced916872b vs 0x3fee666666666666\)\n  weightDecay: 0 vs 0\.1 /);
  r = run('diff', a, file('state.tlsf', await writeBase('state')));   // a state file's shapes
  assert.equal(r.status, 0, r.stdout);
});

test('cli diff: a report JSON is validated, not trusted', async () => {
  const a = file('dv.ckpt', await writeBase('model'));
  for (const [json, pattern] of [
    ['{"ok":true,"error":null,"schema":{"shapes":{"length":1e9},"requiresGrad":[]}}', /shapes must be an array/],
    ['{"family":"x"}', /shapes must be an array/],
    ['{"ok":true,"error":null,"schema":{"shapes":[[1]],"requiresGrad":[true]},"config":{"kind":"constructor","beta1":0.9,"beta2":0.9,"epsilon":1}}', /kind must be "adam" or "adamw"/],
    ['{"shapes":[[1]],"requiresGrad":[true],"config":{"kind":"__proto__","beta1":0.9,"beta2":0.9,"epsilon":1}}', /kind must be "adam" or "adamw"/],
  ]) {
    const r = run('diff', a, file('r.json', json));
    assert.equal(r.status, 2, `${json}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, pattern);
  }
});

test('cli write: a description in, a checkpoint out; no config is a usage error; a state file', async () => {
  const d = table.bases.model;
  const json = { ...d, entries: d.entries.map((e) => ({ id: e.id, step: e.step, m: new Array(d.shapes[e.id].reduce((a, b) => a * b, 1)).fill(e.m), v: new Array(d.shapes[e.id].reduce((a, b) => a * b, 1)).fill(e.v) })) };
  const desc = file('desc.json', JSON.stringify(json));
  const out = path.join(tmp, 'written.ckpt');
  let r = run('write', desc, out);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(new Uint8Array(fs.readFileSync(out)), await writeBase('model'));
  r = run('write', file('bad-desc.json', JSON.stringify({ ...json, entries: [] })), out);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}expected 2 moment entries, got 0\n`);
  const { config, ...noConfig } = json;
  void config;
  const fresh = path.join(tmp, 'never.ckpt');
  r = run('write', file('no-config.json', JSON.stringify(noConfig)), fresh);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /description\.config is missing/);
  assert.equal(fs.existsSync(fresh), false, 'nothing written');
  const st = path.join(tmp, 'written.tlsf');
  r = run('write', file('state.json', JSON.stringify({ family: 'TLSF32B', shapes: [[2, 3], [2, 3], [3]], values: [new Array(6).fill(0.5), new Array(6).fill(0.5), [-1, -1, -1]] })), st);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(new Uint8Array(fs.readFileSync(st)), await writeBase('state'));
});

test('cli usage and I/O errors exit 2', () => {
  for (const args of [[], ['frobnicate'], ['inspect'], ['inspect', 'a', 'b'], ['inspect', '--nope', 'x'], ['check', 'x'], ['check', 'x', '--expect', 'a', '--state', 'b'], ['serve', '--port', 'abc']]) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  const r = run('inspect', path.join(tmp, 'does-not-exist.ckpt'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /no such file: .*does-not-exist\.ckpt/);
  const d = run('inspect', tmp);   // a directory
  assert.equal(d.status, 2);
  assert.match(d.stderr, /is a directory, not a checkpoint file/);
});

test('cli summary of 200,000 slots, and --json streamed on one line past 10,000', async () => {
  const n = 200_000;
  const p = file('wide.ckpt', await writeCheckpoint({ shapes: Array.from({ length: n }, () => []), requiresGrad: Array.from({ length: n }, (_, i) => i === 0),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [0], v: [0] }] }));
  const r = run('inspect', p);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\n\s*199999\s+\[\]\s+1\s+no\s+-\n/);
  const j = run('inspect', p, '--json');
  assert.equal(j.status, 0);
  assert.equal(j.stdout.split('\n').length, 2, 'one line');
  assert.deepEqual(JSON.parse(j.stdout), await inspect(p));
});

/** A case of the reader column: each reader through `check --reader NAME`, then all of them
 *  through `check --reader all` (one line each, with that reader's own text). */
async function readerCase(c, p) {
  const layout = file(`${c.name}.json`, layoutJSON(makeLayout(c.expect)));
  const lines = [];
  for (const [reader, want] of Object.entries(c.readers)) {
    const r = run('check', p, '--expect', layout, '--reader', reader);
    if (want.code === 0) {
      assert.equal(r.status, 0, `${reader}: ${r.stderr}`);
      assert.equal(r.stdout, text([`${p}: loads into ${layout}`]), reader);
      assert.equal(r.stderr, text(warningLines(want.warnings)), reader);
      lines.push(`  ${reader.padEnd(11)}loads`, ...want.warnings.map((w) => `  ${''.padEnd(11)}warning: ${w}`));
    } else {
      const err = await check(p, makeLayout(c.expect), { reader }).then(() => assert.fail(`${reader} loads it`), (e) => e);
      const why = diagnostic(stated(err, want), { layout });
      assert.equal(r.status, 1, `${reader}: ${r.stderr}`);
      assert.equal(r.stdout, text([`${p}: does not load into ${layout}`, ...why]), reader);
      assert.equal(r.stderr, text(why), reader);
      lines.push(`  ${reader.padEnd(11)}does not load: ${want.message}`);
    }
  }
  const all = run('check', p, '--expect', layout, '--reader', 'all');
  assert.equal(all.stdout, `${p} into ${layout}, per TorchLean reader:\n${lines.join('\n')}\n`);
  assert.equal(all.status, Object.values(c.readers).every((w) => w.code === 0) ? 0 : 1, all.stderr);
}

test('cli: an unknown reader is a usage error naming the six', () => {
  const r = run('check', 'x.ckpt', '--expect', 'y.json', '--reader', 'v9');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], 'ckptscope: --reader takes a TorchLean reader: v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5, or all; not v9');
});

test('--version and -V print ckptscope X.Y.Z from package.json', () => {
  const { version } = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  for (const flag of ['--version', '-V']) {
    const r = cli([flag]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, `ckptscope ${version}\n`);
    assert.match(version, /^\d+\.\d+\.\d+/);
  }
});

test('CMD --help / -h: that command\'s usage and options, exit 0; --opt=value; a usage error shows one command\'s usage', async () => {
  for (const command of ['inspect', 'check', 'diff', 'health', 'export', 'write', 'serve', 'view']) {
    for (const help of ['--help', '-h']) {
      const r = cli([command, help]);
      assert.equal(r.status, 0, `${command} ${help}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage:\\n  ckptscope ${command} `));
      const usages = r.stdout.split('\n').filter((l) => l.startsWith('  ckptscope '));
      assert.ok(usages.every((l) => l.startsWith(`  ckptscope ${command} `)), `${command}: only its own usage`);
    }
  }
  assert.match(cli(['health', '--help']).stdout, /\n  --strict +ratio flags/);
  const p = put('eq.ckpt', await model());
  const eq = cli(['inspect', p, '--stats', '--workers=1', '--names=' + put('eq-names.json', '["a","b","c"]')]);
  assert.equal(eq.status, 0, eq.stderr);
  assert.match(eq.stdout, /\n +0 +a /);
  const bad = cli(['inspect', '--nope', p]);
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, `ckptscope: unknown option --nope\nusage:\n  ckptscope inspect FILE [--state MODEL] [--json] [--stats] [--names NAMES.json]\n${' '.repeat(20)}[--workers N] [--kind adam|adamw]\n${' '.repeat(6)}summary, or the JSON report: TorchLean's, PyTorch's and safetensors files;\n${' '.repeat(6)}FILE (OPT) may be a Trainer checkpoint-N/ folder: its optimizer and model\n(ckptscope inspect --help: its options)\n`);
  assert.match(cli(['inspect', p, '--json=yes']).stderr, /^ckptscope: --json takes no value\n/);
});

test('an option that does nothing for the command is refused, with why', async () => {
  const p = put('idle.ckpt', await model());
  const names = put('idle-names.json', '["a","b","c"]');
  for (const [args, message] of [
    [['inspect', p, '--workers', '2'], '--workers does nothing here: workers read the payloads, which only --stats reads'],
    [['inspect', p, '--json', '--names', names], '--names does nothing here: the JSON report has no names; drop --json to see them'],
    [['health', p, '--json', '--names', names], '--names does nothing here: the health JSON has no names; drop --json to see them'],
    [['health', p, '--expect', p], 'unknown option --expect for health (it belongs to check)'],
    [['inspect', p, '--stat'], 'unknown option --stat: did you mean --stats?'],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr.split('\n')[0], `ckptscope: ${message}`, args.join(' '));
  }
});

test('--names names the slot wherever one is named: health flags, diff, check --expect, pair failures', async () => {
  const opt = put('named-opt.ckpt', await model());
  const names = put('named.json', '["embed", "block", "bias"]');
  const layout = put('named-layout.json', '{"shapes": [[2, 3], [2, 3], [4]], "requiresGrad": [true, true, true]}');
  const d = cli(['diff', opt, layout, '--names', names]);
  assert.equal(d.status, 1);
  assert.match(d.stdout, /\n  \[bias\] parameter 2: shape #\[3\] vs #\[4\]\n/);
  const c = cli(['check', opt, '--expect', layout, '--names', names]);
  assert.equal(c.status, 1);
  assert.match(c.stdout, /\nat byte 151, slot 2 \(bias\)\n/);
  const p = cli(['check', opt, '--state', put('named-short.tlsf', await writeBase('state-short')), '--names', names]);
  assert.equal(p.status, 1);
  assert.match(p.stdout, /\n  \[block\] parameter 1: state shape \[3, 2\] differs/);
  const h = cli(['health', put('named-unhealthy.ckpt', await writeBase('unhealthy')), '--names', names]);
  assert.equal(h.status, 1);
  assert.match(h.stdout, /\nflag: \[embed\] parameter 0: its moments hold/);
});
