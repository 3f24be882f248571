// Export for NumPy and PyTorch (docs/export.md): an optimizer file's moments or a state file's
// tensors as safetensors or .npz, or one payload as .npy, bit for bit. The core streams the
// bytes; here they go to a write(bytes) callback, into memory, or atomically to a file (Node).

import { loadCore } from './wasm.js';
import { open, Checkpoint, withProgress } from './checkpoint.js';
import { coreError, LayoutError } from './errors.js';
import { namesOf } from './layout.js';
import { toU64 } from './values.js';

const FORMATS = { safetensors: 1, npz: 2 };
const NPY = { m: 0, v: 1, values: 2 };

async function withOpen(source, fn) {
  if (source instanceof Checkpoint) return fn(source);
  const ck = await open(source);
  try {
    return await fn(ck);
  } finally {
    ck.close();
  }
}

/** Run the core's writer fn(sinkId, errPtr, ptrs) into write(bytes), freeing what ptrs collects. */
async function throughSink(write, signal, fn) {
  const core = await loadCore();
  const sink = { write };
  const sinkId = core.register(sink);
  const err = core.exports.w_error_new() >>> 0;
  const ptrs = [];
  try {
    if (!err) throw new RangeError('out of WebAssembly memory');
    const rc = fn(core, sinkId, err, ptrs);
    if (sink.error) throw sink.error;
    if (rc) {
      const e = coreError(core, err, {}, signal);
      throw e;
    }
  } finally {
    core.unregister(sinkId);
    ptrs.forEach((p) => core.free(p));
    if (err) core.exports.w_error_free(err);
  }
}

/**
 * Stream an export of `source` through write(bytes) (consume or copy the bytes before
 * returning). `format`: 'safetensors' or 'npz'; `names`: one per slot (or tensor), else slot{i};
 * `slots`: only these slots.
 */
export async function exportTo(source, write, { format = 'safetensors', names, slots, onProgress, signal } = {}) {
  if (!Object.prototype.hasOwnProperty.call(FORMATS, format)) throw new LayoutError(`format must be "safetensors" or "npz", got ${JSON.stringify(format)}`);
  const list = names === undefined || names === null ? null : namesOf(names, 'names');
  const picked = slots === undefined || slots === null ? null : Array.from(slots, (s, k) => toU64(s, `slots[${k}]`));
  return withOpen(source, (ck) => throughSink(write, signal, (core, sinkId, err, ptrs) => ck.withFile((ex, file) => {
    let namePtr = 0, slotPtr = 0;
    if (list) {
      const strings = list.map((n) => {
        const p = core.stringIn(n);
        ptrs.push(p);
        return p;
      });
      namePtr = core.malloc(4 * Math.max(1, strings.length));
      ptrs.push(namePtr);
      new Uint32Array(core.memory.buffer, namePtr, strings.length).set(strings);
    }
    if (picked) {
      slotPtr = core.u64Array(picked);
      ptrs.push(slotPtr);
    }
    return withProgress(core, { onProgress, signal }, (pid) =>
      ex.w_export(file, FORMATS[format], namePtr, list ? list.length : 0, slotPtr, picked ? picked.length : 0, sinkId, pid, err));
  })));
}

async function collect(fill) {
  const chunks = [];
  let total = 0;
  await fill((bytes) => {
    chunks.push(bytes.slice());
    total += bytes.length;
  });
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) (out.set(c, at), (at += c.length));
  return out;
}

/** The export's bytes in memory (see exportTo). */
export function exportTensors(source, options) {
  return collect((write) => exportTo(source, write, options));
}

/** Node: the export written to `path` atomically, streamed (flat memory for any size). */
export async function saveExport(path, source, options) {
  const { atomicWrite } = await import('./node-io.js');
  const target = path instanceof URL ? (await import('node:url')).fileURLToPath(path) : String(path);
  await atomicWrite(target, (write) => exportTo(source, write, options));
}

/** One payload as a .npy file's bytes: slot's 'm' or 'v' (its owner's for a tied slot), or a
 *  state file's tensor 'values'. */
export function exportNpy(source, slot, what = 'm') {
  if (!Object.prototype.hasOwnProperty.call(NPY, what)) throw new LayoutError(`what must be "m", "v" or "values", got ${JSON.stringify(what)}`);
  const id = toU64(slot, 'slot');
  return collect((write) => withOpen(source, (ck) => throughSink(write, undefined, (core, sinkId, err) =>
    ck.withFile((ex, file) => ex.w_export_npy(file, id, NPY[what], sinkId, err)))));
}


