// The writers: an optimizer checkpoint (TLADAMF) from a description, with the reference writer's
// rules (version choice, sorted entries, every save check before the first byte), and a
// model-state file (TLSF32B / TLPF32B). Bytes in memory, or saved atomically in Node.

import { buildSchema } from './schema.js';
import { LayoutError } from './errors.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { schemaArrays, dtypeCode, configWords, floatBytes, layoutU64 } from './layout.js';
import { refuseUnknownKeys, DESCRIPTION_KEYS, CONFIG_KEYS, ENTRY_KEYS, STATE_KEYS } from './keys.js';

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

/** A table of payload pointers (wasm32) in wasm memory. */
function pointerTable(core, pointers, ptrs) {
  const table = core.malloc(pointers.length * 4);
  ptrs.push(table);
  new Uint32Array(core.memory.buffer, table, pointers.length).set(pointers);
  return table;
}

function prepareCheckpoint(description) {
  if (!isObject(description)) throw new LayoutError('a checkpoint description must be a JSON object');
  refuseUnknownKeys(description, DESCRIPTION_KEYS, 'description');
  refuseUnknownKeys(description.config, CONFIG_KEYS, 'description.config');
  const arrays = schemaArrays(description, 'description');
  if (arrays.shapesOnly) throw new LayoutError('description.requiresGrad is missing: a checkpoint needs every slot\'s trainability');
  if (description.config === undefined || description.config === null) {
    throw new LayoutError('description.config is missing: say which optimizer wrote it, e.g. {"kind":"adamw","beta1":0.9,"beta2":0.999,"epsilon":1e-8,"weightDecay":0.01}');
  }
  const dtype = Math.max(0, dtypeCode(description.dtype, 'description.dtype'));
  const config = configWords(description.config, 'description.config');
  const counter = description.randomCounter === undefined || description.randomCounter === null
    ? null : layoutU64(description.randomCounter, 'description.randomCounter');
  const version = description.version === undefined || description.version === null ? 0n : layoutU64(description.version, 'description.version');
  const entries = description.entries ?? [];
  if (!Array.isArray(entries)) throw new LayoutError('description.entries must be an array');
  const width = dtype === 1 ? 8 : 4;
  const prepared = entries.map((e, k) => {
    const where = `description.entries[${k}]`;
    if (!isObject(e)) throw new LayoutError(`${where} must be an object`);
    refuseUnknownKeys(e, ENTRY_KEYS, where);
    const m = floatBytes(e.m ?? [], dtype, `${where}.m`);
    const v = floatBytes(e.v ?? [], dtype, `${where}.v`);
    const count = e.count !== undefined ? layoutU64(e.count, `${where}.count`) : BigInt(Math.floor(m.byteLength / width));
    return { id: layoutU64(e.id, `${where}.id`), step: layoutU64(e.step, `${where}.step`), count, m, v };
  });
  return { arrays, dtype, config, counter, version, prepared };
}

/** Write a description {shapes, requiresGrad, representatives?, dtype?, config, randomCounter?,
 *  version?, entries: [{id, step, m, v}]} through write(bytes). */
export async function writeCheckpointTo(description, write) {
  const { arrays, dtype, config, counter, version, prepared } = prepareCheckpoint(description);
  await withSink(write, (core, sinkId, err, ptrs) => {
    const schema = buildSchema(core, arrays);
    ptrs.push({ schema });
    const cfg = core.u64Array(config); ptrs.push(cfg);
    let cnt = 0;
    if (counter !== null) { cnt = core.u64Array([counter]); ptrs.push(cnt); }
    const meta = core.u64Array(prepared.flatMap((e) => [e.id, e.step, e.count, BigInt(e.m.byteLength), BigInt(e.v.byteLength)]));
    ptrs.push(meta);
    const payloads = [];
    for (const e of prepared) {
      const pm = core.copyIn(e.m); ptrs.push(pm);
      const pv = core.copyIn(e.v); ptrs.push(pv);
      payloads.push(pm, pv);
    }
    const table = pointerTable(core, payloads, ptrs);
    return core.exports.w_write(schema, dtype, cfg, cnt, meta, table, prepared.length, version, sinkId, err);
  });
}

const STATE_FAMILIES = { TLSF32B: 2, TLPF32B: 3 };

/** Write a model-state file {family: "TLSF32B" | "TLPF32B", shapes, values: [Float32Array |
 *  number[] per tensor]} through write(bytes). */
export async function writeStateTo(description, write) {
  if (!isObject(description)) throw new LayoutError('a state description must be a JSON object');
  refuseUnknownKeys(description, STATE_KEYS, 'description');
  const family = description.family ?? 'TLSF32B';
  if (!Object.prototype.hasOwnProperty.call(STATE_FAMILIES, family)) throw new LayoutError('description.family must be "TLSF32B" or "TLPF32B"');
  const arrays = schemaArrays({ shapes: description.shapes }, 'description');
  const values = description.values ?? [];
  if (!Array.isArray(values)) throw new LayoutError('description.values must be an array (one array of floats per tensor)');
  if (values.length > arrays.ranks.length) throw new LayoutError(`description.values has ${values.length} arrays for ${arrays.ranks.length} tensors: one per tensor`);
  const bytes = values.map((v, i) => floatBytes(v ?? [], 0, `description.values[${i}]`));
  while (bytes.length < arrays.ranks.length) bytes.push(new Uint8Array(0));
  await withSink(write, (core, sinkId, err, ptrs) => {
    const schema = buildSchema(core, arrays);
    ptrs.push({ schema });
    const pointers = bytes.map((b) => {
      const p = core.copyIn(b);
      ptrs.push(p);
      return p;
    });
    const table = pointerTable(core, pointers, ptrs);
    const lengths = core.u64Array(bytes.map((b) => BigInt(b.byteLength))); ptrs.push(lengths);
    return core.exports.w_state_write(STATE_FAMILIES[family], schema, table, lengths, sinkId, err);
  });
}

/** The checkpoint bytes for a description (see writeCheckpointTo). */
export function writeCheckpoint(description) {
  return collect((write) => writeCheckpointTo(description, write));
}

/** The state-file bytes for a description (see writeStateTo). */
export function writeState(description) {
  return collect((write) => writeStateTo(description, write));
}

/** Node: write a description to `path` atomically (temporary sibling, then rename), streaming
 *  the bytes to disk as the core produces them. */
export function saveCheckpoint(path, description) {
  return saveAtomically(path, (write) => writeCheckpointTo(description, write));
}

export function saveState(path, description) {
  return saveAtomically(path, (write) => writeStateTo(description, write));
}
