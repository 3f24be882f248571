// The CLI as a subprocess: the shared case table through `inspect`, `check --expect` and
// `check --state` (exit status, the exact diagnostic on stderr or, for a pair's verdict, on
// stdout only, the offset on stdout), `--json`
// against the API's report, `diff`, `write`, and the exit codes 0 / 1 / 2. No stack trace, ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect, check, pair, writeCheckpoint, writeState, health } from '../../js/index.js';
import { table, makeFile, makeLayout, writeBase, expectedError, pickError, model } from './table.mjs';
import { cli, scratch, usageOf } from './scratch.mjs';

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
  // the verdict is a result: on stdout only, each failure once
  assert.equal(r.stderr, '');
  assert.equal(d.message, failures[0].message);
}

test('cli inspect --json is the API report, for both families, with and without statistics', async () => {
  for (const [base, stats] of [['model-v4', false], ['model-v4', true], ['unhealthy', true], ['state', true], ['param', false]]) {
    const p = file(`${base}.ckpt`, await writeBase(base));
    const r = run('inspect', p, '--json', ...(stats ? ['--stats'] : []));
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), await inspect(p, { stats }));
  }
});

/** The lines of the summary of the case table's `model` bases that their files share. */
const SAME = (a, b) => `no differences between ${a} and ${b}\n`;
const CONFIG_LINES = `optimizer       Adam  beta1 0.9  beta2 0.999  epsilon 1e-8  weight decay 0
bits            beta1 0x3feccccccccccccd  beta2 0x3feff7ced916872b
                epsilon 0x3e45798ee2308c3a  weight decay 0x0000000000000000
`;

test('cli summary is a table a person reads at a glance', async () => {
  const v4 = file('summary.ckpt', await writeBase('model-v4'));
  const r = run('inspect', v4);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${v4}: CUDA Adam checkpoint (TLADAMF) version 4, float32, 335 bytes
${CONFIG_LINES}random counter  5
parameters      3 slots, 3 trainable, 2 optimizer states, with tied (shared)
                slots

slot  shape   size  trainable  representative  step
   0  [2, 3]     6  yes        owner              5
   1  [2, 3]     6  yes        shares 0
   2  [3]        3  yes        owner              5

verdict: valid
loads in: v2-v4, v2-v4-f32, v2-v5 (not v2, v2-lists, v2-v3)
`);
  assert.equal(r.stderr, '');
  const names = file('names.json', JSON.stringify(['embed.weight', 'head.weight', 'bias']));
  const named = file('named.ckpt', await writeBase('model'));
  const n = run('inspect', named, '--names', names);
  assert.equal(n.stdout, `${named}: CUDA Adam checkpoint (TLADAMF) version 3, float32, 327 bytes
${CONFIG_LINES}random counter  none (stochastic training cannot be resumed exactly)
parameters      3 slots, 3 trainable, 2 optimizer states, with tied (shared)
                slots

slot  name          shape   size  trainable  representative  step
   0  embed.weight  [2, 3]     6  yes        owner              5
   1  head.weight   [2, 3]     6  yes        shares 0
   2  bias          [3]        3  yes        owner              5
warning: ${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly

verdict: valid
loads in: v2-v3, v2-v4, v2-v4-f32, v2-v5 (not v2, v2-lists)
`);
  const two = file('two.json', '["a", "b"]');
  const short = run('inspect', file('named2.ckpt', await writeBase('model')), '--names', two);
  assert.equal(short.stderr, `warning: ${two} has 2 names for 3 slots: slot 1 (tied to slot 0) has none: a tied parameter? named_parameters() drops tied copies; named_parameters(remove_duplicate=False) (torch 2.0 and later) or list(model.state_dict()) less the buffers keeps them\n`);
  const state = file('state.tlsf', await writeBase('state'));
  const s = run('inspect', state);
  assert.equal(s.stdout, `${state}: TorchLean float32 state checkpoint (TLSF32B) version 1, float32, 171 bytes
tensors         3 tensors

tensor  shape   count  offset
     0  [2, 3]      6      23
     1  [2, 3]      6      79
     2  [3]         3     135

verdict: valid
`);
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
  const layout = file('f64.json', JSON.stringify(makeLayout({ like: 'model', dtype: 'float64' })));
  const r = run('check', p, '--expect', layout);
  assert.equal(r.status, 1);
  const why = `${F}moment dtype differs from the destination\nat byte 7\n`;
  assert.equal(r.stderr, why);
  assert.equal(r.stdout, `${p}: does not load into ${layout}\n${why}`);
});

test('cli check --state: pairs, does not pair (every failure), cannot pair', async () => {
  const opt = file('opt.ckpt', await writeBase('model'));
  const ok = file('ok.tlsf', await writeBase('state'));
  let r = run('check', opt, '--state', ok);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${opt} pairs with ${ok}: same slots, same shapes, same ties; the values are not compared: \`run\` with both steps' state files compares them\n`);
  const short = file('short.tlsf', await writeBase('state-short'));
  r = run('check', opt, '--state', short);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `${opt} does not pair with ${short}: 2 failures
  state file has 2 tensors, the optimizer checkpoint has 3 parameter slots (state file, byte 15)
  parameter 1: state shape [3, 2] differs from the optimizer's #[2, 3] (state file, byte 79)
`);
  const st = file('st.tlsf', await writeBase('state'));
  r = run('check', st, '--state', opt);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: cannot pair ${st} with ${opt}: the first file is not an optimizer checkpoint (TLADAMF, DCP, DeepSpeed or PyTorch): did you mean \`ckptscope check ${opt} --state ${st}\`?\n`);
});

