// The one module that knows the WebAssembly ABI (wasm/ckpt_wasm.c), as sql.js's cwrap block:
// every w_* call with its C signature, the layouts of the structs that cross, the constants,
// the codes, the families and the dtypes. The facts are not stated here either: they come from
// the core's own description (ckpt_abi_json, src/abi/abi.c), read once when an instance is bound.
// Every other module of the package calls the core through a Binding; none states a width, a
// code, a stride, an offset or a magic (tests/js/abi.test.mjs checks that).

import { loadCore, u64 } from './wasm.js';

const bindings = new WeakMap();
let description = null;   // the same for every instance: one set of sources
let first = null;         // the first bound instance, for the synchronous validators

/** The bound core (loaded once per variant). */
export async function loadBinding(variant) {
  const core = await loadCore(variant);
  let b = bindings.get(core);
  if (!b) bindings.set(core, (b = new Binding(core)));
  return b;
}

/** The core's description once an instance is bound: for the synchronous validators that run
 *  after one is (layout and description objects). */
export function abi() {
  if (!description) throw new Error('ckptscope: the core is not loaded yet (await loadBinding() first)');
  return description;
}

/** The first bound instance, for the synchronous validators (after loadBinding). */
export function bound() {
  if (!first) throw new Error('ckptscope: the core is not loaded yet (await loadBinding() first)');
  return first;
}

// The typed array of a float width: JavaScript's own fact, matched to the core's widths.
const FLOAT_ARRAYS = new Map([Float32Array, Float64Array].map((C) => [C.BYTES_PER_ELEMENT, C]));
// The typed array a tensor of a dtype of the table comes in, by its kind and width: floats of
// 2 or 1 bytes (float16, bfloat16, float8), which JS has no array of, come as their raw bits.
const INT_ARRAYS = new Map([Int8Array, Int16Array, Int32Array, BigInt64Array].map((C) => [C.BYTES_PER_ELEMENT, C]));
const UINT_ARRAYS = new Map([Uint8Array, Uint16Array, Uint32Array, BigUint64Array].map((C) => [C.BYTES_PER_ELEMENT, C]));
const arrayOf = (d) => (d.kind === 'f' && FLOAT_ARRAYS.get(d.width)) || (d.kind === 'i' ? INT_ARRAYS : UINT_ARRAYS).get(d.width);
const U64_BYTES = BigUint64Array.BYTES_PER_ELEMENT;

/** A struct's fields in memory order, checked to be u64 words only (rows and references). */
function wordFields(struct, name) {
  const fields = Object.entries(struct.fields).sort((a, b) => a[1].offset - b[1].offset);
  fields.forEach(([field, f], k) => {
    if (f.size !== U64_BYTES || f.offset !== k * U64_BYTES) throw new Error(`ckptscope: ${name}.${field} is not a u64 word in order`);
  });
  if (struct.size !== fields.length * U64_BYTES) throw new Error(`ckptscope: ${name} is not a row of u64 words`);
  return fields.map(([field]) => field);
}

function describe(json) {
  const families = json.families.map((f) => Object.freeze({ ...f }));
  const dtypes = json.dtypes.map((d) => {
    const FloatArray = FLOAT_ARRAYS.get(d.width);
    if (!FloatArray) throw new Error(`ckptscope: no typed array holds ${d.name}`);
    return Object.freeze({ ...d, FloatArray });
  });
  const tensorDtypes = (json.tensorDtypes ?? []).map((d) => Object.freeze({ ...d, Array: arrayOf(d), raw: d.kind === 'f' && !FLOAT_ARRAYS.has(d.width) }));
  const words = {};
  for (const name of ['entryRow', 'tensorRow', 'entryRef', 'tensorRef', 'entryMeta', 'packedStats', 'config']) {
    words[name] = wordFields(json.structs[name], name);
  }
  const { NONE, ...constants } = json.constants;
  return Object.freeze({
    families: Object.freeze(families),
    dtypes: Object.freeze(dtypes),
    tensorDtypes: Object.freeze(tensorDtypes),
    codes: Object.freeze({ ...json.codes }),
    constants: Object.freeze(constants),
    /** The optimizer kinds: [{id, name: 'adam' | 'adamw'}], id the core's ckpt_kind. */
    kinds: Object.freeze(json.kinds.map((k) => Object.freeze({ ...k }))),
    /** export's formats: [{id, name, extension}], chosen by the output's extension. */
    exportFormats: Object.freeze(json.exportFormats.map((f) => Object.freeze({ ...f }))),
    NONE: BigInt(NONE),
    pointerSize: json.pointerSize,
    structs: json.structs,
    words: Object.freeze(words),
    /** The family of a magic ("TLADAMF"), or undefined. */
    family: (magic) => families.find((f) => f.magic === magic),
    /** The dtype of a name ("float32"), or undefined. */
    dtype: (name) => dtypes.find((d) => d.name === name),
    dtypeById: (id) => dtypes.find((d) => d.id === id),
    /** Any dtype of the table by name ("bfloat16"): {width, kind, safetensors, numpy, Array, raw}. */
    tensorDtype: (name) => tensorDtypes.find((d) => d.name === name),
  });
}

