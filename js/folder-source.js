// A checkpoint that is a folder (a DeepSpeed save_dir, tag folder, or a Trainer checkpoint-N/
// saved with DeepSpeed: docs/deepspeed.md) as one source (Node). The rules are the core's
// (src/families/deepspeed/names.c, src/containers/bundle.h): this module lists the folder two
// levels deep, reads the small texts the core asks for (`latest`), and lays out the bytes where
// the core says: its header first, then each file it names at its offset. Files are opened when
// first read and read with positional reads, as a single file is.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBinding } from './binding.js';
import { coreError } from './errors.js';
import { FileSource } from './node-io.js';

/** The folder's entries as the core reads them: its files and folders ("sub/"), and each
 *  subfolder's files ("sub/name"), by name; a link is followed. */
function listing(dir) {
  const entries = [];
  const kind = (p) => {
    const st = fs.statSync(p, { throwIfNoEntry: false });
    return st?.isDirectory() ? 'dir' : st?.isFile() ? { size: st.size } : null;
  };
  const names = (d) => fs.readdirSync(d).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const name of names(dir)) {
    const k = kind(path.join(dir, name));
    if (k === 'dir') {
      entries.push({ name: `${name}/`, size: null });
      let inner = [];
      try {
        inner = names(path.join(dir, name));
      } catch {
        continue;   // a folder that cannot be listed holds nothing the core can read
      }
      for (const sub of inner) {
        const s = kind(path.join(dir, name, sub));
        if (s && s !== 'dir') entries.push({ name: `${name}/${sub}`, size: s.size });
      }
    } else if (k) entries.push({ name, size: k.size });
  }
  return entries;
}

/** The first `limit` bytes of a file, as text. */
function text(file, limit) {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(limit);
    const n = fs.readSync(fd, buf, 0, limit, 0);
    return new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
}

async function ask(listingObject) {
  const b = await loadBinding();
  const err = b.errorNew();
  try {
    const plan = b.deepspeedFolder(JSON.stringify(listingObject), err);
    if (plan === null) throw coreError(b, err);
    return plan;
  } finally {
    b.errorFree(err);
  }
}

/** The core's plan for `dir`: null when it is no DeepSpeed folder, else {tag, members, size,
 *  header} (ckpt_deepspeed_folder_json). */
export async function deepspeedPlan(dir) {
  const root = dir instanceof URL ? fileURLToPath(dir) : String(dir);
  if (!fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) return null;
  const entries = listing(root);
  let plan = await ask({ root, entries });
  if (!plan.family) return null;
  if (plan.read.length) {
    const texts = {};
    for (const name of plan.read) texts[name] = text(path.join(root, name), plan.readLimit);
    plan = await ask({ root, entries, texts });
  }
  return { root, ...plan };
}

/** The folder as one source: {size, read(offset, dest), close()}; null when the folder is no
 *  checkpoint the core reads as one. */
export async function openFolder(dir) {
  const plan = await deepspeedPlan(dir);
  return plan && plan.members ? new FolderSource(plan) : null;
}

class FolderSource {
  constructor(plan) {
    this.name = plan.root;
    this.header = Uint8Array.from(plan.header);
    this.size = plan.size;
    this.parts = plan.members.map((m) => ({ offset: m.offset, size: m.size, file: path.join(plan.root, m.name), src: null }));
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
      p.src ??= FileSource.open(p.file);
      const want = Math.min(dest.length - done, p.offset + p.size - at);
      const n = p.src.read(at - p.offset, dest.subarray(done, done + want));
      done += n;
      if (n < want) break;   // the file is shorter than listed: the core sees its end
    }
    return done;
  }

  close() {
    for (const p of this.parts) p.src?.close();
  }
}
