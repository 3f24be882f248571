// Big checkpoints for the tests and the benchmark: a real header and schema, payloads either
// left as holes (a sparse file: zeros that cost no disk) or filled by `fill(view, offset)`.
import fs from 'node:fs';

/** A file's header as a magic and little-endian u64 words: u64(v) and f64(x) append a word,
 *  bytes() gives the magic and the words so far. */
export function magicWords(magic) {
  const words = [];
  return {
    u64: (v) => words.push(BigInt(v)),
    f64: (x) => {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setFloat64(0, x, true);
      words.push(dv.getBigUint64(0, true));
    },
    bytes() {
      const out = new Uint8Array(magic.length + 8 * words.length);
      out.set(new TextEncoder().encode(magic));
      const dv = new DataView(out.buffer);
      words.forEach((w, k) => dv.setBigUint64(magic.length + 8 * k, w, true));
      return out;
    },
  };
}

/** Write a valid v2 float32 checkpoint of `slots` trainable slots of `elements` each; returns
 *  its size. With `fill`, payloads are written chunk by chunk (fill gets a Float32Array to
 *  fill and the element index it starts at). */
export function writeSparse(path, { slots = 1, elements, fill = null }) {
  const { u64, f64, bytes } = magicWords('TLADAMF');
  u64(2);            // version
  u64(0);            // Adam
  f64(0.9); f64(0.999); f64(1e-8); f64(0);
  u64(slots);
  for (let i = 0; i < slots; i++) { u64(1); u64(elements); u64(elements); u64(1); }
  u64(slots);
  const head = bytes();
  const fd = fs.openSync(path, 'w');
  try {
    fs.writeSync(fd, head, 0, head.length, 0);
    const entry = new Uint8Array(24);
    const ev = new DataView(entry.buffer);
    let at = head.length;
    const payload = 2 * 4 * elements;
    const chunk = fill ? new Float32Array(Math.min(elements, 1 << 21)) : null;
    for (let i = 0; i < slots; i++) {
      ev.setBigUint64(0, BigInt(i), true);
      ev.setBigUint64(8, 1n, true);
      ev.setBigUint64(16, BigInt(elements), true);
      fs.writeSync(fd, entry, 0, 24, at);
      if (fill) {
        let pos = at + 24;
        for (let done = 0; done < 2 * elements; done += chunk.length) {
          const view = chunk.subarray(0, Math.min(chunk.length, 2 * elements - done));
          fill(view, done, i);
          fs.writeSync(fd, new Uint8Array(view.buffer, 0, view.byteLength), 0, view.byteLength, pos);
          pos += view.byteLength;
        }
      }
      at += 24 + payload;
    }
    fs.ftruncateSync(fd, at);
    return at;
  } finally {
    fs.closeSync(fd);
  }
}

/** Write a valid TLSF32B state file of `tensors` tensors of `elements` float32 each, their
 *  values holes (zeros that cost no disk); returns its size. */
export function writeSparseState(path, { tensors = 1, elements }) {
  const fd = fs.openSync(path, 'w');
  try {
    const head = new Uint8Array(23);
    head.set(new TextEncoder().encode('TLSF32B'));
    const dv = new DataView(head.buffer);
    dv.setBigUint64(7, 1n, true);
    dv.setBigUint64(15, BigInt(tensors), true);
    fs.writeSync(fd, head, 0, head.length, 0);
    const rec = new Uint8Array(24);
    const rv = new DataView(rec.buffer);
    rv.setBigUint64(0, 1n, true);
    rv.setBigUint64(8, BigInt(elements), true);
    rv.setBigUint64(16, BigInt(elements), true);
    let at = head.length;
    for (let i = 0; i < tensors; i++) {
      fs.writeSync(fd, rec, 0, 24, at);
      at += 24 + 4 * elements;
    }
    fs.ftruncateSync(fd, at);
    return at;
  } finally {
    fs.closeSync(fd);
  }
}
