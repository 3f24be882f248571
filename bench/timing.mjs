// What the benchmark's rows share: progress on standard error, and one command timed under
// /usr/bin/time -v (wall and CPU seconds, peak RSS), killed past its timeout.
import { spawnSync } from 'node:child_process';

export function log(s) {
  process.stderr.write(`${s}\n`);
}

/** One run of `cmd args`: {seconds, cpuSeconds, peakRssMiB, out}, or {seconds: null, timedOut}
 *  when it ran past `timeout` seconds. Exit status 1 (an invalid checkpoint) is a result. */
export function once(cmd, args, { timeout = 900 } = {}) {
  const t0 = performance.now();
  const p = spawnSync('/usr/bin/time', ['-v', 'timeout', '-s', 'KILL', String(timeout), cmd, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const seconds = (performance.now() - t0) / 1000;
  if (p.status === 137 || p.status === 124) return { seconds: null, timedOut: timeout };
  if (p.status !== 0 && p.status !== 1) throw new Error(`${cmd} ${args.join(' ')} failed: ${p.stderr}`);
  const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(p.stderr)?.[1] ?? 0) / 1024;
  const cpu = ['User', 'System'].reduce((t, k) => t + Number(new RegExp(`${k} time \\(seconds\\): ([0-9.]+)`).exec(p.stderr)?.[1] ?? 0), 0);
  return { seconds, cpuSeconds: cpu, peakRssMiB: rss, out: p.stdout };
}
