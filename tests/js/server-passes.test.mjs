// The passes `ckptscope view`'s server runs for its page (js/server/server.js /passes/,
// js/server/pass-worker.js), as a client meets them: frames of progress, then the statistics as the
// core's packed words (attached to another open handle they give the CLI's report) or the health
// JSON (the CLI's); only the files handed in, only with `passes`; a page that goes away ends the
// pass; bad input, and a file changed since the page opened it, answer in words that say so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '../../js/server/server.js';
import { saveCheckpoint, saveState, open, health } from '../../js/index.js';
import { attachPacked } from '../../js/checkpoint.js';
import { writeSparse } from './sparse.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-passes-'));
const opt = path.join(tmp, 'opt.ckpt'), state = path.join(tmp, 'opt.tlsf'), broken = path.join(tmp, 'broken.ckpt'), big = path.join(tmp, 'big.ckpt');
const many = path.join(tmp, 'many.ckpt'), changing = path.join(tmp, 'changing.ckpt'), wide = path.join(tmp, 'wide.ckpt');
let server, plain;

before(async () => {
  const shapes = [[40, 50], [7], [40, 50]];
  const n = (s) => s.reduce((a, b) => a * b, 1);
  const wave = (k, i, scale) => Math.sin(k * 0.37 + i) * scale;
  await saveCheckpoint(opt, { shapes, requiresGrad: [true, true, true], representatives: [0, 1, 0],
    config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 },
    entries: [0, 1].map((id) => ({ id, step: 12, m: Float32Array.from({ length: n(shapes[id]) }, (_, k) => wave(k, id, 1e-3)),
      v: Float32Array.from({ length: n(shapes[id]) }, (_, k) => 1e-6 + Math.abs(wave(k, id, 1e-6))) })) });
  const theta = shapes.map((s, i) => Float32Array.from({ length: n(s) }, (_, k) => wave(k, i, 0.5)));
  theta[2] = Float32Array.from({ length: n(shapes[2]) }, (_, k) => theta[0][k]);   // tied to slot 0: the same values
  await saveState(state, { family: 'TLSF32B', shapes, values: theta });
  fs.writeFileSync(broken, fs.readFileSync(opt).subarray(0, 300));
  writeSparse(big, { slots: 16, elements: 64 << 20 });   // 8 GiB of holes: a pass of seconds
  writeSparse(many, { slots: 4096, elements: 64 << 10 });   // 4,096 items, 2 GiB: two threads
  fs.copyFileSync(opt, changing);
  server = await serve({ port: 0, quiet: true, files: [opt, state, broken, big, many, changing], passes: true });
  plain = await serve({ port: 0, quiet: true, files: [opt] });
});

after(async () => {
  for (const s of [server, plain]) await new Promise((resolve) => s?.close(resolve));
  fs.rmSync(tmp, { recursive: true, force: true });
});

const urlOf = (s, file) => s.files.find((f) => f.path === file).url;
const passUrl = (s, kind, file, query = '') => `${s.origin}/passes/${kind}${urlOf(s, file).slice('/files'.length)}${query}`;

/** The frames of a pass's answer, in order: JSON messages as objects, packed statistics as
 *  {packed: {from, list: [BigUint64Array per item]}} (js/server/pass-worker.js's format, read here on
 *  its own). */
function framesOf(bytes) {
  const out = [];
  for (let at = 0; at < bytes.length;) {
    assert.ok(at + 5 <= bytes.length, 'a whole frame header');
    const length = bytes.readUInt32LE(at), kind = String.fromCharCode(bytes[at + 4]);
    const payload = bytes.subarray(at + 5, at + 5 + length);
    assert.equal(payload.length, length, 'a whole frame');
    at += 5 + length;
    if (kind === 'j') {
      out.push(JSON.parse(payload.toString('utf8')));
      continue;
    }
    assert.equal(kind, 'p');
    const words = new BigUint64Array(Uint8Array.from(payload).buffer);
    const from = Number(words[0]), n = Number(words[1]);
    const list = [];
    for (let j = 0, k = 2 + n; j < n; k += Number(words[2 + j]), j++) list.push(words.slice(k, k + Number(words[2 + j])));
    assert.equal(2 + n + list.reduce((a, w) => a + w.length, 0), words.length, 'the words add up');
    out.push({ packed: { from, list } });
  }
  return out;
}

