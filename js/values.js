// Exact 64-bit arguments. Slot ids, steps, counts, offsets and versions reach the core as
// BigInt (wasm i64), never through a double; every argument is checked here first:
// a safe integer, a bigint or a decimal string, in [0, 2^64). Anything else is refused before
// the core sees it: TypeError for the wrong kind of value, RangeError for a value out of range.

const LIMIT = 1n << 64n;

function show(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** `value` as a BigInt in [0, 2^64); `what` names the argument in the message. */
export function toU64(value, what) {
  let big;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new RangeError(`${what} must be a whole number, got ${show(value)}`);
    // 2^53 and beyond are not exact as numbers: 2^64 - 1 would arrive as 2^64.
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(`${what} ${show(value)} is past 2^53 - 1 and not exact as a number: pass a bigint or a decimal string`);
    }
    big = BigInt(value);
  } else if (typeof value === 'string') {
    if (!/^[0-9]+$/.test(value)) throw new TypeError(`${what} must be a nonnegative integer, got ${show(value)}`);
    big = BigInt(value);
  } else {
    throw new TypeError(`${what} must be a nonnegative integer (a number, bigint or decimal string), got ${show(value)}`);
  }
  if (big < 0n) throw new RangeError(`${what} must not be negative, got ${show(value)}`);
  if (big >= LIMIT) throw new RangeError(`${what} ${big} does not fit in 64 bits`);
  return big;
}

const FLOATS = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

/** An exact integer of a report (a number, or a decimal string past 2^53 - 1) or a double
 *  (non-finite ones are strings) as a number; a RangeError for an integer a number cannot hold
 *  exactly (use toBigInt). */
export function toNumber(x) {
  if (typeof x === 'number') return x;
  if (typeof x === 'bigint') {
    if (x > BigInt(Number.MAX_SAFE_INTEGER) || x < -BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${x} is not exact as a number: use toBigInt`);
    return Number(x);
  }
  if (typeof x === 'string') {
    if (Object.prototype.hasOwnProperty.call(FLOATS, x)) return FLOATS[x];
    if (/^[0-9]+$/.test(x)) {
      const n = Number(x);
      if (!Number.isSafeInteger(n)) throw new RangeError(`${x} is not exact as a number: use toBigInt`);
      return n;
    }
  }
  throw new TypeError(`not a number of a report: ${String(x)}`);
}

/** An exact integer of a report as a bigint. */
export function toBigInt(x) {
  if (typeof x === 'bigint') return x;
  if (typeof x === 'number' && Number.isInteger(x)) return BigInt(x);
  if (typeof x === 'string' && /^[0-9]+$/.test(x)) return BigInt(x);
  throw new TypeError(`not an integer of a report: ${String(x)}`);
}
