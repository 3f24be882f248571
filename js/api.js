// The public API: inspect, check, diff, readEntry, writeCheckpoint, saveCheckpoint, Schema.
// Every rule is the C core's; this layer moves bytes and objects across the boundary, owns
// the core's handles for exactly as long as a call needs them, and turns the core's error
// codes into CheckpointError (the reference text, its code, the byte offset).

import { loadCore } from './wasm.js';
import { openSource } from './sources.js';
import { CheckpointError, LayoutError } from './errors.js';
import { schemaArrays, dtypeCode, configWords, momentBytes, toU64 } from './layout.js';

// Mirrors of src/ckptscope.h constants.
const INSPECT_STATS = 1;            // CKPT_INSPECT_STATS
const E_CANCELLED = 37;             // CKPT_E_CANCELLED
const JSON_NO_SCHEMA_ARRAYS = 1;    // CKPT_JSON_NO_SCHEMA_ARRAYS
const JSON_NO_ENTRIES = 2;          // CKPT_JSON_NO_ENTRIES

// ---- handles --------------------------------------------------------------------------------

function buildSchema(core, { ranks, dims, requiresGrad, map }) {
  const ex = core.exports;
  const ptrs = [];
  try {
    const r = core.u64Array(ranks); ptrs.push(r);
    const d = core.u64Array(dims); ptrs.push(d);
    const f = core.copyIn(requiresGrad); ptrs.push(f);
    let m = 0;
    if (map) { m = core.u64Array(map); ptrs.push(m); }
    const s = ex.w_schema_new(ranks.length, r, d, requiresGrad.length, f, m, map ? map.length : 0) >>> 0;
    if (!s) throw new RangeError('out of WebAssembly memory building a schema');
    return s;
  } finally {
    ptrs.forEach((p) => core.free(p));
  }
}

/** Open a source, let the core read it (run returns a report pointer), consume the report. */
async function withReport(source, run, consume, { onProgress, signal, variant } = {}) {
  signal?.throwIfAborted();
  const core = await loadCore(variant);
  const src = await openSource(source);
  const srcId = core.register(src);
  const listener = {
    progress(done, total) {
      onProgress?.({ done, total });
      return signal?.aborted ?? false;
    },
  };
  const progressId = onProgress || signal ? core.register(listener) : 0;
  let rep = 0;
  try {
    rep = run(core, srcId, src.size, progressId) >>> 0;
    if (!rep) throw new RangeError('out of WebAssembly memory');
    if (src.error) throw src.error;           // the source's own I/O error, as thrown
    if (listener.error) throw listener.error; // an onProgress callback threw
    if (core.exports.w_report_error_code(rep) === E_CANCELLED) {
      throw signal?.reason ?? new DOMException('The statistics scan was cancelled', 'AbortError');
    }
    return await consume(core, rep, srcId, src.size);
  } finally {
    if (rep) core.exports.ckpt_report_free(rep);
    core.unregister(srcId);
    if (progressId) core.unregister(progressId);
    src.close();
  }
}

/**
 * The JSON report of a report handle. Bulk arrays (schema slots, and entries when they carry
 * no statistics) cross as one block of doubles and are rebuilt here: a million-slot report
 * then costs a fraction of parsing its 50 MB JSON. Values of 2^53 or more take the JSON path.
 */
function readReport(core, rep, { stats = false } = {}) {
  const ex = core.exports;
  const cols = ex.w_report_columns(rep) >>> 0;
  if (!cols) return core.takeJSON(ex.w_report_json(rep));
  try {
    const head = new Float64Array(core.memory.buffer, cols, 6);
    const [n, nflags, ndims, nentries, hasMap, complete] = head;
    // Entries with statistics keep their JSON; plain entries come from the columns.
    const report = core.takeJSON(ex.w_report_json_opts(rep, JSON_NO_SCHEMA_ARRAYS | (stats ? 0 : JSON_NO_ENTRIES)));
    const total = 6 + 2 * n + ndims + nflags + (complete ? n : 0) + 4 * nentries;
    const f = new Float64Array(core.memory.buffer, cols, total);   // after the JSON call: memory may have grown
    // Plain loops and literal arrays: V8 keeps them packed, which matters at a million slots.
    let at = 6;
    const ranks = f.subarray(at, (at += n));
    const shapes = [];
    for (let i = 0; i < n; i++) {
      const r = ranks[i];
      if (r === 0) shapes.push([]);
      else if (r === 1) shapes.push([f[at++]]);
      else if (r === 2) shapes.push([f[at++], f[at++]]);
      else {
        const shape = [];
        for (let k = 0; k < r; k++) shape.push(f[at++]);
        shapes.push(shape);
      }
    }
    const sizes = [];
    for (let i = 0; i < n; i++) sizes.push(f[at++]);
    const requiresGrad = [];
    for (let i = 0; i < nflags; i++) requiresGrad.push(f[at++] === 1);
    let reps = null;
    if (complete) {
      reps = [];
      for (let i = 0; i < n; i++) {
        const r = f[at++];
        reps.push(r < 0 ? null : r);
      }
    }
    // A stored map is set only once every tag is read, so a map implies `complete`.
    report.schema = { shapes, sizes, requiresGrad, representatives: hasMap ? reps : null, effectiveRepresentatives: reps };
    if (!stats) {
      const entries = [];
      for (let k = 0; k < nentries; k++, at += 4) entries.push({ id: f[at], step: f[at + 1], count: f[at + 2], offset: f[at + 3] });
      report.entries = entries;
    }
    return report;
  } finally {
    core.free(cols);
  }
}

