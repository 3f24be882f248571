// The Checkpoint handle: one open file of any family, parsed once by the core, whose report,
// entries, statistics and tensors are asked for without parsing again (sql.js's Database,
// h5wasm's File). Close it (or `using ck = await open(...)`); a closed handle throws.

import { exact } from './wasm.js';
import { loadBinding } from './binding.js';
import { openSource, sourceName } from './sources.js';
import { CheckpointError, coreError, abortError } from './errors.js';
import { toU64 } from './values.js';

/** Run fn(progressId) with a progress listener registered when one is wanted; a listener that
 *  threw is rethrown after the call. */
export function withProgress(binding, { onProgress, signal } = {}, fn) {
  const { core } = binding;
  signal?.throwIfAborted();
  const listener = {
    progress(done, total) {
      onProgress?.({ done, total });
      return signal?.aborted ?? false;
    },
  };
  const id = onProgress || signal ? core.register(listener) : 0;
  try {
    const result = fn(id);
    if (listener.error) throw listener.error;
    return result;
  } finally {
    if (id) core.unregister(id);
  }
}

/** Open any source (bytes, Blob, Node path/URL/fd, HTTP URL): parses it once. Resolves for an
 *  invalid file too (its report says why); rejects for I/O errors and bad arguments. */
export async function open(source, { stats = false, onProgress, signal, variant } = {}) {
  signal?.throwIfAborted();
  const b = await loadBinding(variant);
  const { core } = b;
  const src = await openSource(source);
  let srcId = 0, errPtr = 0, file = 0;
  try {
    srcId = core.register(src);
    errPtr = b.errorNew();
    file = withProgress(b, { onProgress, signal }, (pid) => b.open(srcId, sourceSize(b, src), { stats, name: sourceName(source) }, pid));
    if (!file) throw new RangeError('out of WebAssembly memory opening the file');
    if (src.error) throw src.error;   // the source's own I/O error, as thrown
    if (b.fileErrorCode(file) === b.codes.CANCELLED) throw abortError(signal);
    const ck = new Checkpoint(b, src, srcId, errPtr, file);
    srcId = errPtr = file = 0;   // the handle owns them now
    return ck;
  } finally {
    if (file) b.close(file);
    b.errorFree(errPtr);
    if (srcId) {
      core.unregister(srcId);
      src.close();
    }
  }
}

/** A source's size for the core: NONE when it is not known. */
export function sourceSize(binding, src) {
  return src.size === null || src.size < 0 ? binding.NONE : BigInt(src.size);
}

/** Open `source` for the length of fn(checkpoint) (an open Checkpoint is used as it is). */
export async function withOpen(source, fn, options) {
  if (source instanceof Checkpoint) return fn(source);
  const ck = await open(source, options);
  try {
    return await fn(ck);
  } finally {
    ck.close();
  }
}

/** A u64 column as its 32-bit halves, read in place (no BigInt per value, no copy), or null
 *  when a value is past 2^53 - 1 (the JSON's decimal strings then): num(w, i) is value i. */
function numbers(big) {
  const w = new Uint32Array(big.buffer, big.byteOffset, 2 * big.length);
  for (let i = 1; i < w.length; i += 2) if (w[i] >= 0x200000) return null;
  return w;
}

// Value i of a numbers() column; a value under 2^32 is the word itself, which V8 keeps as a
// small integer: the arrays built of them are packed integers, not boxed doubles.
function num(w, i) {
  const hi = w[2 * i + 1], lo = w[2 * i];
  return hi === 0 ? lo : hi * 4294967296 + lo;
}

/** The report from its summary (the core's JSON without per-slot arrays) and the core's
 *  columns; null when a value is past 2^53 - 1 or a size past 2^64 (the JSON says those).
 *  The columns may be views of wasm memory: everything is read out of them here. */
/* Past this many slots the columns (several typed arrays per slot, in wasm memory) cost more
 * than streaming the JSON, and past ~30 million the report cannot be one string at all: the
 * JSON path says so plainly (tests/js/boundary.test.mjs). */
