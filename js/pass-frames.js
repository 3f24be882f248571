// The answer of a pass that `ckptscope view` runs for its page (js/server/server.js, /passes/): a stream
// of frames, made by js/server/pass-worker.js (and by the server for a pass that died) and read by the
// page's worker (web/worker.js, through the package's entry). One format, written here only:
//   frame   = length (u32, of the payload) | kind (u8) | payload
//   kind j  = a JSON message (UTF-8): {progress: {done, total}}, then {done: {workers}, result?}
//             or {error: {name, message, ...every field of the error}} or {unsplit: true}
//   kind p  = the packed statistics of items from … from + n − 1 (the core's ckpt_packed_stats
//             words, for attachPacked): u64 from, u64 n, n u64 word counts, then the words
// all little-endian (the page is on the server's machine: it listens on 127.0.0.1 only).

export const JSON_FRAME = 'j';
export const PACKED_FRAME = 'p';
const HEAD = 5;   // the length and the kind

/** A frame of `kind` holding the bytes of `payload` (a typed array). */
function frame(kind, payload) {
  const out = new Uint8Array(HEAD + payload.byteLength);
  new DataView(out.buffer).setUint32(0, payload.byteLength, true);
  out[4] = kind.charCodeAt(0);
  out.set(new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength), HEAD);
  return out;
}

/** A JSON message as a frame (bigints as decimal strings). */
export function jsonFrame(msg) {
  return frame(JSON_FRAME, new TextEncoder().encode(JSON.stringify(msg, (_, v) => (typeof v === 'bigint' ? String(v) : v))));
}

/** The packed words of items from, from + 1, … (one BigUint64Array per item) as a frame. */
export function packedFrame(from, list) {
  const words = new BigUint64Array(2 + list.length + list.reduce((n, w) => n + w.length, 0));
  words[0] = BigInt(from);
  words[1] = BigInt(list.length);
  let k = 2 + list.length;
  list.forEach((w, j) => {
    words[2 + j] = BigInt(w.length);
    words.set(w, k);
    k += w.length;
  });
  return frame(PACKED_FRAME, words);
}

/** A packed frame's payload (an aligned copy, as Frames.take gives it): {from, list}. */
export function unpackFrame(payload) {
  const words = new BigUint64Array(payload.buffer, payload.byteOffset, payload.byteLength / 8);
  const from = Number(words[0]), n = Number(words[1]);
  const list = [];
  for (let j = 0, at = 2 + n; j < n; at += Number(words[2 + j]), j++) list.push(words.subarray(at, at + Number(words[2 + j])));
  return { from, list };
}

/** The frames of an answer as chunks of it arrive: push() a chunk, then take() each whole frame. */
export class Frames {
  #buf = new Uint8Array(1 << 16);
  #start = 0;
  #end = 0;

  push(chunk) {
    if (this.#end + chunk.length > this.#buf.length) {
      const held = this.#end - this.#start;
      const next = held + chunk.length > this.#buf.length ? new Uint8Array(Math.max(2 * this.#buf.length, held + chunk.length)) : this.#buf;
      next.set(this.#buf.subarray(this.#start, this.#end), 0);
      this.#buf = next;
      this.#start = 0;
      this.#end = held;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  /** The next whole frame {kind, payload (a copy)}, or null until more arrives. */
  take() {
    if (this.#end - this.#start < HEAD) return null;
    const length = new DataView(this.#buf.buffer, this.#start, 4).getUint32(0, true);
    if (this.#end - this.#start < HEAD + length) return null;
    const kind = String.fromCharCode(this.#buf[this.#start + 4]);
    const payload = this.#buf.slice(this.#start + HEAD, this.#start + HEAD + length);
    this.#start += HEAD + length;
    return { kind, payload };
  }
}
