// `ckptscope run`: checkpoints of one run (docs/runs.md). Given files in run order, or a folder:
// its optimizer checkpoints in run order, each with the model-state file of the same stem (the
// package's runFiles). One line per consecutive pair (continuous, cannot tell or broken), the
// per-slot table with --slots, per file its health; exit 1 when a pair is not continuous or a
// file is invalid or flagged (a failure: the ratio band's warnings are counted, not failed on),
// 3 when nothing breaks but a pair cannot tell (not an all-clear). Node only.

import fs from 'node:fs';
import path from 'node:path';
import { open } from './checkpoint.js';
import { run, runFiles, saveGradient } from './run.js';
import { table, numColumns, namedSlot } from './cli-text.js';
import { say, terminalJSON, outputColumns, wrapLine, COLUMNS } from './terminal.js';
import { FileError, STDIN, checkInput, reading, writing, readNamesFile } from './user-files.js';
import { ratioBandArg, positiveArg } from './cli-usage.js';
import { isOutputFolder, openOutputFolder, compareLogged, FolderError } from './trainer-run.js';

/** The exit status of a run where nothing breaks but a pair cannot tell. */
export const CANNOT_TELL_STATUS = 3;

const VALUED = ['--grad', '--names', '--ratio-band', '--lr', '--residual-limit', '--kind'];

/** argv → {files, states, json, slots, lr, residualLimit, grad, names, band, kind}; `usage(text)` makes the CLI's usage error. */
function parse(argv, usage) {
  const files = [], states = [], value = {};
  let into = files, json = false, slots = false;
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    const eq = a.indexOf('=');
    const option = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    if (a === '--json') json = true;
    else if (a === '--slots') slots = true;
    else if (a === '--state') into = states;
    else if (VALUED.includes(option)) {
      if (option !== a) value[option] = a.slice(eq + 1);
      else if (k + 1 >= argv.length) throw usage(`${a} needs a value`);
      else value[a] = argv[++k];
    } else if (a.startsWith('--')) throw usage(`unknown option ${a}`);
    else into.push(a);
  }
  if (files.includes(STDIN) || states.includes(STDIN)) throw usage('run needs files: - (standard input) cannot be read beside another file');
  if (states.length && states.length !== files.length) {
    throw usage(`--state takes one model-state file per checkpoint: ${files.length} checkpoint${files.length === 1 ? '' : 's'}, ${states.length} state file${states.length === 1 ? '' : 's'}`);
  }
  const lr = positiveArg('--lr', value['--lr'], usage);
  const residualLimit = positiveArg('--residual-limit', value['--residual-limit'], usage);
  const kind = value['--kind'];
  if (kind !== undefined && kind !== 'adam' && kind !== 'adamw') throw usage(`--kind takes adam or adamw, not ${kind}`);
  return { files, states: states.length ? states : null, json, slots, lr, residualLimit, grad: value['--grad'], names: value['--names'], band: value['--ratio-band'], kind };
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
  const skipped = [];   // {name, why}: what the folder holds that the run does not read
  const names = reading(dir, 'folder', () => fs.readdirSync(dir)).sort().filter((name) => {
    try {
      return fs.statSync(path.join(dir, name)).isFile();
    } catch (err) {
      // a dangling or looping link is one entry the run cannot read, not a reason to stop
      const why = { ENOENT: 'a symbolic link to nothing', ELOOP: 'a symbolic link that loops' }[err.code];
      if (!why) throw err;
      skipped.push({ name, why: `${why}: not used` });
      return false;
    }
  });
  const files = names.map((name) => path.join(dir, name));
  const { order, states, unused } = await runFiles(names, (k) => open(files[k]));
  for (const u of unused) {
    const name = names[u.index];
    skipped.push({ name, why: /\.(pt|pth)$/i.test(name) ? 'a PyTorch file (run reads TorchLean checkpoints and model-state files): not used' : u.text });
  }
  skipped.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return { files: order.map((k) => files[k]), states: states.some((s) => s !== null) ? states.map((k) => (k === null ? null : files[k])) : null, skipped };
}

/** The slot count of a run's first file (the names' count is checked against it), null when it
 *  is not a readable optimizer checkpoint. */