async function frames(url) {
  const r = await fetch(url);
  assert.equal(r.status, 200, url);
  assert.equal(r.headers.get('content-type'), 'application/octet-stream');
  assert.equal(r.headers.get('content-security-policy')?.startsWith("default-src 'self'"), true);
  return framesOf(Buffer.from(await r.arrayBuffer()));
}

/** Attach every packed frame to a fresh open of `file`: its JSON report, and which items came. */
async function attached(file, got) {
  const ck = await open(file);
  try {
    const seen = [];
    for (const { packed } of got.filter((m) => m.packed)) {
      attachPacked(ck, packed.from, packed.list);
      packed.list.forEach((_, j) => seen.push(packed.from + j));
    }
    return { report: JSON.parse(ck.reportText()), seen: seen.sort((a, b) => a - b) };
  } finally {
    ck.close();
  }
}

function cliJson(args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
  return JSON.parse(r.stdout);
}

test('statistics: packed words that, attached to another open handle, give the CLI\'s report', async () => {
  for (const file of [opt, state]) {
    const got = await frames(passUrl(server, 'stats', file));
    assert.deepEqual(got.at(-1), { done: { workers: 1 } });
    const { report, seen } = await attached(file, got);
    assert.deepEqual(report, cliJson(['inspect', file, '--stats', '--json']));
    assert.deepEqual(seen, report.entries ? report.entries.map((_, k) => k) : report.tensors.map((_, k) => k));
  }
});

test('with 2 threads and 4,096 items: every item once, in frames of at most 1,024, the CLI\'s report', async () => {
  const got = await frames(passUrl(server, 'stats', many));
  const cores = os.availableParallelism();
  assert.deepEqual(got.at(-1), { done: { workers: Math.min(2, cores) } });
  const packed = got.filter((m) => m.packed);
  assert.ok(packed.length >= 4 && packed.every((m) => m.packed.list.length <= 1024), `${packed.length} frames`);
  const { report, seen } = await attached(many, got);
  assert.deepEqual(seen, Array.from({ length: 4096 }, (_, k) => k));
  assert.deepEqual(report, cliJson(['inspect', many, '--stats', '--json']));
});

test('health: the CLI\'s JSON, with the state file, lr and ratio band given', async () => {
  const got = await frames(passUrl(server, 'health', opt, `?state=${encodeURIComponent(urlOf(server, state))}&lr=1e-3&band=1e-6,1e-3`));
  const last = got.at(-1);
  assert.deepEqual(last.done, { workers: 1 });
  assert.deepEqual(last.result, cliJson(['health', opt, '--state', state, '--lr', '1e-3', '--ratio-band', '1e-6,1e-3', '--json']));
  const alone = (await frames(passUrl(server, 'health', opt))).at(-1);
  assert.deepEqual(alone.result, cliJson(['health', opt, '--json']));
});

test('the query\'s numbers by the CLI\'s rule: 0x10, Infinity or a blank is not one (400, the pass not run)', async () => {
  const before = JSON.stringify(server.passLog);
  for (const [query, text] of [
    ['?lr=0x10', 'lr must be a number (decimal digits, a point, an exponent), got 0x10'],
    ['?lr=abc', 'lr must be a number (decimal digits, a point, an exponent), got abc'],
    ['?lr=Infinity', 'lr must be a number (decimal digits, a point, an exponent), got Infinity'],
    ['?lr=', 'lr must be a number (decimal digits, a point, an exponent), got '],
    ['?lr=1e-3&band=1e-6,0x1', 'band must be numbers LO,HI (decimal digits, a point, an exponent), got 0x1'],
    ['?size=%2010', 'size must be a number (decimal digits, a point, an exponent), got  10'],
  ]) {
    const r = await fetch(passUrl(server, 'health', opt, query));
    assert.equal(r.status, 400, query);
    assert.equal(await r.text(), `${text}\n`, query);
  }
  assert.equal(JSON.stringify(server.passLog), before, 'no pass ran');
  const cli = spawnSync(process.execPath, [CLI, 'health', opt, '--state', state, '--lr', '0x10'], { encoding: 'utf8' });
  assert.equal(cli.status, 2);
  assert.equal(cli.stderr.split('\n')[0], 'ckptscope: --lr must be a positive number, got 0x10');
});

