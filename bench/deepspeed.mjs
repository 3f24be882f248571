// The DeepSpeed rows of the benchmark (docs/performance.md "DeepSpeed folders"):
//   1. the Llama-7B-like model (291 parameters, decay and no-decay groups) as a bf16 ZeRO-2 and a
//      ZeRO-3 checkpoint of 8 ranks, SPARSE (bench/deepspeed_writer.py: torch.save's pickles and
//      zips, the storages holes; ~94 GB and ~81 GB apparent, a few MB on disk, removed after):
//      what opening and pairing read (counted through tests/js/ds-counting.mjs) against the
//      bound of their central directories, data.pkl, 128 B a record and 64 KiB in all
//      (tests/js/zip-facts.mjs), the CLI's inspect and check, and (not light) statistics and
//      export of the ZeRO-2 folder's 81 GB of zeros, for their peak memory;
//   2. a GPT-2-small-sized ZeRO-2 checkpoint of 4 ranks with random values, and the same model
//      as a TorchLean TLADAMF file and its TLSF32B state file: statistics, health and export
//      over each (1 worker), bytes per second of the folder against the TLADAMF pair's;
//   3. the peer: bench/deepspeed_peer.py, zero_to_fp32.py's consolidation extended to the
//      moments (torch.load through a restricted unpickler, torch.cat, slicing, one safetensors
//      file; once more with its output synced, as ckptscope's is) against
//      `ckptscope export DIR out.safetensors`: wall time and peak memory, best of 5 at least.
// bench/run.mjs runs these (BENCH_DEEPSPEED=off leaves them out, =light leaves out the passes
// over the 7B-like zeros); alone, it writes its part of bench/results.json (the "deepspeed" key):
//   node bench/deepspeed.mjs [--light]        or   BENCH_ONLY=deepspeed npm run bench
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { open, pair } from '../js/index.js';
import { CountingFile } from '../tests/js/counting.mjs';
import { countedFolder } from '../tests/js/ds-counting.mjs';
import { openBoundOf } from '../tests/js/zip-facts.mjs';
import { log, once } from './timing.mjs';
import { writeLlamaSafetensors } from '../tests/js/llama.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(root, 'js/cli.js');
const node = process.execPath;
const PY = '/usr/bin/python3';
const writer = path.join(root, 'bench/deepspeed_writer.py');
const peer = path.join(root, 'bench/deepspeed_peer.py');
const exportScript = path.join(root, 'bench/export_bench.mjs');
const MiB = 2 ** 20;

/** Each command of `sides` run `repeat` times, the sides interleaved (a shared machine's load
 *  falls on both): per side the best wall seconds, the CPU seconds of that run, the peak RSS of
 *  all runs. */
function interleaved(sides, repeat) {
  const best = Object.fromEntries(Object.keys(sides).map((k) => [k, null]));
  for (let r = 0; r < repeat; r++) {
    for (const [k, [cmd, args, after]] of Object.entries(sides)) {
      const run = once(cmd, args);
      after?.();
      const b = best[k];
      if (!b || run.seconds < b.seconds) best[k] = { ...run, peakRssMiB: Math.max(run.peakRssMiB, b?.peakRssMiB ?? 0) };
      else b.peakRssMiB = Math.max(b.peakRssMiB, run.peakRssMiB);
    }
  }
  return best;
}

function folderSizes(dir) {
  let size = 0, onDisk = 0, files = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = fs.statSync(p);
        size += st.size;
        onDisk += st.blocks * 512;
        files++;
      }
    }
  };
  walk(dir);
  return { size, onDisk, files };
}

/** What opening (open: the report without statistics) and pairing with the model's
 *  model.safetensors read of the folder, against the bound. */
