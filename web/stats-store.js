// Statistics on the page: what a full scan returned (one row of numbers per entry or tensor) and
// what single clicks fetched (the core's statistics objects), read by field. A value that was
// never computed is null, never 0: a filter must not count slots it has no statistics for.

const ENTRY_FIELDS = {
  mMean: (s) => s.m.mean, mRms: (s) => s.m.rms, vMean: (s) => s.v.mean, unhealthy: (s) => s.unhealthy,
  nan: (s) => Number(s.m.nan) + Number(s.v.nan), inf: (s) => Number(s.m.inf) + Number(s.v.inf), negative: (s) => s.v.negative,
};
const TENSOR_FIELDS = {
  mean: (s) => s.values.mean, rms: (s) => s.values.rms, min: (s) => s.values.min, max: (s) => s.values.max,
  nan: (s) => s.values.nan, inf: (s) => s.values.inf,
};

export class StatsStore {
  constructor(store) {
    this.store = store;
    this.clear();
  }

  clear() {
    this.scans = { optimizer: null, state: null };   // {rows, fields, col: {field: index}}
    this.single = { optimizer: new Map(), state: new Map() };   // slot -> the core's statistics
    this.scanning = false;
  }

  /** Forget the state file's statistics (another state file came). */
  clearState() {
    this.scans.state = null;
    this.single.state = new Map();
  }

  get scanned() {
    return this.scans.optimizer !== null;
  }

  setScan(kind, { rows, fields }) {
    const col = Object.fromEntries(fields.map((f, k) => [f, k]));
    this.scans[kind] = { rows, fields, col, width: fields.length };
  }

  put(kind, slot, stats) {
    this.single[kind].set(slot, stats);
  }

  get(kind, slot) {
    return this.single[kind].get(slot) ?? null;
  }

  /** Entry k's field (optimizer file), or null when not computed. */
  ofEntry(k, field) {
    if (k < 0) return null;
    const scan = this.scans.optimizer;
    if (scan) return scan.rows[k * scan.width + scan.col[field]];
    const cols = this.store.optimizer?.cols;
    const s = cols ? this.single.optimizer.get(cols.entryId(k)) : null;
    return s ? Number(ENTRY_FIELDS[field](s)) : null;
  }

  /** Slot i's moments' field (a tied slot: its owner's). */
  ofSlot(i, field) {
    const cols = this.store.optimizer?.cols;
    if (!cols) return null;
    let k = cols.entryOfSlot[i];
    if (k < 0) {
      const r = cols.repAt(i);
      if (r >= 0 && r < cols.n && !cols.broken(i)) k = cols.entryOfSlot[r];
    }
    return this.ofEntry(k, field);
  }

  /** Tensor i's field (state file), or null. */
  ofTensor(i, field) {
    const scan = this.scans.state;
    if (scan) return scan.rows[i * scan.width + scan.col[field]];
    const s = this.single.state.get(i);
    return s ? Number(TENSOR_FIELDS[field](s)) : null;
  }

  paramOfSlot(i, field) {
    return this.store.stateFile && i < this.store.stateFile.cols.tensorTotal ? this.ofTensor(i, field) : null;
  }
}
