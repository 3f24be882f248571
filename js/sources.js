// Where bytes come from. Every source answers read(offset, dest) -> bytes copied (fewer only at
// the end of the data) and knows its size (-1 when unknown); the core pulls only the ranges it
// needs, so a payload that is skipped is never read.
//   Uint8Array / ArrayBuffer / DataView: copy the range (never the whole buffer).
//   Blob / File in a worker: FileReaderSync on blob.slice(...), a page at least, pages kept.
//   Blob on a page's main thread (no FileReaderSync there): read once into memory.
//   string path, file: URL or file descriptor (Node): positional fs.readSync; a folder the core
//     reads as one checkpoint (DeepSpeed's) laid out as one source (js/folder-source.js).
//   http(s) URL: range requests (js/http-source.js), streamed by the read feed (js/feed.js) in a
//     cross-origin-isolated page.
//   {size, read(offset, dest)}: a caller's own source (storage ckptscope does not know).

import { isNode } from './wasm.js';
import { LayoutError } from './errors.js';
import { Ranges } from './ranges.js';
import { Feed } from './feed.js';

class BytesSource {
  constructor(u8) {
    this.u8 = u8;
    this.size = u8.byteLength;
  }
  read(offset, dest) {
    if (offset >= this.size) return 0;
    const n = Math.min(dest.length, this.size - offset);
    dest.set(this.u8.subarray(offset, offset + n));
    return n;
  }
  close() {}
}

/** A Blob or File in a worker, read range by range with FileReaderSync (pages kept:
 *  js/ranges.js); bytesRead counts what was read, for a viewer to show. */