/** Named access to rows of u64 words (the columns' entries and tensors): rows.get(k, 'step'). */
/** The arguments of a conversion to TLADAMF after the file, as w_convert, w_ds_convert and w_dcp_convert take
 *  them: version u64, oldest, reader, supply_counter, counter u64, drop_counter, untie,
 *  round_to_float32, sink, progress, err, kind, has_weight_decay, weight decay, has_betas, beta1,
 *  beta2, has_eps, eps, drop_amsgrad. */
function convertArgs({ version = 0n, oldest = false, reader = 0, counter = null, dropCounter = false, untie = false,
  round = false, kind = 0, weightDecay = null, betas = null, eps = null, dropAmsgrad = false }, sinkId, pid, err) {
  const has = (x) => (x === null || x === undefined ? 0 : 1);
  return [version, oldest ? 1 : 0, reader, counter === null ? 0 : 1, counter ?? 0n, dropCounter ? 1 : 0, untie ? 1 : 0,
    round ? 1 : 0, sinkId, pid, err, kind, has(weightDecay), weightDecay ?? 0, has(betas), betas?.[0] ?? 0,
    betas?.[1] ?? 0, has(eps), eps ?? 0, dropAmsgrad ? 1 : 0];
}

export class Rows {
  #words;
  #at;
  constructor(words, fields) {
    this.#words = words;
    this.fields = fields;
    this.stride = fields.length;
    this.#at = Object.fromEntries(fields.map((f, i) => [f, i]));
    this.length = words.length / this.stride;
  }

  /** The word index of a field in a row. */
  index(field) {
    const i = this.#at[field];
    if (i === undefined) throw new Error(`ckptscope: no field ${field} in rows of ${this.fields.join(', ')}`);
    return i;
  }

  get(k, field) {
    return this.#words[k * this.stride + this.index(field)];
  }

  /** Row k as {field: bigint}. */
  row(k) {
    const out = {};
    for (let i = 0; i < this.stride; i++) out[this.fields[i]] = this.#words[k * this.stride + i];
    return out;
  }
}

/** A file's per-slot arrays (Checkpoint.columns()): plain typed arrays, so they cross
 *  postMessage as they are; entries and tensors are rows whose fields `entryFields` and
 *  `tensorFields` name in order (a page rebuilds the accessors from those). */
export class Columns {
  constructor(fields) {
    Object.assign(this, fields);
  }

  get entryRows() {
    return new Rows(this.entries, this.entryFields);
  }

  get tensorRows() {
    return new Rows(this.tensors, this.tensorFields);
  }

  /** Entry k: {id, step, count, offset, mOffset, vOffset} as bigints. */
  entry(k) {
    return this.entryRows.row(k);
  }

  /** Tensor k: {count, offset, dataOffset} as bigints. */
  tensor(k) {
    return this.tensorRows.row(k);
  }
}

export class Binding {
  #core;
  #ex;

