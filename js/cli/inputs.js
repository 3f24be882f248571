// The files a command is given, as every command takes them: opened with their names in any I/O
// error, a layout JSON told from a checkpoint, a names file read within bounds, a Trainer
// checkpoint-N/ folder taken as its optimizer and model (with the kind its folder says), what a
// file is for a suggestion, and the warning for a file still being written.

import fs from 'node:fs';
import path from 'node:path';
import { open } from '../checkpoint.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { readJsonSource } from '../sources.js';
import { say } from '../terminal.js';
import { checkInput, reading, displayName, sourceOf, isStream, readNamesFile, fileStamp, stillWriting, isFresh } from '../user-files.js';
import { folderFiles, applyKind, FolderError } from '../trainer-run.js';
import { trainerFolder } from '../trainer-folder.js';
import { listed } from '../options.js';
import { deepspeedPlan } from '../folder-source.js';
import { UsageError, kindArg, pairArg } from './args.js';
import { accelerateFolder } from '../accelerate-folder.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';

/** Anything else the user can act on, said in words; exit status 2. */
export class Failure extends Error {}

/** A layout JSON's object, or the path itself for another checkpoint (the one rule of the
 *  package: a file whose first non-blank byte is { or [ is JSON). Never a bare JSON value: the
 *  API would take a string for a path and a number for a file descriptor. */
export async function layoutArg(path) {
  checkInput(path, 'layout or checkpoint');
  const layout = await reading(path, 'layout', () => readJsonSource(path)).catch((err) => {
    throw err instanceof LayoutError ? new LayoutError(err.message) : err;
  });
  if (layout === undefined) return path;
  if (layout === null || typeof layout !== 'object' || Array.isArray(layout)) {
    throw new LayoutError(`${path}: a layout must be a JSON object ({"shapes": ..., "requiresGrad": ...}) or a report from ckptscope inspect --json`);
  }
  return layout;
}

/** Slot names from --names (null without): as many as the file has slots, else a warning. */
export function readNames(path, count, ties = null) {
  if (path === undefined) return null;
  return readNamesFile(path, { slots: count, ties, onMismatch: (text) => say(process.stderr, `warning: ${text}`) });
}

/** Open a file the user named, with its name in any I/O error. */
export async function openFile(file, what, options) {
  checkInput(file, what);
  return refuseUnreadStream(await reading(file, what, () => open(sourceOf(file), options)), file);
}

/** FILE opened as folderArgs's answer `folder` reads it: a folder the core reads whole
 *  (`whole`: DeepSpeed, DCP) laid out as one source, else a file (openFile). */
export async function openInput(file, what, folder, options) {
  return folder?.whole ? reading(file, what, () => open(sourceOf(file), options)) : openFile(file, what, options);
}

/** `ck` (open), unless the core could not read it because it came through a stream (a pipe,
 *  standard input) and its family reads by offsets: then an I/O failure (exit status 2) in the
 *  core's words, the handle closed. */
export async function refuseUnreadStream(ck, file) {
  const { error } = ck.summary;
  if (!ck.summary.ok && isStream(file) && error?.code === (await loadBinding()).codes.IO) {
    ck.close();
    throw new Failure(`${displayName(file)}: ${error.message}`);
  }
  return ck;
}

export const isFolder = (file) => !isStream(file) && fs.statSync(file, { throwIfNoEntry: false })?.isDirectory() === true;

/** A Trainer checkpoint-N/ folder given for `positional[at]`: the folder's optimizer.pt in its
 *  place and its model as --state. Returns the kind to give the optimizer: {kind} from --kind
 *  (null: none), and in a folder {fallback} from training_args.bin, where the file says none. */
