// npm run bench: one run, on the same generated files, of
//   1. statistics throughput (GB/s): native core (-O3), wasm with SIMD, wasm without SIMD,
//      a plain JavaScript loop, NumPy over a memory map; wasm also end to end through the CLI;
//   2. inspecting (no statistics) a 1,000,000-slot layout with ties;
//   3. indexing a 20 GB sparse file against a 20 MB one (same 1,000 entries);
//   4. peak memory of each (getrusage / /usr/bin/time -v);
//   5. the limit: a C loop (-O3 -march=native) that only read()s the statistics file in 1 MiB
//      chunks and sums its floats, and each statistics path as a fraction of it;
//   6. scale (bench/scale.mjs): the Llama-7B-like pair opened from a file, a Blob and over HTTP
//      (bytes and reads counted), the CLI on it, inspect --json and export from 20k to 1M slots
//      (BENCH_SCALE=light leaves out the passes that read its 81 GB of zeros, =off all of it);
//   7. the viewer's Scan and health pass against the CLI's on the same pair (bench/viewer.mjs);
//   8. workers (bench/workers.mjs): 1 vs 2 for inspect --stats and health on 4 GiB of random
//      float32, interleaved, with the load average (BENCH_WORKERS=off leaves it out);
//   9. PyTorch files (bench/pytorch.mjs): the Llama-7B-like pair as sparse torch.save files
//      (bytes read to open, inspect, check --state), and a GPT-2-small-sized AdamW state saved by
//      torch 1.13: inspect, --stats and health against torch.load and the same passes in torch
//      (BENCH_PYTORCH=off leaves it out);
//  10. DeepSpeed folders (bench/deepspeed.mjs): the Llama-7B-like ZeRO-2 and ZeRO-3 checkpoints
//      of 8 ranks as sparse files (bytes read to open and pair against their bound), a
//      GPT-2-small-sized ZeRO-2 folder's statistics, health and export against its TLADAMF pair,
//      and its export against a Python consolidation (BENCH_DEEPSPEED=off leaves it out, =light
//      the passes over the 7B-like zeros; BENCH_ONLY=deepspeed runs it alone).
//  11. DCP folders (bench/dcp.mjs): the Llama-7B-like model saved by torch.distributed.checkpoint
//      from 8 ranks as sparse files (bytes read to open against their bound, inspect, check) and
//      its statistics against its TLADAMF file's (BENCH_DCP=off leaves it out, =light the
//      statistics passes; BENCH_ONLY=dcp runs it alone).
// Prints a table and the ratios; writes bench/results.json (not committed).
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { writeSparse } from '../tests/js/sparse.mjs';
import { inspect, writeCheckpoint, loadCore } from '../js/index.js';
import { scaleBench, printScale } from './scale.mjs';
import { viewerBench, viewerRows, viewerRatios } from './viewer.mjs';
import { workersBench, printWorkers, speedup } from './workers.mjs';
import { pytorchBench, printPytorch } from './pytorch.mjs';
import { deepspeedBench, printDeepspeed } from './deepspeed.mjs';
import { dcpBench, printDcp } from './dcp.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const data = path.join(root, 'build/bench/data');
fs.mkdirSync(data, { recursive: true });
const GiB = 2 ** 30;
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);

function log(s) {
  process.stderr.write(`${s}\n`);
}

// ---- files -------------------------------------------------------------------------------

function ensure(name, make) {
  const file = path.join(data, name);
  if (!fs.existsSync(file)) {
    log(`generating ${name}…`);
    make(file);
  }
  return file;
}

const STATS_SLOTS = 16, STATS_ELEMENTS = 2 ** 23;   // 16 entries x (m + v) x 32 MiB = 1 GiB
const statsFile = ensure('stats-1g.ckpt', (file) => {
  let seed = 12345;
  writeSparse(file, {
    slots: STATS_SLOTS,
    elements: STATS_ELEMENTS,
    fill: (view, done, slot) => {
      for (let k = 0; k < view.length; k++) {
        seed = (Math.imul(seed, 1664525) + 1013904223) | 0;
        const u = (seed >>> 8) / 16777216;
        view[k] = done + k < STATS_ELEMENTS ? (u - 0.5) * 1e-2 * (slot + 1) : u * u * 1e-6;
      }
      if (slot === 3 && done === 0) view[7] = NaN;   // one unhealthy entry
    },
  });
});
const statsStart = 7 + 8 * (1 + 5 + 1 + STATS_SLOTS * 4 + 1);

