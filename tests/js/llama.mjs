// The workload users have (docs/performance.md "Big files"): a Llama-7B-like layout of 291 slots and 6.7 G
// parameters, as sparse files: every header at its offset, every payload a hole (zeros that
// cost no disk). A ~54 GB TLADAMF optimizer file, its ~27 GB TLSF32B state file, and a tied
// variant (lm_head shares the embedding's storage: v3 tags, 290 moment entries). `scale`
// divides every dimension (rounded up) for a small file of the same structure. Shared by the
// benchmark and the tests; the layout it returns says where every header and payload is, so
// tests can count which bytes a reader touched.
import fs from 'node:fs';

const LAYERS = 32, VOCAB = 32000, HIDDEN = 4096, FFN = 11008;

/** The slots: {name, shape}, module order. */
export function llamaSlots({ scale = 1 } = {}) {
  const d = (x) => Math.ceil(x / scale);
  const slots = [{ name: 'model.embed_tokens.weight', shape: [d(VOCAB), d(HIDDEN)] }];
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}`;
    for (const x of ['q', 'k', 'v', 'o']) slots.push({ name: `${p}.self_attn.${x}_proj.weight`, shape: [d(HIDDEN), d(HIDDEN)] });
    slots.push({ name: `${p}.mlp.gate_proj.weight`, shape: [d(FFN), d(HIDDEN)] });
    slots.push({ name: `${p}.mlp.up_proj.weight`, shape: [d(FFN), d(HIDDEN)] });
    slots.push({ name: `${p}.mlp.down_proj.weight`, shape: [d(HIDDEN), d(FFN)] });
    slots.push({ name: `${p}.input_layernorm.weight`, shape: [d(HIDDEN)] });
    slots.push({ name: `${p}.post_attention_layernorm.weight`, shape: [d(HIDDEN)] });
  }
  slots.push({ name: 'model.norm.weight', shape: [d(HIDDEN)] });
  slots.push({ name: 'lm_head.weight', shape: [d(VOCAB), d(HIDDEN)] });
  return slots;
}

const sizeOf = (shape) => shape.reduce((a, b) => a * b, 1);

class Words {
  constructor() {
    this.parts = [];
  }
  u64(v) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
    this.parts.push(b);
  }
  f64(x) {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, x, true);
    this.parts.push(b);
  }
  raw(s) {
    this.parts.push(new TextEncoder().encode(s));
  }
  bytes() {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) out.set(p, at), (at += p.length);
    return out;
  }
}

/** The file's layout without writing it: {size, headers: [[start, bytes]], payloads: [[start,
 *  end]], slots, entries (optimizer) or tensors (state), params}. `headers[k]` holds the bytes
 *  at that offset. kind: 'optimizer' | 'state'. */
export function llamaLayout({ kind = 'optimizer', tied = false, scale = 1 } = {}) {
  const slots = llamaSlots({ scale });
  const n = slots.length;
  const rep = slots.map((_, i) => (tied && i === n - 1 ? 0 : i));
  const headers = [], payloads = [];
  let at = 0;
  const head = new Words();
  if (kind === 'optimizer') {
    head.raw('TLADAMF');
    head.u64(tied ? 3 : 2);
    head.u64(1);   // AdamW
    head.f64(0.9); head.f64(0.95); head.f64(1e-8); head.f64(0.1);
    head.u64(n);
    for (const { shape } of slots) {
      head.u64(shape.length);
      for (const x of shape) head.u64(x);
      head.u64(sizeOf(shape));
      head.u64(1);
    }
    if (tied) for (const r of rep) head.u64(r + 1);
    const owners = rep.filter((r, i) => r === i);
    head.u64(owners.length);
    const h = head.bytes();
    headers.push([0, h]);
    at = h.length;
    for (const i of owners) {
      const count = sizeOf(slots[i].shape);
      const e = new Words();
      e.u64(i); e.u64(1000); e.u64(count);
      headers.push([at, e.bytes()]);
      at += 24;
      payloads.push([at, at + 8 * count]);
      at += 8 * count;
    }
    return { kind, size: at, headers, payloads, slots, entries: owners.length, params: slots.reduce((s, x) => s + sizeOf(x.shape), 0) };
  }
  head.raw('TLSF32B');
  head.u64(1);
  head.u64(n);
  let h = head.bytes();
  for (const { shape } of slots) {
    const t = new Words();
    t.u64(shape.length);
    for (const x of shape) t.u64(x);
    t.u64(sizeOf(shape));
    const tb = t.bytes();
    if (h) {   // the file's first header runs on into the first tensor's
      const both = new Uint8Array(h.length + tb.length);
      both.set(h), both.set(tb, h.length);
      headers.push([0, both]);
      at = both.length;
      h = null;
    } else {
      headers.push([at, tb]);
      at += tb.length;
    }
    payloads.push([at, at + 4 * sizeOf(shape)]);
    at += 4 * sizeOf(shape);
  }
  return { kind, size: at, headers, payloads, slots, tensors: n, params: slots.reduce((s, x) => s + sizeOf(x.shape), 0) };
}

/** Write `headers` ([start, bytes] in order) into a sparse file of `size` bytes at path (the rest
 *  holes). An existing file of that size whose last header matches is kept (the benchmark's are
 *  80 GB). */
function writeSparseHeaders(path, headers, size) {
  try {
    if (fs.statSync(path).size === size) {
      const fd = fs.openSync(path, 'r');
      const [start, bytes] = headers.at(-1);
      const got = Buffer.alloc(bytes.length);
      fs.readSync(fd, got, 0, got.length, start);
      fs.closeSync(fd);
      if (got.equals(Buffer.from(bytes))) return;
    }
  } catch {
    // not there yet
  }
  const fd = fs.openSync(path, 'w');
  try {
    for (const [start, bytes] of headers) fs.writeSync(fd, bytes, 0, bytes.length, start);
    fs.ftruncateSync(fd, size);
  } finally {
    fs.closeSync(fd);
  }
}

/** Write the file at path as a sparse file (headers only; payloads are holes); returns its
 *  layout. An existing file of the right size and header is kept. */
export function writeLlama(path, options = {}) {
  const layout = llamaLayout(options);
  writeSparseHeaders(path, layout.headers, layout.size);
  return layout;
}

/** The bound on what opening a file reads (docs/performance.md "Big files"): 64 KiB plus 64 bytes per slot and entry. */
export const openBound = (layout) => 65536 + 64 * (layout.slots.length + (layout.entries ?? layout.tensors));

/** The model as Hugging Face saves it, `model.safetensors`: every slot a BF16 tensor by its name,
 *  in module order, written as a sparse file (the JSON header only; the data a hole). Returns
 *  {size, headerLength, tensors}; an existing file of that size and header is kept. */
export function writeLlamaSafetensors(path, { scale = 1 } = {}) {
  const header = {};
  let at = 0;
  for (const { name, shape } of llamaSlots({ scale })) {
    const bytes = 2 * sizeOf(shape);
    header[name] = { dtype: 'BF16', shape, data_offsets: [at, at + bytes] };
    at += bytes;
  }
  const text = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(8 + text.length);
  head.writeBigUint64LE(BigInt(text.length), 0);
  text.copy(head, 8);
  const size = head.length + at;
  writeSparseHeaders(path, [[0, head]], size);
  return { size, headerLength: text.length, tensors: Object.keys(header).length };
}