export async function folderArgs(positional, seen, command, at = 0) {
  const kind = kindArg(seen, command);
  const pair = pairArg(seen, command);
  const file = positional[at];
  if (file === undefined || !isFolder(file)) {
    if (pair !== null) throw new UsageError(`--pair picks one of an Accelerate folder's pairs: ${shown(String(file), PATH_ECHO_MAX)} is no folder`, command);
    return { kind, fallback: null };
  }
  let family = await folderFamilyOf(file);
  // an Accelerate FSDP sharded save's pair I: its optimizer_{I}/ DCP folder, which takes the model
  // part beside it (the core's folder plan)
  let picked = false;
  if (pair !== null && family !== 'DeepSpeed') {
    const acc = await accelerateFolder(file).catch(() => null);
    const p = acc?.accelerate ? acc.pairs.find((x) => x.index === pair && x.optimizerForm === 'dcp' && x.modelForm === 'dcp') : null;
    if (p) {
      positional[at] = p.optimizerPath.replace(/[/\\]$/, '');
      family = 'DCP';
      picked = true;
    }
  }
  // a distributed checkpoint (a DCP folder: .metadata and its data files; an Accelerate FSDP
  // sharded save's two) is one checkpoint, opened whole (js/folder-source.js)
  if (family === 'DCP') {
    const what = `${shown(file, PATH_ECHO_MAX)} is a distributed checkpoint (DCP)`;
    if (pair !== null && !picked) throw new Failure(`${what}, read whole: --pair ${pair} picks nothing in it`);
    if (!DCP_COMMANDS.has(command)) throw new Failure(`${what}: ${command} does not read one yet; ${listed([...DCP_COMMANDS].map((c) => `ckptscope ${c}`), { last: ' and ' })} do`);
    if (seen['--expect'] !== undefined || (seen['--state'] !== undefined && command !== 'check')) throw new UsageError(`${what}: it is inspected, exported and its health computed alone (its model part holds its parameters), and checked alone or with the model it will be loaded into (check DIR --state MODEL)`, command);
    return { kind, fallback: null, whole: true, dcp: true };
  }
  // a DeepSpeed checkpoint (a save_dir, a tag folder, a Trainer checkpoint-N saved with
  // DeepSpeed) is one checkpoint, opened whole (js/folder-source.js)
  if (family === 'DeepSpeed') {
    if (!DEEPSPEED_COMMANDS.has(command)) throw new Failure(`${shown(file, PATH_ECHO_MAX)} is a DeepSpeed checkpoint: ${command} does not read one yet; ${listed([...DEEPSPEED_COMMANDS].map((c) => `ckptscope ${c}`), { last: ' and ' })} do`);
    if (seen['--expect'] !== undefined || (seen['--state'] !== undefined && command !== 'check')) throw new UsageError(`${shown(file, PATH_ECHO_MAX)} is a DeepSpeed checkpoint: it is inspected, exported and its health computed alone (its fp32 master weights are its parameters), and checked alone or with the model it will be loaded into (check TAGDIR --state MODEL)`, command);
    // an Accelerate folder saved under DeepSpeed: pair i is its pytorch_model[_{i}] tag folder
    const acc = await accelerateFolder(file).catch(() => null);
    if (!acc?.accelerate) {
      if (pair !== null) throw new Failure(`${shown(file, PATH_ECHO_MAX)} is a DeepSpeed checkpoint, read whole: --pair ${pair} picks nothing in it`);
      return { kind, fallback: null, whole: true, deepspeed: true };
    }
    const index = pair ?? 0;
    const tag = acc.pairs.find((p) => p.index === index && p.reader === 'deepspeed');
    if (!tag) throw new Failure(`${shown(file, PATH_ECHO_MAX)} holds no DeepSpeed tag folder for pair ${index} (${index ? `pytorch_model_${index}` : 'pytorch_model'}/): its pairs are ${acc.pairs.map((p) => p.index).join(', ')}`);
    positional[at] = tag.modelPath.replace(/[/\\]$/, '');
    return { kind, fallback: null, whole: true, deepspeed: true, accelerate: acc, pair: index };
  }
  if (seen['--state'] !== undefined) throw new UsageError(`--state goes with an optimizer file: ${shown(file, PATH_ECHO_MAX)} is a checkpoint folder, paired with its own model`, command);
  const f = await folderFiles(file, { kind, pair }).catch((err) => {
    throw err instanceof FolderError ? new Failure(err.message) : err;
  });
  if (!f) return { kind, fallback: null };   // not a Trainer's: a folder, refused as one
  positional[at] = f.optimizer;
  seen['--state'] = f.model;
  return { kind, fallback: f.fallback, accelerate: f.accelerate ?? null, pair: f.pair ?? null };
}

