// The CLI where it meets a person's terminal and a shell: what a file holds never reaches the
// terminal raw, a closed pipe ends it quietly, every message names the user's path and says
// what to do. The CLI runs as a child process, as a user runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeCheckpoint, writeState } from '../../js/index.js';
import { model, modelDescription, F, writeBase } from './table.mjs';
import { CLI, STACK, cli as run, sh, scratch, usageOf } from './scratch.mjs';

const { dir: tmp, put: file } = scratch('ckptscope-cli-io-');

/** `inspect`'s summary of model() (table.mjs) under its first line, `head`; with --stats, the
 *  statistics table too. */
const summary = (head, { stats = false } = {}) => `${head}
optimizer       Adam  beta1 0.9  beta2 0.999  epsilon 1e-8  weight decay 0
bits            beta1 0x3feccccccccccccd  beta2 0x3feff7ced916872b
                epsilon 0x3e45798ee2308c3a  weight decay 0x0000000000000000
random counter  none (stochastic training cannot be resumed exactly)
parameters      3 slots, 3 trainable, 2 optimizer states, with tied (shared)
                slots

slot  shape   size  trainable  representative  step
   0  [2, 3]     6  yes        owner              5
   1  [2, 3]     6  yes        shares 0
   2  [3]        3  yes        owner              5
${stats ? `
slot  m min  m max  m rms  v max  v rms  NaN/inf
   0    0.5    0.5    0.5   0.25   0.25
   2   -0.5   -0.5    0.5  0.125  0.125
` : ''}warning: ${F}legacy checkpoint has no random counter; stochastic training cannot be resumed exactly

verdict: valid
loads in: v2-v3, v2-v4, v2-v4-f32, v2-v5 (not v2, v2-lists)
`;
/** The summary of model() read from `name`, a stream. */
const streamed = (name, options) => summary(`${name}: CUDA Adam checkpoint (TLADAMF) version 3, float32, size unknown (a stream)`, options);

/** The name bash gives the first process substitution of a command line (/dev/fd/63). */
const procSub = () => sh('echo <(:)').stdout.trim();

const wide = (n) => writeCheckpoint({
  shapes: Array.from({ length: n }, () => []), requiresGrad: Array.from({ length: n }, (_, i) => i === 0),
  config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [0], v: [0] }],
});

// Nothing a terminal would act on: C0 (but the newlines between lines), DEL, C1, bidi overrides.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

// ---- terminal safety ------------------------------------------------------------------------

test('diff: strings from a report JSON reach the terminal escaped, not raw (and are refused)', async () => {
  // A forged "report": its strings carry a window-title OSC, an OSC 52 clipboard write, a C1
  // CSI, DEL, a bidi override and a newline that would forge a line of output.
  const evil = '\u001b]0;pwned\u0007\u001b]52;c;ZWNobyBwd25lZA==\u0007\u009b31m\u007f\u202e\nverdict: valid';
  const report = { ok: true, family: 'TLADAMF', name: 'x', dtype: evil, hasRandomCounter: false,
    config: { kind: evil, bits: { beta1: evil, beta2: '0x0', epsilon: '0x0', weightDecay: '0x0' } },
    schema: { shapes: [[2, 3], [2, 3], [3]], sizes: [6, 6, 3], requiresGrad: [true, true, true], effectiveRepresentatives: [0, 0, 2] } };
  const a = file('evil.json', JSON.stringify(report));
  const b = file('plain.json', JSON.stringify({ ...report, dtype: 'float32', config: { kind: 'adam', bits: { beta1: '0x1', beta2: '0x0', epsilon: '0x0', weightDecay: '0x0' } } }));
  const r = run(['diff', a, b]);
  // The report is validated before anything compares it: the forged dtype is refused, and the
  // message that quotes it reaches the terminal escaped.
  assert.equal(r.status, 2, r.stderr);
  assert.doesNotMatch(r.stdout + r.stderr, RAW_CONTROL);
  assert.equal(r.stderr, `ckptscope: ${a}: layout.dtype must be "float32" or "float64", got the string "\\u001b]0;pwned\\u0007\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u009b31m\\u007f\\u202e…"\n`);
  assert.doesNotMatch(r.stderr, /^verdict: valid/m, 'no forged line');
});

