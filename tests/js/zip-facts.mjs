// What the bound on opening a torch.save zip is made of, read here with fs (not through the
// package): the central directory's size, data.pkl's size and the number of storage records
// (members `data/{key}`), for the tests and the benchmark that count what opening reads
// (docs/performance.md: at most the central directories, the data.pkl members, 128 bytes a
// record and 64 KiB in all). A zip without a comment, as torch.save writes it.
import fs from 'node:fs';

function readAt(fd, at, n) {
  const b = Buffer.alloc(n);
  fs.readSync(fd, b, 0, n, at);
  return b;
}

/** {centralDirectory, pkl, records, members} of a torch.save zip. */
export function zipFacts(file) {
  const fd = fs.openSync(file, 'r');
  try {
    return zipFactsAt(fd, 0, fs.fstatSync(fd).size, file);
  } finally {
    fs.closeSync(fd);
  }
}

/** The same of the zip in bytes [offset, offset + length) of an open file (a record inside a DCP
 *  data file): its end record ends the window, its offsets count from the window's start. */
export function zipFactsAt(fd, offset, length, name = `bytes ${offset}..${offset + length}`) {
  const end = readAt(fd, offset + length - 22, 22);
  if (end.readUInt32LE(0) !== 0x06054b50 || end.readUInt16LE(20) !== 0) throw new Error(`${name}: no end record without a comment`);
  let count = end.readUInt16LE(10), cdSize = end.readUInt32LE(12), cdAt = end.readUInt32LE(16);
  const loc = readAt(fd, offset + length - 42, 20);
  if (loc.readUInt32LE(0) === 0x07064b50) {
    const rec = readAt(fd, offset + Number(loc.readBigUInt64LE(8)), 56);
    count = Number(rec.readBigUInt64LE(32));
    cdSize = Number(rec.readBigUInt64LE(40));
    cdAt = Number(rec.readBigUInt64LE(48));
  }
  const cd = readAt(fd, offset + cdAt, cdSize);
  let pkl = null, records = 0;
  for (let k = 0, at = 0; k < count; k++) {
    const nlen = cd.readUInt16LE(at + 28), xlen = cd.readUInt16LE(at + 30), clen = cd.readUInt16LE(at + 32);
    const name = cd.toString('utf8', at + 46, at + 46 + nlen);
    let usize = cd.readUInt32LE(at + 24);
    if (usize === 0xffffffff) {   // ZIP64: the uncompressed size comes first in its extra field
      for (let x = at + 46 + nlen; x < at + 46 + nlen + xlen;) {
        if (cd.readUInt16LE(x) === 1) usize = Number(cd.readBigUInt64LE(x + 4));
        x += 4 + cd.readUInt16LE(x + 2);
      }
    }
    if (name.endsWith('/data.pkl')) pkl = usize;
    if (/\/data\/\d+$/.test(name)) records++;
    at += 46 + nlen + xlen + clen;
  }
  return { centralDirectory: cdSize, pkl, records, members: count };
}

/** The bound on what opening the zips `files` reads, all together. */
export function openBoundOf(files) {
  const facts = files.map(zipFacts);
  const sum = (k) => facts.reduce((s, f) => s + f[k], 0);
  return {
    bound: sum('centralDirectory') + sum('pkl') + 128 * sum('records') + 65536,
    centralDirectories: sum('centralDirectory'),
    pkl: sum('pkl'),
    records: sum('records'),
  };
}
