// Conversion between TLADAMF versions (docs/format.md 8 "Conversion"): the core decides what is
// lossless and refuses the rest with a text naming the option; here the options cross into the
// core and the bytes come out through a write(bytes) callback or, in Node, atomically to a file.

import { withOpen, withProgress, withFile } from './checkpoint.js';
import { withSink, saveAtomically } from './sink.js';
import { readerId, optimizerKind, convertVersions, listed } from './options.js';
import { toU64 } from './values.js';
import { loadBinding } from './binding.js';
import { CheckpointError } from './errors.js';

/**
 * Stream `source` converted through write(bytes). Options: `to`: a version of TorchLean's
 * optimizer format the core writes (the core's description says which) or 'oldest', or
 * `for`: a reader name ('v2-v3': the newest version it reads, losing nothing); what may be lost
 * or supplied: `randomCounter` (a counter for a file without one), `dropRandomCounter`, `untie`,
 * `roundToFloat32`. Resolves with {version, dtype, rounded, maxRelativeError}; rejects with the
 * core's CheckpointError when the conversion would lose something not allowed, and with the
 * file's own diagnostic (also as `fileError`) when it is invalid. A DeepSpeed or DCP folder
 * converts through its consolidated pair (consolidate's two files, read where they are needed,
 * never written) as `convert optimizer.pt OUT --state model.pt` would: the PyTorch options
 * (`kind`, `weightDecay`, `betas`, `eps`, `dropAmsgrad`, and `frozen`: names trained by none)
 * apply, `warnings` lists consolidate's, and the result has `pairError` when the pair holds only
 * if its slots without state are not trained.
 */
export async function convertTo(source, write, options = {}) {
  const { to, randomCounter, dropRandomCounter, untie, roundToFloat32, onProgress, signal, kind, weightDecay, betas, eps, dropAmsgrad, frozen } = options;
  const reader = options.for;
  const b = await loadBinding();
  const targets = listed([...convertVersions(), '"oldest"']);
  if ((to === undefined) === (reader === undefined)) throw new RangeError(`convert needs one of to (${targets}) and for (a reader name)`);
  if (to !== undefined && to !== 'oldest' && !convertVersions().includes(to)) {
    throw new RangeError(`to must be ${targets}, got ${JSON.stringify(to)}`);
  }
  const counter = randomCounter === undefined || randomCounter === null ? null : toU64(randomCounter, 'randomCounter');
  let result;
  const id = reader === undefined ? 0 : readerId(b, reader);
  const given = kind === undefined || kind === null ? null : optimizerKind(kind, (names) => new RangeError(`kind must be ${listed(names, { quote: "'" })}, got ${JSON.stringify(kind)}`));
  for (const [name, x] of [['weightDecay', weightDecay], ['eps', eps], ...(betas ? [['betas[0]', betas[0]], ['betas[1]', betas[1]]] : [])]) {
    if (x !== undefined && x !== null && typeof x !== 'number') throw new TypeError(`${name} must be a number, got ${typeof x}`);
  }
  if (betas !== undefined && betas !== null && (!Array.isArray(betas) || betas.length !== 2)) throw new TypeError('betas must be [beta1, beta2]');
  // a PyTorch optimizer's options (docs/pytorch.md "PyTorch to TorchLean"); the core checks the values
  const target = { version: BigInt(typeof to === 'number' ? to : 0), oldest: to === 'oldest', reader: id, counter,
    dropCounter: !!dropRandomCounter, untie: !!untie, round: !!roundToFloat32,
    kind: given === null ? 0 : 1 + given.id,   // 0: as the file says
    weightDecay: weightDecay ?? null, betas: betas ?? null, eps: eps ?? null, dropAmsgrad: !!dropAmsgrad };
  await withOpen(source, (ck) => {
    // an invalid file is not converted: its own diagnostic (the core's verdict on it)
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
    // a DeepSpeed or DCP folder: through its consolidated pair (format.md 11.8, 12.8), never written
    const deepspeed = ck.summary.family === 'DeepSpeed', dcp = ck.summary.family === 'DCP';
    if (frozen !== undefined && frozen !== null && !deepspeed && !dcp) throw new TypeError('frozen goes with a DeepSpeed or DCP folder here (convert of a PyTorch pair takes it through pair())');
    return withSink(write, (b, sinkId, err) => withFile(ck, (_, file) =>
    withProgress(b, { onProgress, signal }, (pid) => {
      const folder = { ...target, frozen: frozen ?? null };
      result = deepspeed ? b.dsConvert(file, folder, sinkId, pid, err) : dcp ? b.dcpConvert(file, folder, sinkId, pid, err) : b.convert(file, target, sinkId, pid, err);
      if (result && deepspeed) result.warnings = b.dsConsolidateWarnings(file);
      if (result && dcp) result.warnings = b.dcpConsolidateWarnings(file);
      return result ? 0 : 1;
    })), signal);
  });
  return result;
}

/** Node: `source` converted and written to `path` atomically (a temporary sibling renamed over
 *  it; a destination that exists keeps its mode). */
