// Loads the standalone WebAssembly core (wasm/) in Node, browsers and workers, and keeps its
// memory: sources, sinks and progress listeners are JS objects the C handle calls back into;
// strings and arrays move in and out of wasm memory here. Which exports there are, their
// signatures and the structs they take are js/binding.js's (the one module that calls them).
//
// Rules kept here: 64-bit values cross as BigInt (wasm i64), never through a double; heap views
// are made afresh after anything that may allocate (memory can grow); pointers are read with
// >>> 0; nothing throws across the C boundary: a callback that fails keeps its error and returns
// a failure value, and the caller rethrows it.

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

const cores = new Map();
const modules = new Map();   // variant -> compiled WebAssembly.Module (a worker can be given one)

/** Load (once) the core. `variant` 'simd' (default), 'nosimd', or the name of another build of
 *  the core beside these (js/ckptscope-{variant}.wasm: a build with extra families,
 *  docs/architecture.md); in Node the environment variable CKPTSCOPE_WASM changes the default
 *  (the benchmark uses CKPTSCOPE_WASM=nosimd). */
export function loadCore(variant = (isNode && process.env.CKPTSCOPE_WASM) || 'simd') {
  if (!cores.has(variant)) cores.set(variant, instantiate(variant));
  return cores.get(variant);
}

/** The compiled module of a variant, to hand to workers (a Module crosses postMessage, so a
 *  worker instantiates without compiling again). */
export async function compiledModule(variant = (isNode && process.env.CKPTSCOPE_WASM) || 'simd') {
  await loadCore(variant);
  return modules.get(variant);
}

/** In a worker: use a module the parent compiled, for `variant`. */
export function adoptModule(module, variant = (isNode && process.env.CKPTSCOPE_WASM) || 'simd') {
  if (!cores.has(variant)) {
    modules.set(variant, module);
    cores.set(variant, instantiate(variant));
  }
}

