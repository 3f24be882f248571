// Node-only I/O: file sources read with positional fs.readSync (a 50 GB file costs no more
// memory than a 5 MB one), and atomic saving (temporary sibling, rename; the temporary is
// removed on any failure and the destination is untouched).

import fs from 'node:fs';
import nodePath from 'node:path';
import { fileURLToPath } from 'node:url';

export class FileSource {
  static open(source) {
    if (typeof source === 'number') return new FileSource(source, false);
    const path = source instanceof URL ? fileURLToPath(source) : source;
    return new FileSource(fs.openSync(path, 'r'), true);
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

/** Write through `await fill(write)` into path atomically, as the reference writer does: a
 *  sibling `{path}.tmp-{nanos}`, closed, then renamed over the destination. On any failure
 *  the temporary is removed and the destination is untouched. A destination that exists
 *  keeps its permission bits (a 0600 checkpoint stays 0600), never setuid, setgid or sticky;
 *  a new one gets 0666 less the umask. A symlink is written through: its target is replaced. */
export async function atomicWrite(path, fill) {
  path = writeTarget(path);
  let mode = null;
  try {
    mode = fs.statSync(path).mode & 0o777;
  } catch {
    // no destination yet
  }
  const tmp = `${path}.tmp-${process.hrtime.bigint()}`;
  // Created with the final mode (never readable by others, even briefly, if the old one was not).
  let fd = fs.openSync(tmp, 'wx', mode ?? 0o666);
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
  }
}