  constructor(core) {
    this.#core = core;
    this.#ex = core.exports;
    description ??= describe(core.takeJSON(this.#ex.w_abi()));
    this.abi = description;
    this.codes = description.codes;
    this.NONE = description.NONE;
    first ??= this;
  }

  get core() {
    return this.#core;
  }

  // ---- structs ----------------------------------------------------------------------------

  /** Run fn(ptr) with a zeroed struct `name` in wasm memory; returns [fn's result, the struct
   *  read back as {field: bigint}]. */
  #withWords(name, fn) {
    const fields = this.abi.words[name];
    const p = this.#core.malloc(fields.length * U64_BYTES);
    try {
      const rc = fn(p);
      const w = this.#core.readU64(p, fields.length);
      return [rc, Object.fromEntries(fields.map((f, i) => [f, w[i]]))];
    } finally {
      this.#core.free(p);
    }
  }

  /** Rows of struct `name` (objects {field: bigint}) into wasm memory; the caller frees. */
  #rowsIn(name, rows) {
    const fields = this.abi.words[name];
    return this.#core.u64Array(rows.flatMap((r) => fields.map((f) => {
      if (typeof r[f] !== 'bigint') throw new TypeError(`ckptscope: ${name}.${f} must be a bigint`);
      return r[f];
    })));
  }

  /** A table of pointers (wasm32: the ABI's pointer size) in wasm memory; the caller frees. */
  pointerTable(pointers) {
    const size = this.abi.pointerSize;
    const Ctor = size === Uint32Array.BYTES_PER_ELEMENT ? Uint32Array : null;
    if (!Ctor) throw new Error(`ckptscope: ${size}-byte pointers are not supported`);
    const p = this.#core.malloc(Math.max(1, pointers.length) * size);
    new Ctor(this.#core.memory.buffer, p, pointers.length).set(pointers);
    return p;
  }

  // ---- errors: one ckpt_error per handle ----------------------------------------------------

  /** ckpt_error *w_error_new(void); throws when out of memory. */
  errorNew() {
    const p = this.#ex.w_error_new() >>> 0;
    if (!p) throw new RangeError('out of WebAssembly memory');
    return p;
  }

  /** void w_error_free(ckpt_error *) */
  errorFree(err) {
    if (err) this.#ex.w_error_free(err);
  }

  /** The core's error for a caller's value past 2^64 - 1 (a bigint), as its JSON object. */
  valueTooLarge(big) {
    const err = this.errorNew();
    const text = this.#core.stringIn(big.toString());
    try {
      this.#ex.w_value_too_large(err, text);
      return this.errorTake(err);
    } finally {
      this.#core.free(text);
      this.errorFree(err);
    }
  }

  /** The error as its JSON object (ckpt_error_json; null when there is none), then cleared. */
  errorTake(err) {
    const json = this.#core.takeJSON(this.#ex.ckpt_error_json(err));
    this.#ex.ckpt_error_clear(err);
    return json;
  }

  // ---- schemas ------------------------------------------------------------------------------

  /** ckpt_schema *w_schema_new(n, ranks u64*, dims u64*, flag_count, flags u8*, map u64*,
   *  map_count) from validated arrays; the caller frees it with schemaFree. */
  schemaNew({ ranks, dims, requiresGrad, map }) {
    const core = this.#core;
    const ptrs = [];
    try {
      const r = core.u64Array(ranks); ptrs.push(r);
      const d = core.u64Array(dims); ptrs.push(d);
      const f = core.copyIn(requiresGrad); ptrs.push(f);
      let m = 0;
      if (map) { m = core.u64Array(map); ptrs.push(m); }
      const s = this.#ex.w_schema_new(ranks.length, r, d, requiresGrad.length, f, m, map ? map.length : 0) >>> 0;
      if (!s) throw new RangeError('out of WebAssembly memory building a schema');
      return s;
    } finally {
      ptrs.forEach((p) => core.free(p));
    }
  }

  schemaFree(s) { this.#ex.ckpt_schema_free(s); }
  schemaCount(s) { return this.#ex.ckpt_schema_count(s) >>> 0; }
  schemaWellFormed(s) { return this.#ex.ckpt_schema_is_well_formed(s) !== 0; }
  schemaHasAliases(s) { return this.#ex.ckpt_schema_has_aliases(s) !== 0; }
  /** representative?(slot) as a u64 bigint (NONE for none). */
  schemaRepresentative(s, slot) { return u64(this.#ex.ckpt_schema_representative(s, slot)); }
  schemaOptimizerStateCount(s) { return u64(this.#ex.ckpt_schema_optimizer_state_count(s)); }
  schemaTrainableCount(s) { return u64(this.#ex.ckpt_schema_trainable_count(s)); }
  schemaJSON(s) { return this.#core.takeJSON(this.#ex.ckpt_schema_json(s)); }

  /** The stored tags (w_schema_tags) as bigints. */
  schemaTags(s) {
    const core = this.#core;
    const n = this.schemaCount(s);
    const out = core.malloc(n * U64_BYTES);
    try {
      this.#ex.w_schema_tags(s, out);
      return core.readU64(out, n);
    } finally {
      core.free(out);
    }
  }

  // ---- layouts ------------------------------------------------------------------------------

  /** w_layout *w_layout_new(schema, dtype, const ckpt_config *, keeps_random_counter, family):
   *  dtype and family by name (undefined: not checked / any), config {kind, beta1, ...} words. */
  layoutNew(schema, { dtype, config, keeps = -1, family } = {}) {
    const { constants } = this.abi;
    let cfg = 0;
    try {
      if (config) cfg = this.#rowsIn('config', [config]);
      const p = this.#ex.w_layout_new(schema, dtype ?? constants.DTYPE_ANY, cfg, keeps, family ?? constants.FAMILY_ANY) >>> 0;
      if (!p) throw new RangeError('out of WebAssembly memory');
      return p;
    } finally {
      this.#core.free(cfg);
    }
  }

  /** w_layout *w_layout_of_file(file, err): 0 with err set when the file broke first. */
  layoutOfFile(file, err) { return this.#ex.w_layout_of_file(file, err) >>> 0; }
  layoutFree(l) { this.#ex.w_layout_free(l); }
  /** char *w_check(source, size, layout): the load's report (without bulk arrays). */
  check(srcId, size, layout) { return this.#core.takeJSON(this.#ex.w_check(srcId, size, layout)); }
  /** char *w_diff(a, b) */
  diff(a, b) { return this.#core.takeJSON(this.#ex.w_diff(a, b)); }

  // ---- open files ---------------------------------------------------------------------------

  /** ckpt_file *w_open(source, size, flags, progress, name): 0 when out of memory. `name`: the
   *  file's name or path as the caller gave it (a fact the core may state), or null. */
  open(srcId, size, { stats = false, name = null } = {}, pid = 0) {
    const p = name === null || name === undefined ? 0 : this.#core.stringIn(String(name));
    try {
      return this.#ex.w_open(srcId, size, stats ? this.abi.constants.INSPECT_STATS : 0, pid, p) >>> 0;
    } finally {
      if (p) this.#core.free(p);
    }
  }

  close(file) { this.#ex.ckpt_close(file); }
  /** The report's JSON (w_file_report_json), without its bulk arrays when `bulk` is false. */
  reportJSON(file, { bulk = true } = {}) {
    return this.#core.takeJSON(this.#ex.w_file_report_json(file, bulk ? 0 : this.abi.constants.JSON_NO_BULK));
  }

  /** int w_file_report_write(file, sink, err) */
  reportWrite(file, sinkId, err) { return this.#ex.w_file_report_write(file, sinkId, err); }
  fileErrorCode(file) { return this.#ex.w_file_error_code(file); }
  /** size_t w_file_item_count(file): entries (optimizer) or tensors (state). */
  itemCount(file) { return this.#ex.w_file_item_count(file) >>> 0; }
  /** uint64_t w_file_item_bytes(file, k): the bytes item k's statistics read, a bigint
   *  (CKPT_NONE: no item k). */
  itemBytes(file, k) { return u64(this.#ex.w_file_item_bytes(file, k)); }

  /** The columns (ckpt_columns, laid out as the ABI says), copied out of wasm memory. */
  columns(file) {
    return this.#columns(file, true, (c) => c);
  }

  /** fn(columns) with the columns' arrays as views of wasm memory (no copy): for a reader that
   *  is done with them when fn returns and calls nothing in the core meanwhile (a call can grow
   *  the memory, which detaches every view). fn's result is returned. */
  withColumnView(file, fn) {
    return this.#columns(file, false, fn);
  }

  #columns(file, copy, fn) {
    const core = this.#core, ex = this.#ex;
    const { fields } = this.abi.structs.columns;
    const c = ex.w_columns_new(file) >>> 0;
    if (!c) throw new RangeError('out of WebAssembly memory');
    try {
      const { buffer } = core.memory;
      const view = new DataView(buffer);
      const at = (name) => {
        const f = fields[name];
        if (f.size !== Uint32Array.BYTES_PER_ELEMENT) throw new Error(`ckptscope: columns.${name} is not 32 bits`);
        return view.getUint32(c + f.offset, true);
      };
      const n = at('n'), complete = at('complete') === 1;
      const u64s = copy ? (p, len) => new BigUint64Array(buffer.slice(p, p + U64_BYTES * len))
        : (p, len) => new BigUint64Array(buffer, p, len);
      const u8s = copy ? (p, len) => new Uint8Array(buffer.slice(p, p + len)) : (p, len) => new Uint8Array(buffer, p, len);
      const entryFields = this.abi.words.entryRow, tensorFields = this.abi.words.tensorRow;
      return fn(new Columns({
        n,
        hasMap: at('hasMap') === 1,
        complete,
        dimStart: n || at('dimStart') ? u64s(at('dimStart'), n + 1) : new BigUint64Array(1),
        dims: u64s(at('dims'), at('dimsLen')),
        sizes: u64s(at('sizes'), n),
        tooBig: u8s(at('tooBig'), n),
        flags: u8s(at('flags'), at('flagCount')),
        reps: complete ? u64s(at('reps'), n) : null,
        broken: complete ? u8s(at('broken'), n) : null,
        entries: u64s(at('entries'), entryFields.length * at('entriesLen')),
        tensors: u64s(at('tensors'), tensorFields.length * at('tensorsLen')),
        entryFields,
        tensorFields,
      }));
    } finally {
      ex.w_columns_free(c);
    }
  }

  /** int w_file_entry(file, slot, ckpt_entry_ref *, err): the ref {owner, id, step, count,
   *  offset, mBytes}, or null with err set. */
  fileEntry(file, slot, err) {
    const [rc, ref] = this.#withWords('entryRef', (p) => this.#ex.w_file_entry(file, slot, p, err));
    return rc ? null : ref;
  }

  /** int w_file_tensor(file, i, ckpt_tensor_ref *, err): {count, dataOffset}, or null. */
  fileTensor(file, i, err) {
    const [rc, ref] = this.#withWords('tensorRef', (p) => this.#ex.w_file_tensor(file, i, p, err));
    return rc ? null : ref;
  }

  /** int w_file_read_moments(file, slot, m, v, err) */
  readMoments(file, slot, m, v, err) { return this.#ex.w_file_read_moments(file, slot, m, v, err); }
  /** int w_file_read_tensor(file, i, float *out, err) */
  readTensor(file, i, out, err) { return this.#ex.w_file_read_tensor(file, i, out, err); }
  /** The JSON of w_file_moment_stats / w_file_tensor_stats, or null with err set. */
  momentStats(file, slot, pid, err) { return this.#json(this.#ex.w_file_moment_stats(file, slot, pid, err)); }
  tensorStats(file, i, pid, err) { return this.#json(this.#ex.w_file_tensor_stats(file, i, pid, err)); }

  #json(ptr) {
    ptr >>>= 0;
    return ptr ? this.#core.takeJSON(ptr) : null;
  }

  /** Item k's statistics as packed words (w_file_item_stats_packed: ckpt_packed_stats, then
   *  the words), a copy; null with err set. */
  itemStatsPacked(file, k, pid, err) {
    const core = this.#core;
    const ptr = this.#ex.w_file_item_stats_packed(file, k, pid, err) >>> 0;
    if (!ptr) return null;
    try {
      const head = this.abi.words.packedStats;
      const lengths = core.readU64(ptr, head.length);
      const total = head.length + lengths.reduce((a, b) => a + Number(b), 0);
      return core.readU64(ptr, total);
    } finally {
      core.free(ptr);
    }
  }

  /** int w_file_attach_packed(file, k, words, n, err) */
  attachPacked(file, k, words, err) {
    const p = this.#core.u64Array(words);
    try {
      return this.#ex.w_file_attach_packed(file, k, p, words.length, err);
    } finally {
      this.#core.free(p);
    }
  }

  /** char *w_pair(opt, state, progress): the pairing JSON. */
  pair(opt, state, pid) { return this.#core.takeJSON(this.#ex.w_pair(opt, state, pid)); }

  /** char *w_pair_with(opt, state, names, name_count, frozen, frozen_count, trained, trainedLabel,
   *  modelLabel, worldSize, progress): the pairing JSON; the state file ordered by `names` first
   *  (null: by shape, for a family that keeps no module order), `frozen` the names given as frozen
   *  (null: none), `trained` the optimizer's own model's file (0: none), the labels null for the
   *  core's, `worldSize` the one a DeepSpeed checkpoint will be loaded on (0: not given); state 0
   *  with names: a DeepSpeed checkpoint paired with the new model's names alone. */
  pairWith(opt, state, { names = null, frozen = null, trained = 0, trainedLabel = null, modelLabel = null, worldSize = 0 } = {}, pid) {
    const core = this.#core;
    const ptrs = [];
    const string = (text) => {
      if (text === null) return 0;
      const p = core.stringIn(text);
      ptrs.push(p);
      return p;
    };
    const table = (list) => {
      if (!list) return 0;
      const p = this.pointerTable(list.map(string));
      ptrs.push(p);
      return p;
    };
    try {
      return core.takeJSON(this.#ex.w_pair_with(opt, state, table(names), names ? names.length : 0, table(frozen),
        frozen ? frozen.length : 0, trained, string(trainedLabel), string(modelLabel), worldSize, pid));
    } finally {
      ptrs.forEach((p) => core.free(p));
    }
  }

  /** int ckpt_set_kind(file, kind, err): the kind (an id of abi.kinds) of an optimizer whose
   *  files do not say it (a PyTorch file, a DeepSpeed or DCP folder); the core's refusal as its
   *  error JSON, or null. */
  setKind(file, kind) {
    const err = this.errorNew();
    try {
      return this.#ex.ckpt_set_kind(file, kind, err) ? this.errorTake(err) : null;
    } finally {
      this.errorFree(err);
    }
  }

  /** int ckpt_logged_lr_agrees(lr, logged): true, false, or null (cannot tell). */
  loggedLrAgrees(lr, logged) {
    const r = this.#ex.ckpt_logged_lr_agrees(lr, logged);
    return r < 0 ? null : r === 1;
  }

  /** char *w_health(opt, state, lr, band?, low, high, first, count, progress, err): JSON, or null
   *  with err set. `band`: [low, high], or null for the core's default band. */
  health(opt, state, lr, band, first, count, pid, err) {
    return this.#json(this.#ex.w_health(opt, state, lr, band ? 1 : 0, band ? band[0] : 0, band ? band[1] : 0, first, count, pid, err));
  }

  /** The core's refusal of a ratio band [low, high] as its error JSON, or null when it is one. */
  ratioBandError(low, high) {
    const err = this.errorNew();
    try {
      return this.#ex.w_health_ratio_band(low, high, err) ? this.errorTake(err) : null;
    } finally {
      this.errorFree(err);
    }
  }

  // ---- export -------------------------------------------------------------------------------

  /** The export formats and .npy payloads the core writes, by name. */
  exportFormats() { return this.#named('EXPORT_'); }
  npyPayloads() { return this.#named('NPY_'); }

  #named(prefix) {
    const out = {};
    for (const [k, v] of Object.entries(this.abi.constants)) if (k.startsWith(prefix)) out[k.slice(prefix.length).toLowerCase()] = v;
    return out;
  }

  /** int w_export(file, format, names char**, name_count, slots u64*, slot_count, sink,
   *  progress, err); names: pointers to NUL-terminated strings already in wasm memory. */
  exportTo(file, format, namePtrs, slotsPtr, slotCount, sinkId, pid, err, ptrs) {
    let table = 0;
    if (namePtrs) {
      table = this.pointerTable(namePtrs);
      ptrs.push(table);
    }
    return this.#ex.w_export(file, this.exportFormats()[format], table, namePtrs ? namePtrs.length : 0, slotsPtr, slotCount, sinkId, pid, err);
  }

  /** int w_export_npy(file, slot, what, sink, err) */
  exportNpy(file, slot, what, sinkId, err) { return this.#ex.w_export_npy(file, slot, this.npyPayloads()[what], sinkId, err); }

  // ---- runs ---------------------------------------------------------------------------------

  /** char *w_run(const ckpt_file *const *opts, const ckpt_file *const *states, n, double lr,
   *  int band, double low, double high, double residual_limit, progress, err): opts and states
   *  open files (a state 0 for none), lr NaN for none, band [low, high] or null (the default),
   *  residualLimit NaN for the default; the JSON, or null with err set. */
  run(opts, states, lr, band, residualLimit, pid, err) {
    const core = this.#core;
    const ptrs = [];
    try {
      const o = this.pointerTable(opts); ptrs.push(o);
      const s = this.pointerTable(states); ptrs.push(s);
      return this.#json(this.#ex.w_run(o, s, opts.length, lr, band ? 1 : 0, band ? band[0] : 0, band ? band[1] : 0, residualLimit, pid, err));
    } finally {
      ptrs.forEach((p) => core.free(p));
    }
  }

  /** int w_run_export_gradient(a, b, format, names char**, name_count, slots u64*, slot_count,
   *  sink, progress, err): names and the rest as for exportTo. */
  exportGradient(a, b, format, namePtrs, slotsPtr, slotCount, sinkId, pid, err, ptrs) {
    let table = 0;
    if (namePtrs) {
      table = this.pointerTable(namePtrs);
      ptrs.push(table);
    }
    return this.#ex.w_run_export_gradient(a, b, this.exportFormats()[format], table, namePtrs ? namePtrs.length : 0, slotsPtr, slotCount, sinkId, pid, err);
  }

  // ---- TorchLean's readers and conversion (format.md 8) --------------------------------------

  /** char *ckpt_reader_names_json(void): the readers' names in id order. */
  readerNames() { return this.#json(this.#ex.ckpt_reader_names_json()); }

  /** int ckpt_reader_by_name(const char *): the reader's id, or -1. */
  readerByName(name) {
    const p = this.#core.stringIn(String(name));
    try {
      return this.#ex.ckpt_reader_by_name(p);
    } finally {
      this.#core.free(p);
    }
  }

  /** void w_layout_set_reader(w_layout *, int reader): which reader loads into the layout. */
  layoutSetReader(layout, reader) { this.#ex.w_layout_set_reader(layout, reader); }

  /** char *w_convert(file, version u64, oldest, reader, supply_counter, counter u64,
   *  drop_counter, untie, round_to_float32, sink, progress, err, kind, has_weight_decay, weight
   *  decay, has_betas, beta1, beta2, has_eps, eps, drop_amsgrad): the result JSON, or null with
   *  err set. */
  convert(file, options, sinkId, pid, err) {
    return this.#json(this.#ex.w_convert(file, ...convertArgs(options, sinkId, pid, err)));
  }

  /** int w_convert_torch(file, state file (0: none), has_lr, lr double, prefix char* (0: none),
   *  sink, progress, err): 0, or the code with err set. */
  convertTorch(file, stateFile, lr, prefix, sinkId, pid, err) {
    const p = prefix === null || prefix === undefined ? 0 : this.#core.stringIn(String(prefix));
    try {
      return this.#ex.w_convert_torch(file, stateFile || 0, lr === null || lr === undefined ? 0 : 1, lr ?? 0, p, sinkId, pid, err);
    } finally {
      if (p) this.#core.free(p);
    }
  }

  /** ckpt_universal *w_universal_plan(file, err): a DeepSpeed folder's universal checkpoint (0
   *  with err set: a refusal); w_universal_json(plan): {files, warnings, tag};
   *  w_universal_write(plan, index u64, sink, err): 0, or the code with err set;
   *  w_universal_free(plan). */
  universalPlan(file, err) { return this.#ex.w_universal_plan(file, err) >>> 0; }
  universalJSON(plan) { return this.#json(this.#ex.w_universal_json(plan)); }
  universalWrite(plan, index, sinkId, err) { return this.#ex.w_universal_write(plan, BigInt(index), sinkId, err); }
  universalFree(plan) { this.#ex.w_universal_free(plan); }

  /** int w_ds_consolidate(file, which (1 optimizer, 2 model), prefix char* (0: none), sink,
   *  progress, err): DeepSpeed to a consolidated torch.save file; 0, or the code with err set. */
  dsConsolidate(file, which, prefix, sinkId, pid, err) {
    const p = prefix === null || prefix === undefined ? 0 : this.#core.stringIn(String(prefix));
    try {
      return this.#ex.w_ds_consolidate(file, which, p, sinkId, pid, err);
    } finally {
      if (p) this.#core.free(p);
    }
  }

  /** char *w_dcp_write(opt file, model file, torch113, checkpoint_id char* (0: none), save_id char*
   *  (0: none), data sink, metadata sink, progress, err): an optimizer file and its model as a DCP
   *  folder, __0_0.distcp's bytes then .metadata's; the result {keys, modelKeys, tensors,
   *  bytesItems, dataBytes, dataFile}, or null with err set. */
  dcpWrite(opt, model, { torch113, checkpointId, saveId }, dataSink, metaSink, pid, err) {
    const strings = [checkpointId, saveId].map((s) => (s === null || s === undefined ? 0 : this.#core.stringIn(String(s))));
    try {
      return this.#json(this.#ex.w_dcp_write(opt, model, torch113 ? 1 : 0, strings[0], strings[1], dataSink, metaSink, pid, err));
    } finally {
      strings.forEach((p) => p && this.#core.free(p));
    }
  }

  /** int w_convert_ids(file, stored, prefix char* (0: none), sink, progress, err): a name-keyed
   *  PyTorch optimizer paired with its model as an id-keyed torch.optim state dict; 0, or the
   *  code with err set. */
  convertIds(file, stored, prefix, sinkId, pid, err) {
    const p = prefix === null || prefix === undefined ? 0 : this.#core.stringIn(String(prefix));
    try {
      return this.#ex.w_convert_ids(file, stored ? 1 : 0, p, sinkId, pid, err);
    } finally {
      if (p) this.#core.free(p);
    }
  }

  /** char *w_convert_ids_warnings(file, stored, err): that conversion's warnings, texts; null
   *  with err set when it is refused. */
  convertIdsWarnings(file, stored, err) {
    return this.#json(this.#ex.w_convert_ids_warnings(file, stored ? 1 : 0, err));
  }

  /** int w_dcp_consolidate(file, which (1 optimizer, 2 model), prefix char* (0: none), sink,
   *  progress, err): a DCP folder to a consolidated torch.save file; 0, or the code with err set. */
  dcpConsolidate(file, which, prefix, sinkId, pid, err) {
    const p = prefix === null || prefix === undefined ? 0 : this.#core.stringIn(String(prefix));
    try {
      return this.#ex.w_dcp_consolidate(file, which, p, sinkId, pid, err);
    } finally {
      if (p) this.#core.free(p);
    }
  }

  /** char *w_dcp_consolidate_warnings(file): a DCP conversion's warnings, texts. */
  dcpConsolidateWarnings(file) { return this.#json(this.#ex.w_dcp_consolidate_warnings(file)); }

  /** char *w_ds_consolidate_warnings(file): a DeepSpeed conversion's warnings, texts. */
  dsConsolidateWarnings(file) { return this.#json(this.#ex.w_ds_consolidate_warnings(file)); }

  /** char *w_ds_convert(file, the options of w_convert, frozen names): DeepSpeed to TLADAMF
   *  through the consolidated pair; the result JSON, or null with err set. */
  dsConvert(file, options, sinkId, pid, err) { return this.#pairConvert(this.#ex.w_ds_convert, file, options, sinkId, pid, err); }

  /** char *w_dcp_convert(file, the options of w_convert, frozen names): a DCP folder to TLADAMF
   *  through the consolidated pair; the result JSON, or null with err set. */
  dcpConvert(file, options, sinkId, pid, err) { return this.#pairConvert(this.#ex.w_dcp_convert, file, options, sinkId, pid, err); }

  #pairConvert(fn, file, options, sinkId, pid, err) {
    const { frozen = null } = options;
    const core = this.#core;
    const names = frozen ? frozen.map((n) => core.stringIn(String(n))) : [];
    const table = frozen ? this.pointerTable(names) : 0;
    try {
      return this.#json(fn(file, ...convertArgs(options, sinkId, pid, err), table, names.length));
    } finally {
      names.forEach((p) => core.free(p));
      if (table) core.free(table);
    }
  }

  // ---- writers ------------------------------------------------------------------------------

  /** int w_write(schema, dtype, const ckpt_config *, counter u64* (0: none), const
   *  ckpt_entry_meta *, payloads void**, entry_count, version, sink, err). entries: [{id, step,
   *  count, m, v}] with m, v byte arrays; every pointer made is pushed on ptrs (freed by the
   *  caller). */
  write({ schema, dtype, config, counter, entries, version }, sinkId, err, ptrs) {
    const core = this.#core;
    const cfg = this.#rowsIn('config', [config]); ptrs.push(cfg);
    let cnt = 0;
    if (counter !== null) { cnt = core.u64Array([counter]); ptrs.push(cnt); }
    const meta = this.#rowsIn('entryMeta', entries.map((e) => ({ id: e.id, step: e.step, count: e.count, mBytes: BigInt(e.m.byteLength), vBytes: BigInt(e.v.byteLength) })));
    ptrs.push(meta);
    const payloads = [];
    for (const e of entries) {
      const pm = core.copyIn(e.m); ptrs.push(pm);
      const pv = core.copyIn(e.v); ptrs.push(pv);
      payloads.push(pm, pv);
    }
    const table = this.pointerTable(payloads); ptrs.push(table);
    return this.#ex.w_write(schema, dtype, cfg, cnt, meta, table, entries.length, version, sinkId, err);
  }

  /** int w_state_write(family, shapes, values void**, value_bytes u64*, sink, err) */
  stateWrite(family, schema, values, sinkId, err, ptrs) {
    const core = this.#core;
    const pointers = values.map((b) => {
      const p = core.copyIn(b);
      ptrs.push(p);
      return p;
    });
    const table = this.pointerTable(pointers); ptrs.push(table);
    const lengths = core.u64Array(values.map((b) => BigInt(b.byteLength))); ptrs.push(lengths);
    return this.#ex.w_state_write(family, schema, table, lengths, sinkId, err);
  }

  // ---- Hugging Face Trainer folders (src/families/hf_trainer/) ---------------------

  /** fn(table, n) with names as a char ** table of NUL-terminated strings in wasm memory. */
  #withNames(names, fn) {
    const core = this.#core;
    const ptrs = [];
    try {
      const strings = names.map((n) => {
        const p = core.stringIn(String(n));
        ptrs.push(p);
        return p;
      });
      const table = this.pointerTable(strings);
      ptrs.push(table);
      return fn(table, names.length);
    } finally {
      ptrs.forEach((p) => core.free(p));
    }
  }

  /** char *ckpt_trainer_folder_json(names char**, n): {optimizer, model, modelIndex,
   *  trainerState, trainingArgs, scheduler}, each a name among names or null. */
  trainerFolder(names) { return this.#withNames(names, (t, n) => this.#core.takeJSON(this.#ex.ckpt_trainer_folder_json(t, n))); }

  /** char *ckpt_trainer_checkpoints_json(names char**, n): [{name, step}] of the checkpoint-{N}
   *  names, by N. */
  trainerCheckpoints(names) { return this.#withNames(names, (t, n) => this.#core.takeJSON(this.#ex.ckpt_trainer_checkpoints_json(t, n))); }

  /** char *ckpt_model_index_shards_json(text, len, name, err): the shards' names (bytes: the
   *  index's text), or null with err set. */
  modelIndexShards(bytes, name, err) {
    const core = this.#core;
    const text = core.copyIn(bytes);
    const nm = core.stringIn(String(name));
    try {
      return this.#json(this.#ex.ckpt_model_index_shards_json(text, bytes.byteLength, nm, err));
    } finally {
      core.free(text);
      core.free(nm);
    }
  }

  // ---- Accelerate folders (src/families/accelerate/) -------------------------------

  /** char *ckpt_accelerate_folder_json(names char**, n): {accelerate, distributed, files:
   *  [{name, role, index, process, rank}], pairs: [{index, model, modelForm, optimizer,
   *  optimizerForm, reader, note}]}; subfolders' names end in '/'. */
  accelerateFolder(names) { return this.#withNames(names, (t, n) => this.#core.takeJSON(this.#ex.ckpt_accelerate_folder_json(t, n))); }

  /** char *ckpt_accelerate_checkpoints_json(names char**, n): [{name, iteration}] of the
   *  checkpoint_{k} names, by k. */
  accelerateCheckpoints(names) { return this.#withNames(names, (t, n) => this.#core.takeJSON(this.#ex.ckpt_accelerate_checkpoints_json(t, n))); }

  /** char *w_accelerate_random_states(source, size, name, err): {step, keys, keyCount}, or null
   *  with err set. */
  accelerateRandomStates(srcId, size, name, err) {
    const nm = this.#core.stringIn(String(name));
    try {
      return this.#json(this.#ex.w_accelerate_random_states(srcId, size, nm, err));
    } finally {
      this.#core.free(nm);
    }
  }

  // ---- DeepSpeed folders (src/families/deepspeed/names.c) --------------------------

  /** fn(text, len, err) of a folder's listing (a JSON text) in wasm memory: its JSON answer. */
  #listingJson(fn, listing, err) {
    const core = this.#core;
    const bytes = new TextEncoder().encode(listing);
    const text = core.copyIn(bytes);
    try {
      return this.#json(fn(text, bytes.byteLength, err));
    } finally {
      core.free(text);
    }
  }

  /** char *ckpt_deepspeed_folder_json(listing, len, err): what a folder is to DeepSpeed, from
   *  its listing (a JSON text): null, {family, read, readLimit} or {family, read: [], tag,
   *  members, size, header}; null with err set for a listing that is not one. */
  deepspeedFolder(listing, err) { return this.#listingJson(this.#ex.ckpt_deepspeed_folder_json, listing, err); }

  // ---- DCP folders (src/families/dcp/folder.c) -------------------------------------------

  /** char *ckpt_dcp_folder_json(listing, len, err): what a folder is to DCP, from its listing
   *  (a JSON text, as deepspeedFolder takes it): {family: null, read: []} or {family: 'DCP',
   *  read: [], tag: null, members, size, header}; null with err set for a listing that is not one. */
  dcpFolder(listing, err) { return this.#listingJson(this.#ex.ckpt_dcp_folder_json, listing, err); }

  /** char *ckpt_dcp_run_json(listing, len, err): the DCP folders of a folder (torchtitan's
   *  checkpoint/ of step-{N}/) in run order, from its listing (as dcpFolder takes it): [names];
   *  null with err set for a listing that is not one. */
  dcpRun(listing, err) { return this.#listingJson(this.#ex.ckpt_dcp_run_json, listing, err); }

  /** int ckpt_trainer_lr_logged_at(text, len): which entry logs an update's rate, by config.json's
   *  transformers_version (bytes: its text): 'a' (A's step), 'b' (B's step), or null (unknown). */
  trainerLrLoggedAt(bytes) {
    const core = this.#core;
    const text = core.copyIn(bytes);
    try {
      return [null, 'a', 'b'][this.#ex.ckpt_trainer_lr_logged_at(text, bytes.byteLength)] ?? null;
    } finally {
      core.free(text);
    }
  }

  /** char *w_training_args(source, size, err) / w_trainer_state: the file read as JSON, or null
   *  with err set. */
  trainingArgs(srcId, size, err) { return this.#json(this.#ex.w_training_args(srcId, size, err)); }
  trainerState(srcId, size, err) { return this.#json(this.#ex.w_trainer_state(srcId, size, err)); }
}
