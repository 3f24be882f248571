// A Hugging Face Trainer's folders on disk (Node): which file of a checkpoint-N/ folder is which,
// an output folder's checkpoint-{N} folders in the order of N, and the Trainer's own files read
// as data. The rules (the names, a sharded model's index, the order) are the core's
// (src/families/hf_trainer/folder.c, trainer.c); this module lists folders and joins paths.
import { loadBinding } from './binding.js';
import { sourceSize } from './checkpoint.js';
import { openSource } from './sources.js';
import { coreError } from './errors.js';
import { setKind } from './kind.js';
import { accelerateFolder, accelerateCheckpoints, accelerateFilePair } from './accelerate-folder.js';

async function nodeModules() {
  const [fs, path] = await Promise.all([import('node:fs/promises'), import('node:path')]);
  return { fs, path };
}

/** The entries of dir that are files (a link followed), or folders when `folders`. */
async function entries(fs, path, dir, folders) {
  const out = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    let isDir = e.isDirectory(), isFile = e.isFile();
    if (e.isSymbolicLink()) {
      const st = await fs.stat(path.join(dir, e.name)).catch(() => null);
      isDir = !!st?.isDirectory();
      isFile = !!st?.isFile();
    }
    if (folders ? isDir : isFile) out.push(e.name);
  }
  return out;
}

/** Call fn(binding, err) with an error of the core's, thrown as a CheckpointError when fn gives null. */
async function withCoreError(fn) {
  const b = await loadBinding();
  const err = b.errorNew();
  try {
    const out = await fn(b, err);
    if (out === null) throw coreError(b, err);
    return out;
  } finally {
    b.errorFree(err);
  }
}

/**
 * The files of a checkpoint-N/ folder by what they are: {optimizer, model, modelShards,
 * trainerState, trainingArgs, scheduler, config}, each a path or null. `model` is the model file
 * (pytorch_model.bin, else model.safetensors), or a sharded model's index, whose shards (read
 * from its weight_map, sorted) are then `modelShards`; else `modelShards` is null. A hostile
 * index (a shard that is not a file beside it) rejects with a CheckpointError (code 66).
 */
export async function trainerFolder(dir) {
  const { fs, path } = await nodeModules();
  const names = await entries(fs, path, String(dir), false);
  const b = await loadBinding();
  const roles = b.trainerFolder(names);
  const at = (name) => (name === null ? null : path.join(String(dir), name));
  let model = at(roles.model), modelShards = null;
  if (!model && roles.modelIndex) {
    model = at(roles.modelIndex);
    const text = await fs.readFile(model);
    modelShards = (await withCoreError((core, err) => core.modelIndexShards(text, roles.modelIndex, err))).map(at);
  }
  return {
    optimizer: at(roles.optimizer),
    model,
    modelShards,
    trainerState: at(roles.trainerState),
    trainingArgs: at(roles.trainingArgs),
    scheduler: at(roles.scheduler),
    config: at(roles.config),
  };
}

/** Which of a checkpoint-N/ folder's file names is which (the core's names): {optimizer, model,
 *  modelIndex, trainerState, trainingArgs, scheduler, config}, each a name or null. For a folder's files
 *  that are not on a disk this process lists (the viewer's folder picker). */
export async function trainerFolderRoles(names) {
  return (await loadBinding()).trainerFolder(names);
}

/** An output folder's checkpoint-{N} folders in the order of N (numeric): [{path, name, step}],
 *  step a number (a decimal string past 2^53 - 1). Other entries are left out. Without any, an
 *  Accelerate project's checkpoint_{k} folders by k (step and iteration: k). */
export async function checkpointFolders(outputDir) {
  const { fs, path } = await nodeModules();
  const names = await entries(fs, path, String(outputDir), true);
  const b = await loadBinding();
  const trainer = b.trainerCheckpoints(names).map(({ name, step }) => ({ path: path.join(String(outputDir), name), name, step }));
  if (trainer.length) return trainer;
  // an Accelerate project's checkpoint_{k} folders (in it, or in its checkpoints/), by k
  return (await accelerateCheckpoints(outputDir)).map(({ path: p, name, iteration }) => ({ path: p, name, step: iteration, iteration }));
}

async function readWith(source, call) {
  const src = await openSource(source);
  return withCoreError(async (b, err) => {
    const srcId = b.core.register(src);
    try {
      const out = call(b, srcId, sourceSize(b, src), err);
      if (src.error) throw src.error;
      return out;
    } finally {
      b.core.unregister(srcId);
      src.close();
    }
  });
}

/** training_args.bin read as data (nothing it names runs): {class, optim, kind ('adamw' or
 *  null: unknown), learningRate, weightDecay, adamBeta1, adamBeta2, adamEpsilon}. */
