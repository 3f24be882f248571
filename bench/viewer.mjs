// The viewer's statistics and health against the CLI's on the same files (docs/performance.md
// "The viewer against the CLI": the rate of each as a fraction of the CLI's). Chromium (playwright-core, as the browser tests drive it)
// opens a checkpoint and its model-state file three ways: dropped as Files (picked with the file
// input, by path: nothing copied), served over HTTP ranges to a page that reads them itself (the
// viewer's server without passes, as `ckptscope serve` or a viewer hosted elsewhere), and opened
// by `ckptscope view`, whose server runs the passes on its machine (js/server/pass-worker.js). Each
// pass is timed in the page from the click to the worker idle (data-pending back to 0), a fresh
// page per repetition (the worker keeps statistics it computed). The CLI's `inspect --stats
// --workers 1` and `health --state --workers 1` run interleaved with them; best of `repeat`.
//   node bench/viewer.mjs [OPT STATE]   (default: bench/run.mjs's stats-1g.ckpt, state-512m.tlsf)
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../js/server/server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(root, 'js/cli.js');

function cliSeconds(args) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0 && r.status !== 1) throw new Error(`ckptscope ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return s;
}

/** Click `selector` and resolve the milliseconds until no request is pending in the worker. */
function timedClick(page, selector) {
  return page.evaluate((selector) => new Promise((resolve, reject) => {
    const root = document.documentElement;
    const button = document.querySelector(selector);
    if (!button || button.disabled) {
      reject(new Error(`${selector}: no enabled button`));
      return;
    }
    const t0 = performance.now();
    const seen = new MutationObserver(() => {
      if (root.dataset.pending !== '0') return;
      seen.disconnect();
      resolve(performance.now() - t0);
    });
    seen.observe(root, { attributes: true, attributeFilter: ['data-pending'] });
    button.click();   // the request is posted (pending 1) before the observer's first call
  }), selector);
}

const idle = (page) => page.waitForFunction(() => document.documentElement.dataset.pending === '0', null, { timeout: 120000 });

/** One viewer repetition: open the pair (`how`: 'file' or 'http'), time Scan, then health. */
async function viewerOnce(browser, servers, how, opt, state) {
  const server = servers[how === 'view' ? 'view' : 'http'];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    if (how !== 'file') {
      await page.goto(server.viewerUrl);
    } else {
      await page.goto(`${server.origin}/`);
      await page.waitForSelector('#examples button', { state: 'attached' });
      await page.setInputFiles('[data-testid=file-input]', [opt, state]);
    }
    await page.waitForSelector('[data-testid=pair-verdict]', { timeout: 120000 });
    await page.waitForSelector('[data-testid=health-run]', { timeout: 120000 });
    await idle(page);
    const scanMs = await timedClick(page, '#scan');
    const status = await page.textContent('#status');
    if (!/^Statistics for /.test(status)) throw new Error(`the scan did not finish: ${status}`);
    const healthMs = await timedClick(page, '[data-testid=health-run]');
    const said = await page.textContent('[data-testid=health-state]');
    if (/failed|cancelled|Running/.test(said)) throw new Error(`the health pass did not finish: ${said}`);
    if (errors.length) throw new Error(errors.join('\n'));
    return { scan: scanMs / 1000, health: healthMs / 1000 };
  } finally {
    await context.close();
  }
}

/**
 * Best-of-`repeat` seconds: {cli: {scan, health}, file: {scan, health}, http: {…}, view: {…}}
 * and the rates {file: {scan, health}, http: {…}, view: {…}} as CLI seconds / viewer seconds.
 */
export async function viewerBench({ opt, state, repeat = 3, log = () => {} }) {
  const servers = { http: await serve({ port: 0, quiet: true, files: [opt, state] }), view: await serve({ port: 0, quiet: true, files: [opt, state], passes: true }) };
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const best = Object.fromEntries(['cli', 'file', 'http', 'view'].map((k) => [k, { scan: Infinity, health: Infinity }]));
  const keep = (where, got) => {
    for (const k of ['scan', 'health']) best[where][k] = Math.min(best[where][k], got[k]);
  };
  try {
    for (let r = 0; r < repeat; r++) {
      // interleaved: the machine is shared, so each side sees the same load over the run
      keep('cli', { scan: cliSeconds(['inspect', opt, '--stats', '--workers', '1']), health: cliSeconds(['health', opt, '--state', state, '--json', '--workers', '1']) });
      for (const how of ['file', 'http', 'view']) {
        const got = await viewerOnce(browser, servers, how, opt, state);
        log(`viewer ${how}: scan ${got.scan.toFixed(2)} s, health ${got.health.toFixed(2)} s`);
        keep(how, got);
      }
      log(`CLI: inspect --stats ${best.cli.scan.toFixed(2)} s, health ${best.cli.health.toFixed(2)} s (best so far)`);
    }
  } finally {
    await browser.close();
    for (const server of Object.values(servers)) await new Promise((resolve) => server.close(resolve));
  }
  const rate = (how) => ({ scan: best.cli.scan / best[how].scan, health: best.cli.health / best[how].health });
  return { seconds: best, rate: { file: rate('file'), http: rate('http'), view: rate('view') } };
}

/** Table rows [name, seconds] of a viewerBench result, for bench/run.mjs. */
export function viewerRows({ seconds }) {
  return [
    ['viewer Scan, dropped File', seconds.file.scan],
    ['viewer Scan, page reading over HTTP', seconds.http.scan],
    ['viewer Scan, ckptscope view (pass on its machine)', seconds.view.scan],
    ['viewer health, dropped File', seconds.file.health],
    ['viewer health, page reading over HTTP', seconds.http.health],
    ['viewer health, ckptscope view (pass on its machine)', seconds.view.health],
  ];
}

/** Ratios for bench/run.mjs (target >= 0.5 each). */
export function viewerRatios({ rate }) {
  return {
    'viewer Scan / CLI rate, File': rate.file.scan,
    'viewer Scan / CLI rate, HTTP': rate.http.scan,
    'viewer Scan / CLI rate, ckptscope view': rate.view.scan,
    'viewer health / CLI rate, File': rate.file.health,
    'viewer health / CLI rate, HTTP': rate.http.health,
    'viewer health / CLI rate, ckptscope view': rate.view.health,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const data = path.join(root, 'build/bench/data');
  const [opt = path.join(data, 'stats-1g.ckpt'), state = path.join(data, 'state-512m.tlsf')] = process.argv.slice(2);
  for (const f of [opt, state]) if (!fs.existsSync(f)) throw new Error(`${f} is missing: run npm run bench once (it makes the files), or name two files`);
  const result = await viewerBench({ opt, state, repeat: Number(process.env.BENCH_REPEAT ?? 3), log: (s) => process.stderr.write(`${s}\n`) });
  const s = result.seconds;
  console.log(`${'pass'.padEnd(10)} ${'CLI s'.padEnd(8)} ${'File s'.padEnd(8)} ${'HTTP s'.padEnd(8)} ${'view s'.padEnd(8)} ${'File rate'.padEnd(10)} ${'HTTP rate'.padEnd(10)} view rate (CLI seconds / viewer seconds; target >= 0.5)`);
  for (const k of ['scan', 'health']) {
    const r = result.rate;
    console.log(`${k.padEnd(10)} ${[s.cli[k], s.file[k], s.http[k], s.view[k]].map((x) => x.toFixed(2).padEnd(8)).join(' ')} ${r.file[k].toFixed(2).padEnd(10)} ${r.http[k].toFixed(2).padEnd(10)} ${r.view[k].toFixed(2)}`);
  }
}