const COLUMNS_REPORT_MAX_SLOTS = 1 << 22;

function fromColumns(summary, c) {
  for (let i = 0; i < c.n; i++) if (c.tooBig[i]) return null;
  const starts = numbers(c.dimStart), dims = numbers(c.dims), sizes = numbers(c.sizes);
  if (!starts || !dims || !sizes) return null;
  const report = structuredClone(summary);
  // literal arrays for the usual ranks: V8 allocates them packed and at their size
  const shape = (i) => {
    const k = num(starts, i), rank = num(starts, i + 1) - k;
    if (rank === 0) return [];
    if (rank === 1) return [num(dims, k)];
    if (rank === 2) return [num(dims, k), num(dims, k + 1)];
    const out = [];
    for (let j = k; j < k + rank; j++) out.push(num(dims, j));
    return out;
  };
  if (report.kind === 'state') {
    const t = numbers(c.tensors);
    if (!t) return null;
    const rows = c.tensorRows, at = { count: rows.index('count'), offset: rows.index('offset'), dataOffset: rows.index('dataOffset') };
    const tensors = report.tensors = new Array(rows.length);
    for (let k = 0, r = 0; k < rows.length; k++, r += rows.stride) {
      // a family that stores names and dtypes lists them in the summary (the columns hold neither)
      tensors[k] = { ...summary.tensors?.[k], shape: shape(k), count: num(t, r + at.count), offset: num(t, r + at.offset), dataOffset: num(t, r + at.dataOffset) };
    }
    return report;
  }
  const e = numbers(c.entries);
  if (!e) return null;
  const s = report.schema;
  if (s) {
    const n = c.n, shapes = new Array(n), sizeList = new Array(n), flags = new Array(c.flags.length);
    for (let i = 0; i < n; i++) {
      shapes[i] = shape(i);
      sizeList[i] = num(sizes, i);
    }
    for (let i = 0; i < flags.length; i++) flags[i] = c.flags[i] === 1;
    let reps = null;
    if (c.reps) {
      // 2^64 - 1 (none) fails numbers(): its halves are read here, none is null
      const w = new Uint32Array(c.reps.buffer, c.reps.byteOffset, 2 * n);
      reps = new Array(n);
      for (let i = 0; i < n; i++) {
        const hi = w[2 * i + 1];
        if (hi === 0xffffffff && w[2 * i] === 0xffffffff) reps[i] = null;
        else if (hi >= 0x200000) return null;
        else reps[i] = num(w, i);
      }
    }
    Object.assign(s, { shapes, sizes: sizeList, requiresGrad: flags, representatives: c.hasMap ? reps : null, effectiveRepresentatives: reps });
  }
  // a family that lists its entries in the summary (by the optimizer's index) keeps them: the
  // columns hold none
  if (!c.entryRows.length && summary.entries?.length) return report;
  const rows = c.entryRows, at = { id: rows.index('id'), step: rows.index('step'), count: rows.index('count'), offset: rows.index('offset') };
  const entries = report.entries = new Array(rows.length);
  // a family that adds members to its entries (a paired PyTorch optimizer: index, name, group…)
  // lists them in the summary too: the columns hold only these four
  const own = summary.entries?.length === rows.length ? summary.entries : null;
  for (let k = 0, r = 0; k < rows.length; k++, r += rows.stride) {
    const fields = { id: num(e, r + at.id), step: num(e, r + at.step), count: num(e, r + at.count), offset: num(e, r + at.offset) };
    entries[k] = own ? { ...own[k], ...fields } : fields;
  }
  return report;
}

// The package's own access to a handle (statistics by workers, layouts, pairing, health,
// export): module functions, not methods, so they are not the public API.
let internals;

/** Run fn(binding, filePtr, errPtr) while the handle stays live. */
export function withFile(ck, fn) {
  return internals.use(ck, fn);
}