async function slotCount(file) {
  const ck = await reading(file, 'checkpoint', () => open(file));
  try {
    return ck.kind === 'optimizer' && typeof ck.summary.slotCount === 'number' ? ck.summary.slotCount : null;
  } finally {
    ck.close();
  }
}

const plural = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** What a pair comes to: 'continuous', 'cannot tell' or 'NOT continuous'. */
const pairState = (p) => (p.continuous === null ? 'cannot tell' : p.continuous ? 'continuous' : 'NOT continuous');

/** A slot as the lines name it: `slot 4` or `slot 4 (name)`. */
const slotName = (names, slot) => `slot ${slot}${names && names[slot] !== undefined ? ` (${names[slot]})` : ''}`;

/** How many of a pair's slots cannot tell: `2 of 3 slots cannot tell`. */
const weakSlots = (p) => `${p.slotsCannotTell} of ${plural(p.slots.length, 'slot')} cannot tell`;

/** The one line of a pair: its state; the verdict's text (its slot's name first), and when it
 *  cannot tell how many slots could not; or its worst slot, its power, the slots that cannot tell
 *  (when some cannot) and the slots whose learning rate came back. */
function pairLine(p, names) {
  const head = `${p.a} → ${p.b}: ${pairState(p)}`;
  if (p.continuous === false) return `${head}: ${namedSlot(names, p.verdictSlot)}${p.verdict}`;
  if (p.continuous === null) return `${head}: ${namedSlot(names, p.verdictSlot)}${p.verdict}; ${weakSlots(p)}`;
  const parts = [];
  let worst = null;
  for (const s of p.slots) if (s.worst !== null && (worst === null || s.worst > worst.worst)) worst = s;
  if (worst) parts.push(`worst ${numColumnsOne(worst.worst)} at ${slotName(names, worst.slot)}`);
  if (p.power !== null) parts.push(`power ${numColumnsOne(p.power)}`);
  if (p.slotsCannotTell) parts.push(weakSlots(p));
  const lrs = p.slots.filter((s) => s.lr !== null).length;
  if (lrs) parts.push(`lr on ${plural(lrs, 'slot')}`);
  return parts.length ? `${head} (${parts.join(', ')})` : head;
}

/** A pair's recovered learning rate (its slots' range as printed, when they print apart) beside
 *  the one trainer_state.json logged at A's step. */
function loggedLine(p) {
  const l = p.loggedLr;
  const shown = [...new Set(p.slots.filter((s) => s.lr !== null).sort((x, y) => x.lr - y.lr).map((s) => numColumnsOne(s.lr)))];
  const recovered = shown.length > 1 ? `${shown[0]} to ${shown[shown.length - 1]}` : shown[0];
  return `  lr ${recovered} ${l.agrees ? 'agrees with' : 'DIFFERS from'} the one logged at step ${l.step}: ${numColumnsOne(l.learningRate)}`;
}

/** A figure as the tables print it. */
function numColumnsOne(x) {
  const rows = [[x]];
  numColumns(rows, [0]);
  return rows[0][0];
}

/** A pair's per-slot table (--slots). */
function slotLines(p, names, width) {
  const rows = p.slots.map((s) => [
    s.message ? '!' : s.cannotTell ? '?' : '',
    s.slot,
    ...(names ? [names[s.slot] ?? ''] : []),
    `${s.stepA}→${s.stepB}`,
    s.k,
    s.broken ?? '',
    s.worst,
    s.power,
    s.gradient?.rms,
    s.lr,
    s.lrResidual,
  ]);
  const off = names ? 1 : 0;
  numColumns(rows, [5, 6, 7, 8, 9].map((j) => j + off));
  const header = ['', 'slot', ...(names ? ['name'] : []), 'steps', 'k', 'broken', 'worst', 'power', 'rms(g)', 'lr', 'residual'];
  const right = new Set([1, ...[3, 4, 5, 6, 7, 8, 9].map((j) => j + off)]);
  const fit = names ? { width: width - 2, shrink: 2, key: 1, what: 'slot names', shown: new Set() } : null;
  return table(rows, header, right, fit).map((l) => `  ${l}`);
}

