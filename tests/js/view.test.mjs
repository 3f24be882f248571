// `ckptscope view FILE [FILE2]`: the viewer and exactly those files on 127.0.0.1, the page URL
// that names them, the browser opened when there is one, Ctrl-C and SIGTERM end it with 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { model } from './table.mjs';
import { browserCommand } from '../../js/open-browser.js';
import { scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-view-scratch-');

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-view-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function file(name, bytes) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, bytes);
  return p;
}

/** Start `ckptscope view ...`; child.url resolves once it printed its URL and its advice. */
function view(args, env = {}) {
  const child = spawn(process.execPath, [CLI, 'view', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  child.out = '';
  child.err = '';
  let advised;
  const advice = new Promise((resolve) => (advised = resolve));
  child.stderr.on('data', (b) => {
    child.err += b;
    if (child.err.includes('(Ctrl-C stops the server)\n')) advised();
  });
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);   // never outlive the test
  child.on('exit', () => clearTimeout(timer));
  child.url = new Promise((resolve, reject) => {
    child.stdout.on('data', (b) => {
      child.out += b;
      if (child.out.includes('\n')) advice.then(() => resolve(child.out.split('\n')[0]));
    });
    child.exited.then(({ code }) => reject(new Error(`view exited ${code}: ${child.err}`)));
  });
  child.url.catch(() => {});   // a test that expects the exit does not await the URL
  return child;
}

/** The page URL's parts: origin and the /files/ paths its #open= parameters name. */
function parseViewerUrl(url) {
  const m = /^(http:\/\/127\.0\.0\.1:(\d+))\/#(open=[^&]+(?:&open=[^&]+)*)$/.exec(url);
  assert.ok(m, url);
  return { origin: m[1], port: Number(m[2]), files: m[3].split('&').map((p) => decodeURIComponent(p.slice('open='.length))) };
}

test('view F --no-open --port 0: the URL, the page, the file by ranges, 404 elsewhere, SIGINT ends it with 0', async () => {
  const bytes = await model();
  const p = file('my model.ckpt', bytes);
  const child = view([p, '--no-open', '--port', '0']);
  const url = await child.url;
  const { origin, files } = parseViewerUrl(url);
  assert.equal(files.length, 1);
  assert.match(files[0], /^\/files\/[0-9a-f]{32}\/my%20model\.ckpt$/);
  assert.equal(url, `${origin}/#open=${encodeURIComponent(files[0])}`);
  assert.match(child.err, /open this URL in your browser/);

  const page = await fetch(`${origin}/`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<html/);

  let r = await fetch(origin + files[0], { headers: { Range: 'bytes=7-22' } });
  assert.equal(r.status, 206);
  assert.equal(r.headers.get('content-range'), `bytes 7-22/${bytes.length}`);
  assert.deepEqual(new Uint8Array(await r.arrayBuffer()), bytes.slice(7, 23));
  r = await fetch(origin + files[0]);
  assert.deepEqual(new Uint8Array(await r.arrayBuffer()), bytes);
  r = await fetch(origin + files[0], { headers: { Range: `bytes=${bytes.length}-` } });
  assert.equal(r.status, 416);
  assert.equal(r.headers.get('content-range'), `bytes */${bytes.length}`);
  r = await fetch(origin + files[0].replace(/[0-9a-f]{32}/, 'f'.repeat(32)));
  assert.equal(r.status, 404);
  r = await fetch(`${origin}/files/x/${path.basename(CLI)}`);
  assert.equal(r.status, 404);
  r = await fetch(`${origin}${files[0].replace(/[^/]+$/, '..%2F..%2Fpackage.json')}`);
  assert.equal(r.status, 404);

  child.kill('SIGINT');
  assert.deepEqual(await child.exited, { code: 0, signal: null });
});

test('view A B: one open= per file, in order; SIGTERM ends it with 0', async () => {
  const a = file('a.ckpt', await model());
  const b = file('b.ckpt', await model({ randomCounter: 3 }));
  const child = view([a, b, '--no-open', '--port', '0']);
  const { origin, files } = parseViewerUrl(await child.url);
  assert.deepEqual(files.map((f) => f.split('/').pop()), ['a.ckpt', 'b.ckpt']);
  assert.notEqual(files[0].split('/')[2], files[1].split('/')[2], 'a token per file');
  for (const [f, p] of [[files[0], a], [files[1], b]]) {
    const r = await fetch(origin + f);
    assert.deepEqual(new Uint8Array(await r.arrayBuffer()), new Uint8Array(fs.readFileSync(p)));
  }
  child.kill('SIGTERM');
  assert.deepEqual(await child.exited, { code: 0, signal: null });
});

test('view: with no port given, the first free one from 8080 upward', async () => {
  // Hold 8080 (unless something else already does): view must move on.
  const blocker = net.createServer();
  await new Promise((resolve) => {
    blocker.once('error', resolve);
    blocker.listen(8080, '127.0.0.1', resolve);
  });
  try {
    const child = view([file('scan.ckpt', await model()), '--no-open'], { PORT: '' });   // PORT empty: unset
    const { port } = parseViewerUrl(await child.url);
    assert.ok(port > 8080 && port < 8180, String(port));
    child.kill('SIGINT');
    assert.equal((await child.exited).code, 0);
  } finally {
    blocker.close();
  }
});

/** Listen on 127.0.0.1:port (0: any); resolves with the server, or null when it is taken. */
const occupy = (port) => new Promise((resolve) => {
  const s = net.createServer();
  s.once('error', () => resolve(null));
  s.listen(port, '127.0.0.1', () => resolve(s));
});

test('view: a busy --port is advice naming a port that is free, exit 2', async () => {
  const blocker = await occupy(0);
  const { port } = blocker.address();
  const next = await occupy(port + 1);   // port + 1 busy too (by us, or already by someone)
  try {
    const child = view([file('busy.ckpt', await model()), '--no-open', '--port', String(port)]);
    assert.equal((await child.exited).code, 2);
    const m = /^ckptscope: port (\d+) is in use: try --port (\d+)\n$/.exec(child.err);
    assert.ok(m, child.err);
    assert.equal(Number(m[1]), port);
    const advised = Number(m[2]);
    assert.ok(advised > port + 1, `advised ${advised}, busy ${port} and ${port + 1}`);
    const probe = await occupy(advised);
    assert.ok(probe, `the advised port ${advised} is free`);
    probe.close();
  } finally {
    blocker.close();
    next?.close();
  }
});

test('view: FILE must be an existing regular file; clear messages, exit 2', async () => {
  const p = file('ok.ckpt', await model());
  const run = (...args) => spawnSync(process.execPath, [CLI, 'view', ...args, '--no-open', '--port', '0'], { encoding: 'utf8', timeout: 10_000 });
  const missing = path.join(tmp, 'missing.ckpt');
  let r = run(missing);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: no such file: ${missing}\n`);
  r = run(tmp);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${tmp} is a directory, not a checkpoint file, a Trainer checkpoint-N folder or an output folder of them\n`);
  r = run('/dev/null');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: /dev/null is not a regular file: view serves a file by byte ranges\n');
  r = run('-');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: view needs files: - \(standard input\) cannot be served by byte ranges\n/);
  r = run();
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: view takes FILE \[FILE2 \.\.\.\] \[NAMES\.json\]\n/);
  const names = file('two-names.json', '["a"]');
  r = run(p, names, names);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^ckptscope: view takes one NAMES\.json: the slots have one name each\n/);
  r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
  assert.match(r.stdout, /ckptscope view FILE \[FILE2 \.\.\.\] \[NAMES\.json\] \[--port N\] \[--no-open\]/);
});

