// A checkpoint that is a folder (a DeepSpeed save_dir, tag folder, or a Trainer checkpoint-N/
// saved with DeepSpeed: docs/deepspeed.md) as one source (Node). The rules are the core's
// (src/families/deepspeed/names.c, src/containers/bundle.h): this module lists the folder
// LISTING_DEPTH levels deep; js/folder-bundle.js (shared with the viewer, whose files are Files or served
// paths) asks the core, reads the small texts it asks for (`latest`) and lays out the bytes where
// the core says. Files are opened when first read and read with positional reads, as a single
// file is.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileSource } from './node-io.js';
import { folderListing, folderPlan, sourceText, BundleSource, LISTING_DEPTH, dcpRunFolders } from './folder-bundle.js';

/** The folder's files LISTING_DEPTH levels deep ("name", "sub/name", ...) with their sizes,
 *  and its folders ("sub/"), as folderListing takes them; a link is followed. */
function listing(dir) {
  const files = [], folders = [];
  const kind = (p) => {
    let st;
    try {
      st = fs.statSync(p, { throwIfNoEntry: false });
    } catch {
      return null;   // a link that loops, an entry that cannot be read: nothing the core reads
    }
    return st?.isDirectory() ? 'dir' : st?.isFile() ? { size: st.size } : null;
  };
  const walk = (rel, depth) => {
    let names = [];
    try {
      names = fs.readdirSync(path.join(dir, rel));
    } catch {
      return;   // a folder that cannot be listed holds nothing the core can read
    }
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      const k = kind(path.join(dir, r));
      if (k === 'dir') {
        if (depth + 1 < LISTING_DEPTH) {
          folders.push(`${r}/`);
          walk(r, depth + 1);
        }
      } else if (k) files.push({ name: r, size: k.size });
    }
  };
  walk('', 0);
  return folderListing(files, folders);
}

/** The first `limit` bytes of a file, as text. */
function text(file, limit) {
  const src = FileSource.open(file);
  try {
    return sourceText(src, limit);
  } finally {
    src.close();
  }
}

/** The core's plan for `dir`: null when it is no DeepSpeed folder, else {root, tag, members,
 *  size, header} (ckpt_deepspeed_folder_json; members null when there is no tag to read). */
export async function deepspeedPlan(dir) {
  const root = dir instanceof URL ? fileURLToPath(dir) : String(dir);
  if (!fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) return null;
  // a folder the core asks for besides (the model part beside optimizer_{i}/): its own files
  const listFolder = (name) => (fs.statSync(path.join(root, name), { throwIfNoEntry: false })?.isDirectory()
    ? listing(path.join(root, name)).filter((e) => e.size !== null && !e.name.includes('/')) : null);
  return folderPlan(root, listing(root), (name, limit) => text(path.join(root, name), limit),
    { listFolder, folder: path.basename(path.resolve(root)) });
}

/** The DCP folders in `dir` (torchtitan's checkpoint/ of step-{N}/) as paths in run order (the
 *  core's); [] when it holds none, null when `dir` is no folder. */
export async function dcpRunPaths(dir) {
  const root = dir instanceof URL ? fileURLToPath(dir) : String(dir);
  if (!fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) return null;
  return (await dcpRunFolders(root, listing(root))).map((name) => path.join(root, name));
}

/** The folder as one source: {size, read(offset, dest), close()}; null when the folder is no
 *  checkpoint the core reads as one. */
export async function openFolder(dir) {
  const plan = await deepspeedPlan(dir);
  return plan && plan.members ? new BundleSource(plan, (name) => FileSource.open(path.join(plan.root, name))) : null;
}
