// `ckptscope run`: checkpoints of one run (docs/runs.md). Given files in run order, or a folder:
// its optimizer checkpoints ordered by the number in the name (js/run.js runOrder), each with
// the model-state file of the same stem when there is one. The verdict per consecutive pair,
// the per-slot table, per file its health; exit 1 when a pair is not continuous or a file is
// invalid or flagged (a failure: the ratio band's warnings are counted, not failed on). Node only.

import fs from 'node:fs';
import path from 'node:path';
import { open } from './checkpoint.js';
import { run, runOrder, stemOf, saveGradient } from './run.js';
import { table, numColumns } from './cli-text.js';
import { say, terminalJSON, outputColumns, COLUMNS } from './terminal.js';
import { FileError, STDIN, checkInput, reading, writing, readNamesFile } from './user-files.js';
import { ratioBandArg } from './cli-usage.js';

/** argv → {files, states, json, lr, band}; `usage(text)` makes the CLI's usage error. */
function parse(argv, usage) {
  const files = [], states = [];
  let into = files, json = false, lr, grad, names, band;
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    if (a === '--json') json = true;
    else if (a === '--state') into = states;
    else if (a === '--grad' || a === '--names' || a === '--ratio-band') {
      if (k + 1 >= argv.length) throw usage(`${a} needs a value`);
      if (a === '--grad') grad = argv[++k];
      else if (a === '--names') names = argv[++k];
      else band = argv[++k];
    } else if (a.startsWith('--ratio-band=')) band = a.slice('--ratio-band='.length);
    else if (a === '--lr') {
      if (k + 1 >= argv.length) throw usage('--lr needs a value');
      const text = argv[++k];
      lr = Number(text);
      if (!/^[0-9.eE+-]+$/.test(text) || !Number.isFinite(lr) || lr <= 0) throw usage(`--lr must be a positive number, got ${text}`);
    } else if (a.startsWith('--')) throw usage(`unknown option ${a}`);
    else into.push(a);
  }
  if (files.includes(STDIN) || states.includes(STDIN)) throw usage('run needs files: - (standard input) cannot be read beside another file');
  if (states.length && states.length !== files.length) {
    throw usage(`--state takes one model-state file per checkpoint: ${files.length} checkpoint${files.length === 1 ? '' : 's'}, ${states.length} state file${states.length === 1 ? '' : 's'}`);
  }
  if (names !== undefined && grad === undefined) throw usage('--names goes with --grad');
  return { files, states: states.length ? states : null, json, lr, grad, names, band };
}