export class BlobSource {
  constructor(blob) {
    this.blob = blob;
    this.size = blob.size;
    this.bytesRead = 0;
    const reader = new FileReaderSync();
    this.ranges = new Ranges((start, length) => {
      const bytes = new Uint8Array(reader.readAsArrayBuffer(blob.slice(start, Math.min(this.size, start + length))));
      this.bytesRead += bytes.length;
      return bytes;
    });
  }
  read(offset, dest) {
    if (offset >= this.size) return 0;
    return this.ranges.read(offset, dest.subarray(0, Math.min(dest.length, this.size - offset)));
  }
  close() {
    this.ranges.clear();
  }
}

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;
const isHttpUrl = (x) => (x instanceof URL && /^https?:$/.test(x.protocol)) || (typeof x === 'string' && /^https?:\/\//i.test(x));

/** A caller's own source: {size, read(offset, dest) -> bytes copied, close?()}. */
class CustomSource {
  constructor(source) {
    const size = source.size;
    if (size !== null && size !== undefined && !(Number.isSafeInteger(size) && size >= 0)) {
      throw new TypeError('a custom source\'s size must be a nonnegative safe integer, or null when unknown');
    }
    this.inner = source;
    this.size = size ?? -1;
  }
  read(offset, dest) {
    const n = this.inner.read(offset, dest);
    if (!Number.isSafeInteger(n) || n < 0 || n > dest.length) throw new RangeError(`a custom source's read returned ${n}, not a byte count in [0, ${dest.length}]`);
    return n;
  }
  close() {
    this.inner.close?.();
  }
}

const isCustom = (x) => x !== null && typeof x === 'object' && typeof x.read === 'function' && 'size' in x && !isBlob(x);

/** Open any supported source; the caller closes it. */
export async function openSource(source) {
  if (isCustom(source)) return new CustomSource(source);
  if (source instanceof Uint8Array) return new BytesSource(source);
  if (source instanceof ArrayBuffer) return new BytesSource(new Uint8Array(source));
  if (ArrayBuffer.isView(source)) return new BytesSource(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  if (isBlob(source)) {
    if (typeof FileReaderSync !== 'undefined') return new BlobSource(source);
    return new BytesSource(new Uint8Array(await source.arrayBuffer()));
  }
  if (isHttpUrl(source)) {
    const { HttpSource } = await import('./http-source.js');
    return HttpSource.open(source, { feed: await Feed.start() });
  }
  if (isNode && (typeof source === 'string' || typeof source === 'number' || source instanceof URL)) {
    // a folder the core reads as one checkpoint (a DeepSpeed save_dir: js/folder-source.js)
    if (typeof source !== 'number') {
      const { openFolder } = await import('./folder-source.js');
      const folder = await openFolder(source);
      if (folder) return folder;
    }
    const { FileSource } = await import('./node-io.js');
    return FileSource.open(source);
  }
  throw new TypeError('a checkpoint source must be a Uint8Array, an ArrayBuffer, a Blob or File, an http(s) URL, or (in Node) a file path, file: URL or descriptor');
}

/** The file name or path a source carries (a path, a URL's path, a File's or a custom source's
 *  name), or null (bytes, a descriptor): given to the core as a fact, never opened by it. */
export function sourceName(source) {
  if (typeof source === 'string') return source;
  if (source instanceof URL) return decodeURIComponent(source.pathname);
  if ((isBlob(source) || isCustom(source)) && typeof source.name === 'string' && source.name) return source.name;
  return null;
}

/** The first bytes of a source, for telling a JSON file from a checkpoint. */
async function head(source, n) {
  const src = await openSource(source);
  try {
    const buf = new Uint8Array(Math.max(0, Math.min(n, src.size < 0 ? n : src.size)));
    const got = src.read(0, buf);
    if (src.error) throw src.error;
    return buf.subarray(0, got);
  } finally {
    // A caller's own source stays open, its pages kept: the open that follows a sniff (the
    // viewer's) reads through it, and the sniff's bytes are then counted once, not read twice.
    if (!isCustom(source)) src.close();
  }
}

async function wholeText(source) {
  if (isBlob(source)) return source.text();
  if (source instanceof Uint8Array || source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return new TextDecoder().decode(source instanceof ArrayBuffer ? new Uint8Array(source) : source);
  }
  if (isNode && (typeof source === 'string' || source instanceof URL)) {
    const fs = await import('node:fs/promises');
    return fs.readFile(source, 'utf8');
  }
  // anything else a checkpoint can be read from (an http(s) URL in a worker, a custom source)
  const src = await openSource(source);
  try {
    if (src.size < 0) throw new TypeError(`${nameOf(source)}: a source of unknown size cannot be read as JSON`);
    const buf = new Uint8Array(src.size);
    let done = 0;
    for (let n; done < buf.length && (n = src.read(done, buf.subarray(done))) > 0;) done += n;
    if (src.error) throw src.error;
    return new TextDecoder().decode(buf.subarray(0, done));
  } finally {
    src.close();
  }
}

const LAYOUT_LIMIT = 512 * 1024 * 1024;   // a layout of ten million slots is ~200 MB
/** The most bytes a JSON input (a layout, slot names, a description) may have. */
export const JSON_LIMIT = LAYOUT_LIMIT;

/** When `source` holds JSON text (a layout, a report, slot names), that JSON; else undefined
 *  (the source is a checkpoint). One rule for the CLI, the API and the viewer: a file named
 *  *.json, or whose first non-blank byte is `{` or `[`, is JSON. */
export async function readJsonSource(source) {
  if (typeof source === 'number') return undefined;
  if (/\.json$/i.test(nameOf(source))) return parseJSON(source);
  let first;
  try {
    first = await head(source, 256);
  } catch (err) {
    if (isBlob(source) || typeof source === 'string' || source instanceof URL) throw err;
    return undefined;
  }
  let k = 0;
  while (k < first.length && (first[k] === 0x20 || first[k] === 0x09 || first[k] === 0x0a || first[k] === 0x0d)) k++;
  if (k === first.length || (first[k] !== 0x7b && first[k] !== 0x5b)) return undefined;
  return parseJSON(source);
}

async function parseJSON(source) {
  const size = await sizeOf(source);
  if (size > LAYOUT_LIMIT) throw new LayoutError(`${nameOf(source)} is ${size} bytes: too large for a layout JSON`);
  const text = await wholeText(source);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new LayoutError(`${nameOf(source)} is not valid JSON: ${err.message}`);
  }
}

async function sizeOf(source) {
  if (isBlob(source)) return source.size;
  if (typeof source === 'string' || source instanceof URL) {
    const src = await openSource(source);
    src.close();
    return src.size;
  }
  if (isCustom(source)) return source.size ?? 0;
  return source.byteLength ?? 0;
}

export function nameOf(source) {
  if (typeof source === 'string') return source;
  if (source instanceof URL) return source.href;
  if (isBlob(source) && typeof source.name === 'string' && source.name) return source.name;
  if (isCustom(source) && typeof source.name === 'string' && source.name) return source.name;   // a custom source may say its name
  return 'the layout';
}