test('cli diff: differences exit 1, none exit 0; configuration decoded first', async () => {
  const a = file('da.ckpt', await writeBase('model'));
  const b = file('db.json', JSON.stringify(makeLayout({ like: 'model', shapes: [[2, 3], [2, 3], [4]] })));
  let r = run('diff', a, b);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `2 differences between ${a} and ${b}:\n  parameter 2: shape #[3] vs #[4]\n  parameter 2: size 3 vs 4\n`);
  r = run('diff', a, a);
  assert.equal(r.status, 0);
  assert.equal(r.stdout, SAME(a, a));
  const adamw = file('adamw.ckpt', await writeBase('adamw'));
  r = run('diff', a, adamw);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, `3 differences between ${a} and ${adamw}:
  optimizer: adam vs adamw
  beta2: 0.999 vs 0.95 (bits 0x3feff7ced916872b vs 0x3fee666666666666)
  weightDecay: 0 vs 0.1 (bits 0x0000000000000000 vs 0x3fb999999999999a)
`);
  const state = file('state.tlsf', await writeBase('state'));
  r = run('diff', a, state);   // a state file's shapes
  assert.equal(r.status, 0, r.stdout);
  assert.equal(r.stdout, SAME(a, state));
});

test('cli diff: a report JSON is validated, not trusted', async () => {
  const a = file('dv.ckpt', await writeBase('model'));
  for (const [json, message] of [
    ['{"ok":true,"error":null,"schema":{"shapes":{"length":1e9},"requiresGrad":[]}}', 'layout.shapes must be an array, got an object'],
    ['{"family":"x"}', 'layout.shapes must be an array, got nothing (the field is missing)'],
    ['{"ok":true,"error":null,"schema":{"shapes":[[1]],"requiresGrad":[true]},"config":{"kind":"constructor","beta1":0.9,"beta2":0.9,"epsilon":1}}', 'layout.config.kind must be "adam" or "adamw", got the string "constructor"'],
    ['{"shapes":[[1]],"requiresGrad":[true],"config":{"kind":"__proto__","beta1":0.9,"beta2":0.9,"epsilon":1}}', 'layout.config.kind must be "adam" or "adamw", got the string "__proto__"'],
  ]) {
    const report = file('r.json', json);
    const r = run('diff', a, report);
    assert.equal(r.status, 2, `${json}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stderr, `ckptscope: ${report}: ${message}\n`);
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
  assert.equal(r.stderr, 'ckptscope: description.config is missing: say which optimizer wrote it, e.g. {"kind":"adamw","beta1":0.9,"beta2":0.999,"epsilon":1e-8,"weightDecay":0.01}\n');
  assert.equal(fs.existsSync(fresh), false, 'nothing written');
  const st = path.join(tmp, 'written.tlsf');
  r = run('write', file('state.json', JSON.stringify({ family: 'TLSF32B', shapes: [[2, 3], [2, 3], [3]], values: [new Array(6).fill(0.5), new Array(6).fill(0.5), [-1, -1, -1]] })), st);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(new Uint8Array(fs.readFileSync(st)), await writeBase('state'));
});

test('cli usage and I/O errors exit 2', () => {
  const checkTakes = 'ckptscope: check takes FILE --expect LAYOUT, or OPT --state STATE\n';
  for (const [args, stderr] of [
    [[], usageOf()],
    [['frobnicate'], `ckptscope: unknown command frobnicate\n${usageOf()}`],
    [['inspect'], `ckptscope: inspect takes one FILE\n${usageOf('inspect')}`],
    [['inspect', 'a', 'b'], `ckptscope: inspect takes one FILE\n${usageOf('inspect')}`],
    [['inspect', '--nope', 'x'], `ckptscope: unknown option --nope\n${usageOf('inspect')}`],
    [['check', 'x'], `${checkTakes}${usageOf('check')}`],
    [['check', 'x', '--expect', 'a', '--state', 'b'], `${checkTakes}${usageOf('check')}`],
    [['serve', '--port', 'abc'], `ckptscope: --port must be a port number (0 to 65535), got abc\n${usageOf('serve')}`],
  ]) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, stderr, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
  }
  const missing = path.join(tmp, 'does-not-exist.ckpt');
  const r = run('inspect', missing);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
  const d = run('inspect', tmp);   // a directory
  assert.equal(d.status, 2);
  assert.equal(d.stderr, `ckptscope: ${tmp} is a directory, not a checkpoint file\n`);
});

test('cli summary of 200,000 slots, and --json streamed on one line past 10,000', async () => {
  const n = 200_000;
  const p = file('wide.ckpt', await writeCheckpoint({ shapes: Array.from({ length: n }, () => []), requiresGrad: Array.from({ length: n }, (_, i) => i === 0),
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [0], v: [0] }] }));
  const r = run('inspect', p);
  assert.equal(r.status, 0, r.stderr);
  const frozen = Array.from({ length: n - 1 }, (_, i) => `${String(i + 1).padStart(6)}  []        1  no         -\n`).join('');
  assert.equal(r.stdout, `${p}: CUDA Adam checkpoint (TLADAMF) version 2, float32, 4,800,103 bytes
${CONFIG_LINES}random counter  none (stochastic training cannot be resumed exactly)
parameters      200,000 slots, 1 trainable, 1 optimizer state, no tied slots

  slot  shape  size  trainable  representative  step
     0  []        1  yes        owner              1
${frozen}warning: ${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly

verdict: valid
loads in: v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5
`);
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
  assert.equal(r.stderr, `ckptscope: --reader takes a TorchLean reader: v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5, or all; not v9\n${usageOf('check')}`);
});

test('--version and -V print ckptscope X.Y.Z from package.json', () => {
  const { version } = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  for (const flag of ['--version', '-V']) {
    const r = cli([flag]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, `ckptscope ${version}\n`);
    assert.match(version, /^\d+\.\d+\.\d+$/);
  }
});

test('CMD --help / -h: that command\'s usage and options, exit 0; --opt=value; a usage error shows one command\'s usage', async () => {
  for (const command of ['inspect', 'check', 'diff', 'health', 'export', 'write', 'serve', 'view']) {
    for (const help of ['--help', '-h']) {
      const r = cli([command, help]);
      assert.equal(r.status, 0, `${command} ${help}: ${r.stderr}`);
      // its own usage (the lines of `ckptscope --help` for it), its options, where more is
      const own = usageOf(command).replace(/\(ckptscope \w+ --help: its options\)\n$/, '');
      assert.equal(r.stdout.slice(0, own.length + 1), `${own}\n`, `${command}: only its own usage`);
      assert.ok(r.stdout.endsWith('\n\nmore: docs/cli.md, or ckptscope --help for every command\n'), r.stdout);
      assert.equal(r.stdout, cli([command, '--help']).stdout);
    }
  }
  assert.equal(cli(['health', '--help']).stdout, `${usageOf('health').replace(/\(ckptscope health --help: its options\)\n$/, '')}
options:
  --json              the health JSON (docs/health.md) instead of the table
  --strict            ratio flags (ratioHigh, ratioLow) fail too (exit 1);
                      without it they are warnings
  --state STATE       the model-state file: parameters for the update/weight
                      ratio
  --lr X              the learning rate (the checkpoint does not store it)
  --ratio-band LO,HI  with --lr and --state: the update/weight ratios outside it
                      are flagged (default 1e-5,1e-2)
  --names NAMES.json  slot names: a JSON array of strings, one per slot
  --workers N         threads that read the payloads (1 to 64; default: what
                      pays for the files' size, docs/cli.md)
  --kind adam|adamw   a PyTorch optimizer's kind, when its file does not say it
                      (torch 1.13's AdamW does not); a Trainer folder's default:
                      its training_args.bin's optim
  --sort KEY          the table's order: ratio or rms, the largest update/weight
                      ratio or rms(u) first; name, by name (default: slot order)
  --frozen NAMES      NAME[,NAME...]: the model's tensors a PyTorch optimizer's
                      training code does not train (frozen parameters, or
                      buffers): no index goes to them, and their missing state
                      is no question
  --pair I            an Accelerate save_state folder: its optimizer_I with
                      model_I (default 0)

more: docs/cli.md, or ckptscope --help for every command
`);
  const p = put('eq.ckpt', await model());
  const eq = cli(['inspect', p, '--stats', '--workers=1', '--names=' + put('eq-names.json', '["a","b","c"]')]);
  assert.equal(eq.status, 0, eq.stderr);
  assert.equal(eq.stdout, `${p}: CUDA Adam checkpoint (TLADAMF) version 3, float32, 327 bytes
${CONFIG_LINES}random counter  none (stochastic training cannot be resumed exactly)
parameters      3 slots, 3 trainable, 2 optimizer states, with tied (shared)
                slots

slot  name  shape   size  trainable  representative  step
   0  a     [2, 3]     6  yes        owner              5
   1  b     [2, 3]     6  yes        shares 0
   2  c     [3]        3  yes        owner              5

slot  name  m min  m max  m rms  v max  v rms  NaN/inf
   0  a       0.5    0.5    0.5   0.25   0.25
   2  c      -0.5   -0.5    0.5  0.125  0.125
warning: ${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly

verdict: valid
loads in: v2-v3, v2-v4, v2-v4-f32, v2-v5 (not v2, v2-lists)
`);
  const bad = cli(['inspect', '--nope', p]);
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, `ckptscope: unknown option --nope\nusage:\n  ckptscope inspect FILE [--state MODEL] [--json] [--stats] [--names NAMES.json]\n${' '.repeat(20)}[--workers N] [--kind adam|adamw] [--frozen NAMES]\n${' '.repeat(6)}summary, or the JSON report: TorchLean's, PyTorch's and safetensors files;\n${' '.repeat(6)}FILE (OPT) may be a Trainer checkpoint-N/ folder: its optimizer and model\n(ckptscope inspect --help: its options)\n`);
  assert.equal(cli(['inspect', p, '--json=yes']).stderr, `ckptscope: --json takes no value\n${usageOf('inspect')}`);
});

test('an option that does nothing for the command is refused, with why', async () => {
  const p = put('idle.ckpt', await model());
  const names = put('idle-names.json', '["a","b","c"]');
  for (const [args, message] of [
    [['inspect', p, '--workers', '2'], '--workers does nothing here: workers read the payloads, which only --stats reads'],
    [['health', p, '--sort', 'ratio', '--json'], '--sort does nothing here: it orders the table; the JSON keeps slot order'],
    [['health', p, '--sort', 'size'], '--sort takes ratio, rms, name, got size'],
    [['health', p, '--expect', p], 'unknown option --expect for health (it belongs to check)'],
    [['inspect', p, '--stat'], 'unknown option --stat: did you mean --stats?'],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, `ckptscope: ${message}\n${usageOf(args[0])}`, args.join(' '));
  }
});

test('inspect --json --names: the names are the report\'s `names`, indented or streamed on one line; health --json --names: each slot\'s name', async () => {
  const p = put('json-names.ckpt', await model());
  const names = put('json-names.json', '["embed", "block", "bias"]');
  const r = cli(['inspect', p, '--json', '--names', names]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.deepEqual(JSON.parse(r.stdout), { ...JSON.parse(JSON.stringify(await inspect(p))), names: ['embed', 'block', 'bias'] });
  // past 10,000 slots the core's one-line stream, the names its last member
  const n = 10_001;
  const big = put('json-names-big.tlsf', await writeState({ shapes: Array.from({ length: n }, () => [1]), values: Array.from({ length: n }, () => [0.5]) }));
  const bigNames = put('json-names-big.json', JSON.stringify(Array.from({ length: n }, (_, i) => `t${i}`)));
  const s = cli(['inspect', big, '--json', '--names', bigNames]);
  assert.equal(s.status, 0, s.stderr);
  assert.equal(s.stdout.split('\n').length, 2);
  assert.ok(s.stdout.endsWith(`,"names":${JSON.stringify(Array.from({ length: n }, (_, i) => `t${i}`))}}\n`));
  assert.deepEqual(JSON.parse(s.stdout), { ...JSON.parse(JSON.stringify(await inspect(big))), names: Array.from({ length: n }, (_, i) => `t${i}`) });
  // health --json --names: each slot's name (null without names)
  const h = cli(['health', p, '--json', '--names', names]);
  assert.equal(h.status, 0, h.stderr);
  assert.deepEqual(JSON.parse(h.stdout).slots.map((x) => x.name), ['embed', 'block', 'bias']);
  assert.deepEqual(JSON.parse(cli(['health', p, '--json']).stdout).slots.map((x) => x.name), [null, null, null]);
  assert.deepEqual((await health(p)).slots.map((x) => x.name), [null, null, null]);
});

test('--names names the slot wherever one is named: health flags, diff, check --expect, pair failures', async () => {
  const opt = put('named-opt.ckpt', await model());
  const names = put('named.json', '["embed", "block", "bias"]');
  const layout = put('named-layout.json', '{"shapes": [[2, 3], [2, 3], [4]], "requiresGrad": [true, true, true]}');
  const d = cli(['diff', opt, layout, '--names', names]);
  assert.equal(d.status, 1);
  assert.equal(d.stdout, `3 differences between ${opt} and ${layout}:
  [block] parameter 1: representative 0 vs 1
  [bias] parameter 2: shape #[3] vs #[4]
  [bias] parameter 2: size 3 vs 4
`);
  const c = cli(['check', opt, '--expect', layout, '--names', names]);
  assert.equal(c.status, 1);
  assert.equal(c.stdout, `${opt}: does not load into ${layout}\n${F}shape mismatch for parameter 2 (file=#[3], expected=#[4])\nat byte 151, slot 2 (bias)\n`);
  const short = put('named-short.tlsf', await writeBase('state-short'));
  const p = cli(['check', opt, '--state', short, '--names', names]);
  assert.equal(p.status, 1);
  assert.equal(p.stdout, `${opt} does not pair with ${short}: 2 failures
  state file has 2 tensors, the optimizer checkpoint has 3 parameter slots (state file, byte 15)
  [block] parameter 1: state shape [3, 2] differs from the optimizer's #[2, 3] (state file, byte 79)
`);
  const unhealthy = put('named-unhealthy.ckpt', await writeBase('unhealthy'));
  const h = cli(['health', unhealthy, '--names', names]);
  assert.equal(h.status, 1);
  assert.equal(h.stdout, `${unhealthy}: the next Adam step per slot (no --lr: no update/weight ratios)
consistency: |m| <= 7.27 * sqrt(v) for any gradient history with these betas

   slot  name   moments   step  rms(u)  max|u|  rms(θ)  ratio  v=0  bad m
!     0  embed  owner        5
      1  block  shares 0     5
!     2  bias   owner        5

flag: [embed] parameter 0: its moments hold 0 NaN and 6 infinite values
flag: [bias] parameter 2: its moments hold 3 NaN and 0 infinite values
flag: [bias] parameter 2: its second moment holds 3 negative values
verdict: 2 slots flagged
`);
});
