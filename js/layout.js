// Layout, description and names objects (docs/layout.md) turned into the core's inputs, with
// every field validated on the way: a user's JSON never reaches the core, or a loop, unchecked.
// Whether a layout is well formed, a config valid, a count right is decided by the C core; what
// is checked here is the shape of the JSON and (docs/format.md 1) that numbers fit in 64 bits.

// Which families, dtypes, kinds and config fields exist is the core's (abi(), read when the
// core is bound: every caller here runs after it is).

import { CheckpointError, LayoutError } from './errors.js';
import { abi, bound } from './binding.js';
import { refuseUnknownKeys, LAYOUT_KEYS, CONFIG_KEYS, BITS_KEYS } from './keys.js';

const U64_LIMIT = 1n << 64n;

const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

/** What JSON.parse makes an infinity of (1e400: past binary64's range; JSON has no infinity),
 *  when the reader asks (readJsonFile): refused wherever a number is read, never +inf. */
export const OUT_OF_RANGE = Object.freeze({ outOfRange: true });
const OUT_OF_RANGE_TEXT = 'a number beyond binary64\'s range (largest 1.7976931348623157e+308)';

function describe(value) {
  if (value === OUT_OF_RANGE) return OUT_OF_RANGE_TEXT;
  if (Array.isArray(value)) return 'an array';
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** A nonnegative integer of a layout or description (number, bigint or decimal string) as a
 *  bigint < 2^64. Past 2^64 it is the reference writer's own error (docs/format.md 1). */
export function layoutU64(value, where) {
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isInteger(value)) {
    if (!Number.isSafeInteger(value)) throw new LayoutError(`${where} is ${value}, past 2^53 - 1: write it as a decimal string to keep it exact`);
    big = BigInt(value);
  } else if (typeof value === 'string' && /^[0-9]{1,40}$/.test(value)) big = BigInt(value);
  else throw new LayoutError(`${where} must be a nonnegative integer, got ${describe(value)}`);
  if (big < 0n) throw new LayoutError(`${where} must be a nonnegative integer, got ${value}`);
  if (big >= U64_LIMIT) {
    throw new CheckpointError(bound().valueTooLarge(big));
  }
  return big;
}

function array(x, where) {
  if (!Array.isArray(x)) throw new LayoutError(`${where} must be an array, got ${describe(x)}`);
  return x;
}

/** Is this object a JSON report (inspect --json) rather than a layout? */
export function isReport(x) {
  return isObject(x) && ((has(x, 'ok') && has(x, 'error')) || isObject(x.schema));
}

/** The layout part of a JSON report: its schema (or a state file's tensor shapes). */
function layoutOfReport(report) {
  if (Array.isArray(report.tensors)) {
    return { shapes: array(report.tensors, 'report.tensors').map((t, i) => (isObject(t) ? t.shape : array(t, `report.tensors[${i}]`))) };
  }
  if (!isObject(report.schema)) {
    throw new LayoutError(report.ok === false
      ? `the report is of an invalid file (${typeof report.error?.message === 'string' ? report.error.message : 'see its error'}): it has no complete layout`
      : 'the report has no schema: it is not a report of `ckptscope inspect --json`');
  }
  const s = report.schema;
  return {
    shapes: s.shapes,
    requiresGrad: s.requiresGrad,
    representatives: s.representatives ?? null,
    dtype: report.dtype ?? undefined,
    config: report.config ?? undefined,
    keepsRandomCounter: typeof report.hasRandomCounter === 'boolean' ? report.hasRandomCounter : undefined,
  };
}

/** {shapes, requiresGrad?, representatives?} -> arrays for w_schema_new. A layout without
 *  requiresGrad is a list of shapes (enough for a model-state file). */
