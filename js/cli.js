#!/usr/bin/env node
// ckptscope command line (DESIGN.md "CLI"). Exit status: 0 valid / would load / no
// differences; 1 invalid checkpoint, would not load, or differences; 2 usage or I/O error;
// 141 when stdout's reader went away. A bad file never produces a stack trace: the reference
// diagnostic, its offset, a hint. Every line for a person goes out through terminal.js.

import fs from 'node:fs';
import { inspect, check, diff, saveCheckpoint, CheckpointError, LayoutError } from './index.js';
import { say, terminalJSON, guardOutput, sameDestination } from './terminal.js';
import { FileError, STDIN, checkInput, reading, writing, displayName, sourceOf, readMessage } from './user-files.js';
import { openBrowser } from './open-browser.js';

const USAGE = `usage:
  ckptscope inspect FILE [--json] [--stats]   summary, or the JSON report
  ckptscope check FILE --expect LAYOUT        would the trainer load it? LAYOUT: a layout .json or another checkpoint
  ckptscope diff A B                          every difference between two layouts/checkpoints
  ckptscope write DESCRIPTION.json OUT        make a checkpoint (the reference writer's rules)
  ckptscope serve [--port N]                  the viewer on http://127.0.0.1:8080
  ckptscope view FILE [FILE2] [--port N] [--no-open]
                                              the viewer on those files, in your browser
  ckptscope --version`;

// --help: the usage and how the CLI behaves in a shell.
const HELP = `${USAGE}

FILE (and write's DESCRIPTION) may be - for the standard input: ckptscope inspect - < model.ckpt.
exit status: 0 valid, would load, no differences; 1 invalid, would not load, differences;
2 usage or I/O error; 141 when the reader of stdout goes away (ckptscope inspect F | head).
An invalid file: stdout has the summary (or --json report) with the diagnostic; stderr has
the diagnostic too, unless stderr goes where stdout goes (a terminal, 2>&1), to show it once.
Control characters from files and arguments are shown as escapes (\\u001b).
serve and view: 127.0.0.1 only; the port is --port, else PORT, else 8080 (view: the first
free one from 8080 up); view prints the page URL and opens it unless --no-open. Ctrl-C
stops them (exit status 0).`;

class UsageError extends Error {}
/** Anything else the user can act on, said in words; exit status 2. */
class Failure extends Error {}

function parseArgs(argv, flags, options = []) {
  const positional = [];
  const seen = {};
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    if (flags.includes(a)) seen[a] = true;
    else if (options.includes(a)) {
      if (k + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
      seen[a] = argv[++k];
    } else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
    else positional.push(a);
  }
  return { positional, seen };
}

// ---- human output ---------------------------------------------------------------------------

const fmtShape = (s) => `[${s.join(', ')}]`;
const yesNo = (b) => (b ? 'yes' : 'no');

