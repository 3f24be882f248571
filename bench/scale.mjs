// The scale rows of the benchmark (docs/performance.md "Big files"): the Llama-7B-like pair
// (tests/js/llama.mjs: a 54 GB optimizer file, its tied variant, a 27 GB state file, sparse)
// opened from a Node file, a Blob and over HTTP (bytes and reads counted by the sources:
// tests/js/counting.mjs), the CLI on it (inspect, check --state, health, export streamed), and
// inspect --json and export at 20k, 80k, 320k and 1M slots (every pass over N slots is O(N)).
// bench/run.mjs runs these after its own; alone:
//   node bench/scale.mjs [--root DIR] [--light] [--timeout S] [--max-slots N]
// --root: measure another checkout's package and CLI (before/after figures); --light: leave out
// the passes that read the 7B-like payloads (the pair verdict, health, export); --timeout: a CLI call that runs
// longer is reported as "> S s".
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeLlama, writeLlamaSafetensors, openBound } from '../tests/js/llama.mjs';
import { CountingFile, withBlobReader, withServer } from '../tests/js/counting.mjs';
import { writeSparse, magicWords } from '../tests/js/sparse.mjs';

const here = fileURLToPath(new URL('..', import.meta.url));

function log(s) {
  process.stderr.write(`${s}\n`);
}

/** Wall seconds, CPU seconds (user + system: what a shared machine does not blur) and peak RSS
 *  of one command (null seconds when it ran past the timeout). */
