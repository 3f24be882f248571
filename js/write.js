// The writers: an optimizer checkpoint (TLADAMF) from a description, with the reference writer's
// rules (version choice, sorted entries, every save check before the first byte), and a
// model-state file (TLSF32B / TLPF32B). Bytes in memory, or saved atomically in Node.

import { LayoutError } from './errors.js';
import { abi, loadBinding } from './binding.js';
import { withSink, collect, saveAtomically } from './sink.js';
import { schemaArrays, dtypeCode, configWords, floatBytes, layoutU64, familyCode } from './layout.js';
import { refuseUnknownKeys, DESCRIPTION_KEYS, CONFIG_KEYS, ENTRY_KEYS, STATE_KEYS } from './keys.js';

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

function prepareCheckpoint(description) {
  if (!isObject(description)) throw new LayoutError('a checkpoint description must be a JSON object');
  refuseUnknownKeys(description, DESCRIPTION_KEYS, 'description');
  refuseUnknownKeys(description.config, CONFIG_KEYS, 'description.config');
  const arrays = schemaArrays(description, 'description');
  if (arrays.shapesOnly) throw new LayoutError('description.requiresGrad is missing: a checkpoint needs every slot\'s trainability');
  if (description.config === undefined || description.config === null) {
    throw new LayoutError('description.config is missing: say which optimizer wrote it, e.g. {"kind":"adamw","beta1":0.9,"beta2":0.999,"epsilon":1e-8,"weightDecay":0.01}');
  }
  // no dtype: the first the core lists (float32)
  const named = dtypeCode(description.dtype, 'description.dtype');
  const dtype = named === abi().constants.DTYPE_ANY ? abi().dtypes[0].id : named;
  const config = configWords(description.config, 'description.config');
  const counter = description.randomCounter === undefined || description.randomCounter === null
    ? null : layoutU64(description.randomCounter, 'description.randomCounter');
  const version = description.version === undefined || description.version === null ? 0n : layoutU64(description.version, 'description.version');
  const entries = description.entries ?? [];
  if (!Array.isArray(entries)) throw new LayoutError('description.entries must be an array');
  const { width } = abi().dtypeById(dtype);
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
  await loadBinding();   // the validators read the core's families and dtypes
  const { arrays, dtype, config, counter, version, prepared } = prepareCheckpoint(description);
  await withSink(write, (b, sinkId, err, ptrs) => {
    const schema = b.schemaNew(arrays);
    ptrs.push({ schema });
    return b.write({ schema, dtype, config, counter, entries: prepared, version }, sinkId, err, ptrs);
  });
}

/** Write a model-state file {family: a model-state family ("TLSF32B", the default, or
 *  "TLPF32B"), shapes, values: [Float32Array | number[] per tensor]} through write(bytes). */
export async function writeStateTo(description, write) {
  await loadBinding();
  if (!isObject(description)) throw new LayoutError('a state description must be a JSON object');
  refuseUnknownKeys(description, STATE_KEYS, 'description');
  const states = abi().families.filter((f) => f.kind === 'state' && f.fixedMagic);   // the families the state writer writes
  const family = familyCode(description.family ?? states[0].magic, 'description.family', states);
  const arrays = schemaArrays({ shapes: description.shapes }, 'description');
  const values = description.values ?? [];
  if (!Array.isArray(values)) throw new LayoutError('description.values must be an array (one array of floats per tensor)');
  if (values.length > arrays.ranks.length) throw new LayoutError(`description.values has ${values.length} arrays for ${arrays.ranks.length} tensors: one per tensor`);
  const dtype = abi().dtype(family.elementDtype).id;
  const bytes = values.map((v, i) => floatBytes(v ?? [], dtype, `description.values[${i}]`));
  while (bytes.length < arrays.ranks.length) bytes.push(new Uint8Array(0));
  await withSink(write, (b, sinkId, err, ptrs) => {
    const schema = b.schemaNew(arrays);
    ptrs.push({ schema });
    return b.stateWrite(family.id, schema, bytes, sinkId, err, ptrs);
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