/** Run fn(binding, sourceId, size) with the handle's own source (read again by a call that
 *  parses from a source, as check does) while the handle stays live. */
export function withSource(ck, fn) {
  return internals.withSource(ck, fn);
}

/** Run fn(layoutPtr) with the file as a layout (a destination or a side of a diff); `subject`
 *  names it in the error when the file broke before its layout was complete. */
export function withFileLayout(ck, fn, subject) {
  return internals.withLayout(ck, fn, subject);
}

/** Read the handle's report again, after the core changed it (a pairing gave it its slots). */
export function reread(ck) {
  internals.reread(ck);
}

/** Entries (optimizer) or tensors (state): what statistics are gathered for. */
export function itemCount(ck) {
  return internals.use(ck, (b, file) => b.itemCount(file));
}

/** The bytes item k's statistics read (its payloads: the core's count), a number. */
export function itemBytes(ck, k) {
  return internals.use(ck, (b, file) => Number(b.itemBytes(file, k)));
}

/** Item k's statistics as packed words (for another instance's attachPacked). */
export function itemStatsPacked(ck, k, options) {
  return internals.itemStatsPacked(ck, k, options);
}

/** Attach the statistics of items from, from + 1, … gathered elsewhere (packed words, one array
 *  per item). Once every item has them, the report is the one a scan with statistics gives. */
export function attachPacked(ck, from, list) {
  internals.attachPacked(ck, from, list);
}

export class Checkpoint {
  #b;
  #src;
  #srcId;
  #err;
  #file;
  #busy = 0;
  #closing = false;
  #meta;
  #report;
  #columns;

  static {
    internals = {
      use: (ck, fn) => ck.#use(fn),
      withSource: (ck, fn) => ck.#use((b) => fn(b, ck.#srcId, sourceSize(b, ck.#src))),
      withLayout: (ck, fn, subject) => ck.#withLayout(fn, subject),
      itemStatsPacked: (ck, k, options) => ck.#itemStatsPacked(k, options),
      attachPacked: (ck, from, list) => ck.#attachPacked(from, list),
      reread: (ck) => ck.#reread(),
    };
  }

  /** Not for callers: open() makes one. */
  constructor(binding, src, srcId, errPtr, file) {
    this.#b = binding;
    this.#src = src;
    this.#srcId = srcId;
    this.#err = errPtr;
    this.#file = file;
    this.#meta = binding.reportJSON(file, { bulk: false });
  }

  get closed() {
    return !this.#file || this.#closing;
  }

