// The export, streamed: FILE as .npz (or the format given) into a sink that drops the bytes
// (what a disk would take, without writing 20 GB). Prints {"seconds", "bytes"}; peak memory comes
// from /usr/bin/time. Usage: export_bench.mjs FILE [npz|safetensors]
import { exportTo } from '../js/index.js';

const t0 = performance.now();
let bytes = 0;
await exportTo(process.argv[2], (chunk) => {
  bytes += chunk.length;
}, { format: process.argv[3] ?? 'npz' });
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, bytes }));
