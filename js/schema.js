// A ParameterSchema held by the core: every query (representative, isWellFormed, counts, tags)
// is answered by C. Dispose it; a disposed Schema throws, and one disposed while the core is
// using it (from a callback) is freed only when the core is done.

import { loadCore, exact, u64, NONE } from './wasm.js';
import { LayoutError } from './errors.js';
import { schemaArrays } from './layout.js';
import { toU64 } from './values.js';

/** A ckpt_schema from validated arrays; the caller frees it with ckpt_schema_free. */
export function buildSchema(core, { ranks, dims, requiresGrad, map }) {
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

export class Schema {
  #core;
  #ptr;
  #busy = 0;
  #disposing = false;

  /** A Schema from a layout object {shapes, requiresGrad, representatives?}. */
  static async create(layout) {
    const core = await loadCore();
    return new Schema(core, buildSchema(core, schemaArrays(layout)));
  }

  constructor(core, ptr) {
    if (!ptr) throw new LayoutError('a Schema needs a schema');
    this.#core = core;
    this.#ptr = ptr;
  }

  get disposed() {
    return !this.#ptr || this.#disposing;
  }

  /** For the package: run fn(exports, ptr) with the schema kept alive for the call. */
  use(fn) {
    if (this.disposed) throw new TypeError('this Schema was disposed');
    this.#busy++;
    const done = () => {
      this.#busy--;
      if (this.#disposing && !this.#busy) this.#release();
    };
    let result;
    try {
      result = fn(this.#core.exports, this.#ptr);
    } catch (err) {
      done();
      throw err;
    }
    if (result instanceof Promise) return result.finally(done);
    done();
    return result;
  }

  get count() { return this.use((ex, p) => ex.ckpt_schema_count(p) >>> 0); }
  /** representative?(i): a slot, or null for none (frozen, or past the slots). */
  representative(i) {
    const slot = toU64(i, 'slot');
    return this.use((ex, p) => {
      const r = u64(ex.ckpt_schema_representative(p, slot));
      return r === NONE ? null : exact(r);
    });
  }
  isRepresentative(i) {
    const slot = toU64(i, 'slot');
    // past the last slot: no slot at all (the core's "none" is 2^64 - 1, itself a u64)
    return this.use((ex, p) => slot < BigInt(this.count) && u64(ex.ckpt_schema_representative(p, slot)) === slot);
  }
  isWellFormed() { return this.use((ex, p) => ex.ckpt_schema_is_well_formed(p) !== 0); }
  get optimizerStateCount() { return this.use((ex, p) => exact(ex.ckpt_schema_optimizer_state_count(p))); }
  get trainableCount() { return this.use((ex, p) => exact(ex.ckpt_schema_trainable_count(p))); }
  get hasAliases() { return this.use((ex, p) => ex.ckpt_schema_has_aliases(p) !== 0); }
  tags() {
    const core = this.#core;
    return this.use((ex, p) => {
      const n = ex.ckpt_schema_count(p) >>> 0;
      const out = core.malloc(n * 8);
      try {
        ex.w_schema_tags(p, out);
        return Array.from(core.readU64(out, n), exact);
      } finally {
        core.free(out);
      }
    });
  }
  toJSON() { return this.use((ex, p) => this.#core.takeJSON(ex.ckpt_schema_json(p))); }

  dispose() {
    if (!this.#ptr || this.#disposing) return;
    this.#disposing = true;
    if (!this.#busy) this.#release();
  }

  #release() {
    this.#core.exports.ckpt_schema_free(this.#ptr);
    this.#ptr = 0;
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() { this.dispose(); }
}
