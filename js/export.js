// Export for NumPy and PyTorch (docs/export.md): an optimizer file's moments or a state file's
// tensors as safetensors or .npz, or one payload as .npy, bit for bit. The core streams the
// bytes; here they go to a write(bytes) callback, into memory, or atomically to a file (Node).

import { withOpen, withProgress, withFile } from './checkpoint.js';
import { loadBinding, abi } from './binding.js';
import { listed } from './options.js';
import { LayoutError } from './errors.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { namesOf } from './layout.js';
import { toU64 } from './values.js';

const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

/**
 * Stream an export of `source` through write(bytes) (consume or copy the bytes before
 * returning). `format`: 'safetensors' or 'npz'; `names`: one per slot (or tensor), else slot{i};
 * `slots`: only these slots.
 */
export async function exportTo(source, write, { format = 'safetensors', names, slots, onProgress, signal } = {}) {
  const args = await exportArguments({ format, names, slots });
  return withOpen(source, (ck) => withSink(write, (b, sinkId, err, ptrs) => withFile(ck, (_, file) => {
    const { strings, slotPtr, slotCount } = exportPointers(b, args, ptrs);
    return withProgress(b, { onProgress, signal }, (pid) => b.exportTo(file, format, strings, slotPtr, slotCount, sinkId, pid, err, ptrs));
  }), signal));
}

/** An export's arguments checked before the core is called (this export and the gradient's,
 *  js/run.js): the format, the names (none holding a NUL, which would cut a C string short) and
 *  the slots as exact u64s. */
export async function exportArguments({ format, names, slots }) {
  if (!has((await loadBinding()).exportFormats(), format)) throw new LayoutError(`format must be ${listed(abi().exportFormats.map((f) => f.name), { quote: '"' })}, got ${JSON.stringify(format)}`);
  const list = names === undefined || names === null ? null : namesOf(names, 'names');
  const cut = list?.findIndex((n) => n.includes('\0')) ?? -1;
  if (cut >= 0) throw new LayoutError(`names[${cut}] holds a NUL character: a name cannot`);
  const picked = slots === undefined || slots === null ? null : Array.from(slots, (s, k) => toU64(s, `slots[${k}]`));
  return { list, picked };
}

/** The names and slots in wasm memory (each pointer pushed on ptrs, freed by withSink). */
export function exportPointers(b, { list, picked }, ptrs) {
  const { core } = b;
  const strings = list && list.map((n) => {
    const p = core.stringIn(n);
    ptrs.push(p);
    return p;
  });
  let slotPtr = 0;
  if (picked) {
    slotPtr = core.u64Array(picked);
    ptrs.push(slotPtr);
  }
  return { strings, slotPtr, slotCount: picked ? picked.length : 0 };
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
export async function exportNpy(source, slot, what = 'm') {
  if (!has((await loadBinding()).npyPayloads(), what)) throw new LayoutError(`what must be "m", "v" or "values", got ${JSON.stringify(what)}`);
  const id = toU64(slot, 'slot');
  return collect((write) => withOpen(source, (ck) => withSink(write, (b, sinkId, err) =>
    withFile(ck, (_, file) => b.exportNpy(file, id, what, sinkId, err)))));
}


