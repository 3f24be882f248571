// Export for NumPy and PyTorch (docs/export.md): an optimizer file's moments or a state file's
// tensors as safetensors or .npz, or one payload as .npy, bit for bit. The core streams the
// bytes; here they go to a write(bytes) callback, into memory, or atomically to a file (Node).

import { withOpen, withProgress } from './checkpoint.js';
import { LayoutError } from './errors.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { namesOf } from './layout.js';
import { toU64 } from './values.js';

const FORMATS = { safetensors: 1, npz: 2 };
const NPY = { m: 0, v: 1, values: 2 };

/**
 * Stream an export of `source` through write(bytes) (consume or copy the bytes before
 * returning). `format`: 'safetensors' or 'npz'; `names`: one per slot (or tensor), else slot{i};
 * `slots`: only these slots.
 */
export async function exportTo(source, write, { format = 'safetensors', names, slots, onProgress, signal } = {}) {
  if (!Object.prototype.hasOwnProperty.call(FORMATS, format)) throw new LayoutError(`format must be "safetensors" or "npz", got ${JSON.stringify(format)}`);
  const list = names === undefined || names === null ? null : namesOf(names, 'names');
  // the core takes C strings: a NUL would cut the name short, silently
  const cut = list?.findIndex((n) => n.includes('\0')) ?? -1;
  if (cut >= 0) throw new LayoutError(`names[${cut}] holds a NUL character: a name cannot`);
  const picked = slots === undefined || slots === null ? null : Array.from(slots, (s, k) => toU64(s, `slots[${k}]`));
  return withOpen(source, (ck) => withSink(write, (core, sinkId, err, ptrs) => ck.withFile((ex, file) => {
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
  }), signal));
}

/** The export's bytes in memory (see exportTo). */
export function exportTensors(source, options) {
  return collect((write) => exportTo(source, write, options));
}

/** Node: the export written to `path` atomically, streamed (flat memory for any size). */
export function saveExport(path, source, options) {
  return saveAtomically(path, (write) => exportTo(source, write, options));
}

/** One payload as a .npy file's bytes: slot's 'm' or 'v' (its owner's for a tied slot), or a
 *  state file's tensor 'values'. */
export function exportNpy(source, slot, what = 'm') {
  if (!Object.prototype.hasOwnProperty.call(NPY, what)) throw new LayoutError(`what must be "m", "v" or "values", got ${JSON.stringify(what)}`);
  const id = toU64(slot, 'slot');
  return collect((write) => withOpen(source, (ck) => withSink(write, (core, sinkId, err) =>
    ck.withFile((ex, file) => ex.w_export_npy(file, id, NPY[what], sinkId, err)))));
}


