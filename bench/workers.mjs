// node bench/workers.mjs: what a second worker pays, per command. Times the CLI's
// `inspect --stats --json` and `health --state --lr --json` with 1 and 2 workers (and
// BENCH_WORKERS_MORE=1: 3 and 4) on files of random float32 values (real data: the statistics of
// zeros are one histogram bin) of 256 MiB, 1 GiB and 4 GiB (their state files half that), made
// once under build/bench/data. Runs are interleaved (1, 2, 1, 2, …: a load that comes and goes
// hits both alike), best of BENCH_REPEAT (3) for wall time and for CPU time (user + system), with
// the load average before and after: on a shared machine the wall-clock speed-ups are only as
// good as that load. Each run is timed twice: the CLI end to end, and the pass alone in a fresh
// process (from the API call to its result, without Node's start and the imports). Making the files (7.9 GiB, 6 GiB of it the 4 GiB pair) takes
// longer than the runs themselves, once.
// BENCH_WORKERS_SIZES=64,256 (MiB) picks other sizes; BENCH_CLI another build's js/cli.js.
// Also imported by bench/run.mjs (workersBench, printWorkers).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeSparse, writeSparseState } from '../tests/js/sparse.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const MiB = 2 ** 20;
// BENCH_CLI=path/to/cli.js times another build (a checkout of an earlier commit: before/after)
const CLI = process.env.BENCH_CLI ?? path.join(root, 'js/cli.js');
const SLOTS = 32;   // equal entries: the balance is the start's, not the layout's (tests cover uneven)
export const SIZES = (process.env.BENCH_WORKERS_SIZES ?? '256,1024,4096').split(',').map((m) => Number(m) * MiB);

/** A float32 stream of uniform random values in [-scale/2, scale/2), from a seeded LCG. */
function randomFill(seed, scale) {
  return (view) => {
    for (let k = 0; k < view.length; k++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) | 0;
      view[k] = ((seed >>> 8) / 16777216 - 0.5) * scale;
    }
  };
}

/** The optimizer file of `bytes` (m and v of SLOTS entries) and its state file, made once. */
function files(data, bytes) {
  const elements = bytes / SLOTS / 8;
  const name = `workers-${bytes / MiB}m`;
  const opt = path.join(data, `${name}.ckpt`), state = path.join(data, `${name}.tlsf`);
  if (!fs.existsSync(opt)) {
    process.stderr.write(`making ${path.basename(opt)}…\n`);
    const m = randomFill(12345, 1e-3), v = randomFill(999, 2e-6);
    // m's values, then v's in [1e-6, 2e-6): moments a gradient history can produce (|m| < √v)
    const positive = (view) => {
      v(view);
      for (let k = 0; k < view.length; k++) view[k] = 1e-6 + Math.abs(view[k]);
    };
    writeSparse(opt + '.part', { slots: SLOTS, elements, fill: (view, done) => (done < elements ? m(view) : positive(view)) });
    fs.renameSync(opt + '.part', opt);
  }
  if (!fs.existsSync(state)) {
    process.stderr.write(`making ${path.basename(state)}…\n`);
    const part = state + '.part';
    writeSparseState(part, { tensors: SLOTS, elements });
    const fd = fs.openSync(part, 'r+');
    const fill = randomFill(777, 0.1), chunk = new Float32Array(Math.min(elements, 1 << 21));
    for (let i = 0; i < SLOTS; i++) {
      let at = 23 + i * (24 + 4 * elements) + 24;   // the header, then each tensor's record and values
      for (let done = 0; done < elements; done += chunk.length) {
        fill(chunk);
        at += fs.writeSync(fd, chunk, 0, chunk.byteLength, at);
      }
    }
    fs.closeSync(fd);
    fs.renameSync(part, state);
  }
  return { opt, state };
}

/** Read files through once (page cache warm: the figures are the CPU's, not the disk's). */
function warm(list) {
  const buf = Buffer.alloc(16 * MiB);
  for (const f of list) {
    const fd = fs.openSync(f, 'r');
    while (fs.readSync(fd, buf) > 0);
    fs.closeSync(fd);
  }
}

/** One run under /usr/bin/time: wall and CPU seconds, peak RSS; the output's hash-free length
 *  (the caller compares outputs). */
