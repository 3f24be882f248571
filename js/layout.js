// Layout and description objects (DESIGN.md "Layout JSON") turned into the core's inputs.
// This file only converts: whether a layout is well formed, a config valid, a count right is
// decided by the C core. What it checks itself is the conversion: that a number is a
// nonnegative integer, and (FORMAT.md 1) that it fits in 64 bits.

import { CheckpointError, LayoutError, FAMILY } from './errors.js';

const U64_LIMIT = 1n << 64n;
export const NONE = U64_LIMIT - 1n;

/** A nonnegative integer (number, bigint or decimal string) as a bigint < 2^64. */
export function toU64(value, where) {
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isInteger(value)) big = BigInt(value);
  else if (typeof value === 'string' && /^[0-9]+$/.test(value)) big = BigInt(value);
  else throw new LayoutError(`${where} must be a nonnegative integer, got ${JSON.stringify(value) ?? String(value)}`);
  if (big < 0n) throw new LayoutError(`${where} must be a nonnegative integer, got ${value}`);
  if (big >= U64_LIMIT) throw new CheckpointError({ message: `${FAMILY}metadata value does not fit in 64 bits: ${big}`, code: 3 });
  return big;
}

function isArray(x, where) {
  if (!Array.isArray(x)) throw new LayoutError(`${where} must be an array`);
  return x;
}

/** {shapes, requiresGrad, representatives} -> arrays for w_schema_new. */
export function schemaArrays(layout, where = 'layout') {
  if (layout === null || typeof layout !== 'object') throw new LayoutError(`${where} must be an object`);
  const shapes = isArray(layout.shapes, `${where}.shapes`);
  const flags = isArray(layout.requiresGrad, `${where}.requiresGrad`);
  const ranks = [];
  const dims = [];
  shapes.forEach((shape, i) => {
    isArray(shape, `${where}.shapes[${i}]`);
    ranks.push(BigInt(shape.length));
    shape.forEach((d, k) => dims.push(toU64(d, `${where}.shapes[${i}][${k}]`)));
  });
  const requiresGrad = Uint8Array.from(flags, (f, i) => {
    if (typeof f !== 'boolean') throw new LayoutError(`${where}.requiresGrad[${i}] must be true or false`);
    return f ? 1 : 0;
  });
  let map = null;
  if (layout.representatives !== undefined && layout.representatives !== null) {
    map = isArray(layout.representatives, `${where}.representatives`).map((r, i) =>
      r === null ? NONE : toU64(r, `${where}.representatives[${i}]`),
    );
  }
  return { ranks, dims, requiresGrad, map };
}

export function dtypeCode(dtype, where = 'dtype') {
  if (dtype === undefined || dtype === null) return -1;
  if (dtype === 'float32') return 0;
  if (dtype === 'float64') return 1;
  throw new LayoutError(`${where} must be "float32" or "float64"`);
}

const view = new DataView(new ArrayBuffer(8));
function bitsOf(x) {
  view.setFloat64(0, x, true);
  return view.getBigUint64(0, true);
}

function floatValue(v, where) {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  throw new LayoutError(`${where} must be a number`);
}

const FIELDS = ['beta1', 'beta2', 'epsilon', 'weightDecay'];

/** {kind, beta1, beta2, epsilon, weightDecay, bits?} -> [kind, 4 bit patterns] as bigints.
 *  `bits` (hex strings, as in the JSON report) win over the decimal values: bit-exact. */
export function configWords(config, where = 'config') {
  if (config === null || typeof config !== 'object') throw new LayoutError(`${where} must be an object`);
  const kinds = { adam: 0n, adamw: 1n };
  let kind;
  if (typeof config.kind === 'string' && config.kind.toLowerCase() in kinds) kind = kinds[config.kind.toLowerCase()];
  else if (config.kind === 0 || config.kind === 1) kind = BigInt(config.kind);
  else throw new LayoutError(`${where}.kind must be "adam" or "adamw"`);
  const words = [kind];
  for (const f of FIELDS) {
    const hex = config.bits?.[f];
    if (hex !== undefined) {
      if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(hex)) throw new LayoutError(`${where}.bits.${f} must be a hex string like "0x3feccccccccccccd"`);
      words.push(BigInt(hex));
    } else if (config[f] !== undefined) {
      words.push(bitsOf(floatValue(config[f], `${where}.${f}`)));
    } else if (f === 'weightDecay') {
      words.push(0n);
    } else {
      throw new LayoutError(`${where}.${f} is missing`);
    }
  }
  return words;
}

/** A float array of the dtype from a typed array or an array of numbers (or "NaN" strings). */
export function momentBytes(values, dtype, where) {
  const Ctor = dtype === 1 ? Float64Array : Float32Array;
  if (values instanceof Float32Array || values instanceof Float64Array) {
    if (values instanceof Ctor) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    return new Uint8Array(Ctor.from(values).buffer);
  }
  if (values instanceof Uint8Array) return values;   // raw little-endian bytes
  const arr = isArray(values, where);
  return new Uint8Array(Ctor.from(arr, (v, k) => floatValue(v, `${where}[${k}]`)).buffer);
}