/** The run's verdict line. */
function verdictLine(result, name) {
  const weak = result.cannotTell ?? 0;
  const apart = weak ? `${plural(weak, 'pair')} of ${result.pairs.length} cannot tell` : '';
  if (result.first !== null) return `verdict: something breaks at file ${result.first} (${name(result.first)})${weak ? `; ${apart}` : ''}`;
  if (weak) return `verdict: nothing breaks, but ${apart} (too far apart): not shown to be one run`;
  return 'verdict: one run, every pair continuous';
}

/** The readable form: per file, one line per pair (with `slots`, its slot table), the verdict. */
export function runLines(result, { width = COLUMNS, names = null, slots = false } = {}) {
  const out = [];
  const name = (i) => result.files[i].path ?? `file ${i}`;
  out.push(`${result.files.length} checkpoints of one run:`);
  // the file's health as the JSON gives it: every flag, and how many of them are warnings
  const rows = result.files.map((f, i) => [
    i === result.first ? '!' : '',
    i,
    f.step ?? '',
    f.health ? f.health.flags : '',
    f.health ? f.health.warnings : '',
    f.health?.ratio,
    f.state ? 'yes' : '',
    f.ok ? name(i) : `${name(i)} (invalid)`,
  ]);
  numColumns(rows, [5]);
  // a long path is shortened in the middle, and listed in full below the table
  const fit = { width, shrink: 7, key: 1, what: 'paths', shown: new Set() };
  for (const l of table(rows, ['', 'file', 'step', 'flags', 'warnings', 'ratio', 'state', 'path'], new Set([1, 2, 3, 4, 5]), fit)) out.push(l);
  // a state file given and not used: which, and why
  for (const [i, f] of result.files.entries()) if (f.stateError) out.push(...wrapLine(`warning: state file ${f.stateFile ?? '?'} not used for file ${i}: ${f.stateError}`, width));
  for (const s of result.skipped ?? []) out.push(...wrapLine(`skipped ${s.name}: ${s.why}`, width));
  out.push('');
  for (const p of result.pairs) {
    out.push(pairLine(p, names));
    if (p.loggedLr && p.loggedLr.agrees !== null) out.push(...wrapLine(loggedLine(p), width));
    if (slots && p.slots.length) {
      out.push(...slotLines(p, names, width));
      out.push('');
    }
  }
  if (!slots) out.push('');
  out.push(verdictLine(result, name));
  return out;
}

/** The exit status of a run's result: 0 all clear, 1 something breaks, 3 a pair cannot tell. */
export function runStatus(result) {
  if (result.ok) return 0;
  return result.first !== null ? 1 : CANNOT_TELL_STATUS;
}

/** The command; `usage(text)` returns the CLI's usage error to throw; `readNames(path, count)`
 *  is the CLI's names reader (capped, as every command reads a names file). Exit status. */
export async function cmdRun(argv, usage, readNames) {
  let { files, states, json, slots, lr, residualLimit, grad, names, band, kind } = parse(argv, usage);
  let skipped = [];   // a folder's entries the run does not read
  if (grad !== undefined) return cmdGradient(files, grad, names, usage);
  if (files.length === 1 && !states && isDirectory(files[0]) && await isOutputFolder(files[0])) {
    return trainerRun(files[0], { json, slots, lr, residualLimit, names, band, kind }, usage, readNames);
  }
  if (files.length === 1 && !states && isDirectory(files[0])) {
    ({ files, states, skipped } = await folder(files[0]));
    if (files.length < 2) throw new FileError(`${argv.find((a) => !a.startsWith('--'))} holds ${files.length} optimizer checkpoint${files.length === 1 ? '' : 's'}: a run needs at least two`);
  } else if (files.length < 2) throw usage('run takes at least two checkpoints, or a folder');
  else for (const f of [...files, ...(states ?? [])]) checkInput(f, 'checkpoint');
  // the ratios need both (a folder's state files are found by their stems)
  if (band !== undefined && (lr === undefined || !states)) throw usage('--ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))');
  const ratioBand = await ratioBandArg(band, usage);
  const slotNames = names === undefined ? null : readNames(names, await slotCount(files[0]));
  // --kind: the kind of the PyTorch optimizers among the files (a TorchLean file's own is checked)
  const result = await reading(files[0], 'checkpoint', () => run(files, { states, lr, ratioBand, residualLimit, kind }));
  if (skipped.length) result.skipped = skipped;
  if (json) process.stdout.write(terminalJSON(result, 2) + '\n');
  else say(process.stdout, runLines(result, { width: outputColumns(process.stdout), names: slotNames, slots }));
  return runStatus(result);
}

