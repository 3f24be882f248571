// The one accessor the page reads a file through: the summary (the report without per-slot
// arrays) and the typed arrays of Checkpoint.columns(), transferred from the worker as they
// are. Nothing here builds a JS object per slot up front; 64-bit columns are read through a
// 32-bit view of the same buffer (exact below 2^53; a decimal string past it).

const TWO32 = 2 ** 32;
const SAFE_HIGH = 2 ** 21;   // a high word below this keeps the value under 2^53

function words(big) {
  return big ? new Uint32Array(big.buffer, big.byteOffset, big.length * 2) : null;
}

/** The exact value of 64-bit element i: a number, or a decimal string past 2^53 - 1. */
function exactAt(w, big, i) {
  const hi = w[2 * i + 1];
  return hi < SAFE_HIGH ? hi * TWO32 + w[2 * i] : big[i].toString();
}

/** The value as a double (for sorting and scales only). */
const approxAt = (w, i) => w[2 * i + 1] * TWO32 + w[2 * i];

const isNone = (w, i) => w[2 * i] === 0xffffffff && w[2 * i + 1] === 0xffffffff;

/** Rows of u64 words (columns.entries, columns.tensors) read through their 32-bit halves, by
 *  the field names Checkpoint.columns() gives in order (entryFields, tensorFields). */
class Rows {
  constructor(big, fields) {
    this.big = big;
    this.w = words(big);
    this.stride = fields.length;
    this.at = Object.fromEntries(fields.map((f, i) => [f, i]));
    this.length = big.length / this.stride;
  }

  exact(k, field) {
    return exactAt(this.w, this.big, k * this.stride + this.at[field]);
  }

  approx(k, field) {
    return approxAt(this.w, k * this.stride + this.at[field]);
  }
}

export class FileColumns {
  constructor(summary, columns) {
    this.summary = summary;
    this.c = columns;
    this.kind = summary.kind;
    this.n = columns.n;
    this.dimStart = words(columns.dimStart);
    this.dims = words(columns.dims);
    this.sizes = words(columns.sizes);
    this.entries = new Rows(columns.entries, columns.entryFields);
    this.tensors = new Rows(columns.tensors, columns.tensorFields);
    this.repsWords = this.kind === 'optimizer' && columns.reps ? words(columns.reps) : null;
    this.entryTotal = this.entries.length;
    this.tensorTotal = this.tensors.length;
    // slot -> entry index (-1 none): one pass over the entries, no objects.
    this.entryOfSlot = new Int32Array(this.n).fill(-1);
    for (let k = 0; k < this.entryTotal; k++) {
      const id = this.entries.approx(k, 'id');
      if (id < this.n) this.entryOfSlot[id] = k;
    }
    this.sharing = this.#sharing();   // no ties when the map was not read
  }

  get ok() {
    return this.summary.ok;
  }

  /** Whether the schema (or the tensor table) was reached at all. */
  get hasSlots() {
    return this.kind === 'state' ? this.summary.tensorCount !== null || this.n > 0 : this.summary.schema !== null;
  }

  rank(i) {
    return approxAt(this.dimStart, i + 1) - approxAt(this.dimStart, i);
  }

  shape(i) {
    const from = approxAt(this.dimStart, i), to = approxAt(this.dimStart, i + 1);
    const out = new Array(to - from);
    for (let k = from; k < to; k++) out[k - from] = exactAt(this.dims, this.c.dims, k);
    return out;
  }

  shapeText(i) {
    return `[${this.shape(i).join(', ')}]`;
  }

  /** Elements of slot i, exact. */
  size(i) {
    return exactAt(this.sizes, this.c.sizes, i);
  }

  sizeApprox(i) {
    return approxAt(this.sizes, i);
  }

  /** true, false, or undefined when the flag was not read (the file broke first). */
  trainable(i) {
    if (this.kind !== 'optimizer' || i >= this.c.flags.length) return undefined;
    return this.c.flags[i] === 1;
  }

  get repsKnown() {
    return this.repsWords !== null;
  }

  /** The slot whose storage slot i uses; null for none; undefined when the map was not read. */
  rep(i) {
    if (!this.repsWords) return undefined;
    return isNone(this.repsWords, i) ? null : exactAt(this.repsWords, this.c.reps, i);
  }

  /** The sharing-map rule rejects slot i. */
  broken(i) {
    return this.c.broken?.[i] === 1;
  }

  /** Entry k: {id, step, count, offset, mOffset, vOffset}, exact. */
  entry(k) {
    const e = this.entries;
    return { index: k, id: e.exact(k, 'id'), step: e.exact(k, 'step'), count: e.exact(k, 'count'), offset: e.exact(k, 'offset'), mOffset: e.exact(k, 'mOffset'), vOffset: e.exact(k, 'vOffset') };
  }

  entryId(k) {
    return this.entries.approx(k, 'id');
  }

  entryStep(k) {
    return this.entries.approx(k, 'step');
  }

  entryCount(k) {
    return this.entries.approx(k, 'count');
  }

  /** The entry that holds slot i's moments: its own, or (a tied slot) its owner's; -1 none. */
  entryFor(i) {
    let k = this.entryOfSlot[i];
    if (k < 0) {
      const r = this.repAt(i);
      if (r >= 0 && r < this.n && !this.broken(i)) k = this.entryOfSlot[r];
    }
    return k;
  }

  /** The slots sharing storage with slot i (its tied group), or just i: one scan, cached. */
  groupMembers(i) {
    if (i < 0 || i >= this.n) return new Set();
    const g = this.sharing.group[i];
    if (g < 0) return new Set([i]);
    if (this.groupCache?.g === g) return this.groupCache.members;
    const members = new Set();
    const r = this.repAt(i);
    for (let j = Math.min(i, r >= 0 ? r : i); j < this.n; j++) if (this.sharing.group[j] === g) members.add(j);
    this.groupCache = { g, members };
    return members;
  }

  /** Tensor i of a state file: {index, count, offset, dataOffset}, exact. */
  tensor(i) {
    const t = this.tensors;
    return { index: i, count: t.exact(i, 'count'), offset: t.exact(i, 'offset'), dataOffset: t.exact(i, 'dataOffset') };
  }

  tensorCount(i) {
    return this.tensors.approx(i, 'count');
  }

  /** Ties and groups of the sharing map, broken slots apart: {tied: Uint8Array (1 tied, 2
   *  broken), group: Int32Array (group index of a tied slot, -1 otherwise), links, groups,
   *  broken: [slots]}. A broken slot's arc is kept only when its representative is a slot. */
  #sharing() {
    const n = this.n;
    const tied = new Uint8Array(n);
    const group = new Int32Array(n).fill(-1);
    let links = 0, groups = 0;
    const broken = [];
    for (let i = 0; i < n; i++) {
      const r = this.repAt(i);
      if (this.broken(i)) {
        tied[i] = 2;
        broken.push(i);
        continue;
      }
      if (r < 0 || r === i || r >= n) continue;   // (every slot when the map was not read)
      links++;
      if (group[r] < 0) group[r] = groups++;
      group[i] = group[r];
      tied[i] = 1;
      if (!tied[r]) tied[r] = 1;
    }
    return { tied, group, links, groups, broken };
  }

  /** The representative as a number for drawing (-1 none or unknown). */
  repAt(i) {
    if (!this.repsWords || isNone(this.repsWords, i)) return -1;
    return approxAt(this.repsWords, i);
  }
}
