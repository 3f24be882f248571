// Loads the standalone WebAssembly core (wasm/) in Node, browsers and workers, and gives the
// rest of the package a small typed surface over it: sources and sinks as JS objects the C
// handle calls back into, strings and arrays in and out of wasm memory.
//
// Rules kept here: heap views are made afresh after anything that may allocate (memory can
// grow), pointers are read with >>> 0, and nothing throws across the C boundary: a callback
// that fails stores its error and returns an error code, and the caller rethrows it.

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

let cores = new Map();

/** Load (once) the core. `variant` 'simd' (default) or 'nosimd'; in Node the environment
 *  variable CKPTSCOPE_WASM=nosimd changes the default (the benchmark uses it). */
export function loadCore(variant = (isNode && process.env.CKPTSCOPE_WASM) || 'simd') {
  if (!cores.has(variant)) cores.set(variant, instantiate(variant));
  return cores.get(variant);
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
  let module;
  try {
    module = await fetchModule(variant === 'nosimd' ? 'ckptscope-nosimd' : 'ckptscope');
  } catch (err) {
    // An engine without WebAssembly SIMD cannot compile the default build: use the other.
    if (variant === 'simd' && err instanceof WebAssembly.CompileError) module = await fetchModule('ckptscope-nosimd');
    else throw err;
  }
  const core = new Core();
  const instance = await WebAssembly.instantiate(module, { env: core.imports() });
  core.attach(instance);
  return core;
}

const decoder = new TextDecoder();

class Core {
  #handles = new Map();
  #next = 1;

  imports() {
    // Nothing throws into C: a callback's exception is kept on its handle (the API rethrows
    // it after the call) and C sees the failure value.
    const guarded = (id, failed, fn) => {
      const handle = this.#handles.get(id);
      try {
        return fn(handle);
      } catch (err) {
        handle.error = err;
        return failed;
      }
    };
    return {
      ckpt_js_read: (id, offset, ptr, n) => guarded(id, -1, (source) => source.read(offset, this.bytes(ptr >>> 0, n >>> 0))),
      ckpt_js_write: (id, ptr, n) => guarded(id, -1, (sink) => (sink.write(this.bytes(ptr >>> 0, n >>> 0)), 0)),
      ckpt_js_progress: (id, done, total) =>
        guarded(id, 1, (listener) => (listener.progress(done, total < 0 ? null : total) ? 1 : 0)),
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

  malloc(n) {
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

  /** u64 values (bigint) into wasm memory; the caller frees the pointer. */
  u64Array(values) {
    const p = this.malloc(values.length * 8);
    const view = new BigUint64Array(this.memory.buffer, p, values.length);
    for (let k = 0; k < values.length; k++) view[k] = values[k];
    return p;
  }

  readU64Array(p, n) {
    return Array.from(new BigUint64Array(this.memory.buffer, p, n));
  }

  /** A NUL-terminated string the core malloc'ed: decode it and free it. */
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

  get memoryBytes() {
    return this.memory.buffer.byteLength;
  }
}

export { isNode };