/** Lines of columns padded to their widest cell; the columns in `right` are right-aligned (numbers). */
function table(rows, header, right) {
  const widths = header.map((h) => h.length);
  for (const r of rows) r.forEach((c, k) => (widths[k] = Math.max(widths[k], String(c).length)));
  const line = (r) => r.map((c, k) => (right.has(k) ? String(c).padStart(widths[k]) : String(c).padEnd(widths[k]))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

function fmtStats(s) {
  if (!s) return '';
  const bad = [s.nan && `${s.nan} NaN`, s.inf && `${s.inf} inf`].filter(Boolean).join(', ');
  const range = s.min === null ? 'no finite values' : `min ${num(s.min)} max ${num(s.max)} rms ${num(s.rms)}`;
  return bad ? `${range} (${bad})` : range;
}

const num = (x) => (typeof x === 'number' ? Number(x.toPrecision(4)).toString() : String(x));

/** The summary as lines (unescaped: `say` escapes them on the way out). */
export function summaryLines(report, name) {
  const out = [];
  // No size for a pipe: its bytes are read as they come.
  const size = report.size === null || report.size === undefined ? 'size unknown (a stream)' : `${report.size} bytes`;
  const head = report.family
    ? `${name}: ${report.name} (${report.family}) version ${report.version ?? '?'}${report.dtype ? `, ${report.dtype}` : ''}, ${size}`
    : `${name}: ${size}, not a TLADAMF checkpoint`;
  out.push(head);
  if (report.config) {
    const c = report.config;
    out.push(`optimizer       ${c.kind === 'adamw' ? 'AdamW' : 'Adam'}  beta1 ${c.beta1}  beta2 ${c.beta2}  epsilon ${c.epsilon}  weight decay ${c.weightDecay}`);
    out.push(`bits            beta1 ${c.bits.beta1}  beta2 ${c.bits.beta2}  epsilon ${c.bits.epsilon}  weight decay ${c.bits.weightDecay}`);
  }
  if (report.hasRandomCounter !== null) {
    out.push(`random counter  ${report.hasRandomCounter ? report.randomCounter : 'none (stochastic training cannot be resumed exactly)'}`);
  }
  const s = report.schema;
  if (s) {
    const n = s.shapes.length;
    const facts = report.wellFormed === null
      ? `${n} slot${n === 1 ? '' : 's'} read before the error`
      : `${n} slots, ${report.trainableCount} trainable, ${report.optimizerStateCount} optimizer states, ${report.hasAliases ? 'with tied (shared) slots' : 'no tied slots'}`;
    out.push(`parameters      ${facts}`);
    const entries = new Map(report.entries.map((e) => [String(e.id), e]));
    const stats = report.entries.some((e) => e.m);
    const rows = s.shapes.map((shape, i) => {
      const r = s.effectiveRepresentatives?.[i];
      const trainable = s.requiresGrad[i];
      const known = s.effectiveRepresentatives && trainable !== undefined;
      const rep = !known ? '?' : r === null ? '-' : r === i ? 'owner' : `shares ${r}`;
      const e = entries.get(String(i));
      const row = [i, fmtShape(shape), s.sizes[i], trainable === undefined ? '?' : yesNo(trainable), rep, e ? e.step : ''];
      if (stats) row.push(e ? `m: ${fmtStats(e.m)}; v: ${fmtStats(e.v)}` : '');
      return row;
    });
    const header = ['slot', 'shape', 'size', 'trainable', 'representative', 'step'];
    if (stats) header.push('moments');
    out.push('');
    for (const l of table(rows, header, new Set([0, 2, 5]))) out.push(l);   // a loop: no spreading a million lines
  }
  for (const w of report.warnings) out.push(`warning: ${w}`);
  out.push('');
  if (report.ok) out.push('verdict: valid');
  else {
    out.push(`verdict: invalid at byte ${report.error.offset ?? '-'}`);
    out.push(report.error.message);
    if (report.error.hint) out.push(`hint: ${report.error.hint}`);
  }
  return out;
}

export const summary = (report, name) => summaryLines(report, name).join('\n');

// ---- commands -------------------------------------------------------------------------------

function readJSON(path, what) {
  checkInput(path, what);
  const text = reading(path, what, () => fs.readFileSync(sourceOf(path), 'utf8'));
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new LayoutError(`${what} ${displayName(path)} is not valid JSON: ${err.message}`);
  }
}

function looksLikeJSON(path) {
  if (path.endsWith('.json')) return true;
  const fd = fs.openSync(path, 'r');
  try {
    const b = Buffer.alloc(64);
    const n = fs.readSync(fd, b, 0, 64, 0);
    return /^\s*\{/.test(b.subarray(0, n).toString('latin1'));
  } finally {
    fs.closeSync(fd);
  }
}

/** A checkpoint path, or the object of a layout JSON (never a bare JSON value: the API would
 *  take a string for a path and a number for a file descriptor). */
function layoutArg(path) {
  checkInput(path, 'layout or checkpoint');
  if (!looksLikeJSON(path)) return path;
  const layout = readJSON(path, 'layout');
  if (layout === null || typeof layout !== 'object' || Array.isArray(layout)) {
    throw new LayoutError(`${path}: a layout must be a JSON object ({"shapes": ..., "requiresGrad": ...}) or a report from ckptscope inspect --json`);
  }
  return layout;
}

async function cmdInspect(argv) {
  const { positional, seen } = parseArgs(argv, ['--json', '--stats']);
  if (positional.length !== 1) throw new UsageError('inspect takes one FILE');
  const file = positional[0];
  checkInput(file, 'checkpoint');
  const report = await reading(file, 'checkpoint', () => inspect(sourceOf(file), { stats: !!seen['--stats'] }));
  // Indented for people; past 10,000 slots one line (a million slots indented is ~100 MB).
  const indent = (report.schema?.shapes.length ?? 0) > 10_000 ? undefined : 2;
  if (seen['--json']) process.stdout.write(terminalJSON(report, indent) + '\n');
  else say(process.stdout, summaryLines(report, displayName(file)));
  // The reference diagnostic also goes to stderr, for scripts and logs; not when stderr is
  // where stdout goes (a terminal, 2>&1), where the summary or JSON already shows it.
  if (!report.ok && !sameDestination()) say(process.stderr, report.error.message);
  return report.ok ? 0 : 1;
}

async function cmdCheck(argv) {
  const { positional, seen } = parseArgs(argv, [], ['--expect']);
  if (positional.length !== 1 || !seen['--expect']) throw new UsageError('check takes FILE --expect LAYOUT');
  const [file] = positional;
  const expect = seen['--expect'];
  if (expect === STDIN) throw new UsageError('check --expect needs a file: - (standard input) works for FILE only');
  checkInput(file, 'checkpoint');
  const layout = layoutArg(expect);
  let result;
  try {
    result = await reading(file, 'checkpoint', () => check(sourceOf(file), layout));
  } catch (err) {
    if (err instanceof LayoutError) throw new LayoutError(`${expect}: ${err.message}`);
    if (err instanceof CheckpointError && err.role === 'expected') err.context = `cannot check against ${expect}: it is not a valid checkpoint`;
    // The verdict on stdout, as for a load; the trainer's diagnostic follows on stderr.
    else if (err instanceof CheckpointError) say(process.stdout, `${displayName(file)}: does not load into ${expect}`);
    throw err;
  }
  for (const w of result.warnings) say(process.stderr, `warning: ${w}`);
  say(process.stdout, `${displayName(file)}: loads into ${expect}`);
  return 0;
}

/** One side of a diff: a layout object, or a valid checkpoint's report (a broken one is named). */
async function diffSide(path) {
  const side = layoutArg(path);
  if (typeof side === 'string') {
    const report = await reading(path, 'checkpoint', () => inspect(path));
    if (!report.ok) throw Object.assign(new CheckpointError(report.error), { context: `cannot compare: ${path} is not a valid checkpoint` });
    return report;
  }
  if (side.family === undefined) return side;   // a layout: the API checks it
  // A report (ckptscope inspect --json): a valid one, with its schema.
  if (side.ok === false) {
    const error = { message: String(side.error?.message ?? 'the report carries no diagnostic'), offset: side.error?.offset ?? null, hint: side.error?.hint ?? null };
    throw Object.assign(new CheckpointError(error), { context: `cannot compare: ${path} is the report of an invalid checkpoint` });
  }
  // The API compares a report's fields as they are: check the ones it reads.
  const s = side.schema;
  const wellShaped = s !== null && typeof s === 'object' && Array.isArray(s.shapes) && s.shapes.every(Array.isArray) &&
    Array.isArray(s.sizes) && s.sizes.length === s.shapes.length && Array.isArray(s.requiresGrad) &&
    (side.config === undefined || side.config === null || (typeof side.config === 'object' && typeof side.config.bits === 'object' && side.config.bits !== null));
  if (!wellShaped) throw new LayoutError(`${path}: not a report as ckptscope inspect --json writes it (its schema or config is missing or malformed)`);
  return side;
}

/** A malformed layout: describe each side alone to name the one at fault. */
async function nameMalformedSide(sides) {
  for (const [side, name] of sides) {
    try {
      await diff(side, side);
    } catch (err) {
      throw err instanceof LayoutError ? new LayoutError(`${name}: ${err.message}`) : err;
    }
  }
}

async function cmdDiff(argv) {
  const { positional } = parseArgs(argv, []);
  if (positional.length !== 2) throw new UsageError('diff takes two files');
  const [a, b] = positional;
  if (a === STDIN || b === STDIN) throw new UsageError('diff needs two files: - (standard input) is not supported there');
  const [sa, sb] = [await diffSide(a), await diffSide(b)];
  let differences;
  try {
    differences = await diff(sa, sb);
  } catch (err) {
    if (err instanceof LayoutError) await nameMalformedSide([[sa, a], [sb, b]]);
    throw err;
  }
  if (!differences.length) {
    say(process.stdout, `no differences between ${a} and ${b}`);
    return 0;
  }
  say(process.stdout, `${differences.length} difference${differences.length === 1 ? '' : 's'} between ${a} and ${b}:`,
    differences.map((d) => `  ${d.message}`));
  return 1;
}

async function cmdWrite(argv) {
  const { positional } = parseArgs(argv, []);
  if (positional.length !== 2) throw new UsageError('write takes DESCRIPTION.json OUT');
  if (positional[1] === STDIN) {
    throw new UsageError('write needs a file name for OUT, not -: the checkpoint is written to a temporary file beside it, then renamed');
  }
  const description = readJSON(positional[0], 'description');
  await writing(positional[1], () => saveCheckpoint(positional[1], description));
  say(process.stdout, `wrote ${positional[1]} (${fs.statSync(positional[1]).size} bytes)`);
  return 0;
}

/** The port asked for by --port, else by PORT (empty: unset); null when none was. */
function askedPort(seen) {
  const [given, from] = seen['--port'] !== undefined ? [seen['--port'], '--port'] : [process.env.PORT || undefined, 'PORT'];
  if (given === undefined) return null;
  if (!/^\d{1,5}$/.test(given) || Number(given) > 65535) throw new UsageError(`${from} must be a port number (0 to 65535), got ${given}`);
  return Number(given);
}

async function cmdServe(argv) {
  const { positional, seen } = parseArgs(argv, [], ['--port']);
  if (positional.length) throw new UsageError('serve takes no files');
  const port = askedPort(seen) ?? 8080;
  const { serve } = await import('../web/server.js');
  const server = await listening(() => serve({ port, quiet: true }), port, (next) => `try --port ${next} or PORT=${next} npm start`);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, `ckptscope viewer: ${server.origin}/  (Ctrl-C stops it)`);
  return null;   // keeps running
}

const FIRST_PORT = 8080;
const PORTS_TO_TRY = 100;

/** What view can serve: an existing regular file (ranges need a size and positional reads). */
function regularFile(file) {
  if (file === STDIN) throw new UsageError('view needs files: - (standard input) cannot be served by byte ranges');
  let st;
  try {
    st = fs.statSync(file);   // stat, not open: opening a FIFO would wait for a writer
  } catch (err) {
    throw new FileError(readMessage(err, file, 'checkpoint'));
  }
  if (st.isDirectory()) throw new FileError(readMessage({ code: 'EISDIR' }, file, 'checkpoint'));
  if (!st.isFile()) throw new FileError(`${file} is not a regular file: view serves a file by byte ranges`);
  checkInput(file, 'checkpoint');   // readable
}

async function cmdView(argv) {
  const { positional, seen } = parseArgs(argv, ['--no-open'], ['--port']);
  if (positional.length < 1 || positional.length > 2) throw new UsageError('view takes FILE [FILE2]');
  positional.forEach(regularFile);
  const asked = askedPort(seen);
  const { serve } = await import('../web/server.js');
  const start = (port) => serve({ port, quiet: true, files: positional });
  const advice = (next) => `try --port ${next}`;
  const server = asked !== null
    ? await listening(() => start(asked), asked, advice)
    : await listening(() => firstFreePort(start), FIRST_PORT, advice);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, server.viewerUrl);
  const opened = !seen['--no-open'] && openBrowser(server.viewerUrl);
  say(process.stderr, `ckptscope: ${opened ? 'opening it in your browser' : 'open this URL in your browser'} (Ctrl-C stops the server)`);
  return null;   // keeps running
}