export function convert(source, path, options) {
  let result;
  return saveAtomically(path, async (write) => {
    result = await convertTo(source, write, options);
  }).then(() => result);
}

/**
 * TorchLean to PyTorch: stream `source` (a TLADAMF file) as a torch.save file of an Adam/AdamW
 * optimizer's state_dict through write(bytes), for `optimizer.load_state_dict(torch.load(OUT))`.
 * Options: `lr` (required: TorchLean does not store the learning rate; without it the core's
 * refusal names --lr), `state` (a model-state file: the pair is checked first and a pair that
 * fails is refused with its first failure), `prefix` (the zip's folder, torch.save's file stem;
 * default "archive"). Rejects with the file's own diagnostic (also as `fileError`) when it is
 * invalid.
 */
export async function convertToTorchTo(source, write, options = {}) {
  const { lr, state, prefix, onProgress, signal } = options;
  if (lr !== undefined && lr !== null && typeof lr !== 'number') throw new TypeError(`lr must be a number, got ${typeof lr}`);
  const body = (ck, fs) => {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
    return withSink(write, (b, sinkId, err) => withFile(ck, (_, file) =>
      withProgress(b, { onProgress, signal }, (pid) => b.convertTorch(file, fs, lr ?? null, prefix ?? null, sinkId, pid, err))), signal);
  };
  await withOpen(source, (ck) => (state === undefined || state === null
    ? body(ck, 0)
    : withOpen(state, (st) => withFile(st, (_, fs) => body(ck, fs)))));
}

/** Node: `source` as a torch.save file written to `path` atomically (as convert writes). */
export function convertToTorch(source, path, options) {
  return saveAtomically(path, (write) => convertToTorchTo(source, write, options));
}

/**
 * DeepSpeed to PyTorch (format.md 11.8), or a DCP folder (12.8: 'optimizer' and 'model', the
 * model part as stored, ids numbered in module order): stream one of the folder's consolidated files
 * through write(bytes). `which`: 'optimizer' (the torch.optim state dict that
 * optimizer.load_state_dict takes: ids group by group as torch numbers them) or 'model' (the fp32
 * model's state dict in module order: masters, ties as one storage, frozen parameters and floating
 * buffers widened to float32), or 'model.safetensors' (the same tensors as a safetensors file, a
 * tied alias left out as safetensors keeps one copy). Options: `prefix` (the zip's folder; default "archive"),
 * `onProgress`, `signal`. Resolves with {warnings} (texts: a group stored in round-robin order is
 * numbered in module order); rejects with the folder's own diagnostic (also as `fileError`) when
 * it is invalid, and with the core's refusal otherwise.
 */
export async function consolidateTo(source, which, write, options = {}) {
  const { prefix, onProgress, signal } = options;
  const id = { optimizer: 1, model: 2, 'model.safetensors': 3 }[which];
  if (id === undefined) throw new RangeError(`which must be 'optimizer', 'model' or 'model.safetensors', got ${JSON.stringify(which)}`);
  let warnings = [];
  await withOpen(source, (ck) => {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
    return withSink(write, (b, sinkId, err) => withFile(ck, (_, file) =>
      withProgress(b, { onProgress, signal }, (pid) => {
        // a DCP folder (format.md 12.8) or a DeepSpeed one (11.8): the same two files
        const dcp = ck.summary.family === 'DCP';
        const rc = (dcp ? b.dcpConsolidate : b.dsConsolidate).call(b, file, id, prefix ?? null, sinkId, pid, err);
        if (!rc) warnings = dcp ? b.dcpConsolidateWarnings(file) : b.dsConsolidateWarnings(file);
        return rc;
      })), signal);
  });
  return { warnings };
}

/** Node: a DeepSpeed folder's consolidated optimizer and fp32 model written to `optimizerPath`
 *  and `modelPath` (a .safetensors name: a safetensors file), each atomically (a temporary
 *  sibling renamed over it); the zips' folders are the files' stems, as torch.save names them. */
export async function consolidate(source, optimizerPath, modelPath, options = {}) {
  const stem = (p) => String(p).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
  const model = /\.safetensors$/i.test(String(modelPath)) ? 'model.safetensors' : 'model';
  let result;
  await saveAtomically(optimizerPath, async (write) => {
    result = await consolidateTo(source, 'optimizer', write, { ...options, prefix: stem(optimizerPath) });
  });
  await saveAtomically(modelPath, (write) => consolidateTo(source, model, write, { ...options, prefix: stem(modelPath) }));
  return result;
}

/**
 * A PyTorch optimizer file and its model as a DCP folder (docs/distributed.md "Writing a DCP
 * folder"): the optimizer's ids placed on the model's names as check --state pairs them, keys
 * model.{fqn}, optim.state.{fqn}.{key} and optim.param_groups.{g}.{key}. The data file
 * (__0_0.distcp) streams through writeData(bytes), then .metadata through writeMetadata(bytes).
 * Options: `state` (required: the model's torch.save state dict), `torch` ('1.13' for torch 1.13's
 * form; default torch >= 2.4's), `checkpointId` (the folder's absolute path, StorageMeta's),
 * `saveId` (a UUID; default a new one), `onProgress`, `signal`. Resolves with {keys, modelKeys,
 * tensors, bytesItems, dataBytes, dataFile}; rejects with the core's refusal (a pair that fails:
 * its first failure), or a file's own diagnostic (also as `fileError`) when it is invalid.
 */
