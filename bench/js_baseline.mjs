// The baseline a web developer would write: read the file in chunks and loop over a
// Float32Array computing the same statistics (min, max, mean, rms over finite values; NaN,
// inf, zero, negative counts; a histogram of floor(log2|x|)). Usage: js_baseline FILE START
import fs from 'node:fs';

const [file, startArg] = process.argv.slice(2);
const start = Number(startArg);
const fd = fs.openSync(file, 'r');
const size = fs.fstatSync(fd).size;
const buf = new Float32Array(1 << 18);   // 1 MiB
const bytes = new Uint8Array(buf.buffer);
const t0 = performance.now();
let min = Infinity, max = -Infinity, sum = 0, sq = 0, nan = 0, inf = 0, zero = 0, neg = 0, n = 0;
const hist = new Map();
for (let pos = start; pos < size;) {
  const got = fs.readSync(fd, bytes, 0, bytes.length, pos);
  if (!got) break;
  pos += got;
  const count = got >> 2;
  for (let k = 0; k < count; k++) {
    const x = buf[k];
    n++;
    if (Number.isNaN(x)) { nan++; continue; }
    if (!Number.isFinite(x)) { inf++; if (x < 0) neg++; continue; }
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    sq += x * x;
    if (x === 0) { zero++; continue; }
    if (x < 0) neg++;
    const e = Math.floor(Math.log2(Math.abs(x)));
    hist.set(e, (hist.get(e) ?? 0) + 1);
  }
}
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ seconds, bytes: size - start, n, min, max, mean: sum / (n - nan - inf), nan, inf, zero, neg, bins: hist.size }));