async function openCounts(dir, model) {
  const c = await countedFolder(dir);
  const t0 = performance.now();
  const ck = await open(c.source);
  const seconds = (performance.now() - t0) / 1000;
  const report = ck.report;
  ck.close();
  if (!report.ok) throw new Error(`${dir}: ${report.error.message}`);
  const b = openBoundOf(c.zips);
  const opened = { bytes: c.bytes(), reads: c.reads(), seconds };
  const p = await countedFolder(dir);
  const m = new CountingFile(model);
  const paired = await pair(p.source, m);
  m.close();
  if (!paired.pairs) throw new Error(`${dir} does not pair with ${model}: ${paired.error?.message}`);
  return { ...b, open: opened, pair: { bytes: p.bytes(), reads: p.reads(), modelBytes: m.bytes }, kind: report.deepspeed.kind, worldSize: report.deepspeed.worldSize, slots: report.slotCount };
}

export async function deepspeedBench({ data = path.join(root, 'build/bench/data'), repeat = 3, light = false, keep = false } = {}) {
  fs.mkdirSync(data, { recursive: true });
  const rows = [], figures = {}, ratios = {}, targets = {};
  const row = (name, r, note = '') => rows.push({ name, seconds: r.seconds, cpuSeconds: r.cpuSeconds ?? null, peakRssMiB: r.peakRssMiB ?? null, note: r.timedOut ? `> ${r.timedOut} s` : note });

  // ---- 1. the Llama-7B-like ZeRO-2 and ZeRO-3 folders of 8 ranks, sparse ----
  const model = path.join(data, 'ds-llama-7b.safetensors');
  writeLlamaSafetensors(model);
  for (const stage of [2, 3]) {
    const dir = path.join(data, `ds-llama-7b-z${stage}-w8`);
    fs.rmSync(dir, { recursive: true, force: true });
    log(`the Llama-7B-like ZeRO-${stage} folder, 8 ranks (sparse)…`);
    const w = once(PY, [writer, 'sparse', 'llama7b', '8', String(stage), dir]);
    const sizes = folderSizes(dir);
    const counts = await openCounts(dir, model);
    const name = `7B-like ZeRO-${stage} W=8`;
    figures[name] = { ...sizes, writeSeconds: w.seconds, ...counts };
    ratios[`${name}: bytes read to open / bound`] = counts.open.bytes / counts.bound;
    ratios[`${name}: bytes read to pair / bound`] = counts.pair.bytes / counts.bound;
    targets[`${name}: bytes read to open / bound`] = ['<=', 1];
    targets[`${name}: bytes read to pair / bound`] = ['<=', 1];
    row(`${name}: inspect, CLI`, once(node, [cli, 'inspect', dir]));
    row(`${name}: check, CLI`, once(node, [cli, 'check', dir]));
    row(`${name}: check --state model.safetensors, CLI`, once(node, [cli, 'check', dir, '--state', model]));
    if (!light && stage === 2) {
      log(`${name}: statistics and export of its ${(sizes.size / 1e9).toFixed(0)} GB (zeros)…`);
      const st = once(node, [cli, 'inspect', dir, '--stats', '--json', '--workers', '1'], { timeout: 1800 });
      row(`${name}: inspect --stats, CLI (1 worker)`, st, st.seconds ? `${(sizes.size / st.seconds / 1e9).toFixed(2)} GB/s` : '');
      const ex = once(node, [exportScript, dir, 'safetensors'], { timeout: 1800 });
      row(`${name}: export safetensors, streamed (bytes dropped)`, ex, ex.seconds ? `${(sizes.size / ex.seconds / 1e9).toFixed(2)} GB/s` : '');
      ratios[`${name}: statistics peak RSS MiB`] = st.peakRssMiB ?? null;
      ratios[`${name}: export peak RSS MiB`] = ex.peakRssMiB ?? null;
      targets[`${name}: statistics peak RSS MiB`] = ['<=', 256];
      targets[`${name}: export peak RSS MiB`] = ['<=', 256];
    }
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }
  if (!keep) fs.rmSync(model, { force: true });

  // ---- 2. GPT-2-small-sized, random values: the folder against the TLADAMF pair ----
  const gdir = path.join(data, 'ds-gpt2-z2-w4'), tl = path.join(data, 'ds-gpt2.ckpt'), tls = path.join(data, 'ds-gpt2.tlsf');
  if (!fs.existsSync(path.join(gdir, 'latest')) || !fs.existsSync(tls)) {
    log('generating the GPT-2-small-sized ZeRO-2 folder (4 ranks) and its TLADAMF pair…');
    fs.rmSync(gdir, { recursive: true, force: true });
    execFileSync(PY, [writer, 'real', 'gpt2', '4', '2', gdir, tl, tls], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const elements = Number(JSON.parse(once(node, [cli, 'inspect', tl, '--json']).out).elementCounts.owned);
  const gsizes = folderSizes(gdir);
  figures['GPT-2 ZeRO-2 W=4'] = { ...gsizes, elements, tladamf: fs.statSync(tl).size, tlsf: fs.statSync(tls).size };
  // warm the page cache
  for (const f of [tl, tls, ...fs.readdirSync(path.join(gdir, 'global_step10')).map((n) => path.join(gdir, 'global_step10', n))]) execFileSync('cat', [f], { stdio: ['ignore', 'ignore', 'ignore'] });
  const moments = 2 * 4 * elements, masters = 4 * elements;
  log('GPT-2: statistics, health and export, the folder against the TLADAMF pair…');
  const passes = {
    statistics: {
      ds: [node, [cli, 'inspect', gdir, '--stats', '--json', '--workers', '1']], dsBytes: moments + masters,
      tl: [node, [cli, 'inspect', tl, '--stats', '--json', '--workers', '1']], tlBytes: moments,
    },
    health: {
      ds: [node, [cli, 'health', gdir, '--json', '--workers', '1']], dsBytes: moments + masters,
      tl: [node, [cli, 'health', tl, '--state', tls, '--lr', '1e-4', '--json', '--workers', '1']], tlBytes: moments + masters,
    },
    export: {
      ds: [node, [exportScript, gdir, 'safetensors']], dsBytes: moments + masters,
      tl: [node, [exportScript, tl, 'safetensors']], tlBytes: moments,
    },
  };
  for (const [pass, p] of Object.entries(passes)) {
    const r = interleaved({ ds: p.ds, tl: p.tl }, repeat);
    const dsRate = p.dsBytes / r.ds.seconds, tlRate = p.tlBytes / r.tl.seconds;
    row(`GPT-2 ${pass}: DeepSpeed folder (m, v, masters), CLI`, r.ds, `${(dsRate / 1e9).toFixed(2)} GB/s`);
    row(`GPT-2 ${pass}: TLADAMF${pass === 'health' ? ' + TLSF32B' : ''}, CLI`, r.tl, `${(tlRate / 1e9).toFixed(2)} GB/s`);
    figures[`GPT-2 ${pass}`] = { dsBytes: p.dsBytes, tlBytes: p.tlBytes, dsRate, tlRate };
    ratios[`GPT-2 ${pass}: DeepSpeed rate / TLADAMF rate`] = dsRate / tlRate;
    ratios[`GPT-2 ${pass}: DeepSpeed peak RSS MiB`] = r.ds.peakRssMiB;
    targets[`GPT-2 ${pass}: DeepSpeed rate / TLADAMF rate`] = ['>=', 0.5];
    targets[`GPT-2 ${pass}: DeepSpeed peak RSS MiB`] = ['<=', 256];
  }

  // ---- 3. the peer: consolidating in Python against ckptscope export ----
  log('GPT-2: ckptscope export against the Python consolidation (torch.load, torch.cat, slicing)…');
  const ours = path.join(data, 'ds-gpt2-export.safetensors'), theirs = path.join(data, 'ds-gpt2-peer.safetensors');
  figures.plainTorchLoad = execFileSync(PY, [peer, '--plain', path.join(gdir, 'global_step10', 'zero_pp_rank_0_mp_rank_00_optim_states.pt')], { encoding: 'utf8' }).trim();
  // ckptscope's export syncs its output to the disk (an atomic, durable write); the peer as
  // zero_to_fp32.py and safetensors save do not, and once more with os.fsync, the same work
  const r = interleaved({
    ours: [node, [cli, 'export', gdir, ours], () => fs.rmSync(ours, { force: true })],
    peer: [PY, [peer, path.join(gdir, 'global_step10'), theirs], () => fs.rmSync(theirs, { force: true })],
    peerSynced: [PY, [peer, path.join(gdir, 'global_step10'), theirs, '--fsync'], () => fs.rmSync(theirs, { force: true })],
  }, Math.max(repeat, 5));
  row('GPT-2: ckptscope export DIR out.safetensors', r.ours);
  row('GPT-2: Python consolidation (torch.load, torch.cat, slicing, save)', r.peer);
  row('GPT-2: the same, its output synced (os.fsync)', r.peerSynced);
  ratios['export time: ckptscope / Python consolidation'] = r.ours.seconds / r.peer.seconds;
  ratios['export CPU time: ckptscope / Python consolidation'] = r.ours.cpuSeconds / r.peer.cpuSeconds;
  ratios['export time: ckptscope / Python consolidation synced'] = r.ours.seconds / r.peerSynced.seconds;
  ratios['export peak RSS: ckptscope / Python consolidation'] = r.ours.peakRssMiB / r.peer.peakRssMiB;
  targets['export time: ckptscope / Python consolidation'] = ['<=', 1 / 3];
  targets['export peak RSS: ckptscope / Python consolidation'] = ['<=', 1 / 4];
  return { rows, figures, ratios, targets };
}

export function printDeepspeed({ rows, figures, ratios, targets }) {
  const pad = (s, n) => String(s).padEnd(n);
  const num = (x, d = 3) => (x === null || x === undefined ? '' : x.toFixed(d));
  console.log('\nDeepSpeed: opening the Llama-7B-like folders (sparse; bound: central directories + data.pkl + 128 B a record + 64 KiB)');
  for (const [name, f] of Object.entries(figures)) {
    if (!f.open) continue;
    console.log(`  ${name}: ${f.files} files, ${(f.size / 1e9).toFixed(1)} GB (${(f.onDisk / MiB).toFixed(1)} MiB on disk), ${f.slots} slots, ${f.records} records`);
    console.log(`    open: ${f.open.bytes} B in ${f.open.reads} reads · pair with model.safetensors: ${f.pair.bytes} B in ${f.pair.reads} reads (+ ${f.pair.modelBytes} B of the model) · bound ${f.bound} B (${f.centralDirectories} + ${f.pkl} + 128 x ${f.records} + 65536)`);
  }
  if (figures.plainTorchLoad) console.log(`  torch.load of a rank's file without DeepSpeed installed: ${figures.plainTorchLoad}`);
  console.log(`\n${pad('DeepSpeed measurement', 66)} ${pad('seconds', 9)} ${pad('CPU s', 7)} ${pad('peak RSS MiB', 13)}`);
  for (const r of rows) console.log(`${pad(r.name, 66)} ${pad(r.seconds === null ? r.note : num(r.seconds), 9)} ${pad(num(r.cpuSeconds, 2), 7)} ${pad(num(r.peakRssMiB, 1), 13)}${r.seconds !== null ? r.note : ''}`);
  console.log('\nDeepSpeed ratios');
  for (const [k, v] of Object.entries(ratios)) {
    const t = targets[k];
    const met = t && v !== null ? (t[0] === '>=' ? v >= t[1] : v <= t[1]) : null;
    console.log(`  ${pad(k, 56)} ${v === null ? 'n/a' : v.toFixed(3)}${t ? `   target ${t[0]} ${num(t[1], t[1] < 1 ? 3 : 0)}: ${met ? 'met' : 'MISSED'}` : ''}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await deepspeedBench({ repeat: Number(process.env.BENCH_REPEAT ?? 3), light: process.argv.includes('--light') || process.env.BENCH_DEEPSPEED === 'light', keep: process.argv.includes('--keep') });
  printDeepspeed(result);
  const out = path.join(root, 'bench/results.json');
  let all = {};
  try {
    all = JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch {
    // no full run yet: this part alone
  }
  all.deepspeed = { date: new Date().toISOString(), node: process.version, ...result };
  fs.writeFileSync(out, JSON.stringify(all, null, 2) + '\n');
  console.log('\nwritten to bench/results.json (deepspeed)');
}
