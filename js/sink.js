// Where the core's writers put their bytes: a write(bytes) callback the core calls (a sink),
// everything collected in memory, or a file written atomically (Node). The writer, the state
// writer and the exporter share this.

import { loadCore } from './wasm.js';
import { coreError } from './errors.js';

/**
 * Run the core's writer fn(core, sinkId, errPtr, ptrs) into write(bytes) (which must consume or
 * copy the bytes before returning); pointers pushed on `ptrs` are freed after (a `{schema}` with
 * ckpt_schema_free). A nonzero return is the core's error, thrown as a CheckpointError.
 */
export async function withSink(write, fn, signal) {
  const core = await loadCore();
  const sink = { write };
  const sinkId = core.register(sink);
  const err = core.exports.w_error_new() >>> 0;
  const ptrs = [];
  try {
    if (!err) throw new RangeError('out of WebAssembly memory');
    const rc = await fn(core, sinkId, err, ptrs);
    if (sink.error) throw sink.error;   // the sink's own failure (a full disk), as thrown
    if (rc) throw coreError(core, err, {}, signal);
  } finally {
    core.unregister(sinkId);
    ptrs.forEach((p) => (p.schema ? core.exports.ckpt_schema_free(p.schema) : core.free(p)));
    if (err) core.exports.w_error_free(err);
  }
}

/** The bytes fill(write) writes, in one Uint8Array. */
export async function collect(fill) {
  const chunks = [];
  let total = 0;
  await fill((bytes) => {
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

/** Node: the bytes fill(write) writes, streamed into `path` atomically (a temporary sibling,
 *  renamed over the destination; removed on any failure). */
export async function saveAtomically(path, fill) {
  const { atomicWrite } = await import('./node-io.js');
  const target = path instanceof URL ? (await import('node:url')).fileURLToPath(path) : String(path);
  await atomicWrite(target, fill);
}
