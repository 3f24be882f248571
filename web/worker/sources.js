// What the worker reads a file through: a dropped File, or a path this viewer's own server
// serves (`ckptscope view` serves files at /files/TOKEN/NAME), each counting its bytes for the
// viewer (payloads are skipped until statistics are asked for); or the files of a DeepSpeed
// folder, laid out as one source the way the package lays out a folder on disk.
import { HttpSource, BlobSource } from '/js/index.js';
import { Feed, folderListing, folderFamily, folderPlan, sourceText, BundleSource } from '/js/plumbing.js';

/** A File, read by the package's BlobSource (a page at least, pages kept), counting bytes read. */
export class FileBytes extends BlobSource {
  get name() {
    return this.blob.name;   // *.json is JSON
  }

  io() {
    return { via: 'file', bytesRead: this.bytesRead };
  }
}

/** A URL of this origin, read by the package's HTTP source: range requests, counted. */
export class UrlBytes {
  constructor(path, feed = null) {
    const url = new URL(path, self.location.href);
    if (url.origin !== self.location.origin) throw new TypeError(`${path}: only files served by this viewer's own server are opened from the address`);
    this.http = HttpSource.open(url.href, { feed });
    this.path = url.pathname;   // /files/TOKEN/NAME: its passes on the server are /passes/KIND/TOKEN/NAME
    this.size = this.http.size;
    this.name = decodeURIComponent(url.pathname.split('/').pop() || url.pathname);   // *.json is JSON
  }
  read(offset, dest) {
    return this.http.read(offset, dest);
  }
  io() {
    return { via: 'http', bytesTransferred: this.http.bytesTransferred, requests: this.http.requests, reads: this.http.reads };
  }
  close() {}
}

/** A folder's files ([{path, source}], each path relative to the folder the first segment of
 *  every path names, or a file's name alone for files given loose) split into the folder's name
 *  and its files' paths in it; null when the paths name no one folder. */
function folderOfPaths(files) {
  const slash = files.map((f) => f.path.indexOf('/'));
  if (slash.every((i) => i < 0)) return { root: '', rel: files.map((f) => f.path) };
  const root = files[0].path.slice(0, slash[0]);
  if (slash.some((i, k) => i <= 0 || files[k].path.slice(0, i) !== root)) return null;
  return { root, rel: files.map((f, k) => f.path.slice(slash[k] + 1)) };
}

/** A DeepSpeed folder given as files (a picked or dropped folder, files dropped together, the
 *  files `ckptscope view DIR` serves): the core's plan (js/folder-bundle.js, the package's one
 *  path for a folder), each file's source opened once. Null when the files are no DeepSpeed
 *  checkpoint the core reads as one. */
export async function folderPlanOf(files) {
  const at = folderOfPaths(files);
  if (!at) return null;
  // by the names first: a served file's size costs a request, made only for DeepSpeed's files
  if (!await folderFamily(at.root, folderListing(at.rel.map((name) => ({ name, size: 0 }))))) return null;
  const sources = new Map();
  for (const [k, f] of files.entries()) sources.set(at.rel[k], await sourceOf(f.source));
  const entries = folderListing([...sources].map(([name, src]) => ({ name, size: src.size })));
  const plan = await folderPlan(at.root, entries, (name, limit) => sourceText(sources.get(name), limit));
  if (!plan?.members) return null;
  const named = new Set(plan.members.map((m) => m.name));
  const unused = files.map((f, k) => (named.has(at.rel[k]) ? -1 : k)).filter((k) => k >= 0);
  return { plan, sources, unused };
}

/** The files of a DeepSpeed folder laid out as one source, its bytes counted as its files'. */
export class FolderBytes extends BundleSource {
  constructor({ plan, sources }) {
    super(plan, (name) => sources.get(name));
  }

  io() {
    const ios = this.parts.map((p) => p.src?.io()).filter(Boolean);
    if (ios[0]?.via === 'http') {
      const sum = (k) => ios.reduce((t, io) => t + io[k], 0);
      return { via: 'http', bytesTransferred: sum('bytesTransferred'), requests: sum('requests'), reads: sum('reads') };
    }
    return { via: 'file', bytesRead: ios.reduce((t, io) => t + io.bytesRead, 0) };
  }
}

/** A File, or a served path read through the feed where the page is cross-origin isolated
 *  (js/server/server.js's headers), else by synchronous requests (js/feed.js). */
export async function sourceOf(source) {
  if (typeof source === 'string') return new UrlBytes(source, await Feed.start());
  if (source instanceof Blob) return new FileBytes(source);
  if (Array.isArray(source?.folder)) {   // a DeepSpeed folder's files: {folder: [{path, source}]}
    const found = await folderPlanOf(source.folder);
    if (!found) throw new TypeError('these files are no longer a DeepSpeed checkpoint ckptscope reads as one');
    return new FolderBytes(found);
  }
  throw new TypeError('a file to open must be a File or a path of this viewer\'s server');
}
