// Where bytes come from. Every source answers read(offset, dest) -> bytes copied (fewer only at
// the end of the data) and knows its size; the core pulls only the ranges it needs, so a
// payload that is skipped is never read.
//   Uint8Array / ArrayBuffer / DataView: copy the range (never the whole buffer).
//   Blob / File in a worker: FileReaderSync on blob.slice(...).
//   Blob on a page's main thread (no FileReaderSync there): read once into memory.
//   string path, file: URL or file descriptor (Node): positional fs.readSync.

import { isNode } from './wasm.js';

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

class BlobSource {
  constructor(blob) {
    this.blob = blob;
    this.size = blob.size;
    this.reader = new FileReaderSync();
  }
  read(offset, dest) {
    if (offset >= this.size) return 0;
    const end = Math.min(this.size, offset + dest.length);
    const chunk = this.reader.readAsArrayBuffer(this.blob.slice(offset, end));
    dest.set(new Uint8Array(chunk));
    return chunk.byteLength;
  }
  close() {}
}

function isBlob(x) {
  return typeof Blob !== 'undefined' && x instanceof Blob;
}

/** Open any supported source; the caller closes it. */
export async function openSource(source) {
  if (source instanceof Uint8Array) return new BytesSource(source);
  if (source instanceof ArrayBuffer) return new BytesSource(new Uint8Array(source));
  if (ArrayBuffer.isView(source)) return new BytesSource(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  if (isBlob(source)) {
    if (typeof FileReaderSync !== 'undefined') return new BlobSource(source);
    return new BytesSource(new Uint8Array(await source.arrayBuffer()));
  }
  if (isNode && (typeof source === 'string' || typeof source === 'number' || source instanceof URL)) {
    const { FileSource } = await import('./node-io.js');
    return FileSource.open(source);
  }
  throw new TypeError('a checkpoint source must be a Uint8Array, an ArrayBuffer, a Blob or File, or (in Node) a file path or descriptor');
}