/** The first port from 8080 up that `start(port)` can listen on. */
async function firstFreePort(start) {
  for (let port = FIRST_PORT; port < FIRST_PORT + PORTS_TO_TRY; port++) {
    try {
      return await start(port);
    } catch (err) {
      if (err?.code !== 'EADDRINUSE') throw err;
    }
  }
  throw new Failure(`ports ${FIRST_PORT} to ${FIRST_PORT + PORTS_TO_TRY - 1} are all in use: choose one with --port N`);
}

/** Ctrl-C (SIGINT) and SIGTERM: close the server and its open connections, exit status 0. */
function stopOnSignals(server) {
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();   // keep-alive connections would hold close() open
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Start a server; a port that cannot be had becomes advice, not a stack. */
async function listening(start, port, advice) {
  try {
    return await start();
  } catch (err) {
    const next = port < 65535 ? port + 1 : port - 1;
    if (err?.code === 'EADDRINUSE') throw new Failure(`port ${port} is in use: ${advice(next)}`);
    if (err?.code === 'EACCES') throw new Failure(`port ${port} needs privileges: choose one above 1023, e.g. --port 8080`);
    if (err?.code === 'CKPT_NO_WASM') throw new Failure(err.message);
    throw err;
  }
}

const COMMANDS = { inspect: cmdInspect, check: cmdCheck, diff: cmdDiff, write: cmdWrite, serve: cmdServe, view: cmdView };

export async function main(argv) {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V') {
    const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`ckptscope ${version}\n`);
    return 0;
  }
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    if (command) process.stdout.write(HELP + '\n');
    else process.stderr.write(USAGE + '\n');
    return command ? 0 : 2;
  }
  const run = COMMANDS[command];
  try {
    if (!run) throw new UsageError(`unknown command ${command}`);
    return await run(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      say(process.stderr, `ckptscope: ${err.message}`);
      process.stderr.write(USAGE + '\n');
      return 2;
    }
    if (err instanceof CheckpointError) {
      // `context`: which of the user's files, when the diagnostic alone does not say.
      if (err.context) say(process.stderr, `ckptscope: ${err.context}`);
      say(process.stderr, err.message);
      if (err.offset !== null && err.offset !== undefined) say(process.stderr, `at byte ${err.offset}`);
      if (err.hint) say(process.stderr, `hint: ${err.hint}`);
      return 1;
    }
    if (err instanceof FileError || err instanceof Failure) {
      say(process.stderr, `ckptscope: ${err.message}`);
      return 2;
    }
    if (err instanceof LayoutError) {
      say(process.stderr, `ckptscope: ${err.message}`);
      return 2;
    }
    if (err && typeof err.code === 'string' && err.syscall) {  // Node I/O errors
      say(process.stderr, `ckptscope: ${err.path ? `${err.path}: ` : ''}${err.message}`);
      return 2;
    }
    say(process.stderr, `ckptscope: unexpected error: ${err?.message ?? err}`);
    return 2;
  }
}

guardOutput();
const code = await main(process.argv.slice(2));
if (code !== null) process.exitCode = code;
