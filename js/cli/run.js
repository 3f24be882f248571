// ckptscope run (docs/runs.md): checkpoints of one run. Given files in run order, or a folder:
// its optimizer checkpoints in run order, each with the model-state file of the same stem (the
// package's runFiles), a Trainer output folder of checkpoint-N/ folders, a DeepSpeed save_dir or
// a folder of DCP folders (torchtitan's checkpoint/ of step-N/). One line per
// consecutive pair (continuous, cannot tell or broken), the per-slot table with --slots, per
// file its health; exit 1 when a pair is not continuous or a file is invalid or flagged (a
// failure: the ratio band's warnings are counted, not failed on), 3 when nothing breaks but a
// pair cannot tell (not an all-clear). run A B --grad OUT: the one-step gradient.

import fs from 'node:fs';
import path from 'node:path';
import { open } from '../checkpoint.js';
import { diff } from '../api.js';
import { CheckpointError } from '../errors.js';
import { run, runFiles, saveGradient } from '../run.js';
import { say, terminalJSON, outputColumns, wrapLine, COLUMNS } from '../terminal.js';
import { FileError, STDIN, checkInput, reading, writing, readNamesFile } from '../user-files.js';
import { isOutputFolder, openOutputFolder, openCheckpointFolders, compareLogged, FolderError } from '../trainer-run.js';
import { UsageError, parseArgs, positiveArg, ratioBandArg, kindArg, exportFormatOf, exportOutputs } from './args.js';
import { readNames, folderFamilyOf } from './inputs.js';
import { checkpointRunFolders } from '../run-folders.js';
import { runLines, trainerWarnings, wroteLine } from './text.js';

/** The exit status of a run where nothing breaks but a pair cannot tell. */
export const CANNOT_TELL_STATUS = 3;

const usage = (text) => new UsageError(text, 'run');

/** argv → {files, states, json, slots, lr, residualLimit, grad, names, band, kind}. */
function parse(argv) {
  const { positional: files, seen } = parseArgs('run', argv);
  const states = seen['--state'] ?? [];
  if (files.includes(STDIN) || states.includes(STDIN)) throw usage('run needs files: - (standard input) cannot be read beside another file');
  if (states.length && states.length !== files.length) {
    throw usage(`--state takes one model-state file per checkpoint: ${files.length} checkpoint${files.length === 1 ? '' : 's'}, ${states.length} state file${states.length === 1 ? '' : 's'}`);
  }
  const lr = positiveArg('--lr', seen['--lr'], usage);
  const residualLimit = positiveArg('--residual-limit', seen['--residual-limit'], usage);
  const kind = kindArg(seen, 'run') ?? undefined;
  return { files, states: states.length ? states : null, json: !!seen['--json'], slots: !!seen['--slots'], lr, residualLimit, grad: seen['--grad'], names: seen['--names'], band: seen['--ratio-band'], kind };
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

/** Folders read as one checkpoint whose optimizer kind is unknown (`unknown`: their paths, of
 *  `total`; `families`: each path's family): AdamW's step has a decay term, Adam's none, so no
 *  learning rate comes back. A DeepSpeed folder's ds_config names no optimizer; a DCP folder keeps
 *  no optimizer class. */
function folderKindWarnings(unknown, total, families) {
  const out = [];
  const ds = unknown.filter((p) => families.get(p) === 'DeepSpeed'), dcp = unknown.filter((p) => families.get(p) === 'DCP');
  if (ds.length) out.push(`warning: ${ds.length === total ? 'no folder\'s' : `${ds.length} folder${ds.length === 1 ? '\'s' : 's\''} (${ds.join(', ')})`} ds_config names its optimizer (Adam or AdamW): no learning rate comes back; give --kind adam|adamw`);
  if (dcp.length) out.push(`warning: ${dcp.length === total ? 'DCP folders keep' : `${dcp.length} DCP folder${dcp.length === 1 ? ' (' : 's ('}${dcp.join(', ')}) keep${dcp.length === 1 ? 's' : ''}`} no optimizer class (Adam or AdamW): no learning rate comes back; give --kind adam|adamw`);
  return out;
}

/** `err` (the run's refusal) named by the first of the folders `files` the core refuses alone. */
async function folderAtFault(files, err) {
  for (const f of files.filter(isDirectory)) {
    const refused = await diff(f, f).then(() => null, (e) => (e instanceof CheckpointError ? e : null));
    if (refused) return new CheckpointError(refused, { context: `cannot check the run at ${f}` });
  }
  return err;
}