const sameFile = (a, b) => {
  const [x, y] = [fs.statSync(a, { throwIfNoEntry: false }), fs.statSync(b, { throwIfNoEntry: false })];
  return !!(x && y && x.dev === y.dev && x.ino === y.ino);
};

/** The model the optimizer file `opt` was saved with: the model file of its own Trainer
 *  checkpoint folder (OPT is that folder's optimizer.pt), when STATE is another file; the pair
 *  compares the two first. {trainedModel, trainedLabel: "checkpoint-20's model", modelLabel},
 *  or {} when there is none. */
export async function trainedModelOf(opt, state) {
  if (isStream(opt) || isStream(state) || isFolder(opt)) return {};
  const dir = path.dirname(opt);
  const f = await trainerFolder(dir).catch(() => null);
  if (!f?.optimizer || !f.model || f.modelShards || !sameFile(f.optimizer, opt) || sameFile(f.model, state)) return {};
  return { trainedModel: f.model, trainedLabel: `${path.basename(path.resolve(dir))}'s model`, modelLabel: state };
}

/** The commands that read a DeepSpeed checkpoint folder. */
const DEEPSPEED_COMMANDS = new Set(['inspect', 'check', 'health', 'export', 'run', 'diff']);

/** The commands that read a distributed checkpoint (DCP) folder. */
const DCP_COMMANDS = new Set(['inspect', 'check', 'health', 'export', 'run', 'diff']);

/** The family of the checkpoint the core reads FILE as, when FILE is a folder it reads as one
 *  ('DeepSpeed', 'DCP'); else null. */
export async function folderFamilyOf(file) {
  return isFolder(file) ? (await deepspeedPlan(file))?.family ?? null : null;
}

/** Is FILE a folder the core reads as a DeepSpeed checkpoint? */
export async function isDeepSpeedFolder(file) {
  return (await folderFamilyOf(file)) === 'DeepSpeed';
}

/** Does folderArgs's answer give the optimizer a kind? */
export const givesKind = ({ kind, fallback }) => kind !== null || fallback !== null;

/** The open optimizer `ck` given its kind ({kind, fallback} of folderArgs); a given kind the file
 *  contradicts is refused in the core's words (exit 2). */
export async function giveKind(ck, { kind, fallback }, file) {
  if (kind === null && fallback === null) return;
  try {
    await applyKind(ck, kind, fallback);
  } catch (err) {
    if (err instanceof CheckpointError) throw new Failure(`${displayName(file)}: ${err.message}`);
    throw err;
  }
}

/** Of FILE: does it hold an optimizer that takes its slots from a model (a PyTorch file's, which
 *  also stores its groups' learning rates), and that model too? */
export async function modelFacts(file) {
  if (isStream(file) || !fs.existsSync(file)) return { needsModel: false, holdsBoth: false };
  const ck = await open(sourceOf(file)).catch(() => null);
  try {
    const needsModel = !!(ck?.summary.needsModel && ck.summary.optimizer);
    return { needsModel, holdsBoth: needsModel && !!ck.summary.tensorCount };
  } finally {
    ck?.close();
  }
}

/** What a file is, for a suggestion only: 'state', 'optimizer', 'json' or null (unreadable). */
export async function roleOf(file) {
  if (/\.json$/i.test(file)) return 'json';
  try {
    const ck = await open(file);
    try {
      return ck.summary.family ? (ck.kind === 'state' ? 'state' : 'optimizer') : null;
    } finally {
      ck.close();
    }
  } catch {
    return null;
  }
}

/** How long a fresh file read as truncated is watched for growth. */
const GROWTH_WATCH_MS = 250;

/** A warning on stderr when FILE may still be being written: it changed while it was read, or,
 *  read as truncated and modified moments ago, it grows while watched a moment. */
export async function warnStillWriting(file, stamp, code) {
  let text = stillWriting(file, stamp);
  const { codes } = await loadBinding();
  if (!text && code === codes.TRUNCATED && isFresh(fileStamp(file))) {
    const watched = fileStamp(file);
    await new Promise((resolve) => setTimeout(resolve, GROWTH_WATCH_MS));
    text = stillWriting(file, watched);
  }
  if (text) say(process.stderr, `warning: ${text}`);
}