function timedOnce(cmd, args, { env = {}, timeout = 600, discard = true } = {}) {
  const t0 = performance.now();
  const out = discard ? fs.openSync('/dev/null', 'w') : 'pipe';
  // timeout(1) kills the command itself (killing /usr/bin/time would leave it running)
  const p = spawnSync('/usr/bin/time', ['-v', 'timeout', '-s', 'KILL', String(timeout), cmd, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', out, 'pipe'], maxBuffer: 1 << 30 });
  if (discard) fs.closeSync(out);
  const seconds = (performance.now() - t0) / 1000;
  if (p.status === 137 || p.status === 124) return { seconds: null, peakRssMiB: null, timedOut: timeout };
  if (p.status !== 0 && p.status !== 1) throw new Error(`${cmd} ${args.join(' ')} failed: ${p.stderr}`);
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(p.stderr);
  const cpu = ['User', 'System'].reduce((t, k) => t + Number(new RegExp(`${k} time \\(seconds\\): ([0-9.]+)`).exec(p.stderr)?.[1] ?? 0), 0);
  return { seconds, cpuSeconds: cpu, peakRssMiB: m ? Number(m[1]) / 1024 : null, out: p.stdout };
}

/** A TLADAMF v3 file of n slots of shape [4], every odd slot tied to the even one before it
 *  (the benchmark's 1M-slot layout), and a TLSF32B file of n tensors of shape [4]. */
function slotFiles(dir, n) {
  const opt = path.join(dir, `slots-${n}.ckpt`), state = path.join(dir, `slots-${n}.tlsf`), names = path.join(dir, `slots-${n}.names.json`);
  if (!fs.existsSync(opt)) {
    const { u64, f64, bytes } = magicWords('TLADAMF');
    u64(3); u64(0); f64(0.9); f64(0.999); f64(1e-8); f64(0);
    u64(n);
    for (let i = 0; i < n; i++) u64(1), u64(4), u64(4), u64(1);
    for (let i = 0; i < n; i++) u64(i - (i % 2) + 1);
    u64(Math.ceil(n / 2));
    for (let i = 0; i < n; i += 2) {
      u64(i), u64(1), u64(4);
      for (let k = 0; k < 4; k++) u64(0);   // m and v: 8 floats of zero
    }
    fs.writeFileSync(opt, bytes());
  }
  if (!fs.existsSync(state)) {
    const bytes = new Uint8Array(23 + n * (24 + 16));
    bytes.set(new TextEncoder().encode('TLSF32B'));
    const dv = new DataView(bytes.buffer);
    dv.setBigUint64(7, 1n, true);
    dv.setBigUint64(15, BigInt(n), true);
    for (let i = 0, at = 23; i < n; i++, at += 40) {
      dv.setBigUint64(at, 1n, true);
      dv.setBigUint64(at + 8, 4n, true);
      dv.setBigUint64(at + 16, 4n, true);
    }
    fs.writeFileSync(state, bytes);
  }
  if (!fs.existsSync(names)) fs.writeFileSync(names, JSON.stringify(Array.from({ length: n }, (_, i) => `model.layers.${i >> 3}.part${i & 7}.weight`)));
  return { opt, state, names };
}

export async function scaleBench({ root = here, data = path.join(here, 'build/bench/data'), light = false, timeout = 600, maxSlots = Infinity } = {}) {
  fs.mkdirSync(data, { recursive: true });
  const lib = await import(pathToFileURL(path.join(root, 'js/index.js')).href);
  const cli = path.join(root, 'js/cli.js');
  const node = process.execPath;
  const exportScript = path.join(here, 'bench/export_bench.mjs');
  const libEnv = { CKPTSCOPE_LIB: pathToFileURL(path.join(root, 'js/index.js')).href };
  const rows = [], figures = {};
  const row = (name, r, extra = '') => rows.push({ name, seconds: r.seconds, cpuSeconds: r.cpuSeconds ?? null, peakRssMiB: r.peakRssMiB ?? null, note: r.timedOut ? `> ${r.timedOut} s` : extra });

  log('the Llama-7B-like files (sparse)…');
  const llama = {
    optimizer: { path: path.join(data, 'llama-7b.ckpt'), options: { kind: 'optimizer' } },
    tied: { path: path.join(data, 'llama-7b-tied.ckpt'), options: { kind: 'optimizer', tied: true } },
    state: { path: path.join(data, 'llama-7b.tlsf'), options: { kind: 'state' } },
  };
  for (const f of Object.values(llama)) f.layout = writeLlama(f.path, f.options);

  /** What opening `file` reads from a Node file, a Blob and over HTTP (`name`: its URL's). */
  const openCounts = async (file, name) => {
    const counted = new CountingFile(file);
    (await lib.open(counted)).close();
    counted.close();
    const blob = await withBlobReader(file, async (b, blobLog) => {
      (await lib.open(new lib.BlobSource(b))).close();
      return { bytes: blobLog.reduce((s, [, n]) => s + n, 0), reads: blobLog.length };
    });
    const http = await withServer(file, async (served) => {
      (await lib.open(lib.HttpSource.open(`http://127.0.0.1/${name}`))).close();
      return { ...served };
    });
    return { file: { bytes: counted.bytes, reads: counted.log.length }, blob, http };
  };

  log('opening them: bytes and reads…');
  for (const [name, f] of Object.entries(llama)) {
    figures[`open ${name}`] = { size: f.layout.size, bound: openBound(f.layout), ...(await openCounts(f.path, name)) };
  }
  {   // the same model as Hugging Face saves it, model.safetensors (BF16): opening reads 8 + N bytes
    const st = path.join(data, 'llama-7b.safetensors');
    const layout = writeLlamaSafetensors(st);
    figures['open model.safetensors'] = { size: layout.size, bound: 8 + layout.headerLength, ...(await openCounts(st, 'model.safetensors')) };
  }

  {   // many small payloads: each under a 1 MiB read-ahead
    const hundred = path.join(data, 'hundred-512k.ckpt');
    const size = fs.existsSync(hundred) ? fs.statSync(hundred).size : writeSparse(hundred, { slots: 100, elements: 65536 });
    const file = new CountingFile(hundred);
    (await lib.open(file)).close();
    file.close();
    figures['open 100 x 512 KiB'] = { size, bound: 65536 + 64 * 200, file: { bytes: file.bytes, reads: file.log.length } };
  }

  log('the CLI on them…');
  row('7B-like: inspect (text), CLI', timedOnce(node, [cli, 'inspect', llama.optimizer.path], { timeout }));
  row('7B-like: inspect --json, CLI', timedOnce(node, [cli, 'inspect', llama.optimizer.path, '--json'], { timeout }));
  if (!light) {
    row('7B-like tied: check --state (pair verdict), CLI', timedOnce(node, [cli, 'check', llama.tied.path, '--state', llama.state.path], { timeout }));
    const opt = new CountingFile(llama.tied.path), state = new CountingFile(llama.state.path);
    const t0 = performance.now();
    await lib.pair(opt, state);
    figures['pair verdict, tied 7B-like'] = { seconds: (performance.now() - t0) / 1000, optimizerBytes: opt.bytes, stateBytes: state.bytes, stateSize: llama.state.layout.size };
    opt.close();
    state.close();
  }
  if (!light) {
    log('7B-like: health and export (81 GB of zeros read)…');
    row('7B-like: health --state, CLI (1 worker)', timedOnce(node, [cli, 'health', llama.optimizer.path, '--state', llama.state.path, '--lr', '1e-4', '--json', '--workers', '1'], { timeout }));
    const ex = timedOnce(node, [exportScript, llama.state.path, 'safetensors'], { env: libEnv, timeout, discard: false });
    row('7B-like: export the 27 GB state file, streamed', ex, ex.seconds ? `${(llama.state.layout.size / ex.seconds / 1e9).toFixed(2)} GB/s` : '');
  }

  for (const n of [20_000, 80_000, 320_000, 1_000_000].filter((x) => x <= maxSlots)) {
    log(`${n} slots…`);
    const f = slotFiles(data, n);
    row(`inspect --json, ${n} slots, CLI`, timedOnce(node, [cli, 'inspect', f.opt, '--json'], { timeout }));
    row(`export .npz, ${n} slots (optimizer, ties)`, timedOnce(node, [exportScript, f.opt, 'npz'], { env: libEnv, timeout }));
    row(`export .safetensors, ${n} tensors, --names`, timedOnce(node, [exportScript, f.state, 'safetensors', f.names], { env: libEnv, timeout }));
  }
  return { rows, figures };
}

export function printScale({ rows, figures }) {
  const pad = (s, n) => String(s).padEnd(n);
  const num = (x, d = 3) => (x === null || x === undefined ? '' : x.toFixed(d));
  console.log('\nscale: opening the Llama-7B-like files (headers only; bound 64 KiB + 64 B per slot and entry)');
  for (const [name, f] of Object.entries(figures)) {
    if (!name.startsWith('open ')) continue;
    const more = f.blob ? ` · Blob ${f.blob.bytes} B in ${f.blob.reads} reads · HTTP ${f.http.bytes} B in ${f.http.requests} requests` : '';
    console.log(`  ${pad(name.slice(5), 10)} ${(f.size / 1e9).toFixed(3)} GB: file ${f.file.bytes} B in ${f.file.reads} reads${more} · bound ${f.bound} B`);
  }
  const p = figures['pair verdict, tied 7B-like'];
  if (p) console.log(`  pair verdict (tied pair, API): ${num(p.seconds)} s, ${p.optimizerBytes} B of the optimizer file, ${p.stateBytes} B of the ${p.stateSize} B state file`);
  console.log(`\n${pad('scale measurement', 52)} ${pad('seconds', 9)} ${pad('CPU s', 9)} ${pad('peak RSS MiB', 13)}`);
  for (const r of rows) console.log(`${pad(r.name, 52)} ${pad(r.seconds === null ? r.note : num(r.seconds), 9)} ${pad(num(r.cpuSeconds, 2), 9)} ${pad(num(r.peakRssMiB, 1), 13)}${r.seconds !== null && r.note ? r.note : ''}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const at = (flag) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
  const result = await scaleBench({ root: at('--root') ? path.resolve(at('--root')) : here, light: args.includes('--light'), timeout: Number(at('--timeout') ?? 600), maxSlots: Number(at('--max-slots') ?? Infinity) });
  printScale(result);
  fs.writeFileSync(path.join(here, 'bench/scale-results.json'), JSON.stringify(result, null, 2) + '\n');
}
