// The PyTorch rows of the benchmark (docs/performance.md "PyTorch files"):
//   1. the Llama-7B-like pair as torch.save files, sparse (bench/torch_sparse.c: the optimizer
//      converted from the TLADAMF file by the core's own converter, the model state dict through
//      its zip writer; 291 parameters, 873 storage records, ~54 GB and ~27 GB apparent): opening
//      the optimizer (bytes and reads counted by tests/js/counting.mjs, against the bound of its
//      central directory, data.pkl, 64 KiB and 128 bytes a record), the CLI's inspect, and
//      check --state with the bytes it reads of each file;
//   2. a real torch.save of a GPT-2-small-sized AdamW state (bench/torch_baseline.py, torch 1.13
//      at /usr/bin/python3): inspect against torch.load, inspect --stats against torch.load and
//      the same statistics in torch, health --state against torch's m_hat / (sqrt(v_hat) + eps)
//      pass, with each side's peak memory.
// bench/run.mjs runs these (BENCH_PYTORCH=off leaves them out); alone, it writes its part of
// bench/results.json (the "pytorch" key):
//   node bench/pytorch.mjs
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync, execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeLlama, llamaSlots } from '../tests/js/llama.mjs';
import { CountingFile } from '../tests/js/counting.mjs';
import { open, pair, inspect } from '../js/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(root, 'js/cli.js');
const node = process.execPath;
const PY = '/usr/bin/python3';
const baseline = path.join(root, 'bench/torch_baseline.py');

function log(s) {
  process.stderr.write(`${s}\n`);
}

/** Best wall seconds of `repeat` runs, the CPU seconds of that run, the peak RSS of all, and the
 *  last standard output (the Python side prints its in-process seconds there). */