export function schemaArrays(input, where = 'layout') {
  if (!isObject(input)) throw new LayoutError(`${where} must be a JSON object, got ${describe(input)}`);
  // a layout's keys are its own (a report's are the report's): any other is refused, never ignored
  if (!isReport(input)) refuseUnknownKeys(input, LAYOUT_KEYS, where);
  const layout = isReport(input) ? layoutOfReport(input) : input;
  const shapes = array(layout.shapes, `${where}.shapes`);
  const ranks = [];
  const dims = [];
  for (let i = 0; i < shapes.length; i++) {
    const shape = array(shapes[i], `${where}.shapes[${i}]`);
    ranks.push(BigInt(shape.length));
    for (let k = 0; k < shape.length; k++) dims.push(layoutU64(shape[k], `${where}.shapes[${i}][${k}]`));
  }
  let requiresGrad = new Uint8Array(0);
  if (layout.requiresGrad !== undefined) {
    const flags = array(layout.requiresGrad, `${where}.requiresGrad`);
    requiresGrad = new Uint8Array(flags.length);
    for (let i = 0; i < flags.length; i++) {
      if (typeof flags[i] !== 'boolean') throw new LayoutError(`${where}.requiresGrad[${i}] must be true or false, got ${describe(flags[i])}`);
      requiresGrad[i] = flags[i] ? 1 : 0;
    }
  }
  let map = null;
  if (layout.representatives !== undefined && layout.representatives !== null) {
    const reps = array(layout.representatives, `${where}.representatives`);
    map = new Array(reps.length);
    for (let i = 0; i < reps.length; i++) map[i] = reps[i] === null ? abi().NONE : layoutU64(reps[i], `${where}.representatives[${i}]`);
  }
  return { ranks, dims, requiresGrad, map, shapesOnly: layout.requiresGrad === undefined };
}