/** The exit status of a run's result: 0 all clear, 1 something breaks, 3 a pair cannot tell. */
export function runStatus(result) {
  if (result.ok) return 0;
  return result.first !== null ? 1 : CANNOT_TELL_STATUS;
}

export async function cmdRun(argv) {
  let { files, states, json, slots, lr, residualLimit, grad, names, band, kind } = parse(argv);
  let skipped = [];   // a folder's entries the run does not read
  if (grad !== undefined) return cmdGradient(files, grad, names);
  // DeepSpeed: a save_dir's tag folders in run order; DCP: a folder's DCP folders in run order;
  // or such folders (and files) given
  const found = files.length === 1 && !states && isDirectory(files[0]) ? await checkpointRunFolders(files[0]) : null;
  if (found) {
    const what = found.family === 'DCP' ? 'DCP folder' : 'tag folder';
    if (found.folders.length < 2) throw new FileError(`${files[0]} holds ${found.folders.length} ${what}${found.folders.length === 1 ? '' : 's'}: a run needs at least two`);
    files = found.folders;
  }
  const lone = !found && files.length === 1 && !states && isDirectory(files[0]) ? await folderFamilyOf(files[0]) : null;
  if (lone === 'DeepSpeed') throw new FileError(`${files[0]} is one DeepSpeed checkpoint (a tag folder): a run needs at least two, or their save_dir`);
  if (lone === 'DCP') throw new FileError(`${files[0]} is one DCP checkpoint: a run needs at least two, or their folder`);
  // each folder given the family it is read as (a folder read as one checkpoint)
  const families = new Map();
  for (const f of files.filter(isDirectory)) families.set(f, await folderFamilyOf(f));
  // every folder read as one checkpoint (DeepSpeed's, DCP's)
  const wholeFolders = found !== null || (files.length >= 2 && families.size > 0 && [...families.values()].every(Boolean));
  if (found) for (const f of files) families.set(f, found.family);
  if (wholeFolders && states) throw usage(`--state goes with checkpoint files: ${[...families.values()].includes('DCP') ? 'a DCP folder holds its own parameters (its model part)' : 'a DeepSpeed folder holds its own master weights'}`);
  if (!wholeFolders && files.length === 1 && !states && isDirectory(files[0]) && await isOutputFolder(files[0])) {
    return trainerRun(files[0], { json, slots, lr, residualLimit, names, band, kind });
  }
  if (!wholeFolders && files.length >= 2 && files.some(isDirectory)) {
    // checkpoint-N folders, in the order given: each its optimizer with its own model
    if (states) throw usage('--state goes with checkpoint files: a checkpoint folder is paired with its own model');
    const file = files.find((f) => !isDirectory(f));
    if (file !== undefined) throw usage(`run takes checkpoint files or checkpoint folders, not both: ${file} is a file`);
    return trainerRun(files, { json, slots, lr, residualLimit, names, band, kind });
  }
  if (!wholeFolders && files.length === 1 && !states && isDirectory(files[0])) {
    const dir = files[0];
    ({ files, states, skipped } = await folder(dir));
    if (files.length < 2) throw new FileError(`${dir} holds ${files.length} optimizer checkpoint${files.length === 1 ? '' : 's'}: a run needs at least two`);
  } else if (files.length < 2) throw usage('run takes at least two checkpoints, or a folder');
  else for (const f of [...files, ...(states ?? [])]) if (!(wholeFolders && isDirectory(f))) checkInput(f, 'checkpoint');
  // the ratios need both (a folder's state files are found by their stems; a DeepSpeed folder
  // holds its master weights, a DCP folder its parameters)
  if (band !== undefined && !wholeFolders && (lr === undefined || !states)) throw usage('--ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))');
  const ratioBand = await ratioBandArg(band, usage);
  const slotNames = names === undefined ? null : readNames(names, await slotCount(files[0]));
  // --kind: the kind of the optimizers among the files whose files do not say it (a PyTorch
  // file's, a DeepSpeed or DCP folder's); one that says another is refused
  const result = await reading(files[0], 'checkpoint', () => run(files, { states, lr, ratioBand, residualLimit, kind })).catch(async (err) => {
    // a folder the core does not read as one (a DCP folder whose groups keep no betas and eps): named
    if (err instanceof CheckpointError && !err.context && wholeFolders) throw await folderAtFault(files, err);
    throw err;
  });
  if (skipped.length) result.skipped = skipped;
  // a run's learning rates need the kind (AdamW's step has a decay term, Adam's none)
  const unknown = result.files.map((f, i) => (f.kindUnknown ? f.path ?? files[i] : null)).filter((p) => p !== null);
  const warnings = wholeFolders ? folderKindWarnings(unknown, files.length, families) : trainerWarnings([], [], unknown, files.length, { folder: false });
  if (json) process.stdout.write(terminalJSON(result, 2) + '\n');
  else say(process.stdout, runLines(result, { width: outputColumns(process.stdout), names: slotNames ?? result.names ?? null, slots }));
  if (warnings.length) say(process.stderr, warnings.flatMap((w) => wrapLine(w, COLUMNS)));
  return runStatus(result);
}