test('file names given by the user are escaped too, and --json stays valid JSON', async () => {
  const name = 'odd\u001b[2J\u009b\u202ename.ckpt';
  const p = file(name, await model());
  const r = run(['inspect', p]);
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, RAW_CONTROL);
  assert.equal(r.stdout, summary(`${tmp}/odd\\u001b[2J\\u009b\\u202ename.ckpt: CUDA Adam checkpoint (TLADAMF) version 3, float32, 327 bytes`));
  const missing = run(['inspect', path.join(tmp, 'gone\u001b]0;x\u0007.ckpt')]);
  assert.equal(missing.status, 2);
  assert.doesNotMatch(missing.stderr, RAW_CONTROL);
  assert.equal(missing.stderr, `ckptscope: no such file: ${tmp}/gone\\u001b]0;x\\u0007.ckpt\n`);
  const usage = run(['inspect', '--\u001b[31m']);
  assert.equal(usage.status, 2);
  assert.doesNotMatch(usage.stderr, RAW_CONTROL);
  assert.equal(usage.stderr, `ckptscope: unknown option --\\u001b[31m\n${usageOf('inspect')}`);
  const j = run(['inspect', p, '--json']);
  assert.equal(JSON.parse(j.stdout).ok, true);
});

test('one escaping helper: C0, DEL, C1 and bidi overrides as \\u escapes; JSON keeps its value', async () => {
  const { terminalLine, terminalJSON } = await import('../../js/terminal.js');
  assert.equal(terminalLine('a\u001b[31mb\tc\nd\u007f\u0085\u009b\u202a\u202e\u2066\u2069é✓'),
    'a\\u001b[31mb\\u0009c\\u000ad\\u007f\\u0085\\u009b\\u202a\\u202e\\u2066\\u2069é✓');
  // The report of a future core might quote a file's bytes: JSON.stringify escapes C0 only.
  const value = { hint: 'x\u001b]52;c;AA==\u0007 \u009b2J \u007f \u202e \u2028', n: [1, 2] };
  for (const indent of [undefined, 2]) {
    const text = terminalJSON(value, indent);
    assert.doesNotMatch(text, RAW_CONTROL);
    assert.doesNotMatch(text, /\u2028/);
    assert.deepEqual(JSON.parse(text), value);
  }
});

// ---- closed pipes ---------------------------------------------------------------------------

test('a closed stdout ends the command quietly with status 141 (inspect | head)', async () => {
  const big = file('wide.ckpt', await wide(200_000));
  for (const cmd of ['"$NODE" "$CLI" inspect "$F" | head -n 2 >/dev/null', '"$NODE" "$CLI" inspect "$F" --json | head -c 100 >/dev/null']) {
    const r = sh(`${cmd}; echo "status=\${PIPESTATUS[0]}"`, { F: big });
    assert.equal(r.stderr, '', `${cmd}: nothing on stderr`);
    assert.equal(r.stdout, 'status=141\n', cmd);
  }
});

test('a full disk on stdout (/dev/full) is an I/O error with words, exit 2, for every output', async (t) => {
  if (!fs.existsSync('/dev/full')) return t.skip('no /dev/full here');
  const big = file('wide2.ckpt', await wide(50_000));
  for (const args of [['inspect'], ['inspect', '--json'], ['inspect', '--stats'], ['health'], ['health', '--json']]) {
    const r = sh(`"$NODE" "$CLI" ${args[0]} "$F" ${args.slice(1).join(' ')} >/dev/full`, { F: big });
    assert.equal(r.status, 2, args.join(' '));
    assert.doesNotMatch(r.stderr, STACK);
    assert.equal(r.stderr, 'ckptscope: cannot write the output: no space left on device\n', args.join(' '));
  }
});

