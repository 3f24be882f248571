// The report as it travels from the worker to the page. A million-slot report is a million
// small arrays; cloning that object graph through postMessage takes over a second, so the
// worker packs the per-slot and per-entry arrays into typed arrays (transferred, not copied)
// and the page reads them through ReportModel's accessors. Reports with values past 2^53
// (decimal strings) or entries carrying statistics keep those parts as plain JSON.

const safe = (x) => typeof x === 'number';

/** Worker side: {meta, columns, transfer} for postMessage(…, transfer). */
export function packReport(report) {
  const { schema, entries, ...meta } = report;
  const columns = {};
  const transfer = [];
  let plainSchema = schema;
  if (schema && schema.sizes.every(safe) && schema.shapes.every((s) => s.every(safe)) &&
      (schema.effectiveRepresentatives ?? []).every((r) => r === null || safe(r))) {
    const n = schema.shapes.length;
    const start = new Uint32Array(n + 1);
    let total = 0;
    for (let i = 0; i < n; i++) {
      start[i] = total;
      total += schema.shapes[i].length;
    }
    start[n] = total;
    const dims = new Float64Array(total);
    for (let i = 0, at = 0; i < n; i++) for (const d of schema.shapes[i]) dims[at++] = d;
    const flags = new Int8Array(n).fill(-1);   // -1: not read (the file broke first)
    schema.requiresGrad.forEach((g, i) => (flags[i] = g ? 1 : 0));
    const reps = schema.effectiveRepresentatives ? Float64Array.from(schema.effectiveRepresentatives, (r) => (r === null ? -1 : r)) : null;
    Object.assign(columns, { start, dims, sizes: Float64Array.from(schema.sizes), flags, reps, hasMap: schema.representatives !== null });
    transfer.push(start.buffer, dims.buffer, columns.sizes.buffer, flags.buffer);
    if (reps) transfer.push(reps.buffer);
    plainSchema = null;
  }
  let plainEntries = entries;
  if (!entries.some((e) => e.m) && entries.every((e) => safe(e.id) && safe(e.step) && safe(e.count) && safe(e.offset))) {
    const table = new Float64Array(4 * entries.length);
    entries.forEach((e, k) => table.set([e.id, e.step, e.count, e.offset], 4 * k));
    columns.entries = table;
    transfer.push(table.buffer);
    plainEntries = null;
  }
  return { packed: { meta, hasSchema: !!schema, plainSchema, plainEntries, columns }, transfer };
}

/** Page side: the report, read slot by slot and entry by entry. */
export class ReportModel {
  constructor({ meta, hasSchema, plainSchema, plainEntries, columns }) {
    Object.assign(this, meta);
    this.hasSchema = hasSchema;
    this.plainSchema = plainSchema;
    this.columns = columns;
    this.setEntries(plainEntries);
  }

  /** Slots read. */
  get n() {
    if (!this.hasSchema) return 0;
    return this.plainSchema ? this.plainSchema.shapes.length : this.columns.sizes.length;
  }

  shape(i) {
    if (this.plainSchema) return this.plainSchema.shapes[i];
    const { start, dims } = this.columns;
    return Array.from(dims.subarray(start[i], start[i + 1]));
  }

  /** Elements of slot i (a decimal string past 2^53). Not `size`: that is the file's size. */
  slotSize(i) {
    return this.plainSchema ? this.plainSchema.sizes[i] : this.columns.sizes[i];
  }

  /** true, false, or undefined when the flag was not read. */
  trainable(i) {
    if (this.plainSchema) return this.plainSchema.requiresGrad[i];
    const f = this.columns.flags[i];
    return f < 0 ? undefined : f === 1;
  }

  /** Whether the sharing map (stored or implied) was read. */
  get repsKnown() {
    return this.plainSchema ? this.plainSchema.effectiveRepresentatives !== null : this.columns.reps !== null;
  }

  /** representative?(i): a slot, null for none; undefined when the map was not read. */
  rep(i) {
    if (!this.repsKnown) return undefined;
    if (this.plainSchema) return this.plainSchema.effectiveRepresentatives[i];
    const r = this.columns.reps[i];
    return r < 0 ? null : r;
  }

  /** Representatives as a Float64Array (-1 none), for the sharing map. */
  repsArray() {
    if (!this.repsKnown) return new Float64Array(this.n).fill(-1);
    if (!this.plainSchema) return this.columns.reps;
    return Float64Array.from(this.plainSchema.effectiveRepresentatives, (r) => (r === null ? -1 : Number(r)));
  }

  flagsArray() {
    if (!this.plainSchema) return this.columns.flags;
    const f = new Int8Array(this.n).fill(-1);
    this.plainSchema.requiresGrad.forEach((g, i) => (f[i] = g ? 1 : 0));
    return f;
  }

  setEntries(plain) {
    this.plainEntries = plain;
    this.entryCache = new Map();
  }

  get entryTotal() {
    return this.plainEntries ? this.plainEntries.length : this.columns.entries.length / 4;
  }

  /** Entry k as {id, step, count, offset, m?, v?}; the same object each time it is asked for. */
  entry(k) {
    if (this.plainEntries) return this.plainEntries[k];
    let e = this.entryCache.get(k);
    if (!e) {
      const t = this.columns.entries;
      e = { id: t[4 * k], step: t[4 * k + 1], count: t[4 * k + 2], offset: t[4 * k + 3] };
      this.entryCache.set(k, e);
    }
    return e;
  }

  /** The JSON report of DESIGN.md, rebuilt in full (for export). */
  toJSON() {
    const out = {};
    for (const [k, v] of Object.entries(this)) {
      if (['hasSchema', 'plainSchema', 'columns', 'plainEntries', 'entryCache'].includes(k)) continue;
      out[k] = v;
    }
    let schema = null;
    if (this.hasSchema) {
      schema = this.plainSchema ?? {
        shapes: Array.from({ length: this.n }, (_, i) => this.shape(i)),
        sizes: Array.from(this.columns.sizes),
        requiresGrad: Array.from(this.columns.flags).filter((f) => f >= 0).map((f) => f === 1),
        representatives: this.columns.hasMap ? Array.from({ length: this.n }, (_, i) => this.rep(i)) : null,
        effectiveRepresentatives: this.repsKnown ? Array.from({ length: this.n }, (_, i) => this.rep(i)) : null,
      };
    }
    const entries = Array.from({ length: this.entryTotal }, (_, k) => this.entry(k));
    // The DESIGN.md field order: schema after hasRandomCounter, entries after entryCount.
    const ordered = {};
    for (const [k, v] of Object.entries(out)) {
      ordered[k] = v;
      if (k === 'hasRandomCounter') ordered.schema = schema;
      if (k === 'entryCount') ordered.entries = entries;
    }
    return ordered;
  }
}