test('bad input is answered in the API\'s words; an invalid file is left to the page', async () => {
  assert.deepEqual((await frames(passUrl(server, 'health', opt, '?lr=-1'))).at(-1),
    { error: { name: 'RangeError', message: 'lr must be a positive finite number, got -1' } });
  assert.deepEqual((await frames(passUrl(server, 'health', opt, '?lr=1e-3&band=1e-3'))).at(-1),
    { error: { name: 'TypeError', message: 'ratioBand must be [low, high], two numbers, got [0.001]' } });
  // a CheckpointError crosses with every field
  const { error } = (await frames(passUrl(server, 'health', opt, `?state=${encodeURIComponent(urlOf(server, broken))}`))).at(-1);
  const direct = await health(opt, broken).then(() => null, (e) => e);
  assert.ok(direct && direct.code !== undefined, 'the API refuses the pair');
  assert.deepEqual(error, JSON.parse(JSON.stringify({ ...direct, name: direct.name, message: direct.message }, (_, v) => (typeof v === 'bigint' ? String(v) : v))));
  assert.deepEqual(await frames(passUrl(server, 'stats', broken)), [{ unsplit: true }]);
});

test('only the files handed in, only these passes, only with `passes`', async () => {
  const token = urlOf(server, opt).split('/')[2];
  for (const target of [
    `/passes/export${urlOf(server, opt).slice('/files'.length)}`,
    `/passes/stats/${'0'.repeat(32)}/opt.ckpt`,
    `/passes/stats/${token}/other.ckpt`,
    `/passes/stats/${token}`,
    '/passes/',
    `/passes/health${urlOf(server, opt).slice('/files'.length)}?state=/etc/passwd`,
    `/passes/health${urlOf(server, opt).slice('/files'.length)}?state=${encodeURIComponent(`/files/${'0'.repeat(32)}/opt.tlsf`)}`,
  ]) {
    const r = await fetch(server.origin + target);
    assert.equal(r.status, 404, target);
    await r.arrayBuffer();
  }
  const r = await fetch(passUrl(plain, 'stats', opt));
  assert.equal(r.status, 404, 'a server without passes (serve) runs none');
  await r.arrayBuffer();
});

test('a page that goes away ends the pass on the server', async () => {
  const url = new URL(passUrl(server, 'stats', big));
  await new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      assert.equal(res.statusCode, 200);
      res.once('data', () => req.destroy());   // the first progress line: the pass runs; go away
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.on('close', resolve);
    req.setTimeout(30000, () => reject(new Error('no progress from the pass')));
  });
  for (const end = Date.now() + 20000; server.passesRunning > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  assert.equal(server.passesRunning, 0);
  assert.deepEqual(server.passLog.at(-1), { kind: 'stats', ended: 'cancelled' });
  // the file is still served, and a pass over it runs (the cancelled one closed nothing)
  const r = await fetch(server.origin + urlOf(server, big), { headers: { Range: 'bytes=0-6' } });
  assert.equal(r.status, 206);
  assert.equal(await r.text(), 'TLADAMF');
  const again = await frames(passUrl(server, 'health', opt));
  assert.deepEqual(again.at(-1).done, { workers: 1 });
});