test('a disk that takes part of the output (a file size limit) is an error, never a cut report with exit 0', async () => {
  const big = file('wide3.ckpt', await wide(50_000));
  const out = path.join(tmp, 'cut.txt');
  for (const args of [['inspect'], ['inspect', '--json'], ['health'], ['health', '--json']]) {
    // ulimit -f 8: 8 KiB, then EFBIG (Node ignores SIGXFSZ); the first write is cut short.
    const r = sh(`ulimit -f 8; "$NODE" "$CLI" ${args[0]} "$F" ${args.slice(1).join(' ')} >"$OUT"`, { F: big, OUT: out });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, 'ckptscope: cannot write the output: the file is too large (a file size limit)\n', args.join(' '));
  }
});

// ---- messages that name the user's path -----------------------------------------------------

/** Run the CLI where permissions hold: as `nobody` when these tests run as root. */
function runUnprivileged(args) {
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  return run(args, asNobody);
}

/** A folder anyone may enter (mkdtemp makes 0700 ones). */
function openFolder(name) {
  const d = path.join(tmp, name);
  fs.mkdirSync(d, { recursive: true });
  fs.chmodSync(tmp, 0o755);
  fs.chmodSync(d, 0o755);
  return d;
}

test('inspect: a directory, a missing file, an unreadable file, each named with what to do', async () => {
  const dir = openFolder('a-folder');
  let r = run(['inspect', dir]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${dir} is a directory, not a checkpoint file\n`);
  const missing = path.join(tmp, 'missing.ckpt');
  r = run(['inspect', missing]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
  const secret = file('a-folder/secret.ckpt', await model());
  fs.chmodSync(secret, 0o000);
  r = runUnprivileged(['inspect', secret]);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, `ckptscope: permission denied: cannot read ${secret} (check its permissions)\n`);
});

test('check and diff name the side that cannot be read', async () => {
  const p = file('named.ckpt', await model());
  const missing = path.join(tmp, 'nowhere.json');
  let r = run(['check', p, '--expect', missing]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
  r = run(['check', missing, '--expect', p]);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
  r = run(['check', p, '--expect', tmp]);
  assert.equal(r.stderr, `ckptscope: ${tmp} is a directory, not a layout or checkpoint file\n`);
  r = run(['diff', p, tmp]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${tmp} is a directory, not a layout or checkpoint file\n`);
  r = run(['write', missing, path.join(tmp, 'out.ckpt')]);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
});

test('write: OUT a directory or unwritable is named as OUT, never as its temporary', async () => {
  const d = modelDescription();
  const desc = file('w-desc.json', JSON.stringify({ ...d, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) }));
  const dir = openFolder('out-folder');
  let r = run(['write', desc, dir]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${dir} is a directory: give the checkpoint a file name, e.g. ${path.join(dir, 'model.ckpt')}\n`);
  assert.deepEqual(fs.readdirSync(dir), [], 'no temporary left behind');
  fs.chmodSync(desc, 0o644);
  fs.chmodSync(dir, 0o555);
  const out = path.join(dir, 'model.ckpt');
  r = runUnprivileged(['write', desc, out]);
  assert.equal(r.status, 2);
  assert.doesNotMatch(r.stderr, /\.tmp-/);
  assert.equal(r.stderr, `ckptscope: permission denied: cannot write ${out} (its folder must be writable: the checkpoint is written to a temporary file beside it, then renamed)\n`);
  r = run(['write', desc, path.join(tmp, 'no-such-folder', 'model.ckpt')]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: cannot write ${path.join(tmp, 'no-such-folder', 'model.ckpt')}: no such folder: ${path.join(tmp, 'no-such-folder')}\n`);
});

// ---- the diagnostic of an invalid file, once ------------------------------------------------

const count = (text, part) => text.split(part).length - 1;

