// A Hugging Face Trainer's checkpoint folders as PyTorch pairs (docs/pytorch.md, format.md 10.5):
// a checkpoint-N/ folder's optimizer.pt opened with its kind (--kind, else training_args.bin's
// optim) and paired with the folder's model; an output folder's checkpoint-N folders in the
// order of N, each so paired, for `run`; and each recovered learning rate set beside the one
// trainer_state.json logged for that update (which entry that is, and whether they agree, are the
// core's rules: ckpt_trainer_lr_logged_at, ckpt_logged_lr_agrees). Node.

import { open } from './checkpoint.js';
import { pair } from './api.js';
import { loadBinding } from './binding.js';
import { CheckpointError } from './errors.js';
import { checkpointFolders, readTrainingArgs, readTrainerState, lrLoggedAt, folderFiles, applyKind, FolderError, wholeFamily } from './trainer-folder.js';

// where a checkpoint-N/ folder's files are found and its optimizer given its kind (trainer-folder.js)
export { folderFiles, applyKind, FolderError };

/** Is `dir` an output folder holding checkpoint-N folders? */
export async function isOutputFolder(dir) {
  return (await checkpointFolders(dir).catch(() => [])).length > 0;
}

/**
 * An output folder's checkpoints, each optimizer paired with its own folder's model, in the
 * order of N: {opts, models (open Checkpoints: the caller closes them with close()), paths,
 * modelPaths, logged: per file its trainer_state.json's learning rates by step (a Map) or null,
 * loggedAt: per file which entry logs an update's rate ('a', 'b' or null: lrLoggedAt),
 * warnings: the pairings' warnings per file, kinds: the kind each optimizer was given (null:
 * none)}. A folder whose optimizer does not pair rejects with a FolderError naming it.
 */
export async function openOutputFolder(dir, { kind = null } = {}) {
  return openCheckpointFolders((await checkpointFolders(dir)).map((f) => f.path), { kind });
}

/** Why the folder `dir` gives no pair of files, in words: a checkpoint the core reads whole (an
 *  Accelerate FSDP sharded save: one DCP checkpoint), or none of a Trainer checkpoint's files. */
export async function notAPair(dir) {
  if ((await wholeFamily(dir)) === 'DCP') return `${dir} is a distributed checkpoint (DCP), read whole: a run of them is not read yet`;
  return `${dir} holds none of a Trainer checkpoint's files (optimizer.pt, the model, trainer_state.json)`;
}

/** Checkpoint-N folders given by their paths, in that order (`run A_DIR B_DIR …`): as
 *  openOutputFolder opens an output folder's. */
export async function openCheckpointFolders(dirs, { kind = null } = {}) {
  const out = trainerRunFiles();
  try {
    for (const dir of dirs) {
      const files = await folderFiles(dir, { kind });
      if (!files) throw new FolderError(await notAPair(dir));
      const at = (p) => (p === null ? null : { name: p, source: p });
      await addTrainerCheckpoint(out, { label: dir, optimizer: at(files.optimizer), model: at(files.model), trainerState: at(files.trainerState), config: at(files.config), kind: files.kind, fallback: files.fallback });
    }
  } catch (err) {
    out.close();
    throw err;
  }
  return out;
}

/**
 * The checkpoint-N folders of an output folder given as files, not as a folder on a disk (the
 * viewer's picked or served folder): `checkpoints` [{label, optimizer, model, trainingArgs,
 * trainerState, config}], each file {name, source} (or null), in the order of N (trainerLayout's), each
 * optimizer given `kind`, else its folder's training_args.bin's, and paired with its model.
 * Resolves as openOutputFolder does.
 */
export async function openTrainerCheckpoints(checkpoints, { kind = null } = {}) {
  const out = trainerRunFiles();
  try {
    for (const c of checkpoints) {
      if (!c.optimizer) throw new FolderError(`${c.label} holds no optimizer.pt: not a Trainer checkpoint folder`);
      if (!c.model) throw new FolderError(`${c.label} holds no model (pytorch_model.bin or model.safetensors) to pair optimizer.pt with`);
      const fallback = kind === null && c.trainingArgs ? (await readTrainingArgs(c.trainingArgs.source)).kind : null;
      await addTrainerCheckpoint(out, { ...c, kind, fallback });
    }
  } catch (err) {
    out.close();
    throw err;
  }
  return out;
}