export async function convertToDcpTo(source, writeData, writeMetadata, options = {}) {
  const { state, torch, checkpointId, saveId, onProgress, signal } = options;
  if (state === undefined || state === null) throw new TypeError('state is required: the model\'s names key the DCP folder');
  if (torch !== undefined && torch !== null && torch !== '1.13' && torch !== '2') throw new RangeError(`torch must be '1.13' or '2', got ${JSON.stringify(torch)}`);
  const id = saveId ?? globalThis.crypto.randomUUID();
  let result;
  const invalid = (ck) => {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
  };
  await withOpen(source, (ck) => withOpen(state, (st) => {
    invalid(ck);
    invalid(st);
    return withSink(writeData, (b, dataId) => withSink(writeMetadata, (_, metaId, err) =>
      withFile(ck, (__, file) => withFile(st, (___, model) =>
        withProgress(b, { onProgress, signal }, (pid) => {
          result = b.dcpWrite(file, model, { torch113: torch === '1.13', checkpointId: checkpointId ?? null, saveId: id }, dataId, metaId, pid, err);
          return result ? 0 : 1;
        }))), signal).then(() => 0), signal);
  }));
  return result;
}

/**
 * Node: the DCP folder written to `outDir` (created; a folder that exists must be empty):
 * __0_0.distcp, then .metadata last, each a temporary file renamed (DCP's finish renames
 * .metadata.tmp), so a folder without .metadata is an unfinished write. StorageMeta's
 * checkpoint_id is outDir's absolute path. Resolves as convertToDcpTo; on a failure nothing is
 * left of what it wrote.
 */
export async function convertToDcp(source, outDir, options = {}) {
  const [{ default: fs }, { default: path }, { fileURLToPath }] = await Promise.all([import('node:fs'), import('node:path'), import('node:url')]);
  const target = path.resolve(outDir instanceof URL ? fileURLToPath(outDir) : String(outDir));
  const there = fs.statSync(target, { throwIfNoEntry: false });
  if (there && !there.isDirectory()) throw new Error(`${outDir} is not a folder: convert --to dcp writes a folder`);
  if (there && fs.readdirSync(target).length) throw new Error(`${outDir} is not empty: convert --to dcp writes a new folder (or an empty one)`);
  if (!there) fs.mkdirSync(target, { recursive: true });
  const data = path.join(target, '__0_0.distcp');
  const meta = [];
  try {
    let result;
    await saveAtomically(data, async (write) => {
      result = await convertToDcpTo(source, write, (bytes) => meta.push(bytes.slice()), { ...options, checkpointId: target });
    });
    await saveAtomically(path.join(target, '.metadata'), (write) => meta.forEach((bytes) => write(bytes)));
    return result;
  } catch (err) {
    fs.rmSync(data, { force: true });
    if (!there) fs.rmSync(target, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A name-keyed PyTorch optimizer (FSDP's full_optim_state_dict, form F's flat keys; docs/pytorch.md)
 * as a consolidated torch.optim state dict keyed by ids, through write(bytes): `ck` an open
 * Checkpoint already paired with its model by pair() (the ids follow the model's module order).
 * Options: `groupOrder` ('module', the default: each group's ids in module order, as
 * Adam(model.parameters()) numbers them; 'stored': in the group's stored list order), `prefix`
 * (the zip's folder; default "archive"), `onProgress`, `signal`. Resolves with {warnings} (a
 * group whose stored list goes against module order); rejects with the core's refusal.
 */
export async function convertToIdsTo(ck, write, options = {}) {
  const { groupOrder = 'module', prefix, onProgress, signal } = options;
  if (groupOrder !== 'module' && groupOrder !== 'stored') throw new RangeError(`groupOrder must be 'module' or 'stored', got ${JSON.stringify(groupOrder)}`);
  const stored = groupOrder === 'stored';
  if (!ck.ok) throw new CheckpointError(ck.summary.error, { fileError: ck.summary.error, report: ck.report });
  let warnings = [];
  await withSink(write, (b, sinkId, err) => withFile(ck, (_, file) =>
    withProgress(b, { onProgress, signal }, (pid) => {
      const rc = b.convertIds(file, stored, prefix ?? null, sinkId, pid, err);
      if (!rc) warnings = b.convertIdsWarnings(file, stored, err) ?? [];
      return rc;
    })), signal);
  return { warnings };
}

/** Node: convertToIdsTo written to `path` atomically (as convert writes); the zip's folder is
 *  the file's stem, as torch.save names it. */
export async function convertToIds(ck, path, options = {}) {
  const stem = String(path).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
  let result;
  await saveAtomically(path, async (write) => {
    result = await convertToIdsTo(ck, write, { prefix: stem, ...options });
  });
  return result;
}