test('an invalid file: the diagnostic shows once in a terminal, once in 2>&1, on both streams when they differ', async () => {
  const bad = file('bad.ckpt', (await model()).slice(0, 60));
  const diagnostic = `${F}truncated checkpoint (wanted 8 bytes, got 5)`;
  // the summary of bad.ckpt (named as given: relative, in tmp), its warning as `warning` says
  const report = (warning) => `bad.ckpt: CUDA Adam checkpoint (TLADAMF) version 3, float32, 60 bytes
optimizer       Adam  beta1 0.9  beta2 0.999  epsilon 1e-8  weight decay 0
bits            beta1 0x3feccccccccccccd  beta2 0x3feff7ced916872b
                epsilon 0x3e45798ee2308c3a  weight decay 0x0000000000000000
random counter  none (stochastic training cannot be resumed exactly)
parameters      0 slots read before the error

slot  shape  size  trainable  representative  step
warning: ${F}legacy checkpoint has no random counter;${warning}stochastic training cannot be resumed exactly

verdict: invalid at byte 55
${diagnostic}
at byte 55
hint: the file ends at least 3 bytes early: an incomplete copy or download?
loads in: none of the TorchLean readers
`;
  // A real terminal: `script` gives the CLI a pseudo-terminal (80 columns) for stdout and stderr.
  const tty = spawnSync('script', ['-qec', `"${process.execPath}" "${CLI}" inspect bad.ckpt`, '/dev/null'], { encoding: 'utf8', cwd: tmp });
  assert.equal(tty.error, undefined, 'script(1) gives the CLI a terminal');
  assert.equal(tty.stdout, report('\n  ').replace(/\n/g, '\r\n'));
  assert.equal(count(tty.stdout, diagnostic), 1, tty.stdout);
  // stdout and stderr into one pipe: once (the summary alone, each message on one line), and
  // --json stays parseable.
  let r = sh('cd "$D" && "$NODE" "$CLI" inspect bad.ckpt 2>&1 | cat', { D: tmp });
  assert.equal(r.stdout, report(' '));
  r = sh('"$NODE" "$CLI" inspect "$F" --json 2>&1 | cat', { F: bad });
  assert.equal(JSON.parse(r.stdout).error.message, diagnostic);
  // Separate places (a report file and a log): each gets it.
  r = sh('"$NODE" "$CLI" inspect "$F" >"$F.out" 2>"$F.err"; echo $?', { F: bad });
  assert.equal(r.stdout, '1\n');
  assert.equal(count(fs.readFileSync(`${bad}.out`, 'utf8'), diagnostic), 1);
  assert.equal(fs.readFileSync(`${bad}.err`, 'utf8'), `${diagnostic}\n`);
});

// ---- diff and check: which side is broken ---------------------------------------------------

test('diff: a broken side is named, with its diagnostic, exit 1', async () => {
  const good = file('side-good.ckpt', await model());
  const cut = file('side-cut.ckpt', (await model()).slice(0, 320));     // the schema reads fine, the payload is cut
  const stub = file('side-stub.ckpt', (await model()).slice(0, 4));     // nothing to compare at all
  let r = run(['diff', good, cut]);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `ckptscope: cannot compare: ${cut} is not a valid checkpoint\n${F}truncated checkpoint (wanted 12 bytes, got 5)\nat byte 315, slot 2\nhint: the file ends at least 7 bytes early: an incomplete copy or download?\n`);
  r = run(['diff', stub, good]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `ckptscope: cannot compare: ${stub} is not a valid checkpoint\n${F}truncated checkpoint (wanted 7 bytes, got 4)\nat byte 0\nhint: the file ends at least 3 bytes early: an incomplete copy or download?\n`);
  // The JSON report of a broken file is a broken side too.
  const report = run(['inspect', cut, '--json']).stdout;
  const reportFile = file('side-cut.json', report);
  r = run(['diff', reportFile, good]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `ckptscope: cannot compare: ${reportFile} is the report of an invalid checkpoint\n${F}truncated checkpoint (wanted 12 bytes, got 5)\nat byte 315\nhint: the file ends at least 7 bytes early: an incomplete copy or download?\n`);
  // A malformed layout JSON: named, exit 2.
  const wrong = file('side-wrong.json', '{"shapes": [[1]], "requiresGrad": ["yes"]}');
  r = run(['diff', good, wrong]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${wrong}: layout.requiresGrad[0] must be true or false, got the string "yes"\n`);
});

test('check: a broken --expect checkpoint and a malformed layout are named', async () => {
  const good = file('exp-good.ckpt', await model());
  const stub = file('exp-stub.ckpt', (await model()).slice(0, 4));
  let r = run(['check', good, '--expect', stub]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `ckptscope: cannot check against ${stub}: it is not a valid checkpoint\n${F}truncated checkpoint (wanted 7 bytes, got 4)\nat byte 0\nhint: the file ends at least 3 bytes early: an incomplete copy or download?\n`);
  const wrong = file('exp-wrong.json', '{"shapes": [[1]], "requiresGrad": ["yes"]}');
  r = run(['check', good, '--expect', wrong]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${wrong}: layout.requiresGrad[0] must be true or false, got the string "yes"\n`);
});