// Its model-state file: 16 tensors of the same shapes, 0.5 GiB of float32 parameters.
const stateFile = ensure('state-512m.tlsf', (file) => {
  const fd = fs.openSync(file, 'w');
  const head = Buffer.alloc(23);
  head.write('TLSF32B');
  head.writeBigUInt64LE(1n, 7);
  head.writeBigUInt64LE(BigInt(STATS_SLOTS), 15);
  fs.writeSync(fd, head);
  let seed = 777;
  const chunk = new Float32Array(1 << 20);
  for (let i = 0; i < STATS_SLOTS; i++) {
    const rec = Buffer.alloc(24);
    rec.writeBigUInt64LE(1n, 0);
    rec.writeBigUInt64LE(BigInt(STATS_ELEMENTS), 8);
    rec.writeBigUInt64LE(BigInt(STATS_ELEMENTS), 16);
    fs.writeSync(fd, rec);
    for (let done = 0; done < STATS_ELEMENTS; done += chunk.length) {
      for (let k = 0; k < chunk.length; k++) {
        seed = (Math.imul(seed, 1664525) + 1013904223) | 0;
        chunk[k] = ((seed >>> 8) / 16777216 - 0.5) * 0.1;
      }
      fs.writeSync(fd, new Uint8Array(chunk.buffer));
    }
  }
  fs.closeSync(fd);
});

const layoutFile = ensure('layout-1m.ckpt', (file) => {
  // 1,000,000 slots of shape [4]; every odd slot tied to the even one before it.
  const n = 1_000_000;
  const shapes = Array.from({ length: n }, () => [4]);
  const representatives = Array.from({ length: n }, (_, i) => i - (i % 2));
  const zeros = new Float32Array(4);
  const entries = [];
  for (let i = 0; i < n; i += 2) entries.push({ id: i, step: 1, m: zeros, v: zeros });
  return writeCheckpoint({ shapes, requiresGrad: new Array(n).fill(true), representatives,
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries }).then((b) => fs.writeFileSync(file, b));
});
await new Promise((r) => setTimeout(r, 0));
while (!fs.existsSync(layoutFile)) await new Promise((r) => setTimeout(r, 100));

const ENTRIES = 1000;
const sparse20g = ensure('sparse-20g.ckpt', (file) => writeSparse(file, { slots: ENTRIES, elements: 20 * 10 ** 9 / ENTRIES / 8 }));
const sparse20m = ensure('sparse-20m.ckpt', (file) => writeSparse(file, { slots: ENTRIES, elements: 20 * 10 ** 6 / ENTRIES / 8 }));

// ---- runners -----------------------------------------------------------------------------

/** Run a command under /usr/bin/time -v: wall seconds (best of REPEAT) and peak RSS. */
/** Best of `repeat` runs, with peak RSS. `discard`: standard output goes to /dev/null, as
 *  `cmd > /dev/null` in a shell (for large outputs: collecting 50 MB through a pipe into this
 *  process would time this process too). */
function timed(cmd, args, { env = {}, repeat = REPEAT, parse = null, discard = false } = {}) {
  let best = Infinity, cpu = Infinity, rss = 0, out = '';
  for (let r = 0; r < repeat; r++) {
    const t0 = performance.now();
    const stdio = discard ? ['ignore', fs.openSync('/dev/null', 'w'), 'pipe'] : 'pipe';
    const p = spawnSync('/usr/bin/time', ['-v', cmd, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 1 << 30, stdio });
    if (discard) fs.closeSync(stdio[1]);
    const s = (performance.now() - t0) / 1000;
    if (p.status !== 0 && p.status !== 1) throw new Error(`${cmd} ${args.join(' ')} failed: ${p.stderr}`);
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(p.stderr);
    rss = Math.max(rss, m ? Number(m[1]) : 0);
    // CPU seconds (user + system): what a loaded machine does not inflate as it does wall time
    const user = /User time \(seconds\): ([\d.]+)/.exec(p.stderr), sys = /System time \(seconds\): ([\d.]+)/.exec(p.stderr);
    if (user && sys) cpu = Math.min(cpu, Number(user[1]) + Number(sys[1]));
    out = p.stdout;
    const inner = parse ? parse(p.stdout) : null;
    best = Math.min(best, inner ?? s);
  }
  return { seconds: best, cpuSeconds: Number.isFinite(cpu) ? cpu : null, peakRssMiB: rss / 1024, out };
}

