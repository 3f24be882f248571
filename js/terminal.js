// Everything the CLI writes for a person goes through here. Text that came from a file, a
// layout JSON or the command line may hold control characters a terminal would act on (ESC
// sequences that forge lines, set the window title or write the clipboard with OSC 52; C1
// controls; bidi overrides that reorder what is shown): they are written as visible `\u001b`
// escapes instead. And a closed stdout (`ckptscope inspect F | head`) ends the process
// quietly, as Unix tools do.

import fs from 'node:fs';

// C0 (newline and tab too: within a line they are content, not layout), DEL, C1, the bidi
// embeddings/overrides U+202A–U+202E and isolates U+2066–U+2069.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// What JSON.stringify leaves raw but a terminal could still act on (C0 it already escapes).
// U+2028/U+2029 too: line breaks to some terminals and viewers.
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escape = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** One line of human-readable output, every unsafe character escaped. */
export function terminalLine(text) {
  return String(text).replace(UNSAFE, escape);
}

/** JSON for stdout: the same value once parsed, with nothing raw a terminal would act on. */
export function terminalJSON(value, indent) {
  return JSON.stringify(value, null, indent).replace(UNSAFE_IN_JSON, escape);
}

/** Write lines (each escaped, wrapped to the stream's columns, each ended by a newline) to a
 *  stream: the only way out. */
export function say(stream, ...lines) {
  const width = wrapColumns(stream);
  let text = '';
  for (const l of lines.flat()) for (const part of wrapLine(terminalLine(l), width)) text += part + '\n';
  if (stream === process.stdout) writeStdout(text);
  else stream.write(text);
}

/** Conventional status of a writer whose reader went away: 128 + SIGPIPE, what a shell shows. */
export const CLOSED_PIPE_STATUS = 141;

const PIECE = 1 << 16;

/**
 * Text or bytes to stdout, synchronously, in pieces, every write's count checked: a disk that
 * fills up takes part of a write and refuses the next, and that must not pass for success.
 * A closed pipe ends the process (141); any other failure is said in words (status 2).
 */
export function writeStdout(data) {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let done = 0;
  while (done < bytes.length) {
    let n;
    try {
      n = fs.writeSync(1, bytes, done, Math.min(PIECE, bytes.length - done));
    } catch (err) {
      if (err.code === 'EAGAIN') continue;   // a non-blocking pipe that is full: try again
      outputFailed(err);
    }
    if (n === 0) outputFailed({ code: 'ENOSPC' });
    done += n;
  }
}

const OUTPUT_ERRORS = { ENOSPC: 'no space left on device', EFBIG: 'the file is too large (a file size limit)', EDQUOT: 'the disk quota is exceeded', EIO: 'an input/output error' };

/** stdout cannot be written: end the process, quietly for a closed pipe, else in words. */
function outputFailed(err) {
  if (err?.code === 'EPIPE' || err?.code === 'ERR_STREAM_DESTROYED') process.exit(CLOSED_PIPE_STATUS);
  const what = OUTPUT_ERRORS[err?.code] ?? String(err?.message ?? err).replace(/^E[A-Z0-9]+: /, '');
  try {
    fs.writeSync(2, `ckptscope: cannot write the output: ${terminalLine(what)}\n`);
  } catch {
    // stderr is gone too: nothing left to tell
  }
  process.exit(2);
}

/**
 * A reader that closes the pipe early (`| head`) ends the process quietly with status 141; any
 * other failure to write stdout (a full disk) is an I/O error, said in words, status 2.
 */
export function guardOutput() {
  const onError = (stream) => (err) => {
    if (err?.code === 'EPIPE' || err?.code === 'ERR_STREAM_DESTROYED') process.exit(CLOSED_PIPE_STATUS);
    if (stream === process.stdout) outputFailed(err);
    process.exit(2);   // stderr itself failed: say nothing more
  };
  process.stdout.on('error', onError(process.stdout));
  process.stderr.on('error', onError(process.stderr));
}

/**
 * Do stdout and stderr go to the same place (one terminal, or `2>&1` into a file or pipe)?
 * Then a line written to both would show twice.
 */
export function sameDestination() {
  if (process.stdout.isTTY && process.stderr.isTTY) return true;
  try {
    const [out, err] = [fs.fstatSync(1), fs.fstatSync(2)];
    return out.ino !== 0 && out.dev === err.dev && out.ino === err.ino;
  } catch {
    return false;
  }
}

