// ckptscope diff A B [--names NAMES.json] [--state MODEL [MODEL_B]]: every difference between two
// layouts or checkpoints (and, between two checkpoints of one layout, what they hold: steps,
// counter, moments). A PyTorch optimizer's slots come from its model: --state gives it (one for
// both, or A's then B's), and a file holding its model needs none; a Trainer checkpoint-N/ folder
// is its optimizer.pt with its own model (and training_args.bin's kind). Exit status 0 none, 1 some.

import { diff, pair } from '../api.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { jsonKind } from '../layout.js';
import { say } from '../terminal.js';
import { isStream, streamName } from '../user-files.js';
import { UsageError, parseArgs, meant } from './args.js';
import { Failure, layoutArg, readNames, openFile, isFolder, folderFamilyOf } from './inputs.js';
import { ownSlotNames } from '../dcp.js';
import { open } from '../checkpoint.js';
import { reading } from '../user-files.js';
import { folderFiles, applyKind, FolderError } from '../trainer-run.js';
import { diffLines } from './text.js';

export async function cmdDiff(argv) {
  const { positional, seen } = parseArgs('diff', argv);
  if (positional.length !== 2) throw new UsageError('diff takes two files', 'diff');
  const [a, b] = positional;
  for (const side of [a, b]) if (isStream(side)) throw new UsageError(`diff needs two files: ${streamName(side)} is not supported there`);
  const models = seen['--state'] ?? [];
  if (models.length > 2) throw new UsageError(`diff --state takes one model for both files, or A's then B's: ${models.length} given`, 'diff');
  for (const m of models) if (isStream(m)) throw new UsageError(`diff --state needs a file: ${streamName(m)} is not supported there`);
  // a DeepSpeed or DCP folder: one checkpoint, its slots named by its module (DCP: its FQNs); a
  // Trainer checkpoint-N/ folder: its optimizer, with its own model
  const whole = [], folders = [];   // whole[k]: the family of a folder read as one checkpoint, or null
  for (const side of [a, b]) {
    whole.push(isFolder(side) ? await folderFamilyOf(side) : null);
    folders.push(isFolder(side) && !whole[whole.length - 1] ? await folderFiles(side).catch((err) => {
      throw err instanceof FolderError ? new Failure(err.message) : err;
    }) : null);
  }
  const family = whole.find(Boolean);
  if (family && models.length) throw new UsageError(`--state goes with optimizer files: a ${family} folder has slots of its own (${family === 'DCP' ? 'its model part\'s' : 'its module\'s'})`, 'diff');
  if (folders.some(Boolean) && models.length) throw new UsageError('--state goes with optimizer files: a checkpoint folder is compared with its own model', 'diff');
  const sides = [];
  const opened = [];   // the models paired with the sides, closed after
  let differences, pairedNames = null;
  try {
    for (const [k, side] of [a, b].entries()) {
      const f = folders[k];
      sides.push(whole[k] ? await folderSide(side) : await diffSide(f ? f.optimizer : side));
      if (f) await applyKind(sides[k], f.kind, f.fallback);
    }
    await withModels(sides, [a, b], models, opened, folders.map((f) => f?.model ?? null));
    differences = await diff(sides[0], sides[1]);
    // PyTorch optimizers paired with their models: the slots are the model's names; a DeepSpeed
    // folder's are its module's, a DCP folder's its FQNs
    pairedNames = sides[0]?.summary?.pairing?.slots ?? (whole[0] ? ownSlotNames(sides[0].report) : null);
    // two checkpoints of one layout: what they hold too (steps, counter, moments); slots whose
    // names differ (the core compared them by name) hold nothing to set side by side
    const sameSlots = !differences.some((d) => (d.slot !== null && d.slot !== undefined) || d.field === 'name' || d.field === 'order');
    if (sameSlots && sides.every((s) => typeof s?.entry === 'function') && sides[0].summary.slotCount === sides[1].summary.slotCount) {
      const { valueDifferences } = await import('../diff-values.js');
      differences = [...differences, ...(await valueDifferences(sides[0], sides[1]))];
    }
  } catch (err) {
    if (err instanceof LayoutError && sides.length === 2) await nameMalformedSide([[sides[0], a], [sides[1], b]]);
    // a folder the core does not read as a layout (a DCP folder whose groups keep no betas and
    // eps): named
    if (err instanceof CheckpointError && !err.context && sides.length === 2) await nameUnreadSide([[sides[0], a], [sides[1], b]]);
    throw err;
  } finally {
    for (const side of sides) side?.close?.();
    for (const m of opened) m.close();
  }
  say(process.stdout, diffLines(differences, a, b, readNames(seen['--names'], null) ?? pairedNames));
  return differences.length ? 1 : 0;
}