  /** Run fn(binding, file, err) on the live handle (fn may return a promise); a close() asked
   *  for meanwhile (from a progress callback, say) waits until the core is done with the handle. */
  #use(fn) {
    if (this.closed) throw new TypeError('this Checkpoint is closed');
    this.#busy++;
    let result;
    try {
      result = fn(this.#b, this.#file, this.#err);
    } catch (err) {
      this.#done();
      throw err;
    }
    if (result instanceof Promise) return result.finally(() => this.#done());
    this.#done();
    const failed = this.#src.error;
    if (failed) {
      this.#src.error = null;
      throw failed;   // the source failed under the core: its own error, not the core's I/O text
    }
    return result;
  }

  #done() {
    this.#busy--;
    if (this.#closing && !this.#busy) this.#release();
  }

  #fail(about, signal) {
    return coreError(this.#b, this.#err, about, signal);
  }

  /** The family and header fields without the per-slot arrays: cheap for any size. */
  get summary() {
    return this.#meta;
  }

  get ok() {
    return this.#meta.ok;
  }

  /** Per TorchLean reader, whether it can read this file at all (docs/format.md 8):
   *  {"v2": {reads, error}, ...}; null for a model-state file. */
  get readers() {
    return this.#meta.readers ?? null;
  }

  /** 'optimizer' (TLADAMF), 'state' (TLSF32B / TLPF32B), or null when the family is unknown. */
  get kind() {
    return this.#meta.kind;
  }

  /** The JSON report (docs/report.md). Without statistics its per-slot arrays are filled in
   *  from the core's columns (a million slots: a fraction of parsing 50 MB of JSON); with
   *  statistics (or a size past 2^64) it is the core's JSON, parsed. Either way the same object
   *  (tests/js/api.test.mjs compares them on every file of the case table). */
  get report() {
    const slots = this.#meta.slotCount ?? this.#meta.tensorCount ?? 0;
    const viaColumns = !this.#meta.statistics && slots <= COLUMNS_REPORT_MAX_SLOTS;
    this.#report ??= (viaColumns ? this.#use((b, file) => b.withColumnView(file, (c) => fromColumns(this.#meta, c))) : null) ??
      JSON.parse(this.reportText());
    return this.#report;
  }

  /** The report's JSON text, streamed out of the core in pieces (no second copy of it in wasm
   *  memory). A report too large for one JavaScript string (over ~500 MB, some 30 million slots)
   *  throws a RangeError that says what to use instead. */
  reportText() {
    const decoder = new TextDecoder();
    const parts = [];
    this.writeReport((bytes) => parts.push(decoder.decode(bytes, { stream: true })));
    parts.push(decoder.decode());
    try {
      return parts.join('');
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      const slots = this.#meta.slotCount ?? this.#meta.tensorCount;
      throw new RangeError(`the JSON report of ${slots} slots is too large for one JavaScript string: use columns() for the per-slot arrays, writeReport() to stream it, or \`ckptscope inspect --json\``);
    }
  }

  /** Stream the report's JSON through write(bytes) in pieces: a million slots never become one
   *  string. `write` must consume or copy the bytes before it returns. */
  writeReport(write) {
    const { core } = this.#b;
    const sink = { write };
    const id = core.register(sink);
    try {
      const rc = this.#use((b, file, err) => b.reportWrite(file, id, err));
      if (sink.error) throw sink.error;
      if (rc) throw this.#fail();
    } finally {
      core.unregister(id);
    }
  }

  /** The per-slot arrays as typed arrays (copies), for viewers: see docs/api.md "columns". */
  columns() {
    return this.#use((b, file) => b.columns(file));
  }

  /** The moments of slot `slot`: {slot, owner, id, step, count, dtype, m, v}. A tied slot gives its
   *  owner's moments (owner = its representative); a frozen slot rejects with
   *  `parameter {slot} is frozen: it has no optimizer state`. m and v are Float32Array or
   *  Float64Array exactly as stored (copies). */
  async entry(slot) {
    const id = toU64(slot, 'slot');
    return this.#use((b, file, err) => {
      const { core } = b;
      let m = 0, v = 0;
      try {
        const ref = b.fileEntry(file, id, err);
        if (!ref) throw this.#fail();
        const bytes = ref.mBytes;
        if (bytes === b.NONE || bytes > 0x7ffffff0n) {
          throw new RangeError(`parameter ${id}'s moments are ${bytes === b.NONE ? 'too many' : bytes} bytes each: too large to copy into memory at once (use stats(), which streams)`);
        }
        const n = Number(bytes);
        m = core.malloc(n);
        v = core.malloc(n);
        if (b.readMoments(file, id, m, v, err)) throw this.#fail();
        const { FloatArray } = b.abi.dtype(this.#meta.dtype);
        // Copies, not views: wasm memory may grow and move.
        return {
          slot: exact(id), owner: exact(ref.owner), id: exact(ref.id), step: exact(ref.step), count: exact(ref.count), offset: exact(ref.offset),
          dtype: this.#meta.dtype,
          m: new FloatArray(core.memory.buffer.slice(m, m + n)),
          v: new FloatArray(core.memory.buffer.slice(v, v + n)),
        };
      } finally {
        core.free(m);
        core.free(v);
      }
    });
  }