async function fetchModule(name) {
  const url = new URL(`./${name}.wasm`, import.meta.url);
  if (isNode && url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return WebAssembly.compile(await readFile(url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
  return WebAssembly.compileStreaming
    ? WebAssembly.compileStreaming(response)
    : WebAssembly.compile(await response.arrayBuffer());
}

async function instantiate(variant) {
  let module = modules.get(variant);
  if (!module) module = await compile(variant);
  modules.set(variant, module);
  const core = new Core();
  const instance = await WebAssembly.instantiate(module, { env: core.imports() });
  core.attach(instance);
  return core;
}

/** The file of a variant: ckptscope.wasm for 'simd', ckptscope-{variant}.wasm otherwise. */
function moduleName(variant) {
  if (variant === 'simd') return 'ckptscope';
  if (!/^[a-z0-9][a-z0-9-]*$/.test(variant)) throw new RangeError(`not a build of the core: ${JSON.stringify(variant)} (simd, nosimd, or the NAME of js/ckptscope-NAME.wasm)`);
  return `ckptscope-${variant}`;
}

async function compile(variant) {
  let module;
  try {
    module = await fetchModule(moduleName(variant));
  } catch (err) {
    // An engine without WebAssembly SIMD cannot compile the default build: use the other.
    if (variant === 'simd' && err instanceof WebAssembly.CompileError) module = await fetchModule('ckptscope-nosimd');
    else throw err;
  }
  return module;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

// CKPT_NONE (all ones) for the progress callback's unknown total, which runs before any binding.
const NONE = (1n << 64n) - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A u64 result of the core (wasm i64 arrives signed) as an unsigned BigInt. */
export const u64 = (x) => BigInt.asUintN(64, BigInt(x));

/** An exact integer for people and JSON: a number up to 2^53 - 1, a decimal string beyond
 *  (the JSON report's rule). */
export function exact(x) {
  const v = u64(x);
  return v <= MAX_SAFE ? Number(v) : v.toString();
}

class Core {
  #handles = new Map();
  #next = 1;

  imports() {
    // Nothing throws into C: a callback's exception is kept on its handle (the API rethrows
    // it after the call) and C sees the failure value.
    const guarded = (id, failed, fn) => {
      const handle = this.#handles.get(id);
      if (!handle) return failed;
      try {
        return fn(handle);
      } catch (err) {
        handle.error ??= err;
        return failed;
      }
    };
    return {
      // size_t in wasm32: -1 is CKPT_READ_ERROR. Offsets are file positions (< 2^53 in any
      // file a JS source can hold); a larger one is refused, not rounded.
      ckpt_js_read: (id, offset, ptr, n) => guarded(id, -1, (source) => {
        const at = u64(offset);
        if (at > MAX_SAFE) return -1;
        return source.read(Number(at), this.bytes(ptr >>> 0, n >>> 0));
      }),
      ckpt_js_write: (id, ptr, n) => guarded(id, -1, (sink) => (sink.write(this.bytes(ptr >>> 0, n >>> 0)), 0)),
      ckpt_js_progress: (id, done, total) => guarded(id, 1, (listener) => {
        const t = u64(total);
        return listener.progress(Number(u64(done)), t === NONE ? null : Number(t)) ? 1 : 0;
      }),
      emscripten_notify_memory_growth: () => {},
    };
  }

  attach(instance) {
    this.exports = instance.exports;
    this.memory = instance.exports.memory;
    instance.exports._initialize();
  }

  /** A fresh view: never keep one across a call that may allocate. */
  bytes(ptr, n) {
    return new Uint8Array(this.memory.buffer, ptr, n);
  }

  /** Register a JS object (source, sink or progress listener) for the C side; returns its id. */
  register(obj) {
    const id = this.#next++;
    this.#handles.set(id, obj);
    return id;
  }

  unregister(id) {
    this.#handles.delete(id);
  }

  /** malloc(n), n a number of bytes; throws (never returns 0) when wasm memory is exhausted. */
  malloc(n) {
    if (!Number.isSafeInteger(n) || n < 0 || n > 0xfffffff0) {
      throw new RangeError(`cannot allocate ${n} bytes in WebAssembly memory (4 GiB at most)`);
    }
    const p = this.exports.malloc(Math.max(8, n)) >>> 0;
    if (!p) throw new RangeError(`out of WebAssembly memory allocating ${n} bytes`);
    return p;
  }

  free(p) {
    if (p) this.exports.free(p);
  }

  /** Copy bytes into wasm memory; the caller frees the pointer. */
  copyIn(u8) {
    const p = this.malloc(u8.byteLength);
    this.bytes(p, u8.byteLength).set(u8);
    return p;
  }

  /** u64 values (bigints) into wasm memory; the caller frees the pointer. */
  u64Array(values) {
    const p = this.malloc(values.length * BigUint64Array.BYTES_PER_ELEMENT);
    new BigUint64Array(this.memory.buffer, p, values.length).set(values);
    return p;
  }

  /** A copy of n u64 values at p. */
  readU64(p, n) {
    return new BigUint64Array(this.memory.buffer.slice(p, p + BigUint64Array.BYTES_PER_ELEMENT * n));
  }

  /** A NUL-terminated string the core malloc'ed: decode it and free it. NULL means out of memory. */
  takeString(ptr) {
    ptr >>>= 0;
    if (!ptr) throw new RangeError('out of WebAssembly memory');
    const heap = new Uint8Array(this.memory.buffer);
    const end = heap.indexOf(0, ptr);
    const text = decoder.decode(heap.subarray(ptr, end));
    this.free(ptr);
    return text;
  }

  takeJSON(ptr) {
    return JSON.parse(this.takeString(ptr));
  }

  /** A string into wasm memory, NUL-terminated; the caller frees the pointer. */
  stringIn(text) {
    const bytes = encoder.encode(text);
    const p = this.malloc(bytes.length + 1);
    const view = this.bytes(p, bytes.length + 1);
    view.set(bytes);
    view[bytes.length] = 0;
    return p;
  }

  get memoryBytes() {
    return this.memory.buffer.byteLength;
  }
}

export { isNode };