function reportError(report, extra) {
  return new CheckpointError(report.error, { report, ...extra });
}

// ---- inspect --------------------------------------------------------------------------------

/**
 * The JSON report of DESIGN.md for any source. Resolves for invalid files too: `ok` is false
 * and `error` says why. Rejects only for I/O errors, bad arguments and cancellation.
 */
export function inspect(source, { stats = false, onProgress, signal, variant } = {}) {
  return withReport(
    source,
    (core, id, size, progressId) => core.exports.w_inspect(id, size, stats ? INSPECT_STATS : 0, progressId),
    (core, rep) => readReport(core, rep, { stats }),
    { onProgress, signal, variant },
  );
}

// ---- expected layouts -----------------------------------------------------------------------

function isLayoutObject(x) {
  return x !== null && typeof x === 'object' && !ArrayBuffer.isView(x) && !(x instanceof ArrayBuffer) &&
    !(typeof Blob !== 'undefined' && x instanceof Blob) && !(x instanceof URL) && !(x instanceof Schema);
}

/** What a destination is: a Schema, a layout object, a JSON report, or another checkpoint. */
async function withExpected(layout, fn) {
  const core = await loadCore();
  if (layout instanceof Schema) return fn(core, { schema: layout.ptr, dtype: -1, config: null, keeps: -1 });
  if (isLayoutObject(layout)) {
    const fromReport = layout.schema && typeof layout.schema === 'object' && !Array.isArray(layout.schema);
    const shape = fromReport ? layout.schema : layout;
    const schema = buildSchema(core, schemaArrays(shape, fromReport ? 'report.schema' : 'layout'));
    let config = 0;
    try {
      const dtype = dtypeCode(layout.dtype);
      if (layout.config) config = core.u64Array(configWords(layout.config));
      const keepsField = fromReport ? layout.hasRandomCounter : layout.keepsRandomCounter;
      const keeps = keepsField === true ? 1 : keepsField === false ? 0 : -1;
      return await fn(core, { schema, dtype, config, keeps });
    } finally {
      core.free(config);
      core.exports.ckpt_schema_free(schema);
    }
  }
  // Another checkpoint: its own layout, dtype, configuration and counter status.
  return withReport(
    layout,
    (c, id, size) => c.exports.w_inspect(id, size, 0, 0),
    async (c, rep) => {
      const report = readReport(c, rep);
      if (!report.ok) throw reportError(report, { role: 'expected' });
      const config = c.u64Array(configWords(report.config));
      try {
        return await fn(c, {
          schema: c.exports.w_report_schema(rep) >>> 0,
          dtype: dtypeCode(report.dtype),
          config,
          keeps: report.hasRandomCounter ? 1 : 0,
        });
      } finally {
        c.free(config);
      }
    },
  );
}

/**
 * Would the trainer load `source` into `layout`? Resolves with {ok: true, warnings, report}
 * when it would; rejects with the trainer's CheckpointError (reference text and offset, and
 * the report of what was read) when it would not. `layout`: a layout object (DESIGN.md), a
 * JSON report, a Schema, or another checkpoint.
 */
export function check(source, layout) {
  return withExpected(layout, (core, exp) =>
    withReport(
      source,
      (c, id, size) => c.exports.w_load(id, size, exp.schema, exp.dtype, exp.config, exp.keeps),
      (c, rep) => {
        const report = readReport(c, rep);
        if (!report.ok) throw reportError(report);
        return { ok: true, warnings: report.warnings, report };
      },
    ),
  );
}

// ---- diff -----------------------------------------------------------------------------------

