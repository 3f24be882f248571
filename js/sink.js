// Where the core's writers put their bytes: a write(bytes) callback the core calls (a sink),
// everything collected in memory, or a file written atomically (Node). The writer, the state
// writer and the exporter share this.

import { loadBinding } from './binding.js';
import { coreError } from './errors.js';

/**
 * Run the core's writer fn(binding, sinkId, errPtr, ptrs) into write(bytes) (which must consume or
 * copy the bytes before returning); pointers pushed on `ptrs` are freed after (a `{schema}` with
 * ckpt_schema_free). A nonzero return is the core's error, thrown as a CheckpointError.
 */
export async function withSink(write, fn, signal) {
  const b = await loadBinding();
  const { core } = b;
  const sink = { write };
  const sinkId = core.register(sink);
  const ptrs = [];
  let err = 0;
  try {
    err = b.errorNew();
    const rc = await fn(b, sinkId, err, ptrs);
    if (sink.error) throw sink.error;   // the sink's own failure (a full disk), as thrown
    if (rc) throw coreError(b, err, {}, signal);
  } finally {
    core.unregister(sinkId);
    ptrs.forEach((p) => (p.schema ? b.schemaFree(p.schema) : core.free(p)));
    b.errorFree(err);
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
 *  renamed over the destination; removed on any failure). Resolves with {path, bytes}: where they
 *  went (a symbolic link's target) and how many. */
export async function saveAtomically(path, fill) {
  const { atomicWrite } = await import('./node-io.js');
  const target = path instanceof URL ? (await import('node:url')).fileURLToPath(path) : String(path);
  return atomicWrite(target, fill);
}
