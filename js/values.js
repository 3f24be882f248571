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
