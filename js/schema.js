// A ParameterSchema held by the core: every query (representative, isWellFormed, counts, tags)
// is answered by C. Close it, as a Checkpoint is closed (close(), or `using`); a closed Schema
// throws, and one closed while the core is using it (from a callback) is freed only when the core
// is done.

import { exact } from './wasm.js';
import { loadBinding } from './binding.js';
import { LayoutError } from './errors.js';
import { schemaArrays } from './layout.js';
import { toU64 } from './values.js';

export class Schema {
  #b;
  #ptr;
  #busy = 0;
  #closing = false;

  /** A Schema from a layout object {shapes, requiresGrad, representatives?}. */
  static async create(layout) {
    const b = await loadBinding();
    return new Schema(b, b.schemaNew(schemaArrays(layout)));
  }

  /** Not for callers: Schema.create makes one. */
  constructor(binding, ptr) {
    if (!ptr) throw new LayoutError('a Schema needs a schema');
    this.#b = binding;
    this.#ptr = ptr;
  }

  get closed() {
    return !this.#ptr || this.#closing;
  }

  /** For the package: run fn(binding, ptr) with the schema kept alive for the call. */
  use(fn) {
    if (this.closed) throw new TypeError('this Schema is closed');
    this.#busy++;
    const done = () => {
      this.#busy--;
      if (this.#closing && !this.#busy) this.#release();
    };
    let result;
    try {
      result = fn(this.#b, this.#ptr);
    } catch (err) {
      done();
      throw err;
    }
    if (result instanceof Promise) return result.finally(done);
    done();
    return result;
  }

  get count() { return this.use((b, p) => b.schemaCount(p)); }
  /** representative?(i): a slot, or null for none (frozen, or past the slots). */
  representative(i) {
    const slot = toU64(i, 'slot');
    return this.use((b, p) => {
      const r = b.schemaRepresentative(p, slot);
      return r === b.NONE ? null : exact(r);
    });
  }
  isRepresentative(i) {
    const slot = toU64(i, 'slot');
    // past the last slot: no slot at all (the core's "none" is 2^64 - 1, itself a u64)
    return this.use((b, p) => slot < BigInt(this.count) && b.schemaRepresentative(p, slot) === slot);
  }
  isWellFormed() { return this.use((b, p) => b.schemaWellFormed(p)); }
  get optimizerStateCount() { return this.use((b, p) => exact(b.schemaOptimizerStateCount(p))); }
  get trainableCount() { return this.use((b, p) => exact(b.schemaTrainableCount(p))); }
  get hasAliases() { return this.use((b, p) => b.schemaHasAliases(p)); }
  tags() { return this.use((b, p) => Array.from(b.schemaTags(p), exact)); }
  toJSON() { return this.use((b, p) => b.schemaJSON(p)); }

  close() {
    if (!this.#ptr || this.#closing) return;
    this.#closing = true;
    if (!this.#busy) this.#release();
  }

  #release() {
    this.#b.schemaFree(this.#ptr);
    this.#ptr = 0;
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() { this.close(); }
}
