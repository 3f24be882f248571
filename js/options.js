// The checks of the option values a caller hands the package (the CLI's options arrive here
// too): the learning rate, the ratio band, the TorchLean reader, the optimizer's kind and the
// version convert writes, each beside the value it checks. Their rules and their words are the
// core's (its table of readers, its band check, its description's kinds and families); what is
// checked here is only that the value is one the core can be asked about.

import { loadBinding, abi } from './binding.js';
import { shown } from './suggest.js';

/** A value as a message shows it (JSON where it has one), cut within bounds. */
function describe(x) {
  let text;
  try {
    text = typeof x === 'number' ? String(x) : JSON.stringify(x) ?? String(x);
  } catch {
    text = String(x);
  }
  return shown(text);
}

/** A number as the CLI's options and the viewer server's queries take it, from its text: decimal
 *  digits, a point, an exponent, a sign (no `0x10`, no `Infinity`, no blank); NaN when not one. */
export function decimalNumber(text) {
  return typeof text === 'string' && /^[0-9.eE+-]+$/.test(text) ? Number(text) : NaN;
}

/** A positive finite number from its text by decimalNumber's rule (--lr, --residual-limit, the
 *  viewer's learning-rate inputs); NaN when the text is not one. */
export function positiveNumber(text) {
  const x = decimalNumber(text);
  return Number.isFinite(x) && x > 0 ? x : NaN;
}

/** `lr`: a positive finite number, or NaN when not given (no update/weight ratios). */
export function learningRate(lr) {
  if (lr === undefined || lr === null) return NaN;
  if (typeof lr !== 'number' || !Number.isFinite(lr) || lr <= 0) throw new RangeError(`lr must be a positive finite number, got ${describe(lr)}`);
  return lr;
}

/**
 * The flag band of the update-to-weight ratio: [low, high], or null for the core's default.
 * Its rules are the core's (finite, 0 <= low < high): a band that is not one is a RangeError
 * in the core's words.
 */
export async function ratioBand(band) {
  if (band === undefined || band === null) return null;
  if (!Array.isArray(band) || band.length !== 2 || !band.every((x) => typeof x === 'number')) {
    throw new TypeError(`ratioBand must be [low, high], two numbers, got ${describe(band)}`);
  }
  const refused = (await loadBinding()).ratioBandError(band[0], band[1]);
  if (refused) throw new RangeError(refused.message);
  return [band[0], band[1]];
}

/** The core's id of reader `name` (undefined: the default, v2-v5); a RangeError names the readers. */
export function readerId(binding, name) {
  if (name === undefined || name === null) return 0;
  // the name exactly: not an array that prints as one, nor one cut at a NUL on its way to the core
  if (typeof name !== 'string' || name.includes('\0')) {
    const what = typeof name === 'string' ? describe(name) : `(${Array.isArray(name) ? 'an array' : typeof name})`;
    throw new RangeError(`unknown TorchLean reader ${what}: one of ${binding.readerNames().join(', ')}`);
  }
  const id = binding.readerByName(name);
  if (id > 0) return id;
  throw new RangeError(`unknown TorchLean reader ${describe(name)}: one of ${binding.readerNames().join(', ')}`);
}

/** The optimizer kinds' names, the core's ('adam', 'adamw'). */
export const kindNames = () => abi().kinds.map((k) => k.name);

/** The core's kind named `name` ({id, name}); else `refuse(names)` is thrown, the error each
 *  caller words its own way (the API's RangeError, the CLI's usage error). */
export function optimizerKind(name, refuse) {
  const kind = abi().kinds.find((k) => k.name === name);
  if (!kind) throw refuse(kindNames());
  return kind;
}

/** The versions convert writes, oldest first: those of TorchLean's optimizer format (the
 *  optimizer family whose files carry a magic of their own), from the core's description. */
export function convertVersions() {
  const family = abi().families.find((f) => f.kind === 'optimizer' && f.fixedMagic);
  const versions = [];
  for (let v = Number(family.versionMin); v <= Number(family.versionMax); v++) versions.push(v);
  return versions;
}

/** What a panel that converts offers, the core's: {versions (oldest first), kinds (names)}. */
export async function convertChoices() {
  await loadBinding();
  return { versions: convertVersions(), kinds: kindNames() };
}

/** Words joined as a list: `a, b or c` (`quote` around each: `'a' or 'b'`). */
export function listed(words, { quote = '', last = ' or ' } = {}) {
  const q = words.map((w) => `${quote}${w}${quote}`);
  return q.length > 1 ? `${q.slice(0, -1).join(', ')}${last}${q.at(-1)}` : q.join('');
}