// ---- `-`: the standard input ----------------------------------------------------------------

test('inspect - reads the standard input (a pipe, a socket, a redirected file)', async () => {
  const bytes = await model();
  const p = file('stdin.ckpt', bytes);
  let r = run(['inspect', '-'], { input: bytes });           // node's stdio pipe: a socket
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, streamed('(standard input)'));
  r = sh('cat "$F" | "$NODE" "$CLI" inspect - --stats', { F: p });   // a real pipe, read to the end
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, streamed('(standard input)', { stats: true }));
  r = sh('"$NODE" "$CLI" inspect - --json < "$F"', { F: p });          // a file: positional reads
  assert.equal(JSON.parse(r.stdout).size, bytes.length);
  r = run(['inspect', '-'], { input: bytes.slice(0, 60) });
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${F}truncated checkpoint (wanted 8 bytes, got 5)\n`);
  r = run(['check', '-', '--expect', p], { input: bytes });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `(standard input): loads into ${p}\n`);
});

test('write - OUT reads the description from the standard input', async () => {
  const d = modelDescription();
  const json = JSON.stringify({ ...d, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) });
  const out = path.join(tmp, 'from-stdin.ckpt');
  const r = run(['write', '-', out], { input: json });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(new Uint8Array(fs.readFileSync(out)), await model());
});

test('- where a command needs a real file: a clear message, exit 2', async () => {
  const p = file('needs-file.ckpt', await model());
  const cases = [
    [['check', p, '--expect', '-'], 'check --expect needs a file: - (standard input) works for FILE only'],
    [['diff', '-', p], 'diff needs two files: - (standard input) is not supported there'],
    [['write', p, '-'], 'write needs a file name for OUT, not -: the checkpoint is written to a temporary file beside it, then renamed'],
  ];
  for (const [args, message] of cases) {
    const r = run(args, { input: '' });
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, `ckptscope: ${message}\n${usageOf(args[0])}`);
  }
  // A terminal on stdin: nothing to read, say how to give a file (wrapped to its 80 columns).
  const tty = spawnSync('script', ['-qec', `"${process.execPath}" "${CLI}" inspect -; echo "status=$?"`, '/dev/null'], { encoding: 'utf8' });
  assert.equal(tty.error, undefined, 'script(1) gives the CLI a terminal');
  assert.equal(tty.stdout, 'ckptscope: the standard input is a terminal: pipe a checkpoint in, e.g.\r\n  ckptscope inspect - < model.ckpt\r\nstatus=2\r\n');
});

// ---- --version, file modes, busy ports ------------------------------------------------------

test('write over an existing checkpoint keeps its mode (0600 stays 0600)', async () => {
  const d = modelDescription();
  const desc = file('mode-desc.json', JSON.stringify({ ...d, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) }));
  for (const mode of [0o600, 0o640, 0o666]) {
    const out = file(`mode-${mode.toString(8)}.ckpt`, 'old');
    fs.chmodSync(out, mode);
    const r = run(['write', desc, out]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(fs.statSync(out).mode & 0o7777, mode, `mode ${mode.toString(8)}`);
    assert.deepEqual(new Uint8Array(fs.readFileSync(out)), await model());
  }
  // A new file: the usual mode (0666 less the umask).
  const fresh = path.join(tmp, 'mode-new.ckpt');
  const r = run(['write', desc, fresh]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.statSync(fresh).mode & 0o777, 0o666 & ~process.umask());
});

test('a layout JSON must be an object: a bare string or number is never taken for a path or a file descriptor', async () => {
  const good = file('bare-good.ckpt', await model());
  for (const [name, text] of [['bare-null.json', 'null'], ['bare-num.json', '1'], ['bare-str.json', JSON.stringify(good)], ['bare-arr.json', '[]']]) {
    const p = file(name, text);
    for (const args of [['check', good, '--expect', p], ['diff', good, p]]) {
      const r = run(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stderr, `ckptscope: ${p}: a layout must be a JSON object ({"shapes": ..., "requiresGrad": ...}) or a report from ckptscope inspect --json\n`);
    }
  }
  // A report JSON with no more than shapes: compared by its shapes (as a state file's), never
  // an "unexpected error".
  const thin = file('thin-report.json', JSON.stringify({ family: 'TLADAMF', ok: true, error: null, schema: { shapes: [[1]] } }));
  const r = run(['diff', good, thin]);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, `6 differences between ${good} and ${thin}:
  parameter count: 3 vs 1
  parameter 0: rank 2 vs 1
  parameter 0: shape #[2, 3] vs #[1]
  parameter 0: size 6 vs 1
  parameter 1: #[2, 3] only in the first
  parameter 2: #[3] only in the first