const isDirectory = (p) => {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** A folder's optimizer checkpoints in run order, with the state file of the same stem. */
async function folder(dir) {
  const names = reading(dir, 'folder', () => fs.readdirSync(dir)).sort();
  const opts = [], states = new Map();
  for (const name of names) {
    const file = path.join(dir, name);
    if (!fs.statSync(file).isFile()) continue;
    const ck = await open(file);
    try {
      if (ck.kind === 'optimizer') opts.push({ name, file, step: maxStep(ck) });
      else if (ck.kind === 'state' && !states.has(stemOf(name))) states.set(stemOf(name), file);
    } finally {
      ck.close();
    }
  }
  const ordered = runOrder(opts);
  const paired = ordered.map((o) => states.get(stemOf(o.name)) ?? null);
  return { files: ordered.map((o) => o.file), states: paired.some((s) => s !== null) ? paired : null };
}

/** The largest step of an optimizer file's entries (null when it has none or is invalid). */
function maxStep(ck) {
  const entries = ck.report.entries ?? [];
  let best = null;
  for (const e of entries) if (best === null || BigInt(e.step) > BigInt(best)) best = e.step;
  return best;
}

/** The readable form: per file, per pair its verdict and slot table, the first break. */
export function runLines(result, { width = COLUMNS } = {}) {
  const out = [];
  const name = (i) => result.files[i].path ?? `file ${i}`;
  out.push(`${result.files.length} checkpoints of one run:`);
  const rows = result.files.map((f, i) => [
    i === result.first ? '!' : '',
    i,
    f.step ?? '',
    f.health ? f.health.flags - f.health.warnings : '',
    f.health ? f.health.warnings : '',
    f.health?.ratio,
    f.state ? 'yes' : '',
    f.ok ? name(i) : `${name(i)} (invalid)`,
  ]);
  numColumns(rows, [5]);
  // a long path is shortened in the middle, and listed in full below the table
  const fit = { width, shrink: 7, key: 1, what: 'paths', shown: new Set() };
  for (const l of table(rows, ['', 'file', 'step', 'flags', 'warnings', 'ratio', 'state', 'path'], new Set([1, 2, 3, 4, 5]), fit)) out.push(l);
  for (const p of result.pairs) {
    out.push('');
    out.push(`${p.a} → ${p.b}: ${p.continuous ? 'continuous' : `NOT continuous: ${p.verdict}`}`);
    if (!p.slots.length) continue;
    const slotRows = p.slots.map((s) => [
      s.message ? '!' : '',
      s.slot,
      `${s.stepA}→${s.stepB}`,
      s.k,
      s.broken ?? '',
      s.worst,
      s.gradient?.rms,
      s.lr,
      s.lrResidual,
    ]);
    numColumns(slotRows, [5, 6, 7, 8]);
    for (const l of table(slotRows, ['', 'slot', 'steps', 'k', 'broken', 'worst', 'rms(g)', 'lr', 'residual'], new Set([1, 3, 4, 5, 6, 7, 8]))) out.push(`  ${l}`);
  }
  out.push('');
  out.push(result.first === null ? 'verdict: one run, every pair continuous' : `verdict: something breaks at file ${result.first} (${name(result.first)})`);
  return out;
}

/** The command; `usage(text)` returns the CLI's usage error to throw. Exit status. */
export async function cmdRun(argv, usage) {
  let { files, states, json, lr, grad, names, band } = parse(argv, usage);
  if (grad !== undefined) return cmdGradient(files, grad, names, usage);
  if (files.length === 1 && !states && isDirectory(files[0])) {
    ({ files, states } = await folder(files[0]));
    if (files.length < 2) throw new FileError(`${argv.find((a) => !a.startsWith('--'))} holds ${files.length} optimizer checkpoint${files.length === 1 ? '' : 's'}: a run needs at least two`);
  } else if (files.length < 2) throw usage('run takes at least two checkpoints, or a folder');
  else for (const f of [...files, ...(states ?? [])]) checkInput(f, 'checkpoint');
  // the ratios need both (a folder's state files are found by their stems)
  if (band !== undefined && (lr === undefined || !states)) throw usage('--ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))');
  const ratioBand = await ratioBandArg(band, usage);
  const result = await reading(files[0], 'checkpoint', () => run(files, { states, lr, ratioBand }));
  if (json) process.stdout.write(terminalJSON(result, 2) + '\n');
  else say(process.stdout, runLines(result, { width: outputColumns(process.stdout) }));
  return result.ok ? 0 : 1;
}

/** run A B --grad OUT [--names NAMES.json]: the one-step gradient, written atomically. */
async function cmdGradient(files, out, namesPath, usage) {
  if (files.length !== 2) throw usage('--grad takes exactly two checkpoints: A and B one step after it');
  const format = /\.safetensors$/i.test(out) ? 'safetensors' : /\.npz$/i.test(out) ? 'npz' : null;
  if (!format) throw usage(`--grad writes OUT.safetensors or OUT.npz: the name ${out} says neither`);
  for (const f of files) checkInput(f, 'checkpoint');
  // the names file read as every --names is (capped), one name per slot of A as for export:
  // else refused with exit status 2
  let names;
  if (namesPath !== undefined) {
    const a = await reading(files[0], 'checkpoint', () => open(files[0]));
    const slots = a.ok ? a.summary.slotCount : null;   // an invalid A: its own diagnostic below
    a.close();
    names = readNamesFile(namesPath, { slots });
  }
  await writing(out, () => reading(files[0], 'checkpoint', () => saveGradient(out, files[0], files[1], { format, names })));
  say(process.stdout, `wrote ${out} (${fs.statSync(out).size} bytes)`);
  return 0;
}
