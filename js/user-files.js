// The CLI's words for what goes wrong with a file the user named: always that path (never a
// temporary beside it, never an empty one), and what to do about it.

import fs from 'node:fs';
import path from 'node:path';
import tty from 'node:tty';
import { LayoutError } from './errors.js';
import { nonRegular, notRegularError } from './node-io.js';
import { JSON_LIMIT } from './sources.js';
import { namesOf, OUT_OF_RANGE } from './layout.js';

/** An I/O problem with one of the user's files, its message ready to show. Exit status 2. */
export class FileError extends Error {}

/** `-` as FILE: the standard input, read through its file descriptor (0). */
export const STDIN = '-';
export const displayName = (file) => (file === STDIN ? '(standard input)' : file);

/**
 * Is `file` read as a stream, once, in order: `-`, or a path that is not a regular file (a
 * pipe from `<(cmd)`, /dev/stdin from a pipe, a FIFO, a character device)? A stream cannot be
 * opened twice nor read by ranges. stat, not open: opening a FIFO waits for a writer.
 */
export function isStream(file) {
  if (file === STDIN) return true;
  try {
    const st = fs.statSync(file);
    return !st.isFile() && !st.isDirectory();
  } catch {
    return false;   // the error is named where the file is opened
  }
}

/** A stream argument in a message: how the user gave it. */
export const streamName = (file) => (file === STDIN ? '- (standard input)' : `${file} (a pipe or device, not a regular file)`);

const streamFds = new Map();

/** What the API reads for `file`: a regular file by its path; a stream by one descriptor,
 *  opened once and kept (reopening a pipe would find it drained, a FIFO would wait). */
export function sourceOf(file) {
  if (file === STDIN) return 0;
  if (!isStream(file)) return file;
  if (!streamFds.has(file)) streamFds.set(file, fs.openSync(file, 'r'));
  return streamFds.get(file);
}

const STDIN_EXAMPLES = {
  checkpoint: 'ckptscope inspect - < model.ckpt',
  description: 'ckptscope write - OUT < description.json',
};

const isNodeIoError = (err) => err && typeof err.code === 'string' && (err.syscall !== undefined || err.errno !== undefined);

// "ENOTDIR: not a directory, open '/x/y'" -> "not a directory".
const plain = (err) => String(err.message).replace(/^E[A-Z0-9]+: /, '').replace(/, \w+ '.*'$/s, '');

/** The message for `err` while reading `file` (`what`: "checkpoint", "layout", ...). */
export function readMessage(err, file, what) {
  switch (err.code) {
    case 'ENOENT': {
      const link = danglingLink(file);
      return link ? `${file} is a symbolic link to ${link}, which does not exist` : `no such file: ${file}`;
    }
    case 'ENOTDIR': return `no such file: ${file} (a part of the path is not a directory)`;
    case 'EISDIR': return `${file} is a directory, not a ${what} file`;
    case 'EACCES':
    case 'EPERM': return `permission denied: cannot read ${file} (check its permissions)`;
    default: return `cannot read ${file}: ${plain(err)}`;
  }
}

/** Where the symbolic link `file` points when that is nowhere (null: not such a link). */
function danglingLink(file) {
  try {
    if (!fs.lstatSync(file).isSymbolicLink() || fs.existsSync(file)) return null;
    return fs.readlinkSync(file);
  } catch {
    return null;
  }
}

/** The message for `err` while writing `file` (through a temporary beside it; `err.target`: the
 *  file a symbolic link at `file` led to, when one did). */
export function writeMessage(err, file) {
  switch (err.code) {
    case 'ENOENT':
    case 'ENOTDIR': return err.target
      ? `cannot write ${file}: it is a symbolic link to ${err.target}, whose folder ${path.dirname(err.target)} does not exist`
      : `cannot write ${file}: no such folder: ${path.dirname(file)}`;
    case 'EPROTECTEDLINK': return `cannot write ${file}: it is a symbolic link of another user (uid ${err.owner}) in ${err.folder}, a sticky folder anyone may write in: it may lead to another user's file, and the kernel (fs.protected_symlinks) does not follow such a link either; remove it or give another name`;
    case 'EISDIR': return `${file} is a directory: give the checkpoint a file name, e.g. ${path.join(file, 'model.ckpt')}`;
    case 'EACCES':
    case 'EPERM': return `permission denied: cannot write ${file} (its folder must be writable: the checkpoint is written to a temporary file beside it, then renamed)`;
    case 'ENOSPC': return `cannot write ${file}: no space left on device`;
    case 'EROFS': return `cannot write ${file}: the file system is read-only`;
    case 'ENOTREG': return `cannot write ${file}: it is ${err.kind}, not a regular file: the output is a new file renamed over it, which would replace it; give a file name`;
    default: return `cannot write ${file}: ${plain(err)}`;
  }
}

