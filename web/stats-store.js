// Statistics on the page: what a full scan returned (one row of numbers per entry or tensor) and
// what single clicks fetched (the core's statistics objects), read by field. A value that was
// never computed is null, never 0: a filter must not count slots it has no statistics for.
// Every view asks here (fetch, scan) and hears the store's 'stats' event when something arrived.
import { plural, ranOn } from './format.js';

const ENTRY_FIELDS = {
  mMean: (s) => s.m.mean, mRms: (s) => s.m.rms, vMean: (s) => s.v.mean, unhealthy: (s) => s.unhealthy,
  nan: (s) => Number(s.m.nan) + Number(s.v.nan), inf: (s) => Number(s.m.inf) + Number(s.v.inf), negative: (s) => s.v.negative,
};
const TENSOR_FIELDS = {
  mean: (s) => s.values.mean, rms: (s) => s.values.rms, min: (s) => s.values.min, max: (s) => s.values.max,
  nan: (s) => s.values.nan, inf: (s) => s.values.inf,
};

export class StatsStore {
  /** rpc: the worker; status(text): the status line; onScanProgress(fraction | null): the status
   *  line's progress bar (null: no scan runs). */
  constructor(store, { rpc, status, onScanProgress }) {
    Object.assign(this, { store, rpc, status, onScanProgress });
    this.clear();
  }

  /** One item's statistics (an entry's moments, a tensor's values), kept once fetched. */
  async fetch(file, slot, onProgress) {
    const kind = file.cols.kind;
    const have = this.get(kind, slot);
    if (have) return have;
    const s = await this.rpc.request('stats', { role: this.store.roleOf(file), slot }, { onProgress });
    if (this.store.files[this.store.roleOf(file)] === file) {
      this.put(kind, slot, s);
      this.store.emit('stats', { kind });
    }
    return s;
  }

  /** Statistics of every entry (kind 'optimizer') or tensor ('state'), with progress and Cancel
   *  in the status line; `quiet`: neither (a small file's scan that follows its health pass). */
  async scan(kind, { quiet = false } = {}) {
    const file = kind === 'optimizer' ? this.store.optimizer : this.store.stateFile;
    if (!file || this.scanning) return;
    const role = this.store.roleOf(file);
    this.scanning = true;
    if (!quiet) this.onScanProgress(0, file.name);
    this.store.emit('stats', { kind });
    const what = kind === 'optimizer' ? ['entry', 'entries'] : ['tensor', 'tensors'];
    if (!quiet) this.status(`Computing statistics of every ${what[0]}…`);
    const started = performance.now();
    try {
      const result = await this.rpc.request('scan', { role }, { onProgress: ({ done, total }) => quiet || this.onScanProgress(total ? done / total : 1, file.name) });
      if (this.store.files[role] !== file) return;
      this.setScan(kind, result);
      if (!quiet) this.status(`Statistics for ${plural(result.ids.length, ...what)} in ${Math.round(performance.now() - started)} ms${ranOn(result.server)}.`);
    } catch (err) {
      if (!quiet || err.name !== 'AbortError') this.status(err.name === 'AbortError' ? 'Statistics scan cancelled: statistics are not computed.' : `Statistics failed: ${err.message}`);
    } finally {
      this.scanning = false;
      if (!quiet) this.onScanProgress(null);
      this.store.emit('stats', { kind });
    }
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
    return cols ? this.ofEntry(cols.entryFor(i), field) : null;
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