function once(args) {
  const t0 = performance.now();
  const p = spawnSync('/usr/bin/time', ['-v', process.execPath, CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
  const wall = (performance.now() - t0) / 1000;
  if (p.status !== 0 && p.status !== 1) throw new Error(`ckptscope ${args.join(' ')} failed: ${p.stderr}`);
  const num = (re) => Number(re.exec(p.stderr)?.[1] ?? NaN);
  return { wall, cpu: num(/User time \(seconds\): ([\d.]+)/) + num(/System time \(seconds\): ([\d.]+)/), rss: num(/Maximum resident set size \(kbytes\): (\d+)/) / 1024, out: p.stdout };
}

// The same pass in a fresh process, timed from the API call to its result: without Node's own
// start (about 0.1 s: a wall no split shortens) and the CLI's imports. The split's own scaling.
const PASS = `
const [, kind, w, opt, state] = process.argv;
const { inspect, health } = await import(${JSON.stringify(new URL('../js/api.js', import.meta.url).href)});
const t0 = performance.now();
if (kind === 'stats') await inspect(opt, { stats: true, workers: Number(w) });
else await health(opt, state, { lr: 1e-3, workers: Number(w) });
process.stdout.write(String((performance.now() - t0) / 1000));
`;

function passOnce(kind, w, opt, state) {
  const p = spawnSync(process.execPath, ['--input-type=module', '-e', PASS, kind, String(w), opt, state], { encoding: 'utf8' });
  if (p.status !== 0) throw new Error(`the ${kind} pass with ${w} workers failed: ${p.stderr}`);
  return Number(p.stdout);
}

/**
 * Every command at every size with each number of workers, interleaved, best of `repeat`, end to
 * end (the CLI) and the pass alone (`pass`: in process, from the call to its result).
 * Resolves with {load: [before, after], rows: [{command, bytes, workers, wall, cpu, rss}]};
 * throws when two numbers of workers print different results.
 */
export function workersBench({ data = path.join(root, 'build/bench/data'), repeat = Number(process.env.BENCH_REPEAT ?? 3), sizes = SIZES, counts = process.env.BENCH_WORKERS_MORE ? [1, 2, 3, 4] : [1, 2] } = {}) {
  fs.mkdirSync(data, { recursive: true });
  const rows = [];
  const load = [os.loadavg()[0]];
  for (const bytes of sizes) {
    const { opt, state } = files(data, bytes);
    warm([opt, state]);
    const commands = {
      'inspect --stats': (w) => ['inspect', opt, '--stats', '--json', '--workers', String(w)],
      'health --state': (w) => ['health', opt, '--state', state, '--lr', '1e-3', '--json', '--workers', String(w)],
    };
    const kinds = { 'inspect --stats': 'stats', 'health --state': 'health' };
    for (const [command, args] of Object.entries(commands)) {
      const best = new Map(counts.map((w) => [w, { command, bytes, workers: w, wall: Infinity, cpu: Infinity, rss: 0, pass: Infinity }]));
      let first = null;
      for (let r = 0; r < repeat; r++) {
        for (const w of counts) {
          const t = once(args(w));
          first ??= t.out;
          if (t.out !== first) throw new Error(`${command} with ${w} workers printed another result than with ${counts[0]}`);
          const b = best.get(w);
          b.wall = Math.min(b.wall, t.wall);
          b.cpu = Math.min(b.cpu, t.cpu);
          b.rss = Math.max(b.rss, t.rss);
          b.pass = Math.min(b.pass, passOnce(kinds[command], w, opt, state));
        }
      }
      rows.push(...best.values());
    }
  }
  load.push(os.loadavg()[0]);
  return { load, rows };
}

/** The speed-up of w workers over 1 for a command and size: end to end (wall time of the CLI), or
 *  of the pass alone (`of = 'pass'`). */
export function speedup(result, command, bytes, w, of = 'wall') {
  const at = (n) => result.rows.find((r) => r.command === command && r.bytes === bytes && r.workers === n);
  return at(1)[of] / at(w)[of];
}

export function printWorkers(result) {
  const pad = (s, n) => String(s).padEnd(n);
  console.log(`\nworkers (CLI, best of interleaved runs; load average ${result.load.map((x) => x.toFixed(2)).join(' → ')} on ${os.availableParallelism()} cores)`);
  console.log(`${pad('command', 17)} ${pad('file', 9)} ${pad('workers', 8)} ${pad('wall s', 8)} ${pad('CPU s', 8)} ${pad('speed-up', 9)} ${pad('pass s', 8)} ${pad('speed-up', 9)} peak RSS MiB`);
  for (const r of result.rows) {
    const up = (of) => (r.workers === 1 ? '' : speedup(result, r.command, r.bytes, r.workers, of).toFixed(2));
    console.log(`${pad(r.command, 17)} ${pad(`${r.bytes / MiB} MiB`, 9)} ${pad(r.workers, 8)} ${pad(r.wall.toFixed(3), 8)} ${pad(r.cpu.toFixed(3), 8)} ${pad(up('wall'), 9)} ${pad(r.pass.toFixed(3), 8)} ${pad(up('pass'), 9)} ${r.rss.toFixed(1)}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) printWorkers(workersBench());