/** A comparable description of a layout or checkpoint; every derived fact comes from C. */
async function describe(x) {
  if (x instanceof Schema) return { schema: x.toJSON(), dtype: null, config: null, hasRandomCounter: null };
  if (isLayoutObject(x) && !x.family) {
    const core = await loadCore();
    const s = buildSchema(core, schemaArrays(x));
    try {
      const schema = core.takeJSON(core.exports.w_schema_json(s));
      const config = x.config ? configWords(x.config) : null;
      return {
        schema,
        dtype: x.dtype ?? null,
        config: config && { kind: config[0] === 1n ? 'adamw' : 'adam', bits: bitsObject(config) },
        hasRandomCounter: x.keepsRandomCounter ?? null,
      };
    } finally {
      core.exports.ckpt_schema_free(s);
    }
  }
  // A checkpoint, or its JSON report: the report's schema carries the sizes and the
  // representatives the comparison needs.
  const fromReport = isLayoutObject(x);
  const get = (core, rep) => {
    const report = fromReport ? x : readReport(core, rep);
    if (!report.schema) throw reportError(report, { role: 'diff' });
    return {
      schema: report.schema,
      dtype: report.dtype,
      config: report.config && { kind: report.config.kind, bits: report.config.bits },
      hasRandomCounter: report.hasRandomCounter,
      error: report.error,
    };
  };
  if (fromReport) return get(null, 0);
  return withReport(x, (c, id, size) => c.exports.w_inspect(id, size, 0, 0), get);
}

function bitsObject(words) {
  const hex = (w) => '0x' + w.toString(16).padStart(16, '0');
  return { beta1: hex(words[1]), beta2: hex(words[2]), epsilon: hex(words[3]), weightDecay: hex(words[4]) };
}

const shapeText = (s) => (s ? `#[${s.join(', ')}]` : 'none');
const repText = (r) => (r === null || r === undefined ? 'none' : String(r));

/**
 * Every difference between two layouts or checkpoints: slot count, ranks, shapes, sizes,
 * trainability, sharing, dtype, configuration and random-counter status. Each difference is
 * {field, slot?, a, b, message}; an empty array means they agree on everything compared.
 */
export async function diff(a, b) {
  const [da, db] = [await describe(a), await describe(b)];
  const out = [];
  const add = (field, slot, va, vb, message) => out.push({ field, ...(slot === null ? {} : { slot }), a: va, b: vb, message });
  const sa = da.schema, sb = db.schema;
  const na = sa.shapes.length, nb = sb.shapes.length;
  if (na !== nb) add('count', null, na, nb, `parameter count: ${na} vs ${nb}`);
  for (let i = 0; i < Math.min(na, nb); i++) {
    const [x, y] = [sa.shapes[i], sb.shapes[i]];
    if (x.length !== y.length) add('rank', i, x.length, y.length, `parameter ${i}: rank ${x.length} vs ${y.length}`);
    if (shapeText(x) !== shapeText(y)) add('shape', i, x, y, `parameter ${i}: shape ${shapeText(x)} vs ${shapeText(y)}`);
    if (String(sa.sizes[i]) !== String(sb.sizes[i])) add('size', i, sa.sizes[i], sb.sizes[i], `parameter ${i}: size ${sa.sizes[i]} vs ${sb.sizes[i]}`);
    const [ga, gb] = [sa.requiresGrad[i], sb.requiresGrad[i]];
    if (ga !== gb) add('requiresGrad', i, ga, gb, `parameter ${i}: ${ga ? 'trainable' : 'frozen'} vs ${gb ? 'trainable' : 'frozen'}`);
    const [ra, rb] = [sa.effectiveRepresentatives?.[i], sb.effectiveRepresentatives?.[i]];
    if (String(ra) !== String(rb)) add('representative', i, ra ?? null, rb ?? null, `parameter ${i}: representative ${repText(ra)} vs ${repText(rb)}`);
  }
  for (let i = nb; i < na; i++) add('slot', i, sa.shapes[i], null, `parameter ${i}: ${shapeText(sa.shapes[i])} only in the first`);
  for (let i = na; i < nb; i++) add('slot', i, null, sb.shapes[i], `parameter ${i}: ${shapeText(sb.shapes[i])} only in the second`);
  if (da.dtype && db.dtype && da.dtype !== db.dtype) add('dtype', null, da.dtype, db.dtype, `moment dtype: ${da.dtype} vs ${db.dtype}`);
  if (da.config && db.config) {
    if (da.config.kind !== db.config.kind) add('config.kind', null, da.config.kind, db.config.kind, `optimizer: ${da.config.kind} vs ${db.config.kind}`);
    for (const f of ['beta1', 'beta2', 'epsilon', 'weightDecay']) {
      const [x, y] = [da.config.bits[f], db.config.bits[f]];
      if (x !== y) add(`config.${f}`, null, x, y, `${f}: ${x} vs ${y} (bit patterns)`);
    }
  }
  if (da.hasRandomCounter !== null && db.hasRandomCounter !== null && da.hasRandomCounter !== db.hasRandomCounter) {
    add('randomCounter', null, da.hasRandomCounter, db.hasRandomCounter,
      `random counter: ${da.hasRandomCounter ? 'kept' : 'none'} vs ${db.hasRandomCounter ? 'kept' : 'none'}`);
  }
  return out;
}