export function readTrainingArgs(source) {
  return readWith(source, (b, id, size, err) => b.trainingArgs(id, size, err));
}

/** trainer_state.json: {globalStep, learningRates: [{step, learningRate}]} by step, exact as
 *  written (NaN and Infinity as the strings "NaN", "Infinity"). */
export function readTrainerState(source) {
  return readWith(source, (b, id, size, err) => b.trainerState(id, size, err));
}

/**
 * A folder given as the relative paths of its files ('out/checkpoint-10/optimizer.pt', …: a
 * folder picked in a browser, or served by `ckptscope view`), read as a Hugging Face Trainer's by
 * the core's names. Resolves {checkpoint: roles} for one checkpoint folder (a checkpoint-N folder
 * among the paths, or the one folder they all lie in, holding an optimizer and a model), or
 * {checkpoints: [{name, step, dir, roles}]} for an output folder's two or more checkpoint-N
 * folders in the order of N; null when neither. `roles` as trainerFolderRoles gives them, each
 * the index of a path instead of a name (or null); `used` lists the indices of every path a
 * role names. An Accelerate save_state folder (and a project's checkpoint_{k} folders, by k) is
 * read the same way: its pair 0 of files as optimizer and model, `roles.accelerate` the indices
 * of every file of a role Accelerate writes. Paths are split at '/'; a folder's path is the text before its last '/'.
 */
export async function trainerLayout(paths) {
  const b = await loadBinding();
  const dirs = new Map();   // the folder's path -> indices of the paths in it
  paths.forEach((p, i) => {
    const cut = String(p).lastIndexOf('/');
    const dir = cut < 0 ? '' : String(p).slice(0, cut);
    if (!dirs.has(dir)) dirs.set(dir, []);
    dirs.get(dir).push(i);
  });
  const base = (i) => String(paths[i]).slice(String(paths[i]).lastIndexOf('/') + 1);
  const rolesOf = (indices) => {
    const names = indices.map(base);
    if (new Set(names).size !== names.length) return null;
    const roles = b.trainerFolder(names);
    const index = (name) => (name === null ? null : indices[names.indexOf(name)]);
    // an Accelerate save_state folder: its pair 0 of files, and every file of a role it names
    const acc = roles.optimizer === null ? b.accelerateFolder(names) : null;
    const pair = acc?.accelerate ? acc.pairs.find((p) => p.index === 0 && p.reader === 'pytorch') : null;
    if (pair) {
      const none = Object.fromEntries(Object.keys(roles).map((k) => [k, null]));
      return { ...none, optimizer: index(pair.optimizer), model: index(pair.model), accelerate: acc.files.filter((e) => e.role !== null).map((e) => index(e.name)) };
    }
    return Object.fromEntries(Object.entries(roles).map(([k, name]) => [k, index(name)]));
  };
  const used = (roles) => Object.entries(roles).flatMap(([k, i]) => (k === 'accelerate' ? i : i === null ? [] : [i]));
  // the checkpoint-N folders among the folders (by the last part of their path), one of each name
  const last = new Map();
  for (const dir of dirs.keys()) {
    const name = dir.slice(dir.lastIndexOf('/') + 1);
    if (!name) continue;
    if (last.has(name)) return null;   // two folders of one name: not one Trainer's
    last.set(name, dir);
  }
  const trainerFound = b.trainerCheckpoints([...last.keys()]);
  // else an Accelerate project's checkpoint_{k} folders, by k
  const found = trainerFound.length ? trainerFound : b.accelerateCheckpoints([...last.keys()]).map(({ name, iteration }) => ({ name, step: iteration, iteration }));
  if (found.length >= 2) {
    const checkpoints = [];
    for (const { name, step } of found) {
      const roles = rolesOf(dirs.get(last.get(name)));
      if (!roles) return null;
      checkpoints.push({ name, step, dir: last.get(name), roles });
    }
    return { checkpoints, used: checkpoints.flatMap((c) => used(c.roles)) };
  }
  const dir = found.length === 1 ? last.get(found[0].name) : dirs.size === 1 ? [...dirs.keys()][0] : null;
  if (dir === null) return null;
  const roles = rolesOf(dirs.get(dir));
  if (!roles || roles.optimizer === null || roles.model === null) return null;
  return { checkpoint: roles, used: used(roles) };
}

/** Which trainer_state.json entry logs the learning rate of the update from step a to a + 1, by
 *  the transformers that wrote config.json (the core's rule, ckpt_trainer_lr_logged_at): 'a',
 *  'b', or null when the file is missing, unreadable or names no version. `source`: any source
 *  open() takes (a path, a Blob, the viewer's sources), or null. */