test('view opens the default browser when there is one (a stand-in xdg-open records its argument)', async () => {
  if (process.platform !== 'linux') return;
  const bin = path.join(tmp, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const record = path.join(tmp, 'opened.txt');
  fs.writeFileSync(path.join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > "${record}"\n`, { mode: 0o755 });
  const child = view([file('open.ckpt', await model()), '--port', '0'], { PATH: `${bin}:${process.env.PATH}`, DISPLAY: ':99' });
  const url = await child.url;
  const recorded = () => (fs.existsSync(record) ? fs.readFileSync(record, 'utf8') : '');
  for (let k = 0; k < 100 && !recorded().endsWith('\n'); k++) await new Promise((r) => setTimeout(r, 50));
  // The secret tokens never reach the opener's argv (any local user reads it from `ps`): it
  // opens a 0600 redirect page in a 0700 folder, which leads to the tokened URL.
  const opened = fs.readFileSync(record, 'utf8').trimEnd();
  const { files } = parseViewerUrl(url);
  for (const f of files) assert.ok(!opened.includes(f.split('/')[2]), `token in argv: ${opened}`);
  assert.match(opened, /^file:\/\/\/.*\/open\.html$/);
  const page = fileURLToPath(opened);
  assert.equal(fs.statSync(page).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(page)).mode & 0o777, 0o700);
  const html = fs.readFileSync(page, 'utf8');
  assert.ok(html.includes(`content="0;url=${url.replace(/&/g, '&#38;')}"`), html);
  assert.match(child.err, /opening it in your browser/);
  child.kill('SIGINT');
  assert.equal((await child.exited).code, 0);
  assert.equal(fs.existsSync(page), false, 'the redirect page is removed at exit');
  // No graphical session: no browser to try, just the advice.
  const headless = view([file('open2.ckpt', await model()), '--port', '0'], { PATH: `${bin}:${process.env.PATH}`, DISPLAY: '', WAYLAND_DISPLAY: '' });
  await headless.url;
  assert.match(headless.err, /open this URL in your browser/);
  headless.kill('SIGINT');
  assert.equal((await headless.exited).code, 0);
});

test('the browser command per platform', () => {
  const url = 'http://127.0.0.1:8080/#open=%2Ffiles%2Fa%2Fx&open=%2Ffiles%2Fb%2Fy';
  assert.deepEqual(browserCommand(url, { platform: 'darwin', env: {} }).slice(0, 2), ['open', [url]]);
  // cmd.exe would take & for a command separator: ^& keeps it in the URL.
  const [cmd, args, options] = browserCommand(url, { platform: 'win32', env: {} });
  assert.equal(cmd, 'cmd');
  assert.deepEqual(args, ['/c', 'start', '""', url.replace(/&/g, '^&')]);
  assert.equal(options.windowsVerbatimArguments, true);
  assert.equal(browserCommand(url, { platform: 'linux', env: { PATH: '/usr/bin:/bin' } }), null, 'no display');
});

test('serve: Ctrl-C right after the URL ends it with 0', async () => {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  child.stdout.once('data', () => child.kill('SIGINT'));
  assert.deepEqual(await exited, { code: 0, signal: null });
  clearTimeout(timer);
});

test('view FILE FILE2 NAMES.json: the names file is served and opened with the pair', async () => {
  const child = view([file('vn-opt.ckpt', await model()), file('vn-names.json', '["a", "b", "c"]'), '--no-open', '--port', '0']);
  const url = await child.url;
  const { origin, files } = parseViewerUrl(url);
  assert.equal(files.length, 2);
  assert.match(files[1], /\/vn-names\.json$/);
  const r = await fetch(origin + files[1]);
  assert.deepEqual(await r.json(), ['a', 'b', 'c']);
  child.kill('SIGINT');
  assert.equal((await child.exited).code, 0);
  const three = view([file('vn1.ckpt', await model()), file('vn2.ckpt', await model()), file('vn3.json', '["a"]'), '--no-open', '--port', '0']);
  assert.equal(parseViewerUrl(await three.url).files.length, 3);
  three.kill('SIGINT');
  await three.exited;
});

test('view NAMES.json: read by the capped names reader (its words, exit 2), served as the names read', async () => {
  const ck = file('vc.ckpt', await model());
  const run = (...args) => spawnSync(process.execPath, [CLI, 'view', ...args, '--no-open', '--port', '0'], { encoding: 'utf8', timeout: 15_000 });
  let r = run(ck, file('vc-bad.json', '["a", 3]'));
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${path.join(tmp, 'vc-bad.json')}[1] must be a string, got number 3\n`);
  const huge = path.join(tmp, 'vc-huge.json');
  fs.writeFileSync(huge, '');
  fs.truncateSync(huge, 1 << 30);   // a hole: 1 GiB refused before a byte is read
  r = run(ck, huge);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `ckptscope: ${huge} is 1,073,741,824 bytes: a names JSON has at most 536,870,912\n`);
  // the names as read (the file rewritten since is not what is served)
  const names = file('vc-names.json', ' [ "w" ,\n "b" ] ');
  const child = view([ck, names, '--no-open', '--port', '0']);
  const { origin, files } = parseViewerUrl(await child.url);
  fs.writeFileSync(names, '["changed"]');
  const got = await fetch(origin + files[1]);
  assert.equal(got.status, 200);
  assert.equal(await got.text(), '["w","b"]');
  const part = await fetch(origin + files[1], { headers: { Range: 'bytes=1-3' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), 'bytes 1-3/9');
  assert.equal(await part.text(), '"w"');
  const pass = await fetch(`${origin}/passes/stats${files[1].slice('/files'.length)}`);
  assert.equal(pass.status, 404, 'no pass over names');
  await pass.text();
  child.kill('SIGINT');
  assert.equal((await child.exited).code, 0);
});

test('view of four checkpoints and names: every file in the URL, in order', async () => {
  const paths = [1, 2, 3, 4].map((k) => file(`vr${k}.ckpt`, new Uint8Array(0)));
  for (const p of paths) fs.writeFileSync(p, await model());
  const child = view([...paths, file('vr.json', '["a"]'), '--no-open', '--port', '0']);
  const { files } = parseViewerUrl(await child.url);
  assert.deepEqual(files.map((f) => f.split('/').pop()), ['vr1.ckpt', 'vr2.ckpt', 'vr3.ckpt', 'vr4.ckpt', 'vr.json']);
  child.kill('SIGINT');
  await child.exited;
});

test('serve on a busy port says which port to try instead, exit 2', async () => {
  const net = await import('node:net');
  const blocker = net.createServer();
  await new Promise((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const { port } = blocker.address();
  try {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b) => (stderr += b));
    const timer = setTimeout(() => child.kill(), 10_000);   // it must not keep running
    const status = await new Promise((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    assert.equal(status, 2);
    // the advice names a port that is free now (port + 1, unless it is taken too)
    const m = /^ckptscope: port (\d+) is in use: try --port (\d+) or PORT=\2 npm start\n$/.exec(stderr);
    assert.ok(m, stderr);
    assert.ok(Number(m[2]) > port);
  } finally {
    blocker.close();
  }
});