test('a file changed since the page opened it: the pass says so, and attaches nothing of another count', async () => {
  const size = fs.statSync(changing).size;
  const ck = await open(changing);
  const items = ck.report.entries.length;
  ck.close();
  fs.appendFileSync(changing, Buffer.alloc(8));
  const got = await frames(passUrl(server, 'stats', changing, `?size=${size}&items=${items}`));
  assert.deepEqual(got, [{ error: { name: 'FileChanged', message: `the file changed since the page opened it (${size} bytes then, ${size + 8} now): open it again` } }]);
  const healthGot = await frames(passUrl(server, 'health', changing, `?size=${size}`));
  assert.deepEqual(healthGot.at(-1).error.message, `the optimizer checkpoint changed since the page opened it (${size} bytes then, ${size + 8} now): open it again`);
});

test('at most 4 passes at once: a fifth is answered 503, and runs once one has ended', async () => {
  const url = new URL(passUrl(server, 'stats', big));
  const started = [];
  for (let k = 0; k < 4; k++) {
    started.push(await new Promise((resolve, reject) => {
      const req = http.get(url, (res) => {
        assert.equal(res.statusCode, 200);
        res.once('data', () => resolve(req));
        res.on('error', () => {});
      });
      req.on('error', reject);
    }));
  }
  assert.equal(server.passesRunning, 4);
  const refused = await fetch(url);
  assert.equal(refused.status, 503);
  assert.equal(await refused.text(), '4 passes run already: try again when one has ended\n');
  for (const req of started) req.destroy();
  for (const end = Date.now() + 20000; server.passesRunning > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  assert.equal(server.passesRunning, 0);
  const r = await fetch(passUrl(server, 'stats', opt));
  assert.equal(r.status, 200);
  await r.text();
});

/** A client that asks for `url` and never reads its answer. */
function neverReads(url) {
  const socket = net.connect(Number(url.port), url.hostname, () => socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`));
  socket.pause();
  socket.on('error', () => {});
  return socket;
}

test('a page that reads nothing for stallSeconds loses its pass: 4 such clients leave the slots free; a slow one keeps its pass, on one drain listener', async () => {
  writeSparse(wide, { slots: 65536, elements: 256 });   // 65,536 items: far more frames than the sockets hold
  const s = await serve({ port: 0, quiet: true, files: [wide, opt], passes: true, stallSeconds: 0.2 });
  try {
    const ends = [];
    const four = new Promise((resolve) => s.on('passEnded', (r) => ends.push(r) === 4 && resolve()));
    const clients = [0, 1, 2, 3].map(() => neverReads(new URL(passUrl(s, 'stats', wide))));
    await four;
    assert.deepEqual(ends, Array(4).fill({ kind: 'stats', ended: 'stalled' }));
    for (const end = Date.now() + 20000; s.passesRunning > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
    assert.equal(s.passesRunning, 0);
    const got = await frames(passUrl(s, 'health', opt));
    assert.deepEqual(got.at(-1).done, { workers: 1 });
    assert.deepEqual(s.passLog.at(-1), { kind: 'health', ended: 'done' });
    clients.forEach((c) => c.destroy());
    // a client that reads, however slowly, keeps its pass to the end: every item comes. Its
    // response waits on drain many times over: a listener added per write would pass Node's
    // limit of 10 on the stream and say so by a MaxListenersExceededWarning.
    const warnings = [];
    const onWarning = (w) => warnings.push(w.name);
    process.on('warning', onWarning);
    const slow = await new Promise((resolve, reject) => {
      http.get(new URL(passUrl(s, 'stats', wide)), (res) => {
        const chunks = [];
        res.on('data', (b) => {
          chunks.push(b);
          res.pause();
          setTimeout(() => res.resume(), 1);
        });
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      }).on('error', reject);
    });
    await new Promise((r) => setImmediate(r));   // a warning is emitted on the next tick
    process.off('warning', onWarning);
    assert.deepEqual(warnings.filter((name) => name === 'MaxListenersExceededWarning'), []);
    const slowFrames = framesOf(slow);
    assert.deepEqual(Object.keys(slowFrames.at(-1)), ['done']);
    assert.equal(slowFrames.filter((m) => m.packed).reduce((a, m) => a + m.packed.list.length, 0), 65536);
  } finally {
    await new Promise((resolve) => s.close(resolve));
  }
});