function timed(cmd, args, { repeat = 3 } = {}) {
  let best = null;
  for (let r = 0; r < repeat; r++) {
    const t0 = performance.now();
    const p = spawnSync('/usr/bin/time', ['-v', cmd, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
    const seconds = (performance.now() - t0) / 1000;
    if (p.status !== 0 && p.status !== 1) throw new Error(`${cmd} ${args.join(' ')} failed: ${p.stderr}`);
    const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(p.stderr)?.[1] ?? 0) / 1024;
    const cpu = ['User', 'System'].reduce((t, k) => t + Number(new RegExp(`${k} time \\(seconds\\): ([0-9.]+)`).exec(p.stderr)?.[1] ?? 0), 0);
    const run = { seconds, cpuSeconds: cpu, peakRssMiB: rss, out: p.stdout };
    if (!best || seconds < best.seconds) best = { ...run, peakRssMiB: Math.max(rss, best?.peakRssMiB ?? 0) };
    else best.peakRssMiB = Math.max(best.peakRssMiB, rss);
  }
  return best;
}

/** Best in-process seconds of the Python side ({load, pass, total}), with its process's wall
 *  seconds and peak RSS. */
function torchSide(args, repeat) {
  let best = null, rss = 0, wall = Infinity;
  for (let r = 0; r < repeat; r++) {
    const run = timed(PY, [baseline, ...args], { repeat: 1 });
    const inner = JSON.parse(run.out);
    rss = Math.max(rss, run.peakRssMiB);
    wall = Math.min(wall, run.seconds);
    if (!best || inner.total < best.total) best = inner;
  }
  return { ...best, processSeconds: wall, peakRssMiB: rss };
}

/** Facts of a zip as Python's zipfile reads them: data.pkl's size, the storage records, the
 *  central directory's bytes (from its start to the end of the file). */
function zipFacts(file) {
  const script = `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
pkl = next(i.file_size for i in z.infolist() if i.filename.endswith('/data.pkl'))
records = sum(1 for i in z.infolist() if '/data/' in i.filename)
print(json.dumps({'pkl': pkl, 'records': records, 'centralDirectory': z.fp.seek(0, 2) - z.start_dir}))`;
  return JSON.parse(execFileSync(PY, ['-c', script, file], { encoding: 'utf8' }));
}

const diskBytes = (file) => fs.statSync(file).blocks * 512;

/** The sparse Llama-7B-like torch.save pair under data/llama-7b-torch (made once). */
function llamaTorch(data) {
  const dir = path.join(data, 'llama-7b-torch');
  fs.mkdirSync(dir, { recursive: true });
  const opt = path.join(dir, 'optimizer.pt'), model = path.join(dir, 'pytorch_model.bin');
  const tool = path.join(root, 'build/bench/bench/torch_sparse');
  if (!fs.existsSync(model)) {
    log('the Llama-7B-like model state dict, sparse…');
    const spec = llamaSlots().map((s) => `${s.name} ${s.shape.length} ${s.shape.join(' ')}\n`).join('');
    execFileSync(tool, ['model', `${model}.part`], { input: spec });
    fs.renameSync(`${model}.part`, model);
  }
  if (!fs.existsSync(opt)) {
    log('the Llama-7B-like optimizer converted to torch.save, sparse (reads the 54 GB of holes once)…');
    const tladamf = path.join(data, 'llama-7b.ckpt');
    writeLlama(tladamf, { kind: 'optimizer' });
    execFileSync(tool, ['optimizer', tladamf, `${opt}.part`]);
    fs.renameSync(`${opt}.part`, opt);
  }
  return { opt, model };
}

/** The GPT-2-small-sized AdamW state under data/gpt2-torch, made by torch (once). */
function gpt2Torch(data) {
  const dir = path.join(data, 'gpt2-torch');
  fs.mkdirSync(dir, { recursive: true });
  const opt = path.join(dir, 'optimizer.pt'), model = path.join(dir, 'pytorch_model.bin');
  if (!fs.existsSync(opt) || !fs.existsSync(model)) {
    log('a GPT-2-small-sized AdamW state, saved by torch…');
    execFileSync(PY, [baseline, 'make', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return { opt, model };
}

export async function pytorchBench({ data = path.join(root, 'build/bench/data'), repeat = 3 } = {}) {
  const figures = {}, rows = [];
  const row = (name, r, peer = null) => rows.push({ name, seconds: r.seconds, cpuSeconds: r.cpuSeconds ?? null, peakRssMiB: r.peakRssMiB ?? null, ...(peer ?? {}) });

  // ---- 1. the sparse Llama-7B-like pair ----
  const big = llamaTorch(data);
  const facts = zipFacts(big.opt);
  {
    const src = new CountingFile(big.opt);
    const t0 = performance.now();
    const ck = await open(src);
    const seconds = (performance.now() - t0) / 1000;
    const entries = ck.report.entries.length, records = ck.report.container.records;
    await ck.close();
    src.close();
    if (entries !== 291 || records !== 873) throw new Error(`the 7B-like optimizer.pt opened with ${entries} entries and ${records} records`);
    const bound = facts.centralDirectory + facts.pkl + 65536 + 128 * facts.records;
    figures['open 7B-like optimizer.pt'] = {
      size: fs.statSync(big.opt).size, onDisk: diskBytes(big.opt), entries, records, seconds,
      bytes: src.bytes, reads: src.log.length, bound, ...facts,
    };
  }
  {
    const o = new CountingFile(big.opt), m = new CountingFile(big.model);
    const t0 = performance.now();
    const res = await pair(o, m);
    const seconds = (performance.now() - t0) / 1000;
    figures['pair 7B-like optimizer.pt with pytorch_model.bin'] = {
      ok: res.failures.length === 0 && !res.error, seconds, optimizerBytes: o.bytes, optimizerReads: o.log.length,
      modelBytes: m.bytes, modelReads: m.log.length, modelSize: fs.statSync(big.model).size, modelOnDisk: diskBytes(big.model),
    };
    o.close();
    m.close();
  }
  log('7B-like torch.save: the CLI…');
  row('7B-like optimizer.pt: inspect, CLI', timed(node, [cli, 'inspect', big.opt], { repeat }));
  row('7B-like optimizer.pt: check --state pytorch_model.bin, CLI', timed(node, [cli, 'check', big.opt, '--state', big.model], { repeat }));

  // ---- 2. a real torch.save, against torch ----
  const small = gpt2Torch(data);
  {   // the page cache holds both files for every run on either side
    const buf = Buffer.alloc(16 << 20);
    for (const f of [small.opt, small.model]) {
      const fd = fs.openSync(f, 'r');
      while (fs.readSync(fd, buf) > 0);
      fs.closeSync(fd);
    }
  }
  log('GPT-2-small-sized AdamW state: ckptscope against torch…');
  // each side's runs interleaved, the best of each kept: a busy machine slows both alike
  const better = (a, b) => (!a ? b : { ...(b.seconds < a.seconds ? b : a), peakRssMiB: Math.max(a.peakRssMiB, b.peakRssMiB) });
  const ours = {}, torch = {};
  const passes = {
    inspect: [['inspect', small.opt], 'load', ['load', small.opt]],
    stats: [['inspect', small.opt, '--stats'], 'stats', ['stats', small.opt]],
    health: [['health', small.opt, '--state', small.model], 'health', ['health', small.opt, small.model]],
  };
  for (let r = 0; r < repeat; r++) {
    for (const [name, [args, peer, peerArgs]] of Object.entries(passes)) {
      ours[name] = better(ours[name], timed(node, [cli, ...args], { repeat: 1 }));
      const t = torchSide(peerArgs, 1);
      // each figure its own best: the load, the pass, the two, the process
      torch[peer] = !torch[peer] ? t : Object.fromEntries(Object.entries(t).map(([k, v]) => [k, (k === 'peakRssMiB' ? Math.max : Math.min)(v, torch[peer][k])]));
    }
  }
  for (const r of Object.values(ours)) delete r.out;
  /** Best seconds of the API's inspect() in this process (no Node start, no module load). */
  const inProcess = async (options) => {
    let best = Infinity;
    for (let r = 0; r < repeat; r++) {
      const t0 = performance.now();
      const rep = await inspect(small.opt, options);
      best = Math.min(best, (performance.now() - t0) / 1000);
      if (!rep.ok) throw new Error(rep.error.message);
    }
    return best;
  };
  await inProcess({});   // the wasm module compiled once, as torch is imported before its timer
  ours.inspectApi = { seconds: await inProcess({}) };
  ours.statsApi = { seconds: await inProcess({ stats: true }) };
  figures['GPT-2-small-sized AdamW state'] = {
    optimizerBytes: fs.statSync(small.opt).size, modelBytes: fs.statSync(small.model).size,
    ckptscope: Object.fromEntries(Object.entries(ours).map(([k, r]) => [k, { seconds: r.seconds, cpuSeconds: r.cpuSeconds ?? null, peakRssMiB: r.peakRssMiB ?? null }])),
    torch,
  };
  row('GPT-2 optimizer.pt: inspect, CLI', ours.inspect);
  row('GPT-2 optimizer.pt: inspect(), API in process', ours.inspectApi);
  row('GPT-2 optimizer.pt: torch.load (in process)', { seconds: torch.load.load, peakRssMiB: torch.load.peakRssMiB });
  row('GPT-2 optimizer.pt: inspect --stats, CLI', ours.stats);
  row('GPT-2 optimizer.pt: inspect() with stats, API in process', ours.statsApi);
  row('GPT-2 optimizer.pt: torch.load + statistics (in process)', { seconds: torch.stats.total, peakRssMiB: torch.stats.peakRssMiB });
  row('GPT-2: health --state, CLI', ours.health);
  row('GPT-2: torch.load of both + update pass (in process)', { seconds: torch.health.total, peakRssMiB: torch.health.peakRssMiB });
  row('GPT-2: the update pass alone, torch', { seconds: torch.health.pass });

  const ratios = {
    'inspect / torch.load (speed)': torch.load.load / ours.inspect.seconds,
    'inspect / python process with torch.load (speed)': torch.load.processSeconds / ours.inspect.seconds,
    'inspect() in process / torch.load in process (speed)': torch.load.load / ours.inspectApi.seconds,
    'inspect --stats / torch.load + statistics (speed)': torch.stats.total / ours.stats.seconds,
    'inspect() stats in process / torch in process (speed)': torch.stats.total / ours.statsApi.seconds,
    'health / torch update pass alone (speed)': torch.health.pass / ours.health.seconds,
    'health / torch.load + update pass (speed)': torch.health.total / ours.health.seconds,
    'peak RSS, torch.load / inspect': torch.load.peakRssMiB / ours.inspect.peakRssMiB,
    'peak RSS, torch statistics / inspect --stats': torch.stats.peakRssMiB / ours.stats.peakRssMiB,
    'peak RSS, torch update pass / health': torch.health.peakRssMiB / ours.health.peakRssMiB,
    '7B-like optimizer.pt: bytes read to open / bound': figures['open 7B-like optimizer.pt'].bytes / figures['open 7B-like optimizer.pt'].bound,
  };
  const targets = {
    'inspect / torch.load (speed)': ['>=', 5],
    'inspect --stats / torch.load + statistics (speed)': ['>=', 2],
    'health / torch update pass alone (speed)': ['>=', 1],
    '7B-like optimizer.pt: bytes read to open / bound': ['<=', 1],
  };
  return { rows, figures, ratios, targets };
}

export function printPytorch({ rows, figures, ratios, targets }) {
  const pad = (s, n) => String(s).padEnd(n);
  const num = (x, d = 3) => (x === null || x === undefined ? '' : x.toFixed(d));
  const o = figures['open 7B-like optimizer.pt'], p = figures['pair 7B-like optimizer.pt with pytorch_model.bin'];
  console.log(`\nPyTorch: the Llama-7B-like optimizer.pt, ${(o.size / 1e9).toFixed(1)} GB (${(o.onDisk / 1e6).toFixed(1)} MB on disk), ${o.entries} entries, ${o.records} records`);
  console.log(`  open (API, file): ${o.bytes} B in ${o.reads} reads · bound ${o.bound} B (central directory ${o.centralDirectory} + data.pkl ${o.pkl} + 64 KiB + 128 x ${o.records}) · ${num(o.seconds)} s`);
  console.log(`  pair with pytorch_model.bin (API): ${num(p.seconds)} s, ${p.optimizerBytes} B of the optimizer in ${p.optimizerReads} reads, ${p.modelBytes} B of the ${(p.modelSize / 1e9).toFixed(1)} GB model in ${p.modelReads} reads`);
  console.log(`\n${pad('PyTorch measurement', 58)} ${pad('seconds', 9)} ${pad('CPU s', 7)} peak RSS MiB`);
  for (const r of rows) console.log(`${pad(r.name, 58)} ${pad(num(r.seconds), 9)} ${pad(num(r.cpuSeconds, 2), 7)} ${num(r.peakRssMiB, 1)}`);
  console.log('\nPyTorch ratios');
  for (const [k, v] of Object.entries(ratios)) {
    const t = targets[k];
    const met = t ? (t[0] === '>=' ? v >= t[1] : v <= t[1]) : null;
    console.log(`  ${pad(k, 52)} ${v.toFixed(2)}${t ? `   target ${t[0]} ${t[1]}: ${met ? 'met' : 'MISSED'}` : ''}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await pytorchBench({ repeat: Number(process.env.BENCH_REPEAT ?? 3) });
  printPytorch(result);
  const out = path.join(root, 'bench/results.json');
  let all = {};
  try {
    all = JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch {
    // no full run yet: this part alone
  }
  all.pytorch = { date: new Date().toISOString(), node: process.version, ...result };
  fs.writeFileSync(out, JSON.stringify(all, null, 2) + '\n');
  console.log('\nwritten to bench/results.json (pytorch)');
}
