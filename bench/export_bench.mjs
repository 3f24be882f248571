// The export, streamed: FILE as .npz (or the format given) into a sink that drops the bytes
// (what a disk would take, without writing 20 GB). Prints {"seconds", "bytes"}; peak memory comes
// from /usr/bin/time. NAMES: a JSON file of slot names. CKPTSCOPE_LIB: the package's index.js to
// measure (another checkout's, for before/after figures).
// Usage: export_bench.mjs FILE [npz|safetensors] [NAMES]
import fs from 'node:fs';

const { exportTo } = await import(process.env.CKPTSCOPE_LIB ?? '../js/index.js');
const names = process.argv[4] ? JSON.parse(fs.readFileSync(process.argv[4], 'utf8')) : undefined;
const t0 = performance.now();
let bytes = 0;
await exportTo(process.argv[2], (chunk) => {
  bytes += chunk.length;
}, { format: process.argv[3] ?? 'npz', names });
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, bytes }));
