// The shared case table (tests/cases/cases.json) for the JS suites: files built from the
// table's base descriptions by the package's own writers, patched as each recipe says, and the
// layouts the load cases name. tests/c/test_cases.c builds the same files with the C writers.
import fs from 'node:fs';
import { writeCheckpoint, writeState } from '../../js/index.js';

export const table = JSON.parse(fs.readFileSync(new URL('../cases/cases.json', import.meta.url), 'utf8'));

const sizeOf = (shape) => shape.reduce((a, b) => a * b, 1);
const fill = (v, n, Ctor) => (Array.isArray(v) ? Ctor.from(v, Number) : new Ctor(n).fill(Number(v)));

/** The bytes of a base description. */
export function writeBase(name) {
  const d = table.bases[name];
  if (d.kind === 'state') {
    return writeState({ family: d.family, shapes: d.shapes, values: d.shapes.map((s, i) => fill(d.values[i], sizeOf(s), Float32Array)) });
  }
  const Ctor = d.dtype === 'float64' ? Float64Array : Float32Array;
  const { kind, ...rest } = d;
  return writeCheckpoint({
    ...rest,
    entries: d.entries.map((e) => ({ id: e.id, step: e.step, m: fill(e.m, sizeOf(d.shapes[e.id]), Ctor), v: fill(e.v, sizeOf(d.shapes[e.id]), Ctor) })),
  });
}

const unhex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

/** A case's file: the base's bytes, then ranges, patch, bytes, truncate, append. */
export async function makeFile(recipe) {
  if (recipe.hex !== undefined) return unhex(recipe.hex);
  if (recipe.text !== undefined) return new TextEncoder().encode(recipe.text);
  let bytes = await writeBase(recipe.base);
  if (recipe.ranges) {
    const parts = recipe.ranges.map(([from, to]) => bytes.subarray(from, to));
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) (out.set(p, at), (at += p.length));
    bytes = out;
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const [at, value] of recipe.patch ?? []) dv.setBigUint64(at, BigInt(value), true);
  for (const [at, hex] of recipe.bytes ?? []) bytes.set(unhex(hex), at);
  if (recipe.truncate !== undefined) bytes = bytes.slice(0, recipe.truncate);
  if (recipe.append !== undefined) {
    const extra = unhex(recipe.append);
    const out = new Uint8Array(bytes.length + extra.length);
    out.set(bytes);
    out.set(extra, bytes.length);
    bytes = out;
  }
  return bytes;
}

/** A load case's layout, as a user's layout JSON: the base's shapes, trainability and sharing
 *  map (a state base: its shapes), then the case's own fields. */
export function makeLayout(spec) {
  const { like, ...own } = spec;
  const base = like ? table.bases[like] : {};
  const layout = base.kind === 'state'
    ? { shapes: base.shapes }
    : like ? { shapes: base.shapes, requiresGrad: base.requiresGrad, representatives: base.representatives } : {};
  return { ...layout, ...own };
}

/** The error fields a case states (code, message, offset, slot, length, hint, subject, configDiff). */
export function expectedError(want) {
  const out = { code: want.code, message: want.message, offset: want.offset, slot: want.slot };
  for (const k of ['length', 'hint', 'subject', 'configDiff']) if (k in want) out[k] = want[k];
  return out;
}

export function pickError(err, want) {
  const out = {};
  for (const k of Object.keys(expectedError(want))) out[k] = err?.[k] ?? (k === 'subject' ? 'file' : null);
  if ('length' in want) out.length = err?.length ?? 0;
  return out;
}

// ---- the model base as a description, for suites that vary it ----------------------------

export const F = 'CUDA Adam checkpoint: ';
const base = table.bases.model;
export const modelLayout = { shapes: base.shapes, requiresGrad: base.requiresGrad, representatives: base.representatives };
export const modelConfig = base.config;

/** The table's "model" base as a writer description (arrays filled), with overrides. */
export function modelDescription(extra = {}) {
  return {
    ...modelLayout,
    config: modelConfig,
    entries: base.entries.map((e) => {
      const n = sizeOf(base.shapes[e.id]);
      return { id: e.id, step: e.step, m: new Float32Array(n).fill(e.m), v: new Float32Array(n).fill(e.v) };
    }),
    ...extra,
  };
}

/** The model without ties: slot 1 owns its own history (a version 2 layout). */
export function untiedDescription(extra = {}) {
  const d = modelDescription();
  return { ...d, representatives: null, entries: [...d.entries, { id: 1, step: 4, m: new Float32Array(6), v: new Float32Array(6) }], ...extra };
}

export const model = (extra) => writeCheckpoint(modelDescription(extra));