const native = path.join(root, 'build/bench/bench/native_bench');
const limitSum = path.join(root, 'build/bench/bench/limit_sum');
const limitWalk = path.join(root, 'build/bench/bench/limit_walk');
const cli = path.join(root, 'js/cli.js');
const node = process.execPath;
const size = (f) => fs.statSync(f).size;

// Warm the page cache (through one small buffer: no GiB of garbage left in this heap for the
// in-process measurements to collect).
{
  const buf = Buffer.alloc(16 << 20);
  for (const f of [statsFile, layoutFile, stateFile]) {
    const fd = fs.openSync(f, 'r');
    while (fs.readSync(fd, buf) > 0);
    fs.closeSync(fd);
  }
}
const CORES = Math.min(8, os.availableParallelism());

log('statistics…');
const statsBytes = size(statsFile);
const nat = timed(native, [statsFile, '--stats', '--repeat', '3'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });
const natRss = JSON.parse(nat.out).peakRssKiB / 1024;
const limit = timed(limitSum, [statsFile, '--repeat', '3'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });

async function wasmInProcess(variant) {
  const core = await loadCore(variant);
  void core;
  let best = Infinity;
  for (let r = 0; r < REPEAT; r++) {
    const t0 = performance.now();
    const rep = await inspect(statsFile, { stats: true, variant });
    best = Math.min(best, (performance.now() - t0) / 1000);
    if (!rep.ok) throw new Error(rep.error.message);
  }
  return best;
}
const wasmSimd = await wasmInProcess('simd');
const wasmPlain = await wasmInProcess('nosimd');
// One worker: the one-core figures (the CLI's default is this machine's cores).
const cliSimd = timed(node, [cli, 'inspect', statsFile, '--stats', '--json', '--workers', '1'], { env: { CKPTSCOPE_WASM: 'simd' } });
// The CLI's scan alone: the same call without statistics (it skips the payloads) subtracted.
const cliNoStats = timed(node, [cli, 'inspect', statsFile, '--json'], { env: { CKPTSCOPE_WASM: 'simd' } });
const cliScan = cliSimd.seconds - cliNoStats.seconds;
const cliPlain = timed(node, [cli, 'inspect', statsFile, '--stats', '--json', '--workers', '1'], { env: { CKPTSCOPE_WASM: 'nosimd' } });
log('workers…');
const cliWorkers = {};
for (const w of [...new Set([2, CORES])].filter((w) => w > 1)) {
  cliWorkers[w] = timed(node, [cli, 'inspect', statsFile, '--stats', '--json', '--workers', String(w)], { env: { CKPTSCOPE_WASM: 'simd' } });
}
const jsLoop = timed(node, [path.join(root, 'bench/js_baseline.mjs'), statsFile, String(statsStart)], { parse: (o) => JSON.parse(o).seconds });