`);
});

test('check: the verdict names both files on stdout, loads or not; the diagnostic on stdout and stderr', async () => {
  const p = file('verdict.ckpt', await model());
  const layout = file('verdict.json', JSON.stringify({ shapes: [[2, 3], [2, 3], [4]], requiresGrad: [true, true, true], representatives: [0, 0, 2] }));
  const r = run(['check', p, '--expect', layout]);
  assert.equal(r.status, 1);
  const why = `${F}shape mismatch for parameter 2 (file=#[3], expected=#[4])\nat byte 151, slot 2\n`;
  assert.equal(r.stdout, `${p}: does not load into ${layout}\n${why}`);
  assert.equal(r.stderr, why);
  // stdout and stderr one place (2>&1): the reason shows once
  const once = sh('"$NODE" "$CLI" check "$F" --expect "$L" 2>&1', { F: p, L: layout });
  assert.equal(once.stdout, `${p}: does not load into ${layout}\n${why}`);
});

// ---- inputs that are not plain files, bad arguments, ratio flags, names ---------------------

test('write and export onto a symlink write through to its target, never setuid/setgid', async () => {
  const d = modelDescription();
  const desc = file('link-desc.json', JSON.stringify({ ...d, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) }));
  const source = file('link-source.ckpt', await model());
  for (const [cmd, name, args] of [['write', 'link.ckpt', [desc]], ['export', 'link.npz', [source]]]) {
    const target = file(`target-of-${name}`, 'old');
    fs.chmodSync(target, 0o6755);   // setuid and setgid on the old data
    const link = path.join(tmp, name);
    fs.symlinkSync(path.basename(target), link);
    const r = run([cmd, ...args, link]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(fs.lstatSync(link).isSymbolicLink(), `${cmd}: the link stays a link`);
    assert.equal(fs.readlinkSync(link), path.basename(target));
    assert.notEqual(fs.readFileSync(target, 'utf8'), 'old', `${cmd}: the target has the new bytes`);
    assert.equal(fs.statSync(target).mode & 0o7777, 0o755, `${cmd}: permission bits kept, setuid/setgid dropped`);
  }
  // A dangling link: its target is created.
  const dangling = path.join(tmp, 'dangling.ckpt');
  fs.symlinkSync('dangling-target.ckpt', dangling);
  assert.equal(run(['write', desc, dangling]).status, 0);
  assert.deepEqual(new Uint8Array(fs.readFileSync(path.join(tmp, 'dangling-target.ckpt'))), await model());
});

