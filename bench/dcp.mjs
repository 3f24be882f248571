// The DCP rows of the benchmark (docs/performance.md "DCP folders"): the Llama-7B-like model
// (291 parameters, 6.74 G) saved by torch.distributed.checkpoint from 8 ranks, form N, a bf16
// model and fp32 AdamW state, every tensor row-sharded (bench/dcp_writer.py; SPARSE: every
// record torch.save's pickles and zip, its storages holes; ~67 GB apparent, a few MB on disk,
// removed after):
//   - what opening reads, every byte of every file counted (tests/js/ds-counting.mjs), against a
//     bound computed here from the files and from dcp_truth.py's reading of .metadata: the
//     .metadata, and per record (a whole torch.save zip) its end records (98 B at most: the end
//     record, the ZIP64 locator and end record), central directory and data.pkl, and 128 B a
//     member (its local header); 64 KiB in all;
//   - the CLI's inspect and check;
//   - (not light) statistics over the folder against the same model's TLADAMF file
//     (tests/js/llama.mjs, sparse too), 1 worker: bytes of moments per second, each side.
// bench/run.mjs runs it (BENCH_DCP=off leaves it out, =light the statistics passes); alone, it
// writes its part of bench/results.json (the "dcp" key):
//   node bench/dcp.mjs [--light]        or   BENCH_ONLY=dcp npm run bench
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { open } from '../js/index.js';
import { countedFolder } from '../tests/js/ds-counting.mjs';
import { writeLlama } from '../tests/js/llama.mjs';
import { zipFactsAt } from '../tests/js/zip-facts.mjs';
import { log, once } from './timing.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(root, 'js/cli.js');
const node = process.execPath;
const PY = '/usr/bin/python3';
const writer = path.join(root, 'bench/dcp_writer.py');
const truth = path.join(root, 'tests/c/dcp_truth.py');
const MiB = 2 ** 20;

/** The bound on what opening the folder reads, from .metadata's storage entries as
 *  tests/c/dcp_truth.py reads them (Python, not the package) and the records' zips. */
function openBoundOf(dir) {
  const index = JSON.parse(execFileSync(PY, [truth, '--index', dir], { encoding: 'utf8', maxBuffer: 1 << 28 }));
  const fds = new Map();
  let centralDirectories = 0, pkl = 0, members = 0;
  for (const e of index.entries) {
    if (!fds.has(e.file)) fds.set(e.file, fs.openSync(path.join(dir, e.file), 'r'));
    const f = zipFactsAt(fds.get(e.file), e.offset, e.length);
    centralDirectories += f.centralDirectory;
    pkl += f.pkl;
    members += f.members;
  }
  for (const fd of fds.values()) fs.closeSync(fd);
  const metadata = fs.statSync(path.join(dir, '.metadata')).size, records = index.entries.length;
  const bound = metadata + 98 * records + centralDirectories + pkl + 128 * members + 65536;
  return { bound, metadata, centralDirectories, pkl, records, members };
}

async function openCounts(dir) {
  const c = await countedFolder(dir);
  const t0 = performance.now();
  const ck = await open(c.source);
  const seconds = (performance.now() - t0) / 1000;
  const report = ck.report;
  ck.close();
  if (!report.ok) throw new Error(`${dir}: ${report.error.message}`);
  return { open: { bytes: c.bytes(), reads: c.reads(), seconds }, slots: report.slotCount, family: report.family };
}

