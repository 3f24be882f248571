// A Hugging Face Trainer's folders on disk (Node): which file of a checkpoint-N/ folder is which,
// an output folder's checkpoint-{N} folders in the order of N, and the Trainer's own files read
// as data. The rules (the names, a sharded model's index, the order) are the core's
// (src/families/hf_trainer/folder.c, trainer.c); this module lists folders and joins paths.
import { loadBinding } from './binding.js';
import { sourceSize } from './checkpoint.js';
import { openSource } from './sources.js';
import { coreError } from './errors.js';

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
 *  step a number (a decimal string past 2^53 - 1). Other entries are left out. */
export async function checkpointFolders(outputDir) {
  const { fs, path } = await nodeModules();
  const names = await entries(fs, path, String(outputDir), true);
  const b = await loadBinding();
  return b.trainerCheckpoints(names).map(({ name, step }) => ({ path: path.join(String(outputDir), name), name, step }));
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

/** Which trainer_state.json entry logs the learning rate of the update from step a to a + 1, by
 *  the transformers that wrote config.json (the core's rule, ckpt_trainer_lr_logged_at): 'a',
 *  'b', or null when the file is missing, unreadable or names no version. */
export async function lrLoggedAt(configPath) {
  if (configPath === null) return null;
  const { fs } = await nodeModules();
  // a config.json is a few kB; one past the core's bound (32 MiB) is not read at all
  const st = await fs.stat(configPath).catch(() => null);
  if (!st || !st.isFile() || st.size > 32 << 20) return null;
  const text = await fs.readFile(configPath).catch(() => null);
  return text === null ? null : (await loadBinding()).trainerLrLoggedAt(text);
}