let numpy = null;
const py = '/usr/bin/python3';
if (spawnSync(py, ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0) {
  numpy = timed(py, [path.join(root, 'bench/numpy_baseline.py'), statsFile, String(statsStart), String(STATS_ELEMENTS), String(2 * STATS_SLOTS)],
    { parse: (o) => JSON.parse(o).seconds });
} else {
  log('NumPy is not installed for /usr/bin/python3 (apt-get install python3-numpy): skipped');
}

// The kernel alone, no I/O, native and wasm in turn in CPU time (bench/kernel.mjs).
log('statistics kernel alone…');
const kernel = JSON.parse(timed(node, [path.join(root, 'bench/kernel.mjs'), '--rounds', '3', '--json'], { repeat: 1 }).out);

log('1,000,000 slots…');
const layoutNative = timed(native, [layoutFile, '--repeat', '3'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });
let layoutWasm = Infinity;
for (let r = 0; r < REPEAT; r++) {
  const t0 = performance.now();
  const rep = await inspect(layoutFile);
  layoutWasm = Math.min(layoutWasm, (performance.now() - t0) / 1000);
  if (!rep.ok || rep.schema.shapes.length !== 1_000_000) throw new Error('layout file did not inspect');
}
const layoutCli = timed(node, [cli, 'inspect', layoutFile, '--json'], { discard: true });
const walkLimit = timed(limitWalk, [layoutFile, '--repeat', '5'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });

// Checkpoints of one run (docs/runs.md): 4 copies of the statistics file saved at steps 1 to 4
// (k = 1 between each), against 4 statistics passes over the same files.
const runFiles = [1, 2, 3, 4].map((step) => ensure(`run-step-${step}-1g.ckpt`, (file) => {
  fs.copyFileSync(statsFile, file);
  const fd = fs.openSync(file, 'r+');
  const word = Buffer.alloc(8);
  word.writeBigUInt64LE(BigInt(step));
  for (let i = 0, at = statsStart; i < STATS_SLOTS; i++, at += 24 + 8 * STATS_ELEMENTS) fs.writeSync(fd, word, 0, 8, at + 8);
  fs.closeSync(fd);
}));
log('run over 4 × 1 GiB checkpoints, and 4 × inspect --stats…');
{
  const buf = Buffer.alloc(16 << 20);
  for (const f of runFiles) {
    const fd = fs.openSync(f, 'r');
    while (fs.readSync(fd, buf) > 0);
    fs.closeSync(fd);
  }
}
const runCli = timed(node, [cli, 'run', ...runFiles, '--json'], { env: { CKPTSCOPE_WASM: 'simd' }, discard: true });
const inspect4 = runFiles.map((f) => timed(node, [cli, 'inspect', f, '--stats', '--json', '--workers', '1'], { env: { CKPTSCOPE_WASM: 'simd' }, discard: true }));
const inspect4Seconds = inspect4.reduce((a, r) => a + r.seconds, 0);
const inspect4Cpu = inspect4.reduce((a, r) => a + r.cpuSeconds, 0);

log('health and pairing, 1 GiB of moments + 0.5 GiB of parameters…');
const healthNative = timed(native, [statsFile, '--health', stateFile, '--repeat', '2'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });
const healthCli = timed(node, [cli, 'health', statsFile, '--state', stateFile, '--lr', '1e-3', '--json', '--workers', '1']);
const healthWorkers = {};
for (const w of Object.keys(cliWorkers)) healthWorkers[w] = timed(node, [cli, 'health', statsFile, '--state', stateFile, '--lr', '1e-3', '--json', '--workers', w]);
const pairNative = timed(native, [statsFile, '--pair', stateFile, '--repeat', '2'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });
const pairCli = timed(node, [cli, 'check', statsFile, '--state', stateFile]);

log('exporting 20 GB as .npz, streamed…');
const exportScript = path.join(root, 'bench/export_bench.mjs');
const export20g = timed(node, [exportScript, sparse20g], { repeat: 1 });
const export20gSt = timed(node, [exportScript, sparse20g, 'safetensors'], { repeat: 1 });
const export20m = timed(node, [exportScript, sparse20m], { repeat: 1 });

log('indexing 20 GB vs 20 MB…');
const index20g = timed(node, [cli, 'inspect', sparse20g, '--json']);
const index20m = timed(node, [cli, 'inspect', sparse20m, '--json']);
const index20gNative = timed(native, [sparse20g, '--repeat', '3'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });
const index20mNative = timed(native, [sparse20m, '--repeat', '3'], { repeat: 1, parse: (o) => JSON.parse(o).seconds });

log('convert 1 GiB (to version 5) vs cp…');
const convertOut = `${statsFile}.converted`, cpOut = `${statsFile}.copied`;
const convert1g = timed(node, [cli, 'convert', statsFile, convertOut, '--to', '5'], { discard: true });
const cp1g = timed('cp', [statsFile, cpOut]);
fs.rmSync(convertOut, { force: true });
fs.rmSync(cpOut, { force: true });

// ---- report ------------------------------------------------------------------------------

const gbps = (s) => statsBytes / s / 1e9;
const rows = [
  ['limit: read() 1 MiB chunks + sum, -O3 native', limit.seconds, gbps(limit.seconds), limit.peakRssMiB],
  ['statistics, native core -O3', nat.seconds, gbps(nat.seconds), natRss],
  ['statistics, wasm SIMD (API, in process)', wasmSimd, gbps(wasmSimd), null],
  ['statistics, wasm SIMD (CLI end to end)', cliSimd.seconds, gbps(cliSimd.seconds), cliSimd.peakRssMiB],
  ['same CLI call without --stats', cliNoStats.seconds, null, cliNoStats.peakRssMiB],
  ['statistics scan in the CLI (difference)', cliScan, gbps(cliScan), null],
  ['statistics, wasm no SIMD (API, in process)', wasmPlain, gbps(wasmPlain), null],
  ['statistics, wasm no SIMD (CLI end to end)', cliPlain.seconds, gbps(cliPlain.seconds), cliPlain.peakRssMiB],
  ['statistics, plain JS loop over Float32Array', jsLoop.seconds, gbps(jsLoop.seconds), jsLoop.peakRssMiB],
  ...(numpy ? [['statistics, NumPy over a memory map', numpy.seconds, gbps(numpy.seconds), numpy.peakRssMiB]] : []),
  ...Object.entries(cliWorkers).map(([w, r]) => [`statistics, wasm SIMD (CLI, ${w} workers)`, r.seconds, gbps(r.seconds), r.peakRssMiB]),
  ['limit: walk the records of 1,000,000 slots', walkLimit.seconds, null, null],
  ['inspect 1,000,000 slots, native', layoutNative.seconds, null, JSON.parse(layoutNative.out).peakRssKiB / 1024],
  ['inspect 1,000,000 slots, wasm (API)', layoutWasm, null, null],
  ['inspect 1,000,000 slots, CLI end to end', layoutCli.seconds, null, layoutCli.peakRssMiB],
  ['index 20 GB sparse, CLI', index20g.seconds, null, index20g.peakRssMiB],
  ['index 20 MB, CLI', index20m.seconds, null, index20m.peakRssMiB],
  ['index 20 GB sparse, native', index20gNative.seconds, null, JSON.parse(index20gNative.out).peakRssKiB / 1024],
  ['index 20 MB, native', index20mNative.seconds, null, JSON.parse(index20mNative.out).peakRssKiB / 1024],
  ['health 1 GiB m, v + 0.5 GiB θ, native', healthNative.seconds, gbps(healthNative.seconds) * 1.5, JSON.parse(healthNative.out).peakRssKiB / 1024],
  ['health, CLI (1 worker)', healthCli.seconds, gbps(healthCli.seconds) * 1.5, healthCli.peakRssMiB],
  ...Object.entries(healthWorkers).map(([w, r]) => [`health, CLI (${w} workers)`, r.seconds, gbps(r.seconds) * 1.5, r.peakRssMiB]),
  ['pair 1 GiB + 0.5 GiB, native', pairNative.seconds, null, JSON.parse(pairNative.out).peakRssKiB / 1024],
  ['pair, CLI (check --state)', pairCli.seconds, null, pairCli.peakRssMiB],
  ['export 20 GB sparse as .npz (streamed)', export20g.seconds, size(sparse20g) / export20g.seconds / 1e9, export20g.peakRssMiB],
  ['export 20 GB sparse as .safetensors', export20gSt.seconds, size(sparse20g) / export20gSt.seconds / 1e9, export20gSt.peakRssMiB],
  ['export 20 MB as .npz', export20m.seconds, null, export20m.peakRssMiB],
  ['run over 4 × 1 GiB files, CLI', runCli.seconds, 4 * gbps(runCli.seconds), runCli.peakRssMiB],
  ['4 × inspect --stats of those files, CLI', inspect4Seconds, 4 * gbps(inspect4Seconds), Math.max(...inspect4.map((r) => r.peakRssMiB))],
];

rows.push(
  ['convert 1 GiB to v5, CLI (streamed)', convert1g.seconds, gbps(convert1g.seconds), convert1g.peakRssMiB],
  ['cp of the same 1 GiB', cp1g.seconds, gbps(cp1g.seconds), cp1g.peakRssMiB],
);

const pad = (s, n) => String(s).padEnd(n);
const num = (x, d = 3) => (x === null || x === undefined ? '' : x.toFixed(d));
console.log(`\nckptscope benchmark — ${new Date().toISOString()}, node ${process.version}, statistics file ${(statsBytes / GiB).toFixed(2)} GiB float32\n`);
console.log(`${pad('measurement', 46)} ${pad('seconds', 9)} ${pad('GB/s', 7)} peak RSS MiB`);
for (const [name, s, g, rss] of rows) console.log(`${pad(name, 46)} ${pad(num(s), 9)} ${pad(num(g, 2), 7)} ${num(rss, 1)}`);

// Fractions of the limit's throughput (limit seconds / seconds): target >= 0.5 each, i.e. at
// most twice the limit's time.
const ratios = {
  'native / limit': limit.seconds / nat.seconds,
  'wasm SIMD in process / limit': limit.seconds / wasmSimd,
  'CLI statistics scan / limit': limit.seconds / cliScan,
  'wasm SIMD CLI / native': nat.seconds / cliSimd.seconds,
  'wasm SIMD in process / native': nat.seconds / wasmSimd,
  'wasm SIMD CLI / plain JS loop': jsLoop.seconds / cliSimd.seconds,
  'wasm SIMD CLI / NumPy': numpy ? numpy.seconds / cliSimd.seconds : null,
  'wasm SIMD / wasm no SIMD (in process)': wasmPlain / wasmSimd,
  'index 20 GB / 20 MB (CLI time)': index20g.seconds / index20m.seconds,
  'index 20 GB / 20 MB (CLI peak RSS)': index20g.peakRssMiB / index20m.peakRssMiB,
  ...Object.fromEntries(Object.entries(cliWorkers).map(([w, r]) => [`statistics speed-up, ${w} workers`, cliSimd.seconds / r.seconds])),
  ...Object.fromEntries(Object.entries(healthWorkers).map(([w, r]) => [`health speed-up, ${w} workers`, healthCli.seconds / r.seconds])),
  'inspect --json 1M slots, CLI / walk limit': layoutCli.seconds / walkLimit.seconds,
  'inspect --json 1M slots, CLI peak RSS MiB': layoutCli.peakRssMiB,
  'export 20 GB / 20 MB (peak RSS)': export20g.peakRssMiB / export20m.peakRssMiB,
  'run 4 × 1 GiB / 4 × inspect --stats (time)': runCli.seconds / inspect4Seconds,
  'run 4 × 1 GiB, CPU seconds': runCli.cpuSeconds,
  '4 × inspect --stats, CPU seconds': inspect4Cpu,
  'run 4 × 1 GiB / 4 × inspect --stats (CPU)': runCli.cpuSeconds / inspect4Cpu,
  // the wasm builds against the native core and NumPy, measured in the same run
  'stats time: wasm SIMD in process / native': wasmSimd / nat.seconds,
  'stats time: kernel alone, wasm SIMD / native': kernel.ratio['wasm SIMD / native'],
  'stats speed: CLI end to end / NumPy': numpy ? numpy.seconds / cliSimd.seconds : null,
};
const targets = {
  'native / limit': ['>=', 0.5],
  'wasm SIMD in process / limit': ['>=', 0.5],
  'CLI statistics scan / limit': ['>=', 0.5],
  'wasm SIMD CLI / native': ['>=', 0.6],
  'wasm SIMD CLI / plain JS loop': ['>=', 3],
  'wasm SIMD CLI / NumPy': ['>=', 2],
  'index 20 GB / 20 MB (CLI time)': ['<=', 2],
  'statistics speed-up, 2 workers': ['>=', 1.7],
  'health speed-up, 2 workers': ['>=', 1.7],
  'inspect --json 1M slots, CLI / walk limit': ['<=', 15],
  'inspect --json 1M slots, CLI peak RSS MiB': ['<', 200],
  'export 20 GB / 20 MB (peak RSS)': ['<=', 1.5],
  'stats time: wasm SIMD in process / native': ['<=', 1.3],
  'stats speed: CLI end to end / NumPy': ['>=', 4],
};
// 7. the viewer against the CLI (bench/viewer.mjs): Scan and the health pass in Chromium from a
// dropped File and over HTTP (`ckptscope view`), each as a fraction of the CLI's rate
// (BENCH_VIEWER=off leaves it out).
if (process.env.BENCH_VIEWER !== 'off') {
  log('viewer: Scan and health in Chromium (File, HTTP, ckptscope view) against the CLI…');
  const viewer = await viewerBench({ opt: statsFile, state: stateFile, repeat: REPEAT, log });
  rows.push(...viewerRows(viewer).map(([name, seconds]) => [name, seconds, null, null]));
  Object.assign(ratios, viewerRatios(viewer));
  for (const k of Object.keys(viewerRatios(viewer))) targets[k] = ['>=', 0.5];
}
// What a second worker pays on 4 GiB of random float32 (bench/workers.mjs: 1 and 2 workers
// interleaved; BENCH_WORKERS=off leaves it out).
let workers4g = null;
if (process.env.BENCH_WORKERS !== 'off') {
  log('workers: 1 vs 2 on 4 GiB…');
  workers4g = workersBench({ data, sizes: [4 * GiB] });
  ratios['statistics speed-up, 2 workers, 4 GiB'] = speedup(workers4g, 'inspect --stats', 4 * GiB, 2);
  ratios['health speed-up, 2 workers, 4 GiB'] = speedup(workers4g, 'health --state', 4 * GiB, 2);
  targets['statistics speed-up, 2 workers, 4 GiB'] = ['>=', 1.8];
  targets['health speed-up, 2 workers, 4 GiB'] = ['>=', 1.8];
}
console.log('\nratios');
for (const [k, v] of Object.entries(ratios)) {
  const target = targets[k];
  const met = target && v !== null ? ({ '>=': v >= target[1], '<=': v <= target[1], '<': v < target[1] })[target[0]] : null;
  console.log(`  ${pad(k, 42)} ${v === null ? 'n/a' : v.toFixed(2)}${target ? `   target ${target[0]} ${target[1]}: ${met ? 'met' : 'MISSED'}` : ''}`);
}
console.log(`  ${pad('inspect 1,000,000 slots in wasm (target < 0.5 s)', 42)} ${layoutWasm.toFixed(3)} s: ${layoutWasm < 0.5 ? 'met' : 'MISSED'}`);

let scale = null;
if (process.env.BENCH_SCALE !== 'off') {
  log('scale: the Llama-7B-like pair, 20k to 1M slots…');
  scale = await scaleBench({ data, light: process.env.BENCH_SCALE === 'light' });
  printScale(scale);
}
if (workers4g) printWorkers(workers4g);
let pytorch = null;
if (process.env.BENCH_PYTORCH !== 'off') {
  log('PyTorch: the 7B-like torch.save pair (sparse), a GPT-2-small-sized AdamW state against torch…');
  pytorch = await pytorchBench({ data, repeat: REPEAT });
  printPytorch(pytorch);
}
let deepspeed = null;
if (process.env.BENCH_DEEPSPEED !== 'off') {
  log('DeepSpeed: the 7B-like ZeRO-2 and ZeRO-3 folders (sparse), a GPT-2-small-sized folder against TLADAMF and Python…');
  deepspeed = await deepspeedBench({ data, repeat: REPEAT, light: process.env.BENCH_DEEPSPEED === 'light' });
  printDeepspeed(deepspeed);
}
let dcp = null;
if (process.env.BENCH_DCP !== 'off') {
  log('DCP: the 7B-like folder of 8 ranks (sparse), its statistics against TLADAMF…');
  try {
    dcp = await dcpBench({ data, repeat: REPEAT, light: process.env.BENCH_DCP === 'light' });
    printDcp(dcp);
  } catch (e) {
    // a package that reads no DCP folder: said, and the rest of the run kept
    dcp = { error: e.message };
    console.log(`\nDCP: not measured: ${e.message}`);
  }
}

fs.writeFileSync(path.join(root, 'bench/results.json'), JSON.stringify({
  date: new Date().toISOString(), node: process.version, statsBytes,
  rows: rows.map(([name, seconds, gbPerSecond, peakRssMiB]) => ({ name, seconds, gbPerSecond, peakRssMiB })),
  ratios, layoutWasmSeconds: layoutWasm, scale, kernel,
  workers: workers4g, pytorch, deepspeed, dcp,
}, null, 2) + '\n');
console.log('\nwritten to bench/results.json');
