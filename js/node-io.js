// Node-only I/O: file sources read with positional fs.readSync (a 50 GB file costs no more
// memory than a 5 MB one), and atomic saving (temporary sibling, rename; the temporary is
// removed on any failure and the destination is untouched).

import fs from 'node:fs';
import nodePath from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export class FileSource {
  static open(source) {
    if (typeof source === 'number') return new FileSource(source, false);
    const path = source instanceof URL ? fileURLToPath(source) : source;
    const fd = fs.openSync(path, 'r');
    if (fs.fstatSync(fd).isDirectory()) {   // opens, but every read would fail with a bare EISDIR
      fs.closeSync(fd);
      throw Object.assign(new Error(`${path} is a folder, not a checkpoint file (a Trainer checkpoint-N/ folder: inspect, pair and health take it)`), { code: 'EISDIR', syscall: 'open', path: String(path) });
    }
    return new FileSource(fd, true);
  }

  constructor(fd, owned) {
    this.fd = fd;
    this.owned = owned;
    const st = fs.fstatSync(fd);
    // A pipe or character device has no useful size: the core then reads to skip.
    this.size = st.isFile() ? st.size : -1;
  }

  read(offset, dest) {
    let done = 0;
    while (done < dest.length) {
      const n = fs.readSync(this.fd, dest, done, dest.length - done, this.size >= 0 ? offset + done : null);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  close() {
    if (this.owned) fs.closeSync(this.fd);
  }
}

/** Where writing `path` lands: a symlink's target (followed to the end, as `cp` does; a
 *  dangling link's too), so the link stays a link. */
function writeTarget(path) {
  for (let hops = 0; hops < 40; hops++) {
    let st;
    try {
      st = fs.lstatSync(path);
    } catch {
      return path;   // nothing there yet
    }
    if (!st.isSymbolicLink()) return path;
    path = nodePath.resolve(nodePath.dirname(path), fs.readlinkSync(path));
  }
  throw Object.assign(new Error(`ELOOP: too many symbolic links, open '${path}'`), { code: 'ELOOP', syscall: 'open', path });
}

/** What a destination that is not a regular file is, in words (null: a regular file). */
export function nonRegular(st) {
  if (st.isFile()) return null;
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** An error for a destination that exists and is not a regular file (code ENOTREG, `kind` in
 *  words): renaming over it would replace a device, a FIFO or a socket with a file. */
export function notRegularError(path, kind) {
  return Object.assign(new Error(`ENOTREG: ${path} is ${kind}, not a regular file, open '${path}'`), { code: 'ENOTREG', syscall: 'open', path, kind });
}

/**
 * A watcher that removes the temporary when this process ends before renaming it: killed by a
 * signal (Ctrl-C, SIGTERM, SIGHUP, even SIGKILL), where no JS runs (the core writes
 * synchronously). A shell in a session of its own waits for the end of a pipe only this
 * process holds, then removes the temporary if it is still there (after the rename it is not:
 * nothing to do). Null where there is no /bin/sh.
 */
function removeOnDeath(tmp) {
  if (process.platform === 'win32') return null;
  try {
    const child = spawn('/bin/sh', ['-c', 'cat >/dev/null; rm -f -- "$1"', 'ckptscope-cleanup', tmp],
      { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    child.on('error', () => {});
    child.stdin.on('error', () => {});
    child.unref();
    child.stdin.unref?.();
    return child;
  } catch {
    return null;
  }
}

/** Write through `await fill(write)` into path atomically, as the reference writer does: a
 *  sibling `{path}.tmp-{nanos}`, closed, then renamed over the destination. On any failure
 *  the temporary is removed and the destination is untouched; killed by a signal, a watcher
 *  removes it. A destination that exists keeps its permission bits (a 0600 checkpoint stays
 *  0600), never setuid, setgid or sticky; a new one gets 0666 less the umask. A symlink is
 *  written through: its target is replaced. A destination that exists and is not a regular
 *  file (a device such as /dev/null or /dev/full, a FIFO, a socket, a directory, /dev/stdout) is
 *  refused (ENOTREG), never renamed over. */
export async function atomicWrite(path, fill) {
  let existing = null;
  try {
    existing = fs.statSync(path);   // through symlinks, /dev/stdout's to its pipe or terminal too
  } catch {
    // nothing there yet, or a dangling link: written as a new file
  }
  const kind = existing && nonRegular(existing);
  if (kind === 'a directory') throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: 'EISDIR', syscall: 'open', path: String(path) });
  if (kind) throw notRegularError(String(path), kind);
  path = writeTarget(path);
  let mode = null;
  try {
    mode = fs.statSync(path).mode & 0o777;
  } catch {
    // no destination yet
  }
  const tmp = `${path}.tmp-${process.hrtime.bigint()}`;
  // the watcher first: whenever the temporary exists, something removes it on a kill
  const watcher = removeOnDeath(tmp);
  let fd;
  try {
    // Created with the final mode (never readable by others, even briefly, if the old one was not).
    fd = fs.openSync(tmp, 'wx', mode ?? 0o666);
  } catch (err) {
    watcher?.stdin.end();
    throw err;
  }
  try {
    if (mode !== null) fs.fchmodSync(fd, mode);   // open's mode is masked by the umask
    await fill((bytes) => {
      let done = 0;
      while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done);
    });
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(tmp, path);
  } catch (err) {
    if (fd !== null) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  } finally {
    watcher?.stdin.end();   // done: the temporary is renamed or removed
  }
}