export async function lrLoggedAt(source) {
  if (source === null || source === undefined) return null;
  // a config.json is a few kB; one past the core's bound (32 MiB) is not read at all
  const LIMIT = 32 << 20;
  const own = !(typeof source === 'object' && typeof source.read === 'function');
  const src = await openSource(source).catch(() => null);
  if (!src) return null;
  try {
    if (src.size === null || src.size < 0 || src.size > LIMIT) return null;
    const buf = new Uint8Array(src.size);
    let got;
    try {
      got = src.read(0, buf);
    } catch {
      return null;   // unreadable: the version is not known
    }
    return src.error ? null : (await loadBinding()).trainerLrLoggedAt(buf.subarray(0, got));
  } finally {
    if (own) src.close();   // a caller's own source stays open, as it was given
  }
}

/** What stops a folder from being read as a Trainer checkpoint, in words (the CLI's exit 2). */
export class FolderError extends Error {}

/**
 * The files of the checkpoint-N/ folder `dir` that a command reads: {optimizer, model,
 * trainerState, config} paths and the kind: `kind` when given ('adam' | 'adamw'), else `fallback`,
 * training_args.bin's ('adamw', or null when it does not say), which gives way to a kind the
 * optimizer's own file says (format.md 10.3's order). A folder without an optimizer or a model,
 * or with a sharded model (its shards are not paired), is refused with a FolderError; a folder
 * holding none of a Trainer checkpoint's files gives null, as does an Accelerate folder the core reads
 * whole as one DCP checkpoint (FSDP SHARDED_STATE_DICT: optimizer_{i}/ with pytorch_model_fsdp_{i}/).
 */
export async function folderFiles(dir, { kind = null, pair = null } = {}) {
  const acc = await accelerateFolder(dir);
  if (acc.accelerate) {
    // Accelerate's FSDP sharded save: one DCP checkpoint of its two folders, opened whole
    if (pair === null && (await wholeFamily(dir)) === 'DCP') return null;
    return accelerateFiles(acc, { kind, pair });
  }
  if (pair !== null) throw new FolderError(`--pair picks one of an Accelerate folder's pairs: ${dir} is no Accelerate save_state folder`);
  const f = await trainerFolder(dir);
  if (!isTrainerFolder(f)) return null;
  if (!f.optimizer) throw new FolderError(`${dir} holds no optimizer.pt: not a Trainer checkpoint folder`);
  if (f.modelShards) throw new FolderError(`${dir} holds a sharded model (${f.model}): a model in shards is not paired with its optimizer: give one model file, OPT --state MODEL`);
  if (!f.model) throw new FolderError(`${dir} holds no model (pytorch_model.bin or model.safetensors) to pair optimizer.pt with`);
  const fallback = kind === null && f.trainingArgs ? (await readTrainingArgs(f.trainingArgs)).kind : null;
  return { optimizer: f.optimizer, model: f.model, kind, fallback, trainerState: f.trainerState, config: f.config };
}

/** The family of the checkpoint the core reads the folder `dir` as, whole ('DCP', 'DeepSpeed'),
 *  or null. */
export async function wholeFamily(dir) {
  const { deepspeedPlan } = await import('./folder-source.js');
  return (await deepspeedPlan(dir))?.family ?? null;
}

/** An Accelerate save_state folder's pair `pair` (default 0) as folderFiles gives a Trainer
 *  folder's files, with `accelerate` (accelerateFolder's reading) and `pair`; null for a pair
 *  DeepSpeed reads (the folder is opened whole, as a DeepSpeed checkpoint). A pair that is no
 *  pair of files (DCP folders, rank files, an optimizer without its model) is refused with a
 *  FolderError in the core's words. */
function accelerateFiles(acc, { kind, pair }) {
  const index = pair ?? 0;
  if (acc.pairs.find((p) => p.index === index)?.reader === 'deepspeed') return null;
  let files;
  try {
    files = accelerateFilePair(acc, index);
  } catch (err) {
    throw new FolderError(err.message);
  }
  return { optimizer: files.optimizer, model: files.model, kind, fallback: null, trainerState: null, config: null, accelerate: acc, pair: index };
}

/** Does a folder's listing (trainerFolder) hold any of a Trainer checkpoint's files? */
const isTrainerFolder = (f) => !!(f.optimizer || f.model || f.trainerState || f.trainingArgs || f.scheduler);

/** The open optimizer `ck` given `kind` (null: none), else `fallback` where its file does not say
 *  its kind; a given kind its file contradicts rejects with the core's CheckpointError. An
 *  invalid file is left as it is. */
export async function applyKind(ck, kind, fallback = null) {
  if (!ck.ok) return;   // an invalid file: its own diagnostic, from the pairing
  if (kind !== null && kind !== undefined) await setKind(ck, kind);
  else if (fallback && ck.report.optimizer && ck.report.optimizer.kind === null) await setKind(ck, fallback);
}