// ---- readEntry ------------------------------------------------------------------------------

/**
 * The moments of one entry: {id, step, count, dtype, m, v}, m and v as Float32Array or
 * Float64Array exactly as stored. Rejects with the file's CheckpointError when it is invalid,
 * or when no entry has that id.
 */
export function readEntry(source, id) {
  return withReport(
    source,
    (c, srcId, size) => c.exports.w_inspect(srcId, size, 0, 0),
    (core, rep, srcId, size) => {
      const report = readReport(core, rep);
      if (!report.ok) throw reportError(report);
      const key = String(toU64(id, 'id'));
      const entry = report.entries.find((e) => String(e.id) === key);
      const failed = () => {
        const err = core.takeJSON(core.exports.w_error_json());
        core.exports.w_error_clear();
        return new CheckpointError(err, { report });
      };
      // No such entry: the core says so (its text), before touching any buffer.
      if (!entry && core.exports.w_read_moments(srcId, size, rep, Number(key), 0, 0)) throw failed();
      const Ctor = report.dtype === 'float64' ? Float64Array : Float32Array;
      const count = Number(entry.count);
      const bytes = count * Ctor.BYTES_PER_ELEMENT;
      const m = core.malloc(bytes), v = core.malloc(bytes);
      try {
        if (core.exports.w_read_moments(srcId, size, rep, Number(key), m, v)) throw failed();
        // Copies, not views: wasm memory may grow and move.
        return {
          id: entry.id, step: entry.step, count: entry.count, dtype: report.dtype,
          m: new Ctor(core.memory.buffer.slice(m, m + bytes)),
          v: new Ctor(core.memory.buffer.slice(v, v + bytes)),
        };
      } finally {
        core.free(m);
        core.free(v);
      }
    },
  );
}

/**
 * Moment statistics of one entry, {id, step, count, offset, m, v}, reading only its payloads.
 * `onProgress` and `signal` work as for inspect.
 */
export function entryStats(source, id, { onProgress, signal } = {}) {
  let progressId = 0;
  return withReport(
    source,
    (c, srcId, size, pid) => {
      progressId = pid;
      return c.exports.w_inspect(srcId, size, 0, 0);
    },
    (core, rep, srcId, size) => {
      const report = readReport(core, rep);
      if (!report.ok) throw reportError(report);
      const key = toU64(id, 'id');
      const ptr = core.exports.w_entry_stats(srcId, size, rep, Number(key), progressId) >>> 0;
      if (!ptr) {
        const err = core.takeJSON(core.exports.w_error_json());
        core.exports.w_error_clear();
        if (err?.code === E_CANCELLED) throw signal?.reason ?? new DOMException('The statistics scan was cancelled', 'AbortError');
        throw new CheckpointError(err, { report });
      }
      return core.takeJSON(ptr);
    },
    { onProgress, signal },
  );
}

// ---- writing --------------------------------------------------------------------------------

/**
 * Write a description {shapes, requiresGrad, representatives?, dtype?, config,
 * randomCounter?, version?, entries: [{id, step, m, v}]} through `write(bytes)` with the
 * reference writer's rules (version choice, sorted entries, save checks before any byte).
 */