/** "a", "b" or "c" */
const oneOf = (names) => {
  const quoted = names.map((n) => JSON.stringify(n));
  return quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}` : quoted.join('');
};

/** The core's dtype id of a dtype name; DTYPE_ANY when none is given. */
export function dtypeCode(dtype, where = 'dtype') {
  const { dtypes, constants } = abi();
  if (dtype === undefined || dtype === null) return constants.DTYPE_ANY;
  const d = dtypes.find((x) => x.name === dtype);
  if (!d) throw new LayoutError(`${where} must be ${oneOf(dtypes.map((x) => x.name))}, got ${describe(dtype)}`);
  return d.id;
}

const view = new DataView(new ArrayBuffer(8));
function bitsOf(x) {
  view.setFloat64(0, x, true);
  return view.getBigUint64(0, true);
}

function floatValue(v, where) {
  if (typeof v === 'number') return v;
  if (v === OUT_OF_RANGE) throw new LayoutError(`${where} is ${OUT_OF_RANGE_TEXT}: write "Infinity" or "-Infinity" for an infinity`);
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  throw new LayoutError(`${where} must be a number, got ${describe(v)}`);
}

/** {kind, beta1, beta2, epsilon, weightDecay, bits?} -> the core's config struct ({kind, and
 *  each float field's bit pattern} as bigints). `bits` (hex strings, as in the JSON report) win
 *  over the decimal values: bit-exact. */
export function configWords(config, where = 'config') {
  if (!isObject(config)) throw new LayoutError(`${where} must be an object, got ${describe(config)}`);
  refuseUnknownKeys(config, CONFIG_KEYS, where);
  refuseUnknownKeys(config.bits, BITS_KEYS, `${where}.bits`);
  const { kinds: named, words: structs } = abi();
  const kinds = Object.fromEntries(named.map((k) => [k.name, k.id]));
  let kind;
  const name = typeof config.kind === 'string' ? config.kind.toLowerCase() : null;
  if (name !== null && has(kinds, name)) kind = BigInt(kinds[name]);   // own keys only: not "constructor"
  else if (Object.values(kinds).includes(config.kind)) kind = BigInt(config.kind);
  else throw new LayoutError(`${where}.kind must be ${oneOf(Object.keys(kinds))}, got ${describe(config.kind)}`);
  if (config.bits !== undefined && !isObject(config.bits)) throw new LayoutError(`${where}.bits must be an object`);
  const words = { kind };
  for (const f of structs.config.filter((x) => x !== 'kind')) {
    const hex = config.bits?.[f];
    if (hex !== undefined) {
      if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(hex)) throw new LayoutError(`${where}.bits.${f} must be a hex string like "0x3feccccccccccccd"`);
      words[f] = BigInt(hex);
    } else if (config[f] !== undefined) {
      words[f] = bitsOf(floatValue(config[f], `${where}.${f}`));
    } else if (f === 'weightDecay') {
      words[f] = 0n;
    } else {
      throw new LayoutError(`${where}.${f} is missing`);
    }
  }
  return words;
}

/** A family's id by its magic (a layout's or a description's `family`), from `families`
 *  (default: all). */
export function familyCode(name, where, families = abi().families) {
  const f = families.find((x) => x.magic === name);
  if (!f) throw new LayoutError(`${where} must be ${oneOf(families.map((x) => x.magic))}`);
  return f;
}

/** The destination fields of a layout (or of a JSON report): the family it reads (FAMILY_ANY:
 *  any), dtype, config, counter status. */
export function destinationOf(input, where = 'layout') {
  const layout = isReport(input) ? layoutOfReport(input) : input;
  const keeps = layout.keepsRandomCounter;
  if (keeps !== undefined && keeps !== null && typeof keeps !== 'boolean') throw new LayoutError(`${where}.keepsRandomCounter must be true or false`);
  const named = layout.family !== undefined && layout.family !== null;
  return {
    family: named ? familyCode(layout.family, `${where}.family`).id : abi().constants.FAMILY_ANY,
    dtype: dtypeCode(layout.dtype, `${where}.dtype`),
    config: layout.config === undefined || layout.config === null ? null : configWords(layout.config, `${where}.config`),
    keeps: keeps === true ? 1 : keeps === false ? 0 : -1,
  };
}

/** A float array of the dtype (the core's id) from a typed array or an array of numbers (or
 *  "NaN" strings). */
export function floatBytes(values, dtype, where) {
  const Ctor = abi().dtypeById(dtype).FloatArray;
  if (values instanceof Float32Array || values instanceof Float64Array) {
    if (values instanceof Ctor) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    return new Uint8Array(Ctor.from(values).buffer);
  }
  if (values instanceof Uint8Array) return values;   // raw little-endian bytes
  const arr = array(values, where);
  const out = new Ctor(arr.length);
  for (let k = 0; k < arr.length; k++) {
    out[k] = floatValue(arr[k], `${where}[${k}]`);
    // a finite number float32 cannot hold would be written as an infinity: refused
    if (!Number.isFinite(out[k]) && Number.isFinite(Number(arr[k]))) throw new LayoutError(`${where}[${k}] is ${arr[k]}: beyond float32's range (largest 3.4028234663852886e+38)`);
  }
  return new Uint8Array(out.buffer);
}

/** Slot names: a JSON array of strings. Returns the array; the count is the caller's to check. */
export function namesOf(input, where = 'names') {
  const names = array(input, where);
  for (let i = 0; i < names.length; i++) {
    if (typeof names[i] !== 'string') throw new LayoutError(`${where}[${i}] must be a string, got ${describe(names[i])}`);
  }
  return names;
}

/** What kind of JSON a user handed over: 'names', 'report', 'layout' or 'description'. */
export function jsonKind(x) {
  if (Array.isArray(x)) return 'names';
  if (!isObject(x)) return 'unknown';
  if (isReport(x)) return 'report';
  if (Array.isArray(x.entries) || Array.isArray(x.values)) return 'description';
  if (has(x, 'shapes')) return 'layout';
  return 'unknown';
}
