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

/** Write lines (each escaped, each ended by a newline) to a stream: the only way out. */
export function say(stream, ...lines) {
  const text = lines.flat().map((l) => terminalLine(l) + '\n').join('');
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