async function writeThrough(description, write) {
  if (description === null || typeof description !== 'object') throw new LayoutError('a checkpoint description must be an object');
  const core = await loadCore();
  const ex = core.exports;
  const arrays = schemaArrays(description, 'description');
  const dtype = Math.max(0, dtypeCode(description.dtype, 'description.dtype'));
  const config = configWords(description.config ?? { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, 'description.config');
  const counter = description.randomCounter === undefined || description.randomCounter === null
    ? null : toU64(description.randomCounter, 'description.randomCounter');
  const version = description.version === undefined ? 0 : Number(toU64(description.version, 'description.version'));
  const entries = description.entries ?? [];
  if (!Array.isArray(entries)) throw new LayoutError('description.entries must be an array');
  const width = dtype === 1 ? 8 : 4;
  const prepared = entries.map((e, k) => {
    const where = `description.entries[${k}]`;
    if (e === null || typeof e !== 'object') throw new LayoutError(`${where} must be an object`);
    const m = momentBytes(e.m ?? [], dtype, `${where}.m`);
    const v = momentBytes(e.v ?? [], dtype, `${where}.v`);
    const count = e.count !== undefined ? toU64(e.count, `${where}.count`) : BigInt(Math.floor(m.byteLength / width));
    return { id: toU64(e.id, `${where}.id`), step: toU64(e.step, `${where}.step`), count, m, v };
  });
  const ptrs = [];
  let schema = 0;
  // The view is into wasm memory: the callback must consume or copy it before returning.
  const sink = { write };
  const sinkId = core.register(sink);
  try {
    schema = buildSchema(core, arrays);
    const cfg = core.u64Array(config); ptrs.push(cfg);
    let cnt = 0;
    if (counter !== null) { cnt = core.u64Array([counter]); ptrs.push(cnt); }
    const meta = core.u64Array(prepared.flatMap((e) => [e.id, e.step, e.count, BigInt(e.m.byteLength), BigInt(e.v.byteLength)]));
    ptrs.push(meta);
    const payloadPtrs = [];
    for (const e of prepared) {
      const pm = core.copyIn(e.m); ptrs.push(pm);
      const pv = core.copyIn(e.v); ptrs.push(pv);
      payloadPtrs.push(pm, pv);
    }
    const table = core.malloc(payloadPtrs.length * 4); ptrs.push(table);
    new Uint32Array(core.memory.buffer, table, payloadPtrs.length).set(payloadPtrs);
    const rc = ex.w_write(schema, dtype, cfg, cnt, meta, table, prepared.length, version, sinkId);
    if (sink.error) throw sink.error;
    if (rc) {
      const err = core.takeJSON(ex.w_error_json());
      ex.w_error_clear();
      throw new CheckpointError(err);
    }
  } finally {
    core.unregister(sinkId);
    ptrs.forEach((p) => core.free(p));
    if (schema) ex.ckpt_schema_free(schema);
  }
}

/** The checkpoint bytes for a description (see writeThrough). */
export async function writeCheckpoint(description) {
  const chunks = [];
  let total = 0;
  await writeThrough(description, (bytes) => {
    chunks.push(bytes.slice());
    total += bytes.length;
  });
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Node: write a description to `path` atomically (temporary sibling, then rename), streaming
 *  the bytes to disk as the core produces them. */
export async function saveCheckpoint(path, description) {
  const { atomicWrite } = await import('./node-io.js');
  const target = path instanceof URL ? (await import('node:url')).fileURLToPath(path) : String(path);
  await atomicWrite(target, (write) => writeThrough(description, write));
}

// ---- Schema ---------------------------------------------------------------------------------

/** A ParameterSchema held by the core; every query is answered by C. Call dispose(). */
export class Schema {
  static async create(layout) {
    const core = await loadCore();
    return new Schema(core, buildSchema(core, schemaArrays(layout)));
  }

  constructor(core, ptr) {
    this.core = core;
    this.ptr = ptr;
  }

  #live() {
    if (!this.ptr) throw new Error('this Schema was disposed');
    return this.core.exports;
  }

  get count() { return this.#live().ckpt_schema_count(this.ptr) >>> 0; }
  representative(i) {
    const r = this.#live().w_schema_representative(this.ptr, i);
    return r < 0 ? null : r;
  }
  isRepresentative(i) { return this.representative(i) === i; }
  isWellFormed() { return this.#live().ckpt_schema_is_well_formed(this.ptr) !== 0; }
  get optimizerStateCount() { return this.#live().w_schema_optimizer_state_count(this.ptr); }
  get trainableCount() { return this.#live().w_schema_trainable_count(this.ptr); }
  get hasAliases() { return this.#live().ckpt_schema_has_aliases(this.ptr) !== 0; }
  tags() {
    const ex = this.#live();
    const n = this.count;
    const p = this.core.malloc(n * 8);
    try {
      ex.w_schema_tags(this.ptr, p);
      return this.core.readU64Array(p, n).map((t) => (t <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(t) : t.toString()));
    } finally {
      this.core.free(p);
    }
  }
  toJSON() { return this.core.takeJSON(this.#live().w_schema_json(this.ptr)); }
  dispose() {
    if (this.ptr) this.core.exports.ckpt_schema_free(this.ptr);
    this.ptr = 0;
  }
  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() { this.dispose(); }
}