/** run OUTPUT_DIR: its checkpoint-N folders in the order of N, each optimizer paired with its own
 *  folder's model (its kind from --kind, else training_args.bin), each recovered learning rate
 *  beside the one trainer_state.json logged at A's step. */
async function trainerRun(dir, { json, slots, lr, residualLimit, names, band, kind }, usage, readNames) {
  const ratioBand = await ratioBandArg(band, usage);
  if (band !== undefined && lr === undefined) throw usage('--ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))');
  const folder = await openOutputFolder(dir, { kind: kind ?? null }).catch((err) => {
    throw err instanceof FolderError ? new FileError(err.message) : err;
  });
  try {
    if (folder.opts.length < 2) throw new FileError(`${dir} holds ${folder.opts.length} checkpoint folder: a run needs at least two`);
    const slotNames = names === undefined ? null : readNames(names, folder.opts[0].summary.slotCount);
    const result = await run(folder.opts, { states: folder.models, lr, ratioBand, residualLimit, labels: { files: folder.paths, states: folder.modelPaths } });
    await compareLogged(result, folder.logged);
    const warnings = folder.warnings.flatMap((list, i) => list.map((w) => `warning: ${folder.paths[i]}: ${w}`));
    // a run's learning rates need the kind (AdamW's step has a decay term, Adam's none)
    const unknown = folder.opts.map((o, i) => (o.report.optimizer?.kind === null ? folder.paths[i] : null)).filter((p) => p !== null);
    if (unknown.length) warnings.push(`warning: ${unknown.length === folder.opts.length ? 'every optimizer\'s' : `${plural(unknown.length, 'optimizer')}' (${unknown.join(', ')})`} kind is unknown (neither its file nor training_args.bin says Adam or AdamW): no learning rate comes back; give --kind adam|adamw`);
    if (json) process.stdout.write(terminalJSON(result, 2) + '\n');
    else say(process.stdout, runLines(result, { width: outputColumns(process.stdout), names: slotNames ?? folder.opts[0].summary.pairing?.slots ?? null, slots }));
    if (warnings.length) say(process.stderr, warnings.flatMap((w) => wrapLine(w, COLUMNS)));
    return runStatus(result);
  } finally {
    folder.close();
  }
}

/** run A B --grad OUT [--names NAMES.json]: the one-step gradient, written atomically. */
async function cmdGradient(files, out, namesPath, usage) {
  if (files.length !== 2) throw usage('--grad takes exactly two checkpoints: A and B one step after it');
  const format = /\.safetensors$/i.test(out) ? 'safetensors' : /\.npz$/i.test(out) ? 'npz' : null;
  if (!format) throw usage(`--grad writes OUT.safetensors or OUT.npz: the name ${out} says neither`);
  for (const f of files) checkInput(f, 'checkpoint');
  // both opened first, each named in its own read errors; then only OUT is written
  const a = await reading(files[0], 'checkpoint', () => open(files[0]));
  let b = null;
  try {
    b = await reading(files[1], 'checkpoint', () => open(files[1]));
    // the names file read as every --names is (capped), one name per slot of A as for export:
    // else refused with exit status 2 (an invalid A: its own diagnostic comes from the export)
    const names = namesPath === undefined ? undefined
      : readNamesFile(namesPath, { slots: a.ok ? a.summary.slotCount : null, ties: () => a.report.schema?.effectiveRepresentatives ?? null });
    await writing(out, () => saveGradient(out, a, b, { format, names }));
  } finally {
    b?.close();
    a.close();
  }
  say(process.stdout, `wrote ${out} (${fs.statSync(out).size} bytes)`);
  return 0;
}
