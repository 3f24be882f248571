// The statistics kernel alone, native against wasm on the same values in the same minute: runs
// bench/kernel_bench.c's builds in turn (native, wasm SIMD, wasm without SIMD; A/B/C/A/B/C…),
// each for R repeats in CPU time, and prints per build the median ns per value, its spread
// (min–max over all repeats) and the ratios of the medians. The builds' digests (the results'
// bits) must agree. Usage: node bench/kernel.mjs [--rounds N] [--json] (it builds its three
// programs first, in build/bench and build/wasm, as scripts/bench.sh and scripts/build.sh
// configure them); --json prints one line {build: {median, min, max}, ratio} for bench/run.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const ROUNDS = argv.includes('--rounds') ? Number(argv[argv.indexOf('--rounds') + 1]) : 5;
const JSON_OUT = argv.includes('--json');
const REPEAT = 3;

const builds = {
  native: [path.join(root, 'build/bench/bench/kernel_bench'), ['--repeat', String(REPEAT)]],
  'wasm SIMD': [process.execPath, [fileURLToPath(import.meta.url), '--wasm', path.join(root, 'build/wasm/wasm/kernel_bench.wasm')]],
  'wasm no SIMD': [process.execPath, [fileURLToPath(import.meta.url), '--wasm', path.join(root, 'build/wasm/wasm/kernel_bench-nosimd.wasm')]],
};

if (argv[0] === '--wasm') {
  // A child: run one module under WASI (its clock_gettime reads this process's CPU time).
  const { WASI } = await import('node:wasi');
  const wasi = new WASI({ version: 'preview1', args: ['kernel_bench', '--repeat', String(REPEAT)], returnOnExit: true });
  const module = await WebAssembly.compile(fs.readFileSync(argv[1]));
  const instance = await WebAssembly.instantiate(module, { ...wasi.getImportObject(), env: { emscripten_notify_memory_growth() {} } });
  process.exitCode = wasi.start(instance);
} else {
  const run = (cmd, args) => {
    const p = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (p.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
  };
  // configured every time (quick): a build folder made before a target was added knows no rule for it
  run('cmake', ['-S', '.', '-B', 'build/bench', '-DCKPT_BENCH=ON', '-DCKPT_TESTS=OFF', '-DCMAKE_BUILD_TYPE=Release']);
  run('cmake', ['--build', 'build/bench', '--target', 'kernel_bench']);
  if (!fs.existsSync(path.join(root, 'build/wasm/CMakeCache.txt'))) run('bash', ['scripts/build.sh', 'wasm']);
  run('cmake', ['--build', 'build/wasm', '--target', 'kernel_bench_simd', 'kernel_bench_nosimd']);
  const times = Object.fromEntries(Object.keys(builds).map((k) => [k, []]));
  const digests = new Set();
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, [cmd, args]] of Object.entries(builds)) {
      const p = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } });
      if (p.status !== 0) throw new Error(`${name}: ${p.stderr}`);
      const out = JSON.parse(p.stdout);
      // the first repeat of a wasm run includes V8 tiering up: keep the later ones
      times[name].push(...out.nsPerValue.slice(1));
      digests.add(out.digest);
    }
  }
  if (digests.size !== 1) throw new Error(`the builds' results differ: ${[...digests].join(' ')}`);
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const stats = Object.fromEntries(Object.entries(times).map(([name, t]) => [name, { median: median(t), min: Math.min(...t), max: Math.max(...t), n: t.length }]));
  const ratio = { 'wasm SIMD / native': stats['wasm SIMD'].median / stats.native.median,
    'wasm no SIMD / native': stats['wasm no SIMD'].median / stats.native.median };
  if (JSON_OUT) {
    console.log(JSON.stringify({ nsPerValue: stats, ratio, digest: [...digests][0] }));
  } else {
    for (const [name, t] of Object.entries(stats)) {
      console.log(`${name.padEnd(13)} median ${t.median.toFixed(3)} ns/value  (min ${t.min.toFixed(3)}, max ${t.max.toFixed(3)}, n ${t.n})`);
    }
    for (const [name, r] of Object.entries(ratio)) console.log(`${name.padEnd(22)} ${r.toFixed(2)}`);
    console.log(`results identical: digest ${[...digests][0]}`);
  }
}