test('a pipe, <(cmd), /dev/stdin from a pipe, a FIFO: read once as a stream, or refused as - is', async () => {
  const p = file('stream.ckpt', await model());
  const state = file('stream-state.ckpt', await writeBase('state'));
  const shell = (script) => sh(`${script}; echo "status=$?"`, { F: p, S: state });
  const fd = procSub();
  // Read once, in order, as `-` is: the summary, no false diagnostic.
  for (const [script, stdout] of [
    ['"$NODE" "$CLI" inspect <(cat "$F")', streamed(fd)],
    ['cat "$F" | "$NODE" "$CLI" inspect /dev/stdin', streamed('/dev/stdin')],
    ['"$NODE" "$CLI" check <(cat "$F") --expect "$F"', `${fd}: loads into ${p}\n`],
    ['"$NODE" "$CLI" check <(cat "$F") --state "$S"', `${fd} pairs with ${state}: same slots, same shapes, same ties; the values are not compared: \`run\` with both steps' state files compares them\n`],
  ]) {
    const r = shell(script);
    assert.equal(r.stderr, '', script);
    assert.equal(r.stdout, `${stdout}status=0\n`, script);
  }
  // Refused with the words `-` gets, naming the path: the command needs to read it twice or by ranges.
  const refusals = [
    ['"$NODE" "$CLI" health <(cat "$F")', 'health', 'health needs files', 'cannot be read twice over'],
    ['"$NODE" "$CLI" check "$F" --expect <(cat "$F")', 'check', 'check --expect needs a file', 'works for FILE only'],
    ['"$NODE" "$CLI" diff "$F" <(cat "$F")', 'diff', 'diff needs two files', 'is not supported there'],
    ['"$NODE" "$CLI" export <(cat "$F") "$F.npz"', 'export', 'export needs files', 'cannot be read by ranges'],
  ];
  for (const [script, command, needs, why] of refusals) {
    const r = shell(script);
    assert.equal(r.stderr, `ckptscope: ${needs}: ${fd} (a pipe or device, not a regular file) ${why}\n${usageOf(command)}`, script);
    assert.equal(r.stdout, 'status=2\n', script);
  }
  // A FIFO with a writer: read once, no hang; health refuses it before opening it (no wait).
  const fifo = path.join(tmp, 'fifo.ckpt');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo makes a FIFO');
  const r = sh(`cat "$F" > "$Q" & timeout 20 "$NODE" "$CLI" inspect "$Q"; echo "status=$?"`, { F: p, Q: fifo });
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, `${streamed(fifo)}status=0\n`);
  const h = sh(`timeout 20 "$NODE" "$CLI" health "$Q"; echo "status=$?"`, { Q: fifo });
  assert.equal(h.stderr, `ckptscope: health needs files: ${fifo} (a pipe or device, not a regular file) cannot be read twice over\n${usageOf('health')}`);
  assert.equal(h.stdout, 'status=2\n');
});

test('--names and a write DESCRIPTION are capped, checked up front: a 3 GB sparse file, /dev/zero', async () => {
  const p = file('capped.ckpt', await model());
  const huge = path.join(tmp, 'huge.json');
  fs.writeFileSync(huge, '[');
  fs.truncateSync(huge, 3 * 2 ** 30);   // sparse: costs no disk
  const limit = '536,870,912';
  for (const [args, what] of [[['inspect', p, '--names', huge], 'names'], [['write', huge, path.join(tmp, 'never.ckpt')], 'description']]) {
    const r = run(args, { timeout: 20_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, `ckptscope: ${huge} is 3,221,225,472 bytes: a ${what} JSON has at most ${limit}\n`);
  }
  // An endless stream of what cannot start JSON is not read on (it would fill the memory): its
  // first chunk (zeros) goes to JSON.parse, whose words the message ends with, escaped.
  let parsed = null;
  try {
    JSON.parse('\0'.repeat(1 << 20));
  } catch (err) {
    parsed = err.message.replace(/\0/g, '\\u0000');
  }
  for (const [args, what] of [[['inspect', p, '--names', '/dev/zero'], 'names'], [['write', '/dev/zero', path.join(tmp, 'never.ckpt')], 'description']]) {
    const r = run(args, { timeout: 20_000 });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `ckptscope: ${what} /dev/zero is not valid JSON: ${parsed}\n`);
  }
  assert.equal(fs.existsSync(path.join(tmp, 'never.ckpt')), false);
});
