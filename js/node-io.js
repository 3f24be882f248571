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

const S_ISVTX = 0o1000, S_IWOTH = 0o002;

/**
 * Where writing `path` lands: a symlink's target (followed to the end, as `cp` does; a dangling
 * link's too), so the link stays a link. Each link is followed only where the kernel's
 * fs.protected_symlinks would follow it: in a sticky folder writable by all (/tmp), a link owned
 * by another user than this process and than the folder's owner is refused (EACCES, code
 * EPROTECTEDLINK), so a link planted there never leads a write onto its victim's file (resolving
 * links here, the kernel's own refusal would not apply). The links followed are in `links`.
 */
export function writeTarget(path, links = []) {
  const euid = typeof process.geteuid === 'function' ? process.geteuid() : null;
  for (let hops = 0; hops < 40; hops++) {
    let st;
    try {
      st = fs.lstatSync(path);
    } catch {
      return path;   // nothing there yet
    }
    if (!st.isSymbolicLink()) return path;
    if (euid !== null && st.uid !== euid) {
      const folder = nodePath.dirname(nodePath.resolve(path));
      const dir = fs.statSync(folder);
      if ((dir.mode & (S_ISVTX | S_IWOTH)) === (S_ISVTX | S_IWOTH) && dir.uid !== st.uid) {
        throw Object.assign(new Error(`EPROTECTEDLINK: a symbolic link of another user in a sticky folder, open '${path}'`),
          { code: 'EPROTECTEDLINK', syscall: 'open', path, folder, owner: st.uid });
      }
    }
    links.push(path);
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
 *  0600), never setuid, setgid or sticky, and its owner and group where this process may give
 *  them (root writing over a user's file leaves it the user's); a new one gets 0666 less the
 *  umask. A symlink is written through: its target is replaced (writeTarget: never a link the
 *  kernel's fs.protected_symlinks would refuse to follow). A destination that exists and is not
 *  a regular file (a device such as /dev/null or /dev/full, a FIFO, a socket, a directory,
 *  /dev/stdout) is refused (ENOTREG), never renamed over. Resolves to {path: where the bytes
 *  went (the link's target), bytes: how many}: once the rename is done nothing fails. An error
 *  before it carries `target` when a link led elsewhere. */
export async function atomicWrite(path, fill) {
  let existing = null;
  try {
    existing = fs.statSync(path);   // through symlinks, /dev/stdout's to its pipe or terminal too
  } catch {
    // nothing there yet, a dangling link, or a link the kernel refuses to follow (below)
  }
  const kind = existing && nonRegular(existing);
  if (kind === 'a directory') throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: 'EISDIR', syscall: 'open', path: String(path) });
  if (kind) throw notRegularError(String(path), kind);
  const target = writeTarget(path);
  const named = (err) => {
    if (target !== path && err && typeof err === 'object' && err.target === undefined) err.target = target;
    return err;
  };
  existing = null;
  try {
    existing = fs.statSync(target);
  } catch {
    // a new file
  }
  const tmp = `${target}.tmp-${process.hrtime.bigint()}`;
  // the watcher first: whenever the temporary exists, something removes it on a kill
  const watcher = removeOnDeath(tmp);
  const mode = existing ? existing.mode & 0o777 : null;
  let fd;
  try {
    // Created with the final mode (never readable by others, even briefly, if the old one was not).
    fd = fs.openSync(tmp, 'wx', mode ?? 0o666);
  } catch (err) {
    watcher?.stdin.end();
    throw named(err);
  }
  let bytes = 0;
  try {
    if (existing) keepOwner(fd, existing);
    if (mode !== null) fs.fchmodSync(fd, mode);   // open's mode is masked by the umask
    await fill((chunk) => {
      let done = 0;
      while (done < chunk.length) done += fs.writeSync(fd, chunk, done, chunk.length - done);
      bytes += chunk.length;
    });
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(tmp, target);
  } catch (err) {
    if (fd !== null) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw named(err);
  } finally {
    watcher?.stdin.end();   // done: the temporary is renamed or removed
  }
  return { path: target, bytes };
}

/** The new file gets the old one's owner and group: root (or a member of the group) may give
 *  them; another user cannot, and the file is then theirs, as any file they create. */
function keepOwner(fd, st) {
  const euid = typeof process.geteuid === 'function' ? process.geteuid() : null;
  if (euid === null || (st.uid === euid && st.gid === process.getegid())) return;
  try {
    fs.fchownSync(fd, st.uid, st.gid);
  } catch (err) {
    if (err.code !== 'EPERM') throw err;
    try {
      fs.fchownSync(fd, -1, st.gid);   // the group, where this user is in it
    } catch (again) {
      if (again.code !== 'EPERM') throw again;
    }
  }
}
