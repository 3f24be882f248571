// The Checkpoint handle: one open file of any family, parsed once by the core, whose report,
// entries, statistics and tensors are asked for without parsing again (sql.js's Database,
// h5wasm's File). Close it (or `using ck = await open(...)`); a closed handle throws.

import { loadCore, exact, u64, NONE } from './wasm.js';
import { openSource } from './sources.js';
import { CheckpointError, coreError, abortError, Codes } from './errors.js';
import { toU64 } from './values.js';

const INSPECT_STATS = 1;   // CKPT_INSPECT_STATS
const JSON_NO_BULK = 1;    // CKPT_JSON_NO_BULK

/** Run fn(progressId) with a progress listener registered when one is wanted; a listener that
 *  threw is rethrown after the call. */
export function withProgress(core, { onProgress, signal } = {}, fn) {
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
  const core = await loadCore(variant);
  const src = await openSource(source);
  let srcId = 0, errPtr = 0, file = 0;
  try {
    srcId = core.register(src);
    errPtr = core.exports.w_error_new() >>> 0;
    if (!errPtr) throw new RangeError('out of WebAssembly memory');
    const size = src.size === null || src.size < 0 ? NONE : BigInt(src.size);
    file = withProgress(core, { onProgress, signal }, (pid) => core.exports.w_open(srcId, size, stats ? INSPECT_STATS : 0, pid) >>> 0);
    if (!file) throw new RangeError('out of WebAssembly memory opening the file');
    if (src.error) throw src.error;   // the source's own I/O error, as thrown
    if (core.exports.w_file_error_code(file) === Codes.CANCELLED) throw abortError(signal);
    const ck = new Checkpoint(core, src, srcId, errPtr, file);
    srcId = errPtr = file = 0;   // the handle owns them now
    return ck;
  } finally {
    if (file) core.exports.ckpt_close(file);
    if (errPtr) core.exports.w_error_free(errPtr);
    if (srcId) {
      core.unregister(srcId);
      src.close();
    }
  }
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

/** u64 values as plain numbers (from their 32-bit halves: no BigInt per value), or null when
 *  one is past 2^53 - 1 (the JSON's decimal strings then). */
function numbers(big) {
  const w = new Uint32Array(big.buffer, big.byteOffset, 2 * big.length);
  const out = new Float64Array(big.length);
  for (let i = 0; i < big.length; i++) {
    const hi = w[2 * i + 1];
    if (hi >= 0x200000) return null;
    out[i] = hi * 4294967296 + w[2 * i];
  }
  return out;
}

/** The report from its summary (the core's JSON without per-slot arrays) and the core's
 *  columns; null when a value is past 2^53 - 1 or a size past 2^64 (the JSON says those). */
/* Past this many slots the columns (several typed arrays per slot, in wasm memory and copied
 * out) cost more than streaming the JSON, and past ~30 million the report cannot be one string
 * at all: the JSON path says so plainly (tests/js/boundary.test.mjs). */
const COLUMNS_REPORT_MAX_SLOTS = 1 << 22;

function fromColumns(summary, c) {
  for (let i = 0; i < c.n; i++) if (c.tooBig[i]) return null;
  const starts = numbers(c.dimStart), dims = numbers(c.dims), sizes = numbers(c.sizes);
  if (!starts || !dims || !sizes) return null;
  const report = structuredClone(summary);
  // literal arrays for the usual ranks: V8 allocates them packed and at their size
  const shape = (i) => {
    const k = starts[i], rank = starts[i + 1] - k;
    if (rank === 0) return [];
    if (rank === 1) return [dims[k]];
    if (rank === 2) return [dims[k], dims[k + 1]];
    const out = [];
    for (let j = k; j < k + rank; j++) out.push(dims[j]);
    return out;
  };
  if (report.kind === 'state') {
    const t = numbers(c.tensors);
    if (!t) return null;
    report.tensors = [];
    for (let k = 0; k < t.length / 3; k++) report.tensors.push({ shape: shape(k), count: t[3 * k], offset: t[3 * k + 1], dataOffset: t[3 * k + 2] });
    return report;
  }
  const e = numbers(c.entries);
  if (!e) return null;
  const s = report.schema;
  if (s) {
    const shapes = [], sizeList = [], flags = [];
    for (let i = 0; i < c.n; i++) {
      shapes.push(shape(i));
      sizeList.push(sizes[i]);
    }
    for (let i = 0; i < c.flags.length; i++) flags.push(c.flags[i] === 1);
    let reps = null;
    if (c.reps) {
      // 2^64 - 1 (none) fails numbers(): its halves are read here, none is null
      const w = new Uint32Array(c.reps.buffer, c.reps.byteOffset, 2 * c.n);
      reps = [];
      for (let i = 0; i < c.n; i++) {
        const hi = w[2 * i + 1];
        if (hi === 0xffffffff && w[2 * i] === 0xffffffff) reps.push(null);
        else if (hi >= 0x200000) return null;
        else reps.push(hi * 4294967296 + w[2 * i]);
      }
    }
    Object.assign(s, { shapes, sizes: sizeList, requiresGrad: flags, representatives: c.hasMap ? reps : null, effectiveRepresentatives: reps });
  }
  report.entries = [];
  for (let k = 0; k < e.length / 6; k++) report.entries.push({ id: e[6 * k], step: e[6 * k + 1], count: e[6 * k + 2], offset: e[6 * k + 3] });
  return report;
}

export class Checkpoint {
  #core;
  #src;
  #srcId;
  #err;
  #file;
  #busy = 0;
  #closing = false;
  #meta;
  #report;
  #columns;

  constructor(core, src, srcId, errPtr, file) {
    this.#core = core;
    this.#src = src;
    this.#srcId = srcId;
    this.#err = errPtr;
    this.#file = file;
    this.#meta = core.takeJSON(core.exports.w_file_report_json(file, JSON_NO_BULK));
  }

  get closed() {
    return !this.#file || this.#closing;
  }

  /** Run fn(exports, file, err) on the live handle (fn may return a promise); a close() asked
   *  for meanwhile (from a progress callback, say) waits until the core is done with the handle. */
  #use(fn) {
    if (this.closed) throw new TypeError('this Checkpoint is closed');
    this.#busy++;
    let result;
    try {
      result = fn(this.#core.exports, this.#file, this.#err);
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

  #fail(extra, signal) {
    return coreError(this.#core, this.#err, extra, signal);
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
    this.#report ??= (viaColumns ? fromColumns(this.#meta, this.columns()) : null) ?? JSON.parse(this.reportText());
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
    const core = this.#core;
    const sink = { write };
    const id = core.register(sink);
    try {
      const rc = this.#use((ex, file, err) => ex.w_file_report_write(file, id, err));
      if (sink.error) throw sink.error;
      if (rc) throw this.#fail();
    } finally {
      core.unregister(id);
    }
  }

  /** The per-slot arrays as typed arrays (copies), for viewers: see docs/api.md "columns". */
  columns() {
    const core = this.#core;
    return this.#use((ex, file) => {
      const c = ex.w_columns_new(file) >>> 0;
      if (!c) throw new RangeError('out of WebAssembly memory');
      try {
        const h = new Uint32Array(core.memory.buffer, c, 16);
        const [n, flagCount, dimsLen, entriesLen, tensorsLen, hasMap, complete, dimStart, dims, sizes, tooBig, flags, reps, broken, entries, tensors] = h;
        const u64s = (p, len) => new BigUint64Array(core.memory.buffer.slice(p, p + 8 * len));
        const u8s = (p, len) => new Uint8Array(core.memory.buffer.slice(p, p + len));
        return {
          n,
          hasMap: hasMap === 1,
          complete: complete === 1,
          dimStart: n || dimStart ? u64s(dimStart, n + 1) : new BigUint64Array(1),
          dims: u64s(dims, dimsLen),
          sizes: u64s(sizes, n),
          tooBig: u8s(tooBig, n),
          flags: u8s(flags, flagCount),
          reps: complete ? u64s(reps, n) : null,
          broken: complete ? u8s(broken, n) : null,
          entries: u64s(entries, 6 * entriesLen),
          tensors: u64s(tensors, 3 * tensorsLen),
        };
      } finally {
        ex.w_columns_free(c);
      }
    });
  }

  /** The moments of slot `slot`: {slot, owner, id, step, count, dtype, m, v}. A tied slot gives its
   *  owner's moments (owner = its representative); a frozen slot rejects with
   *  `parameter {slot} is frozen: it has no optimizer state`. m and v are Float32Array or
   *  Float64Array exactly as stored (copies). */
  async entry(slot) {
    const id = toU64(slot, 'slot');
    const core = this.#core;
    return this.#use((ex, file, err) => {
      const info = core.malloc(48);
      let m = 0, v = 0;
      try {
        if (ex.w_file_entry(file, id, info, err)) throw this.#fail();
        const [owner, entryId, step, count, offset, bytes] = core.readU64(info, 6);
        if (bytes === NONE || bytes > 0x7ffffff0n) {
          throw new RangeError(`parameter ${id}'s moments are ${bytes === NONE ? 'too many' : bytes} bytes each: too large to copy into memory at once (use stats(), which streams)`);
        }
        const n = Number(bytes);
        m = core.malloc(n);
        v = core.malloc(n);
        if (ex.w_file_read_moments(file, id, m, v, err)) throw this.#fail();
        const Ctor = this.#meta.dtype === 'float64' ? Float64Array : Float32Array;
        // Copies, not views: wasm memory may grow and move.
        return {
          slot: exact(id), owner: exact(owner), id: exact(entryId), step: exact(step), count: exact(count), offset: exact(offset),
          dtype: this.#meta.dtype,
          m: new Ctor(core.memory.buffer.slice(m, m + n)),
          v: new Ctor(core.memory.buffer.slice(v, v + n)),
        };
      } finally {
        core.free(m);
        core.free(v);
        core.free(info);
      }
    });
  }

  /** Streamed statistics of slot `slot`: its moments (optimizer files: {slot, owner, id, step,
   *  count, offset, m, v, unhealthy}) or its values (state files: {tensor, count, values}). */
  async stats(slot, { onProgress, signal } = {}) {
    const id = toU64(slot, 'slot');
    const core = this.#core;
    return this.#use((ex, file, err) => {
      const state = this.kind === 'state';
      const ptr = withProgress(core, { onProgress, signal }, (pid) =>
        (state ? ex.w_file_tensor_stats(file, id, pid, err) : ex.w_file_moment_stats(file, id, pid, err)) >>> 0);
      if (!ptr) throw this.#fail({}, signal);
      const json = core.takeJSON(ptr);
      return state ? { tensor: exact(id), count: json.count, values: json } : json;
    });
  }

  /** A state file's tensor i: {index, shape, count, values: Float32Array} (a copy). */
  async tensor(i) {
    const id = toU64(i, 'tensor');
    const core = this.#core;
    return this.#use((ex, file, err) => {
      const info = core.malloc(16);
      let out = 0;
      try {
        if (ex.w_file_tensor(file, id, info, err)) throw this.#fail();
        const [count] = core.readU64(info, 2);
        if (count > 0x1ffffffcn) throw new RangeError(`tensor ${id} has ${count} values: too large to copy into memory at once (use stats(), which streams)`);
        const n = 4 * Number(count);
        out = core.malloc(n);
        if (ex.w_file_read_tensor(file, id, out, err)) throw this.#fail();
        return { index: exact(id), shape: this.#shape(Number(id)), count: exact(count), values: new Float32Array(core.memory.buffer.slice(out, out + n)) };
      } finally {
        core.free(out);
        core.free(info);
      }
    });
  }

  #shape(i) {
    this.#columns ??= this.columns();
    const { dimStart, dims } = this.#columns;
    return Array.from(dims.subarray(Number(dimStart[i]), Number(dimStart[i + 1])), exact);
  }

  /** Entries (optimizer) or tensors (state): what statistics are gathered for. */
  get itemCount() {
    return this.#use((ex, file) => ex.w_file_item_count(file) >>> 0);
  }

  /** For the package (statistics gathered by workers): item k's statistics as packed words. */
  itemStatsPacked(k, { onProgress, signal } = {}) {
    const core = this.#core;
    return this.#use((ex, file, err) => {
      const ptr = withProgress(core, { onProgress, signal }, (pid) => ex.w_file_item_stats_packed(file, k, pid, err) >>> 0);
      if (!ptr) throw this.#fail({}, signal);
      try {
        const [la, lb] = new BigUint64Array(core.memory.buffer, ptr, 2);
        return core.readU64(ptr, 2 + Number(la) + Number(lb));
      } finally {
        core.free(ptr);
      }
    });
  }

  /** For the package: attach the statistics of items from, from + 1, … gathered elsewhere
   *  (packed words, one array per item). Once every item has them, the report is the one a
   *  scan with statistics gives. */
  attachPacked(from, list) {
    const core = this.#core;
    this.#use((ex, file, err) => {
      list.forEach((words, j) => {
        const p = core.u64Array(words);
        try {
          if (ex.w_file_attach_packed(file, from + j, p, words.length, err)) throw this.#fail();
        } finally {
          core.free(p);
        }
      });
    });
    this.#report = undefined;
    this.#meta = core.takeJSON(core.exports.w_file_report_json(this.#file, JSON_NO_BULK));
  }

  /** For the package: run fn(layoutPtr) with this file as a layout (destination or diff side). */
  withLayout(fn, extra = {}) {
    return this.#use((ex, file, err) => {
      const l = ex.w_layout_of_file(file, err) >>> 0;
      if (!l) {
        const report = this.#meta;
        throw report.error ? new CheckpointError(report.error, { report, ...extra }) : this.#fail(extra);
      }
      const free = () => ex.w_layout_free(l);
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

  /** For the package: run fn(exports, filePtr) while the handle stays live. */
  withFile(fn) {
    return this.#use((ex, file) => fn(ex, file));
  }

  close() {
    if (!this.#file || this.#closing) return;
    this.#closing = true;
    if (!this.#busy) this.#release();
  }

  #release() {
    const ex = this.#core.exports;
    ex.ckpt_close(this.#file);
    ex.w_error_free(this.#err);
    this.#core.unregister(this.#srcId);
    this.#file = this.#err = 0;
    this.#src.close();
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.close();
  }
}

export { u64 };
