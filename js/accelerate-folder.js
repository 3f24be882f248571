// Accelerate save_state folders (Node, and the viewer's listed files): what each file and
// subfolder is, which optimizer pairs with which model, each process's random states (its step),
// and a project's checkpoint_{k} folders by k. The rules (the names, the pairs, what reads each
// pair and the words for what does not) are the core's (src/families/accelerate/); this module
// lists folders, joins paths and reads the random states through the core.
import { loadBinding } from './binding.js';
import { sourceSize } from './checkpoint.js';
import { openSource } from './sources.js';
import { coreError } from './errors.js';

async function nodeModules() {
  const [fs, path] = await Promise.all([import('node:fs/promises'), import('node:path')]);
  return { fs, path };
}

/** A folder's entries: its files' names, its subfolders' with a trailing '/' (links followed). */
async function listing(fs, path, dir) {
  const out = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    let isDir = e.isDirectory(), isFile = e.isFile();
    if (e.isSymbolicLink()) {
      const st = await fs.stat(path.join(dir, e.name)).catch(() => null);
      isDir = !!st?.isDirectory();
      isFile = !!st?.isFile();
    }
    if (isDir) out.push(`${e.name}/`);
    else if (isFile) out.push(e.name);
  }
  return out.sort();
}

/** random_states_{p}.pkl read as data: {step (null: the file saves none), keys, keyCount}; a file
 *  that is not Accelerate's random states rejects with the core's CheckpointError. */
export async function readRandomStates(source, name = 'random_states.pkl') {
  const b = await loadBinding();
  const src = await openSource(source);
  const err = b.errorNew();
  const srcId = b.core.register(src);
  try {
    const out = b.accelerateRandomStates(srcId, sourceSize(b, src), name, err);
    if (src.error) throw src.error;
    if (out === null) throw coreError(b, err);
    return out;
  } finally {
    b.core.unregister(srcId);
    src.close();
    b.errorFree(err);
  }
}

/** The core's reading of a folder's names (`names`: files, subfolders ending in '/'), each name
 *  given `at(name)` as its `path`, and each random_states file's step read with `read(name)`
 *  (null: not read). */
async function described(names, at, read) {
  const b = await loadBinding();
  const f = b.accelerateFolder(names);
  const path = (name) => (name === null ? null : at(name));
  const randomStates = [];
  for (const e of f.files.filter((x) => x.role === 'randomStates').sort((x, y) => x.process - y.process)) {
    // a file that is not Accelerate's random states: its text, the rest of the folder still read
    const states = read ? await read(e.name).catch((err) => ({ error: err.message })) : null;
    randomStates.push({ name: e.name, path: path(e.name), process: e.process, step: states?.step ?? null, keys: states?.keys ?? null, error: states?.error ?? null });
  }
  return {
    accelerate: f.accelerate,
    distributed: f.distributed,
    files: f.files.map((e) => ({ ...e, path: path(e.name) })),
    pairs: f.pairs.map((p) => ({ ...p, modelPath: path(p.model), optimizerPath: path(p.optimizer) })),
    randomStates,
    // Accelerate's step counter: process 0's (every process saves the same)
    step: randomStates[0]?.step ?? null,
  };
}

/**
 * An Accelerate save_state folder on disk: {dir, accelerate (a name only Accelerate writes is
 * there), distributed ('fsdp' | 'deepspeed' | null), files: [{name, path, role, index, process,
 * rank}], pairs: [{index, model, optimizer, modelPath, optimizerPath, modelForm, optimizerForm,
 * reader ('pytorch' | 'deepspeed' | 'dcp' | null), note}], randomStates: [{name, path, process,
 * step, keys, error}], step}. A random_states file that is not Accelerate's gives its step
 * null and the core's text as its `error`.
 */
export async function accelerateFolder(dir) {
  const { fs, path } = await nodeModules();
  const root = String(dir);
  const names = await listing(fs, path, root);
  const at = (name) => path.join(root, name);
  const f = await described(names, at, (name) => readRandomStates(at(name), name));
  return { dir: root, ...f };
}

/** The folder's checkpoint_{k} folders by k (numeric): {project's checkpoints/ folder when `dir`
 *  holds one}: [{path, name, iteration}]; other entries are left out. */
export async function accelerateCheckpoints(dir) {
  const { fs, path } = await nodeModules();
  let root = String(dir);
  let names = await listing(fs, path, root).catch(() => []);
  if (names.includes('checkpoints/')) {
    root = path.join(root, 'checkpoints');
    names = await listing(fs, path, root).catch(() => []);
  }
  const b = await loadBinding();
  const folders = names.filter((n) => n.endsWith('/')).map((n) => n.slice(0, -1));
  return b.accelerateCheckpoints(folders).map(({ name, iteration }) => ({ path: path.join(root, name), name, iteration }));
}

/** Which of a folder's names (files, subfolders ending in '/'; not on a disk this process lists:
 *  the viewer's picked folder) is which, and its pairs: as accelerateFolder gives them, each path
 *  the name itself, random states not read. */
export async function accelerateFolderRoles(names) {
  return described(names, (name) => name, null);
}

/** Pair `index` of a folder read by accelerateFolder, checked to be a pair of files that section
 *  10's reader reads (reader 'pytorch'): {optimizer, model} paths. Else an Error in the core's
 *  words (its note), or naming the pairs there are. */
export function accelerateFilePair(folder, index = 0) {
  const p = folder.pairs.find((x) => x.index === index);
  if (!p) {
    const there = folder.pairs.map((x) => x.index);
    throw new Error(`${folder.dir} holds no pair ${index} (optimizer_${index}, model_${index}): ${there.length ? `its pairs are ${there.join(', ')}` : 'it holds no optimizer and no model'}`);
  }
  if (p.reader !== 'pytorch') throw new Error(`${folder.dir}: ${p.note ?? `pair ${index} is read as a ${p.reader} checkpoint`}`);
  return { optimizer: p.optimizerPath, model: p.modelPath, pair: p };
}

/** A folder read by accelerateFolder as the report's `accelerate` member (docs/distributed.md):
 *  {dir, distributed, pair (the pair read, or null), step, files: [{name, role, index, process,
 *  rank}], pairs: [{index, model, modelForm, optimizer, optimizerForm, reader, note}],
 *  randomStates: [{name, process, step, error}]}: names, not paths. */
export function accelerateJson(folder, pair = null) {
  return {
    dir: folder.dir,
    distributed: folder.distributed,
    pair,
    step: folder.step,
    files: folder.files.map(({ name, role, index, process, rank }) => ({ name, role, index, process, rank })),
    pairs: folder.pairs.map(({ index, model, modelForm, optimizer, optimizerForm, reader, note }) => ({ index, model, modelForm, optimizer, optimizerForm, reader, note })),
    randomStates: folder.randomStates.map(({ name, process, step, error }) => ({ name, process, step, error })),
  };
}
