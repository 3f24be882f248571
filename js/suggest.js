// "Did you mean": the one rule for suggesting a known word in place of a slip (a misspelt
// description key, CLI option or command), and the one way to echo what a user typed in a
// message. Both are bounded: a key or an argument may be megabytes long (a generated file, a
// pasted blob), and neither the suggestion nor the message may cost more than a short word does.

/** Words longer than this are not slips of a known word: no suggestion is computed for them. */
export const SUGGEST_MAX = 64;
/** What a message shows of a user's word or value at most (then an ellipsis and its length). */
export const ECHO_MAX = 80;
/** The same for a path in a suggested command line: Linux's PATH_MAX, so a real path stays whole. */
export const PATH_ECHO_MAX = 4096;

/** `text` (a user's word or value) as a message shows it: cut past `max` characters. */
export function shown(text, max = ECHO_MAX) {
  const s = String(text);
  return s.length > max ? `${s.slice(0, max)}… (${s.length.toLocaleString('en-US')} characters)` : s;
}

/** Edit distance, a swap of two neighbours counting one (stpe -> step); two rows of memory. */
function distance(a, b) {
  let before = null;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (before && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    [before, prev] = [prev, row];
  }
  return prev[b.length];
}

const plain = (s) => s.toLowerCase().replace(/[_-]/g, '');

/** The known word nearest `word` when it is near enough to be a slip (case, _ and - aside): one
 *  edit per three characters of the known word, at least one; else null (and null at once for a
 *  word longer than SUGGEST_MAX). */
export function nearest(word, known) {
  if (typeof word !== 'string' || word.length > SUGGEST_MAX) return null;
  let best = null, bestD = Infinity;
  for (const k of known) {
    const d = plain(word) === plain(k) ? 0 : distance(word.toLowerCase(), k.toLowerCase());
    if (d < bestD) [best, bestD] = [k, d];
  }
  return best !== null && 3 * bestD <= Math.max(3, best.length) ? best : null;
}

/** The suggestion's words: `did you mean X?` (X a known word, or a whole command line). */
export const didYouMean = (what) => `did you mean ${what}?`;