/**
 * Check up front that `file` can be read as a `what` file, so that the message names it:
 * some failures only show later, without a path (reading a directory fails with EISDIR).
 */
export function checkInput(file, what) {
  if (file === STDIN) {
    // tty.isatty, not process.stdin.isTTY: creating process.stdin could make fd 0 non-blocking.
    if (tty.isatty(0)) throw new FileError(`the standard input is a terminal: pipe a ${what} in, e.g. ${STDIN_EXAMPLES[what]}`);
    return;
  }
  let st;
  try {
    if (isStream(file)) {
      sourceOf(file);   // opened once, for good: readable
      return;
    }
    const fd = fs.openSync(file, 'r');
    try {
      st = fs.fstatSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if (isNodeIoError(err)) throw new FileError(readMessage(err, file, what));
    throw err;
  }
  if (st.isDirectory()) throw new FileError(readMessage({ code: 'EISDIR' }, file, what));
}

/** Run `fn` (sync or async); a Node I/O error from it becomes a FileError naming `file`. */
export function reading(file, what, fn) {
  const named = (err) => (isNodeIoError(err) ? new FileError(readMessage(err, file === STDIN ? 'the standard input' : file, what)) : err);
  try {
    const result = fn();
    return result instanceof Promise ? result.catch((err) => { throw named(err); }) : result;
  } catch (err) {
    throw named(err);
  }
}

/** Check that `out` can be written, then run `fn`; a Node I/O error names `out`. */
export async function writing(out, fn) {
  let st = null;
  try {
    st = fs.statSync(out);
  } catch {
    // does not exist yet: the usual case
  }
  if (st?.isDirectory()) throw new FileError(writeMessage({ code: 'EISDIR' }, out));
  // a device, a FIFO or a socket: refused before any input is read (the writer refuses it too)
  const kind = st && nonRegular(st);
  if (kind) throw new FileError(writeMessage(notRegularError(out, kind), out));
  try {
    return await fn();
  } catch (err) {
    if (isNodeIoError(err)) throw new FileError(writeMessage(err, out));
    throw err;
  }
}

/**
 * What `fn(path)` reads back from an output just written (`path`: where its bytes went, a
 * symbolic link's target), or null with a warning on stderr: once the file is written, nothing
 * after it is a failure.
 */
export async function readBack(output, fn) {
  try {
    const { writeTarget } = await import('./node-io.js');
    return await fn(writeTarget(output));
  } catch (err) {
    process.stderr.write(`warning: ${output} was written, but reading it back failed: ${isNodeIoError(err) ? plain(err) : err.message}\n`);
    return null;
  }
}

/**
 * The JSON text of `source` (a path or a descriptor) as UTF-8, at most `limit` bytes: a regular
 * file larger than that is refused before a byte is read, a stream as soon as it passes it;
 * `tooLarge(size)` throws (size: the file's, or null for a stream). A source whose first
 * non-blank byte cannot start a JSON object or array (NULs from /dev/zero) is not read on:
 * the text read so far is returned, for JSON.parse to say why.
 */
export function readCapped(source, limit, tooLarge) {
  const fd = typeof source === 'number' ? source : fs.openSync(source, 'r');
  try {
    const st = fs.fstatSync(fd);
    if (st.isFile() && st.size > limit) tooLarge(st.size);
    const chunks = [];
    let total = 0;
    let opened = false;
    for (;;) {
      const chunk = Buffer.allocUnsafe(1 << 20);
      let n;
      try {
        n = fs.readSync(fd, chunk, 0, chunk.length, null);
      } catch (err) {
        if (err.code === 'EAGAIN') continue;   // a non-blocking pipe with nothing yet
        if (err.code === 'EOF') break;
        throw err;
      }
      if (n === 0) break;
      total += n;
      if (total > limit) tooLarge(null);
      chunks.push(chunk.subarray(0, n));
      if (!opened) {
        const first = chunk.subarray(0, n).findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
        if (first >= 0) {
          if (chunk[first] !== 0x7b && chunk[first] !== 0x5b) break;   // not JSON: JSON.parse says so
          opened = true;
        }
      }
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    if (typeof source !== 'number') fs.closeSync(fd);
  }
}

/**
 * A JSON file the user named (a description, names, a config: `what` says which), read whole
 * but never past the size a layout may have (checked up front for a file, while reading for a
 * stream: /dev/zero ends too), and parsed. Its problems are LayoutErrors naming it (exit
 * status 2), its I/O errors FileErrors.
 */
export function readJsonFile(path, what) {
  checkInput(path, what);
  const limit = JSON_LIMIT.toLocaleString('en-US');
  const text = reading(path, what, () => readCapped(sourceOf(path), JSON_LIMIT, (size) => {
    const is = size === null ? `more than ${limit} bytes` : `${size.toLocaleString('en-US')} bytes`;
    throw new LayoutError(`${displayName(path)} is ${is}: a ${what} JSON has at most ${limit}`);
  }));
  try {
    // 1e400 parses as an infinity: marked, to be refused where it is read (JSON has no infinity)
    return JSON.parse(text, (key, value) => (typeof value === 'number' && !Number.isFinite(value) ? OUT_OF_RANGE : value));
  } catch (err) {
    throw new LayoutError(`${what} ${displayName(path)} is not valid JSON: ${err.message}`);
  }
}

/**
 * A names file (--names): a JSON array of strings, read by readJsonFile (capped). With `slots`
 * (a count), a file with another number of names is refused with a LayoutError (exit status
 * 2), or, given `onMismatch(text)`, told to it and kept (a view that names what it can).
 */
export function readNamesFile(path, { slots = null, onMismatch = null, ties = null } = {}) {
  // every message names the file: readJsonFile's, and namesOf's `${where}[i] must be …`
  const names = namesOf(readJsonFile(path, 'names'), displayName(path));
  if (slots !== null && slots !== undefined && names.length !== Number(slots)) {
    const n = Number(slots);
    const text = `${displayName(path)} has ${names.length} name${names.length === 1 ? '' : 's'} for ${n} slot${n === 1 ? '' : 's'}`;
    const tied = missingTies(names.length, n, ties);
    if (!onMismatch) throw new LayoutError(`${text}: ${tied ?? 'give one name per slot'}`);
    onMismatch(tied ? `${text}: ${tied}` : text);
  }
  return names;
}

/** When a names file is short by exactly the slots tied to another (`ties()`: the core's
 *  representative of each slot), which they are and why: PyTorch's named_parameters() drops
 *  tied copies. Null otherwise. */
function missingTies(count, slots, ties) {
  if (count >= slots || typeof ties !== 'function') return null;
  const reps = ties();
  if (!Array.isArray(reps) || reps.length !== slots) return null;
  const copies = [];
  reps.forEach((r, i) => { if (r !== null && r !== undefined && Number(r) !== i) copies.push([i, Number(r)]); });
  if (copies.length !== slots - count) return null;
  const shown = copies.slice(0, 3).map(([i, r]) => `${i} (tied to slot ${r})`).join(', ') + (copies.length > 3 ? ` and ${copies.length - 3} more` : '');
  return `${copies.length === 1 ? 'slot' : 'slots'} ${shown} ${copies.length === 1 ? 'has' : 'have'} none: a tied parameter? named_parameters() drops tied copies; named_parameters(remove_duplicate=False) (torch 2.0 and later) or list(model.state_dict()) less the buffers keeps them`;
}

/** How recently a file changed for it to be named as maybe still being written. */
export const FRESH_MS = 2000;

/** A file's size and modification time, to tell later whether it changed (null: a stream, or
 *  not a regular file). */
export function fileStamp(file) {
  if (isStream(file)) return null;
  try {
    const s = fs.statSync(file);
    return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : null;
  } catch {
    return null;
  }
}

/**
 * The warning for a file that may still be being written, or null: it changed since `before`
 * (fileStamp's): its size or its modification time.
 */
export function stillWriting(file, before) {
  if (!before) return null;
  const after = fileStamp(file);
  if (!after) return null;
  const tail = 'it may still be being written; read it again once it is complete';
  if (after.size !== before.size) return `${displayName(file)} changed while it was read (${before.size} bytes, then ${after.size}): ${tail}`;
  if (after.mtimeMs !== before.mtimeMs) return `${displayName(file)} changed while it was read: ${tail}`;
  return null;
}

/** Was the file of `stamp` modified less than FRESH_MS before `now` (or after it: a writer's
 *  clock ahead of ours)? */
export const isFresh = (stamp, now = Date.now()) => stamp !== null && now - stamp.mtimeMs < FRESH_MS;