/** run OUTPUT_DIR: its checkpoint-N folders in the order of N (run A_DIR B_DIR …: those folders,
 *  in the order given), each optimizer paired with its own folder's model (its kind from
 *  --kind, else training_args.bin), each recovered learning rate beside the one
 *  trainer_state.json logged for that update (at A's step or B's, by the transformers version
 *  config.json names). */
async function trainerRun(dir, { json, slots, lr, residualLimit, names, band, kind }) {
  const ratioBand = await ratioBandArg(band, usage);
  if (band !== undefined && lr === undefined) throw usage('--ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))');
  const opening = Array.isArray(dir) ? openCheckpointFolders(dir, { kind: kind ?? null }) : openOutputFolder(dir, { kind: kind ?? null });
  const folder = await opening.catch((err) => {
    throw err instanceof FolderError ? new FileError(err.message) : err;
  });
  try {
    if (folder.opts.length < 2) throw new FileError(`${dir} holds ${folder.opts.length} checkpoint folder: a run needs at least two`);
    const slotNames = names === undefined ? null : readNames(names, folder.opts[0].summary.slotCount);
    const result = await run(folder.opts, { states: folder.models, lr, ratioBand, residualLimit, labels: { files: folder.paths, states: folder.modelPaths } });
    await compareLogged(result, folder.logged, folder.loggedAt);
    // a run's learning rates need the kind (AdamW's step has a decay term, Adam's none)
    const unknown = folder.opts.map((o, i) => (o.report.optimizer?.kind === null ? folder.paths[i] : null)).filter((p) => p !== null);
    const warnings = trainerWarnings(folder.warnings, folder.paths, unknown, folder.opts.length);
    if (json) process.stdout.write(terminalJSON(result, 2) + '\n');
    else say(process.stdout, runLines(result, { width: outputColumns(process.stdout), names: slotNames ?? result.names ?? null, slots }));
    if (warnings.length) say(process.stderr, warnings.flatMap((w) => wrapLine(w, COLUMNS)));
    return runStatus(result);
  } finally {
    folder.close();
  }
}

/** run A B --grad OUT [--names NAMES.json]: the one-step gradient, written atomically. */
async function cmdGradient(files, out, namesPath) {
  if (files.length !== 2) throw usage('--grad takes exactly two checkpoints: A and B one step after it');
  const format = exportFormatOf(out);
  if (!format) throw usage(`--grad writes ${exportOutputs()}: the name ${out} says neither`);
  for (const f of files) checkInput(f, 'checkpoint');
  // both opened first, each named in its own read errors; then only OUT is written
  const a = await reading(files[0], 'checkpoint', () => open(files[0]));
  let b = null, written;
  try {
    b = await reading(files[1], 'checkpoint', () => open(files[1]));
    // the names file read as every --names is (capped), one name per slot of A as for export:
    // else refused with exit status 2 (an invalid A: its own diagnostic comes from the export)
    const names = namesPath === undefined ? undefined
      : readNamesFile(namesPath, { slots: a.ok ? a.summary.slotCount : null, ties: () => a.report.schema?.effectiveRepresentatives ?? null });
    written = await writing(out, () => saveGradient(out, a, b, { format, names }));
  } finally {
    b?.close();
    a.close();
  }
  say(process.stdout, wroteLine(out, written.bytes));
  return 0;
}