/** The sides that are PyTorch optimizers paired with their models (docs/pytorch.md): `models`
 *  from --state (one for both, or one each), or the model a side's own file holds; a side that
 *  needs one and has none is refused, saying how to give it. */
async function withModels(sides, paths, models, opened, own = [null, null]) {
  const needs = sides.map((s) => typeof s?.summary === 'object' && s.summary.needsModel && !!s.summary.optimizer);
  if (models.length && !needs.some(Boolean)) throw new UsageError(`--state does nothing here: ${paths.join(' and ')} have slots of their own`, 'diff');
  if (models.length === 2 && !needs.every(Boolean)) throw new UsageError(`--state MODEL_A MODEL_B gives two PyTorch optimizers their models: ${paths[needs.indexOf(false)]} has slots of its own; give one MODEL`, 'diff');
  for (const [k, side] of sides.entries()) {
    if (!needs[k]) continue;
    const holds = !!side.summary.tensorCount;
    const modelPath = own[k] ?? (models.length === 2 ? models[k] : models.length === 1 ? models[0] : holds ? paths[k] : null);
    if (modelPath === null) {
      const other = needs[1 - k] && !sides[1 - k].summary.tensorCount;
      throw new UsageError(`diff: ${paths[k]} is a PyTorch optimizer: its slots come from its model, which it does not hold${meant('diff', ...paths, '--state', other ? 'MODEL_A' : 'MODEL', ...(other ? ['MODEL_B'] : []))}`, 'diff');
    }
    const model = await openFile(modelPath, 'checkpoint');
    opened.push(model);
    let result;
    try {
      result = await pair(side, model, { modelLabel: modelPath });
    } catch (err) {
      if (err instanceof CheckpointError) throw new Failure(`cannot compare: ${paths[k]} cannot be paired with ${modelPath}: ${err.message}`);
      throw err;
    }
    // the slots found are what is compared; whether torch would load the pair is check's question
    if (result.pairs === false) throw new Failure(`cannot compare: ${paths[k]} does not pair with ${modelPath}: ${result.error.message}`);
  }
}

/** A DeepSpeed or DCP folder as one side of a diff: its checkpoint, open and valid (a broken one
 *  is named, with the core's reason). */
async function folderSide(dir) {
  const ck = await reading(dir, 'checkpoint', () => open(dir));
  if (!ck.ok) {
    const error = ck.summary.error;
    ck.close();
    throw new CheckpointError(error, { context: `cannot compare: ${dir} is not a valid checkpoint` });
  }
  return ck;
}

/** One side of a diff: a layout object, or an open, valid checkpoint (a broken one is named). */
async function diffSide(path) {
  const side = await layoutArg(path);
  if (typeof side === 'string') {
    const ck = await openFile(path, 'checkpoint');
    if (!ck.ok) {
      const error = ck.summary.error;
      ck.close();
      throw new CheckpointError(error, { context: `cannot compare: ${path} is not a valid checkpoint` });
    }
    return ck;
  }
  if (jsonKind(side) === 'report' && side.ok === false) {
    const error = { message: String(side.error?.message ?? 'the report carries no diagnostic'), offset: side.error?.offset ?? null, hint: side.error?.hint ?? null };
    throw new CheckpointError(error, { context: `cannot compare: ${path} is the report of an invalid checkpoint` });
  }
  return side;
}

/** A side the core cannot compare (its reason the error's): each side alone, to name the one. */
async function nameUnreadSide(sides) {
  for (const [side, name] of sides) {
    try {
      await diff(side, side);
    } catch (err) {
      throw err instanceof CheckpointError && !err.context ? new CheckpointError(err, { context: `cannot compare: ${name}` }) : err;
    }
  }
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