// ---- columns (docs/cli.md "Columns") ----------------------------------------------------------
// Every line for a person fits COLUMNS columns of a terminal, but for one exception: a line that
// is a single unbreakable token (a path or a name wider than the line) on a line of its own,
// which no wrapping can shorten without changing it. Tables shrink their name or path column
// and list what they shortened in full below (js/cli/table.js); other lines wrap with a
// hanging indent (wrapLine). JSON (--json) is a machine format and is never wrapped.

/** The width of output that does not go to a terminal (a pipe, a file, a CI log). */
export const COLUMNS = 80;

// East Asian wide and fullwidth characters (and emoji) take two columns; combining marks,
// zero-width characters and variation selectors none. The ranges are wcwidth's, condensed.
const WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f680}-\u{1f6ff}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const ZERO = /[\p{Mn}\p{Me}\u200b-\u200f\ufe00-\ufe0f]/u;

/** How many terminal columns a line takes (its text as shown: already escaped). */
export function displayWidth(text) {
  text = String(text);
  if (PRINTABLE_ASCII.test(text)) return text.length;   // the common case, fast: a million-row table
  let w = 0;
  for (const c of String(text)) w += ZERO.test(c) ? 0 : WIDE.test(c) ? 2 : 1;
  return w;
}

/** A line that is one token (no blank inside it), indented or not: it cannot be wrapped. */
const ONE_TOKEN = /^ *\S+$/;

/** The rule every line obeys: it fits `width` columns, or is one unbreakable token. */
export function fitsColumns(line, width = COLUMNS) {
  return displayWidth(line) <= width || ONE_TOKEN.test(line);
}

/**
 * The width tables fit for a stream: a terminal's own when it is wider than 80 columns, else
 * COLUMNS from the environment when it is more than 80 (`COLUMNS=120 ckptscope … | less`),
 * else 80: a narrower terminal too (a table narrower than 80 columns would lose more than it
 * shows), and pipes and files (output that does not depend on where it goes).
 */
export function outputColumns(stream = process.stdout, env = process.env) {
  if (stream?.isTTY && Number.isInteger(stream.columns)) return Math.max(COLUMNS, stream.columns);
  const asked = Number(env?.COLUMNS);
  return Number.isInteger(asked) && asked > COLUMNS ? asked : COLUMNS;
}

/**
 * The width other lines (messages, paths, flags) wrap at: outputColumns for a terminal, or
 * when COLUMNS is set; none for a pipe or a file without it, where every message stays whole
 * on one line, as scripts and grep expect (tables and usage fit 80 columns there too).
 */
export function wrapColumns(stream = process.stdout, env = process.env) {
  return stream?.isTTY || /^[0-9]+$/.test(env?.COLUMNS ?? '') ? outputColumns(stream, env) : Infinity;
}

/**
 * One line as lines of at most `width` columns: broken at blanks, each continuation indented
 * by `hang` (default: two more than the line itself, a hanging indent). A token wider than the
 * room left goes on a line of its own, whole.
 */
export function wrapLine(line, width = COLUMNS, hang = null) {
  if (displayWidth(line) <= width) return [line];
  const indent = /^ */.exec(line)[0];
  hang ??= `${indent}  `;
  // words with the blanks before them: padding inside a line is kept where it does not break
  const words = [...line.slice(indent.length).matchAll(/( *)(\S+)/g)].map(([, gap, word]) => [gap, word]);
  const out = [];
  let current = indent;
  let fresh = true;   // nothing on `current` yet but its indent
  for (const [gap, word] of words) {
    if (fresh || displayWidth(current) + gap.length + displayWidth(word) <= width) {
      current += fresh ? word : gap + word;
    } else {
      out.push(current);
      current = hang + word;
    }
    fresh = false;
  }
  out.push(current);
  return out;
}

/** Text shortened to `width` columns by an ellipsis in its middle (both ends tell names apart). */
export function middleEllipsis(text, width) {
  if (displayWidth(text) <= width) return text;
  const chars = [...text];
  const room = Math.max(1, width - 1);
  let head = Math.ceil(room / 2), tail = room - head;
  // wide characters: drop from the longer side until it fits
  const shown = () => displayWidth(chars.slice(0, head).join('')) + 1 + displayWidth(chars.slice(chars.length - tail).join(''));
  while (shown() > width && head + tail > 0) if (head >= tail) head--; else tail--;
  return `${chars.slice(0, head).join('')}…${tail ? chars.slice(chars.length - tail).join('') : ''}`;
}