  /** Streamed statistics of slot `slot`: its moments (optimizer files: {slot, owner, id, step,
   *  count, offset, m, v, unhealthy}) or its values (state files: {tensor, count, values}). */
  async stats(slot, { onProgress, signal } = {}) {
    const id = toU64(slot, 'slot');
    return this.#use((b, file, err) => {
      const state = this.kind === 'state';
      const json = withProgress(b, { onProgress, signal }, (pid) =>
        (state ? b.tensorStats(file, id, pid, err) : b.momentStats(file, id, pid, err)));
      if (!json) throw this.#fail({}, signal);
      return state ? { tensor: exact(id), count: json.count, values: json } : json;
    });
  }

  /** A state file's tensor i: {index, shape, count, values} (a copy, in the family's element
   *  type). */
  async tensor(i) {
    const id = toU64(i, 'tensor');
    return this.#use((b, file, err) => {
      const { core } = b;
      let out = 0;
      try {
        const ref = b.fileTensor(file, id, err);
        if (!ref) throw this.#fail();
        // the tensor's own dtype (a safetensors file's tensors each have one), else the family's
        const dtype = this.#meta.tensors?.[Number(id)]?.dtype ?? b.abi.family(this.#meta.family).elementDtype;
        const { Array: FloatArray } = b.abi.tensorDtype(dtype);
        const count = ref.count;
        if (count > BigInt(Math.floor(0x7ffffff0 / FloatArray.BYTES_PER_ELEMENT))) {
          throw new RangeError(`tensor ${id} has ${count} values: too large to copy into memory at once (use stats(), which streams)`);
        }
        const n = FloatArray.BYTES_PER_ELEMENT * Number(count);
        out = core.malloc(n);
        if (b.readTensor(file, id, out, err)) throw this.#fail();
        return { index: exact(id), shape: this.#shape(Number(id)), count: exact(count), values: new FloatArray(core.memory.buffer.slice(out, out + n)) };
      } finally {
        core.free(out);
      }
    });
  }

  #shape(i) {
    this.#columns ??= this.columns();
    const { dimStart, dims } = this.#columns;
    return Array.from(dims.subarray(Number(dimStart[i]), Number(dimStart[i + 1])), exact);
  }

  #itemStatsPacked(k, { onProgress, signal } = {}) {
    return this.#use((b, file, err) => {
      const words = withProgress(b, { onProgress, signal }, (pid) => b.itemStatsPacked(file, k, pid, err));
      if (!words) throw this.#fail({}, signal);
      return words;
    });
  }

  #attachPacked(from, list) {
    this.#use((b, file, err) => {
      list.forEach((words, j) => {
        if (b.attachPacked(file, from + j, words, err)) throw this.#fail();
      });
    });
    this.#report = undefined;
    this.#meta = this.#b.reportJSON(this.#file, { bulk: false });
  }

  /** The core changed the report (a PyTorch file paired with its model): read it again. */
  #reread() {
    this.#report = undefined;
    this.#columns = undefined;
    this.#meta = this.#b.reportJSON(this.#file, { bulk: false });
  }

  #withLayout(fn, subject) {
    return this.#use((b, file, err) => {
      const l = b.layoutOfFile(file, err);
      if (!l) {
        const report = this.#meta;
        throw report.error ? new CheckpointError(report.error, { report, subject }) : this.#fail({ subject });
      }
      const free = () => b.layoutFree(l);
      let result;
      try {
        result = fn(l);
      } catch (err) {
        free();
        throw err;
      }
      if (result instanceof Promise) return result.finally(free);
      free();
      return result;
    });
  }

  close() {
    if (!this.#file || this.#closing) return;
    this.#closing = true;
    if (!this.#busy) this.#release();
  }

  #release() {
    const b = this.#b;
    b.close(this.#file);
    b.errorFree(this.#err);
    b.core.unregister(this.#srcId);
    this.#file = this.#err = 0;
    this.#src.close();
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.close();
  }
}