function trainerRunFiles() {
  return { opts: [], models: [], paths: [], modelPaths: [], logged: [], loggedAt: [], warnings: [], kinds: [], close() {
    for (const ck of [...this.opts, ...this.models]) ck.close();
  } };
}

/** Open one checkpoint folder's optimizer and model ({name, source} each) into `out`, the
 *  optimizer given its kind, paired; its trainer_state.json's learning rates read. */
async function addTrainerCheckpoint(out, { label, optimizer, model, trainerState, config = null, kind, fallback }) {
  const o = await open(optimizer.source);
  out.opts.push(o);
  const m = await open(model.source);
  out.models.push(m);
  await applyKind(o, kind, fallback);
  const result = await pair(o, m).catch((err) => {
    throw err instanceof CheckpointError ? new CheckpointError(err, { context: `${label}: ${optimizer.name} does not pair with ${model.name}` }) : err;
  });
  // a pair the files cannot tell (pairs null) is used: continuity is the run's question
  if (result.pairs === false) throw new FolderError(`${label}: optimizer.pt does not pair with ${model.name}: ${result.error.message}`);
  out.paths.push(label);
  out.modelPaths.push(model.name);
  out.warnings.push(result.warnings);
  out.kinds.push(o.summary.optimizer?.kind ?? null);
  out.logged.push(trainerState ? loggedRates(await readTrainerState(trainerState.source)) : null);
  out.loggedAt.push(await lrLoggedAt(config?.source ?? null));
}

/** trainer_state.json's learning rates by step (numbers; a step past 2^53 as its string). */
function loggedRates(state) {
  const m = new Map();
  for (const { step, learningRate } of state.learningRates) if (typeof learningRate === 'number') m.set(String(step), learningRate);
  return m;
}

/**
 * Each pair of a run's result given the learning rate trainer_state.json logged for its update
 * (format.md 10.5), from B's file (the history through B), else A's: `loggedLr: {step,
 * learningRate, agrees, entry}`. Which entry that is depends on the transformers that wrote the
 * folders (`loggedAt[i]`, lrLoggedAt): before 4.51 the Trainer logged after the scheduler's step,
 * so A's step holds the rate of step A + 1 ('a'); from 4.51 it logs the rate the update used, at
 * B's step ('b'). When neither folder's config.json says, the entry of the two that agrees is
 * taken, else A's (entry null: the version is unknown). agrees is true when every slot's
 * recovered rate agrees (the core's rule), false when one differs, null when no slot's rate came
 * back (k > 1, or no model). Pairs without a logged rate get `loggedLr: null`.
 */
export async function compareLogged(result, logged, loggedAt = []) {
  const b = await loadBinding();
  const rateAt = (p, step) => (step === null || step === undefined ? undefined : logged[p.b]?.get(String(step)) ?? logged[p.a]?.get(String(step)));
  const verdict = (p, rate) => {
    const verdicts = p.slots.filter((s) => s.lr !== null).map((s) => b.loggedLrAgrees(s.lr, rate));
    return !verdicts.length || verdicts.includes(null) ? null : verdicts.every((v) => v);
  };
  for (const p of result.pairs) {
    const entry = loggedAt[p.b] ?? loggedAt[p.a] ?? null;
    const candidates = (entry === 'b' ? [p.b] : entry === 'a' ? [p.a] : [p.a, p.b])
      .map((i) => ({ step: result.files[i].step, rate: rateAt(p, result.files[i].step) }))
      .filter((c) => c.rate !== undefined)
      .map((c) => ({ ...c, agrees: verdict(p, c.rate) }));
    const chosen = candidates.find((c) => c.agrees === true) ?? candidates[0];
    p.loggedLr = chosen ? { step: chosen.step, learningRate: chosen.rate, agrees: chosen.agrees, entry } : null;
  }
  return result;
}
