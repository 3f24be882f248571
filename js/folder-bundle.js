// A folder read as one source (a DeepSpeed save_dir or tag folder, docs/deepspeed.md; a DCP
// folder, docs/distributed.md), wherever
// its files are: on a disk (Node: js/folder-source.js), or Files and served paths in a browser
// (the viewer's worker). The rules are the core's (src/families/deepspeed/names.c,
// src/containers/bundle.h): this module makes the listing the core reads from the files' paths,
// reads the small texts the core asks for (`latest`), and lays out the bytes where the core
// says: its header first, then each file it names at its offset.

import { loadBinding } from './binding.js';
import { coreError } from './errors.js';

const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** How deep a folder's listing goes: a save_dir's universal checkpoint keeps its state in
 *  UTAG/zero/{name}/{file} (docs/deepspeed.md). */
export const LISTING_DEPTH = 4;

/**
 * The listing the core reads, from a folder's files by their paths relative to it ("latest",
 * "global_step2/x.pt", "global_step2/zero/w/fp32.pt"; paths deeper than LISTING_DEPTH are not the
 * core's) and the folders it lists ("sub/", which may hold no file): at each level its files and
 * folders by name, each folder followed by what it holds. Gives [{name, size}] (size null for a
 * folder).
 */
export function folderListing(files, folders = []) {
  const root = { inner: new Map() };   // name -> {size} for a file, or {inner: Map} for a folder
  const dirOf = (parts) => {
    let at = root;
    for (const part of parts) {
      const key = `${part}/`;
      if (!at.inner.has(key)) at.inner.set(key, { inner: new Map() });
      at = at.inner.get(key);
    }
    return at;
  };
  for (const f of folders) {
    const parts = f.replace(/\/$/, '').split('/');
    if (parts.length <= LISTING_DEPTH - 1 && parts.every(Boolean)) dirOf(parts);
  }
  for (const { name, size } of files) {
    const parts = name.split('/');
    if (parts.length > LISTING_DEPTH || !parts.every(Boolean)) continue;
    dirOf(parts.slice(0, -1)).inner.set(parts[parts.length - 1], { size });
  }
  const entries = [];
  const walk = (node, prefix) => {
    const names = [...node.inner.keys()].sort((a, b) => byName(a.replace(/\/$/, ''), b.replace(/\/$/, '')));
    for (const name of names) {
      const e = node.inner.get(name);
      entries.push({ name: `${prefix}${name}`, size: e.inner ? null : e.size });
      if (e.inner) walk(e, `${prefix}${name}`);
    }
  };
  walk(root, '');
  return entries;
}

async function ask(listing) {
  const b = await loadBinding();
  const err = b.errorNew();
  try {
    // a DCP folder (.metadata or .distcp files at its top, or Accelerate's two DCP folders:
    // src/families/dcp/folder.c), else whatever DeepSpeed makes of it
    const dcp = b.dcpFolder(JSON.stringify({ root: listing.root, folder: listing.folder, entries: listing.entries }), err);
    if (dcp === null) throw coreError(b, err);
    if (dcp.family) return dcp;
    const plan = b.deepspeedFolder(JSON.stringify(listing), err);
    if (plan === null) throw coreError(b, err);
    return plan;
  } finally {
    b.errorFree(err);
  }
}

/** Whether the core takes a folder with these entries for a DCP or DeepSpeed checkpoint (its family, or
 *  null): by their names alone, so a caller whose files cost a request to size (served paths)
 *  asks this first, with any sizes. */
export async function folderFamily(root, entries) {
  return (await ask({ root, entries })).family;
}

/** The DCP folders among a folder's subfolders (torchtitan's checkpoint/ of step-{N}/), by their
 *  names in run order (the core's: the last number of the name, src/families/dcp/folder.c), from
 *  the folder's `entries` (folderListing's); [] when none. */
export async function dcpRunFolders(root, entries) {
  const b = await loadBinding();
  const err = b.errorNew();
  try {
    const names = b.dcpRun(JSON.stringify({ root, entries }), err);
    if (names === null) throw coreError(b, err);
    return names;
  } finally {
    b.errorFree(err);
  }
}

/** The core's plan for a folder named `root` with `entries` (folderListing's): null when it is
 *  no DeepSpeed folder, else {root, family, tag, members: [{name, offset, size}] (null: none to
 *  read), size, header} (ckpt_deepspeed_folder_json). `readText(name, limit)` gives the first
 *  `limit` bytes of a file as text (`latest`). A folder the core asks for besides (`list`: the
 *  model part beside Accelerate's optimizer_{i}/, "../pytorch_model_fsdp_{i}/") is listed by
 *  `listFolder(name)` ([{name, size}] relative to it, or null: none there) and the core asked
 *  once more; without listFolder (the viewer's picked folder) the first answer stands. `folder`:
 *  the folder's own name when `root` does not end in it ("."). */
export async function folderPlan(root, entries, readText, { listFolder = null, folder } = {}) {
  let plan = await ask({ root, folder, entries });
  if (!plan.family) return null;
  if (plan.list?.length && listFolder) {
    const more = [];
    for (const dir of plan.list) {
      const inside = await listFolder(dir);
      if (inside) more.push({ name: dir, size: null }, ...inside.map((e) => ({ name: `${dir}${e.name}`, size: e.size })));
      else more.push({ name: dir, size: null });   // listed: nothing there, not asked for again
    }
    entries = [...entries, ...more];
    plan = await ask({ root, folder, entries });
  }
  if (plan.read.length) {
    const texts = {};
    for (const name of plan.read) texts[name] = await readText(name, plan.readLimit);
    plan = await ask({ root, folder, entries, texts });
  }
  return { root, ...plan, members: plan.members ?? null };
}

/** The first `limit` bytes of a source ({read(offset, dest)}), as text. */
export function sourceText(src, limit) {
  const buf = new Uint8Array(limit);
  const n = src.read(0, buf);
  return new TextDecoder().decode(buf.subarray(0, n));
}

/** The folder of `plan` as one source: {name, size, read(offset, dest), close(), parts}; each
 *  member's own source is opened by `openMember(name)` when first read. */
export class BundleSource {
  constructor(plan, openMember) {
    this.name = plan.root;
    this.header = Uint8Array.from(plan.header);
    this.size = plan.size;
    this.openMember = openMember;
    this.parts = plan.members.map((m) => ({ name: m.name, offset: m.offset, size: m.size, src: null }));
  }

  read(offset, dest) {
    let done = 0;
    if (offset < this.header.length) {
      const n = Math.min(dest.length, this.header.length - offset);
      dest.set(this.header.subarray(offset, offset + n));
      done = n;
    }
    for (const p of this.parts) {
      if (done === dest.length) break;
      const at = offset + done;
      if (at >= p.offset + p.size || at < p.offset) continue;
      p.src ??= this.openMember(p.name);
      const want = Math.min(dest.length - done, p.offset + p.size - at);
      const n = p.src.read(at - p.offset, dest.subarray(done, done + want));
      done += n;
      if (n < want) break;   // the file is shorter than listed: the core sees its end
    }
    return done;
  }

  close() {
    for (const p of this.parts) p.src?.close?.();
  }
}