export async function dcpBench({ data = path.join(root, 'build/bench/data'), repeat = 3, light = false, keep = false } = {}) {
  fs.mkdirSync(data, { recursive: true });
  const rows = [], figures = {}, ratios = {}, targets = {};
  const row = (name, r, note = '') => rows.push({ name, seconds: r.seconds, cpuSeconds: r.cpuSeconds ?? null, peakRssMiB: r.peakRssMiB ?? null, note: r.timedOut ? `> ${r.timedOut} s` : note });
  const dir = path.join(data, 'dcp-llama-7b-w8');
  fs.rmSync(dir, { recursive: true, force: true });
  log('the Llama-7B-like DCP folder, 8 ranks (sparse)…');
  const w = once(PY, [writer, dir]);
  const written = JSON.parse(w.out);
  const name = '7B-like DCP W=8';
  const bound = openBoundOf(dir);
  const counts = await openCounts(dir);
  const onDisk = Object.keys(written.files).reduce((s, f) => s + fs.statSync(path.join(dir, f)).blocks * 512, 0);
  figures[name] = { ...written, onDisk, writeSeconds: w.seconds, ...bound, ...counts };
  ratios[`${name}: bytes read to open / bound`] = counts.open.bytes / bound.bound;
  targets[`${name}: bytes read to open / bound`] = ['<=', 1];
  row(`${name}: inspect, CLI`, once(node, [cli, 'inspect', dir]));
  row(`${name}: check, CLI`, once(node, [cli, 'check', dir]));
  if (!light) {
    const tl = path.join(data, 'dcp-llama-7b.ckpt');
    writeLlama(tl, { kind: 'optimizer' });
    const moments = 2 * 4 * written.elements;
    log(`${name}: statistics over its moments (${(moments / 1e9).toFixed(0)} GB of zeros) and over the TLADAMF file's…`);
    // a rate only for a pass whose report counts every moment element (m and v of each entry)
    const pass = (file) => {
      const run = once(node, [cli, 'inspect', file, '--stats', '--json', '--workers', '1']);
      let counted = 0;
      try {
        counted = JSON.parse(run.out).entries.reduce((s, e) => s + (e.m?.count ?? 0) + (e.v?.count ?? 0), 0);
      } catch {
        // not a report: nothing counted
      }
      if (run.seconds !== null && counted !== moments / 4) {
        run.note = `the report's statistics count ${counted} of ${moments / 4} moment elements`;
        run.seconds = null;
      }
      return run;
    };
    const best = { dcp: null, tl: null };
    for (let r = 0; r < repeat; r++) {
      for (const [side, file] of [['dcp', dir], ['tl', tl]]) {
        if (side === 'tl' && best.dcp.seconds === null) {
          best.tl = { seconds: null, note: 'not run: no statistics of the folder to compare with' };
          continue;
        }
        const run = pass(file);
        if (!best[side] || (run.seconds !== null && (best[side].seconds === null || run.seconds < best[side].seconds))) best[side] = run;
      }
      if (best.dcp.seconds === null) break;   // no statistics of the folder: nothing to compare
    }
    const dcpRate = best.dcp.seconds ? moments / best.dcp.seconds : null, tlRate = best.tl.seconds ? moments / best.tl.seconds : null;
    row(`${name}: inspect --stats, CLI (1 worker)`, best.dcp, dcpRate ? `${(dcpRate / 1e9).toFixed(2)} GB/s of moments` : best.dcp.note);
    row('7B-like TLADAMF: inspect --stats, CLI (1 worker)', best.tl, tlRate ? `${(tlRate / 1e9).toFixed(2)} GB/s` : best.tl.note);
    figures[`${name} statistics`] = { momentBytes: moments, dcpRate, tlRate };
    ratios[`${name}: statistics rate / TLADAMF rate`] = dcpRate && tlRate ? dcpRate / tlRate : null;
    ratios[`${name}: statistics peak RSS MiB`] = dcpRate ? best.dcp.peakRssMiB : null;
    targets[`${name}: statistics rate / TLADAMF rate`] = ['>=', 0.5];
    targets[`${name}: statistics peak RSS MiB`] = ['<=', 256];
    if (!keep) fs.rmSync(tl, { force: true });
  }
  if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  return { rows, figures, ratios, targets };
}

export function printDcp({ rows, figures, ratios, targets }) {
  const pad = (s, n) => String(s).padEnd(n);
  const num = (x, d = 3) => (x === null || x === undefined ? '' : x.toFixed(d));
  console.log('\nDCP: opening the Llama-7B-like folder (sparse; bound: .metadata + 98 B of end records a record + central directories + data.pkl + 128 B a member + 64 KiB)');
  for (const [name, f] of Object.entries(figures)) {
    if (!f.open) continue;
    console.log(`  ${name}: ${Object.keys(f.files).length} files, ${(f.bytes / 1e9).toFixed(1)} GB (${(f.onDisk / MiB).toFixed(1)} MiB on disk), ${f.keys} keys (${f.tensorKeys} tensors), ${f.chunks} chunks, ${f.records} records, .metadata ${f.metadataBytes} B, ${f.slots} slots`);
    console.log(`    open: ${f.open.bytes} B in ${f.open.reads} reads, ${f.open.seconds.toFixed(2)} s · bound ${f.bound} B (${f.metadata} + 98 x ${f.records} + ${f.centralDirectories} + ${f.pkl} + 128 x ${f.members} + 65536)`);
  }
  console.log(`\n${pad('DCP measurement', 66)} ${pad('seconds', 9)} ${pad('CPU s', 7)} ${pad('peak RSS MiB', 13)}`);
  for (const r of rows) console.log(`${pad(r.name, 66)} ${pad(r.seconds === null ? r.note : num(r.seconds), 9)} ${pad(num(r.cpuSeconds, 2), 7)} ${pad(num(r.peakRssMiB, 1), 13)}${r.seconds !== null ? r.note : ''}`);
  console.log('\nDCP ratios');
  for (const [k, v] of Object.entries(ratios)) {
    const t = targets[k];
    const met = t && v !== null ? (t[0] === '>=' ? v >= t[1] : v <= t[1]) : null;
    console.log(`  ${pad(k, 56)} ${v === null ? 'n/a' : v.toFixed(3)}${t ? `   target ${t[0]} ${num(t[1], t[1] < 1 ? 3 : 0)}: ${met === null ? 'n/a' : met ? 'met' : 'MISSED'}` : ''}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await dcpBench({ repeat: Number(process.env.BENCH_REPEAT ?? 3), light: process.argv.includes('--light') || process.env.BENCH_DCP === 'light', keep: process.argv.includes('--keep') });
  printDcp(result);
  const out = path.join(root, 'bench/results.json');
  let all = {};
  try {
    all = JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch {
    // no full run yet: this part alone
  }
  all.dcp = { date: new Date().toISOString(), node: process.version, ...result };
  fs.writeFileSync(out, JSON.stringify(all, null, 2) + '\n');
  console.log('\nwritten to bench/results.json (dcp)');
}
