// The viewer's server (js/server/server.js) as a browser, a hostile page and a fuzzer meet it: no
// request stops it, only its own Host is served, every answer carries the security headers,
// and the files handed to it are reachable only at their tokened URLs, by ranges, streamed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '../../js/server/server.js';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-server-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

/** One raw HTTP exchange: the request text as given, the response text until the server closes. */
function raw(port, request) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.setTimeout(5000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(request.slice(0, 80))}`)));
    socket.on('data', (b) => chunks.push(b));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write(Buffer.from(request, 'latin1'));   // not end(): a half-closed socket may be dropped before a streamed answer
  });
}

const get = (port, target, host = `127.0.0.1:${port}`, extra = '') =>
  raw(port, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${extra}\r\n`);
const statusOf = (response) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(response)?.[1]);

const SECURITY_HEADERS = {
  'content-security-policy': /default-src 'self'/,
  'x-content-type-options': /^nosniff$/,
  'referrer-policy': /^no-referrer$/,
  'cache-control': /no-(cache|store)/,
  'cross-origin-resource-policy': /^same-origin$/,
  'x-frame-options': /^DENY$/,
  // cross-origin isolation: a streamed export's pacing counter is a SharedArrayBuffer
  'cross-origin-opener-policy': /^same-origin$/,
  'cross-origin-embedder-policy': /^require-corp$/,
};

function assertSecurityHeaders(headers, what) {
  const get = (k) => (headers instanceof Headers ? headers.get(k) : headers[k]);
  for (const [k, re] of Object.entries(SECURITY_HEADERS)) assert.match(String(get(k)), re, `${what}: ${k}`);
}

/** Headers of a raw response, lower-cased names. */
function headersOf(response) {
  const head = response.split('\r\n\r\n')[0].split('\r\n').slice(1);
  return Object.fromEntries(head.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
}

// ---- a server in a child process: a crash would show as a refused connection ----------------

let child;
let childPort;

before(async () => {
  child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  childPort = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code})`)));
  });
});

after(() => child.kill());

test('GET // and friends do not stop the server', async () => {
  for (const target of ['//', '///', '//[', '/\\', '//evil.example/', '//[::1', '/%', '/%zz', '/js/%E0%A4%A', '*', 'http://127.0.0.1/']) {
    const response = await get(childPort, target);
    assert.ok([400, 404].includes(statusOf(response)), `${target}: ${response.slice(0, 40)}`);
  }
  assert.equal(statusOf(await get(childPort, '/')), 200, 'still serving');
});

test('a few hundred random request targets: every one answered, the server still up', async () => {
  const pieces = ['/', '//', '\\', '..', '.', '%', '%2f', '%2F', '%5c', '%00', '%zz', '%e2%80%ae', '[', ']', '@', ':', '?', '#',
    'js', 'files', 'index.html', 'app.js', 'server.js', 'a', '~', '*', 'http:', '%%', ';', '&', '=', '+', "'", '"', '<', '>', '{',
    '}', '|', '^', '`', '\u00e9', '\u00ff', '%c0%ae', '%2e%2e', 'files/0123456789abcdef0123456789abcdef/x', '\u0001', '\u007f', '\t'];
  let seed = 12345;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  for (let k = 0; k < 400; k++) {
    let target = rand(4) ? '/' : '';
    for (let n = rand(8); n >= 0; n--) target += rand(3) ? pieces[rand(pieces.length)] : String.fromCharCode(0x21 + rand(94));
    const response = await get(childPort, target);
    assert.ok(statusOf(response) >= 200 && statusOf(response) < 500, `${JSON.stringify(target)}: ${response.slice(0, 40)}`);
  }
  const page = await get(childPort, '/');
  assert.equal(statusOf(page), 200, 'still serving');
});

test('only 127.0.0.1:PORT and localhost:PORT are served (no DNS rebinding)', async () => {
  for (const host of [`127.0.0.1:${childPort}`, `localhost:${childPort}`, `LOCALHOST:${childPort}`]) {
    assert.equal(statusOf(await get(childPort, '/', host)), 200, host);
  }
  for (const host of ['evil.example', `evil.example:${childPort}`, '127.0.0.1', `127.0.0.1:${childPort + 1}`, `localhost.evil.example:${childPort}`, '']) {
    const response = await get(childPort, '/', host);
    assert.equal(statusOf(response), 421, host);
    assert.match(response, /\r\n\r\nthis server answers only to 127\.0\.0\.1:\d+ and localhost:\d+\n$/);
    assert.doesNotMatch(response, /<html/i);
    assertSecurityHeaders(headersOf(response), `Host ${host}`);
  }
  const noHost = await raw(childPort, 'GET / HTTP/1.0\r\n\r\n');
  assert.equal(statusOf(noHost), 421);
});

test('every answer carries the security headers (200, 400, 404, 405, 421; 416 below)', async () => {
  const answers = {
    200: await get(childPort, '/'),
    400: await get(childPort, '*'),
    404: await get(childPort, '/nothing-here.js'),
    405: await raw(childPort, `POST / HTTP/1.1\r\nHost: 127.0.0.1:${childPort}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`),
    421: await get(childPort, '/', 'evil.example'),
  };
  // What the HTTP parser itself rejects gets the same headers.
  const parser = await get(childPort, '/a\u0001b');
  assert.equal(statusOf(parser), 400);
  assertSecurityHeaders(headersOf(parser), 'parser 400');
  for (const [status, response] of Object.entries(answers)) {
    assert.equal(statusOf(response), Number(status));
    assertSecurityHeaders(headersOf(response), status);
  }
});

test('nothing outside web/ and js/ is reachable, nor js/server/ (Node\'s, not the page\'s)', async () => {
  for (const target of ['/../package.json', '/js/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/js/..%2f..%2fpackage.json',
    '/server.js', '/js/server/server.js', '/js/server/pass-worker.js', '/js/server/', '/js/server', '/js/%2e/server/server.js', '/js/%00', '/index.html%00', '/..\\package.json', '/js\\..\\..\\package.json', '/files/', '/files/x/y']) {
    assert.equal(statusOf(await get(childPort, target)), 404, target);
  }
});

// ---- files handed to serve(): tokened URLs, ranges, streaming -------------------------------

let server;
let origin;
const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 255);
const dataFile = path.join(tmp, 'model one.ckpt');
const emptyFile = path.join(tmp, 'empty.ckpt');
const bigFile = path.join(tmp, 'big.ckpt');
const BIG = 5 * 2 ** 30;   // sparse: no disk, and never read whole

before(async () => {
  fs.writeFileSync(dataFile, bytes);
  fs.writeFileSync(emptyFile, '');
  fs.writeFileSync(bigFile, 'head');
  fs.truncateSync(bigFile, BIG);
  fs.writeFileSync(path.join(tmp, 'secret.txt'), 'not for the page');
  server = await serve({ port: 0, quiet: true, files: [dataFile, emptyFile, bigFile] });
  origin = `http://127.0.0.1:${server.address().port}`;
});

after(() => new Promise((resolve) => server.close(resolve)));

const urlOf = (file) => server.files.find((f) => f.path === file).url;

test('serve() tells the files\' URLs: /files/{128-bit hex token}/{name}', () => {
  assert.equal(server.files.length, 3);
  const tokens = new Set();
  for (const f of server.files) {
    const m = /^\/files\/([0-9a-f]{32})\/([^/]+)$/.exec(f.url);
    assert.ok(m, f.url);
    tokens.add(m[1]);
    assert.equal(decodeURIComponent(m[2]), path.basename(f.path));
  }
  assert.equal(tokens.size, 3, 'a token per file');
  assert.equal(urlOf(dataFile).split('/').pop(), 'model%20one.ckpt');
  assert.equal(server.origin, origin);
});

test('a file: GET, HEAD, Accept-Ranges, octet-stream, the exact bytes', async () => {
  let r = await fetch(origin + urlOf(dataFile));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('accept-ranges'), 'bytes');
  assert.equal(r.headers.get('content-type'), 'application/octet-stream');
  assert.equal(r.headers.get('content-length'), '1000');
  assertSecurityHeaders(r.headers, 'file 200');
  assert.deepEqual(new Uint8Array(await r.arrayBuffer()), bytes);
  r = await fetch(origin + urlOf(dataFile), { method: 'HEAD' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-length'), '1000');
  assert.equal((await r.arrayBuffer()).byteLength, 0);
  r = await fetch(origin + urlOf(emptyFile));
  assert.equal(r.status, 200);
  assert.equal((await r.arrayBuffer()).byteLength, 0);
});

test('single ranges: 206 with Content-Range and exactly that slice', async () => {
  const cases = [['bytes=0-9', 0, 9], ['bytes=990-', 990, 999], ['bytes=-10', 990, 999], ['bytes=995-2000', 995, 999],
    ['bytes=-5000', 0, 999], ['bytes=0-0', 0, 0], ['bytes=999-999', 999, 999], ['bytes=100-199', 100, 199]];
  for (const [range, start, end] of cases) {
    const r = await fetch(origin + urlOf(dataFile), { headers: { Range: range } });
    assert.equal(r.status, 206, range);
    assert.equal(r.headers.get('content-range'), `bytes ${start}-${end}/1000`, range);
    assert.equal(r.headers.get('content-length'), String(end - start + 1), range);
    assertSecurityHeaders(r.headers, `206 ${range}`);
    assert.deepEqual(new Uint8Array(await r.arrayBuffer()), bytes.slice(start, end + 1), range);
  }
  const head = await fetch(origin + urlOf(dataFile), { method: 'HEAD', headers: { Range: 'bytes=10-19' } });
  assert.equal(head.status, 206);
  assert.equal(head.headers.get('content-range'), 'bytes 10-19/1000');
});

test('unsatisfiable, malformed or multiple ranges: 416 with bytes */SIZE, never the whole file', async () => {
  for (const range of ['bytes=1000-', 'bytes=1000-1001', 'bytes=5-2', 'bytes=0-1,5-6', 'bytes=-0', 'bytes=-', 'bytes=abc',
    'items=0-1', 'bytes=0x10-20', 'bytes=1-2-3', 'bytes=99999999999999999999999-', 'bytes= 0-1, 2-3', '']) {
    const r = await fetch(origin + urlOf(dataFile), { headers: { Range: range } });
    assert.equal(r.status, 416, JSON.stringify(range));
    assert.equal(r.headers.get('content-range'), 'bytes */1000', range);
    assertSecurityHeaders(r.headers, `416 ${range}`);
    assert.ok((await r.arrayBuffer()).byteLength < 100, 'no file bytes');
  }
  const empty = await fetch(origin + urlOf(emptyFile), { headers: { Range: 'bytes=0-' } });
  assert.equal(empty.status, 416);
  assert.equal(empty.headers.get('content-range'), 'bytes */0');
});

/** The bytes this process has read (read() and pread() calls: files and sockets), from Linux's
 *  /proc/self/io. */
function bytesReadByThisProcess() {
  return Number(/^rchar: (\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'))[1]);
}

test('a 5 GB (sparse) file: a range at its end is streamed at once, the file never read whole', async () => {
  const readBefore = bytesReadByThisProcess();
  const r = await fetch(origin + urlOf(bigFile), { headers: { Range: 'bytes=-16' } });
  assert.equal(r.status, 206);
  assert.equal(r.headers.get('content-range'), `bytes ${BIG - 16}-${BIG - 1}/${BIG}`);
  assert.deepEqual(new Uint8Array(await r.arrayBuffer()), new Uint8Array(16));
  const head = await fetch(origin + urlOf(bigFile), { headers: { Range: 'bytes=0-3' } });
  assert.equal(Buffer.from(await head.arrayBuffer()).toString(), 'head');
  const read = bytesReadByThisProcess() - readBefore;   // the server runs in this process
  assert.ok(read < 16 * 2 ** 20, `the two ranges, not the file: ${read} bytes read`);
});

test('nothing else is reachable through /files/: wrong token, name, .., encoded slashes, NUL, backslashes', async () => {
  const url = urlOf(dataFile);
  const [, , token, name] = url.split('/');
  const other = '0123456789abcdef0123456789abcdef';
  const targets = [
    `/files/${other}/${name}`, `/files/${token}/secret.txt`, `/files/${token}/empty.ckpt`, `/files/${token}/../secret.txt`,
    `/files/${token}/..%2fsecret.txt`, `/files/${token}/%2e%2e%2fsecret.txt`, `/files/${token}/..%5csecret.txt`, `/files/${token}/..\\secret.txt`,
    `/files/${token}/${name}%00`, `/files/${token}/${name}/`, `/files/${token}%2f${name}`, `/files/${token}`, `/files/${token}/`,
    `/files//${name}`, `/files/${token.toUpperCase()}/${name}`, `/files/${token}/${name}/x`, `/files/${token}/%zz`,
    `/files/${token}/model one.ckpt`, `/files/${token}//${name}`, `/files/./${token}/${name}`, `/files/${token}/${tmp}/secret.txt`,
  ];
  const port = server.address().port;
  for (const target of targets) {
    const response = await get(port, target);
    const status = statusOf(response);
    assert.ok(status === 404 || status === 400, `${target}: ${status}`);
    assert.doesNotMatch(response, /not for the page/);
    assertSecurityHeaders(headersOf(response), target);
  }
  assert.equal(statusOf(await get(port, url)), 200, 'the right URL still works');
  assert.equal(statusOf(await get(port, `${url}?v=1`)), 200, 'a query string is ignored');
  const post = await raw(port, `POST ${url} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  assert.equal(statusOf(post), 405);
});

test('the viewer URL names the files: #open=<encodeURIComponent(path)> joined by &', () => {
  const expected = `${origin}/#${server.files.map((f) => `open=${encodeURIComponent(f.url)}`).join('&')}`;
  assert.equal(server.viewerUrl, expected);
  assert.match(server.viewerUrl, /#open=%2Ffiles%2F[0-9a-f]{32}%2Fmodel%2520one\.ckpt&open=/);
});

// ---- each file opened once and served; a file cut while served ----------------------------

test('the file opened at start is served: a re-pointed symlink or a rename over the path changes nothing', async () => {
  const secret = path.join(tmp, 'passwd');
  fs.writeFileSync(secret, 'root:x:0:0:secret');
  const real = path.join(tmp, 'real.ckpt');
  fs.writeFileSync(real, bytes);
  const link = path.join(tmp, 'link.ckpt');
  fs.symlinkSync(real, link);
  const renamed = path.join(tmp, 'renamed.ckpt');
  fs.writeFileSync(renamed, bytes);
  const s = await serve({ port: 0, quiet: true, files: [link, renamed] });
  try {
    const base = `http://127.0.0.1:${s.address().port}`;
    fs.unlinkSync(link);
    fs.symlinkSync(secret, link);                                  // the link now points elsewhere
    fs.writeFileSync(`${renamed}.new`, 'replaced');
    fs.renameSync(`${renamed}.new`, renamed);                      // an atomic save over the path
    for (const f of s.files) {
      const r = await fetch(base + f.url);
      assert.equal(r.status, 200);
      assert.deepEqual(new Uint8Array(await r.arrayBuffer()), bytes, f.path);
    }
  } finally {
    await new Promise((resolve) => s.close(resolve));
  }
});

// Event-based, no clock but the runner's timeout: the server must destroy the socket when the
// file ends short. An answer that ends short instead ('finish' on the server's side) leaves a
// keep-alive client waiting for bytes that never come, until some idle timer closes it: the
// stall this test refuses by the events, however fast the machine.
test('a file truncated while it is served: the answer is cut at once, no stall', { timeout: 30_000 }, async () => {
  const shrinking = path.join(tmp, 'shrinking.ckpt');
  const SIZE = 64 * 2 ** 20;   // sparse
  fs.writeFileSync(shrinking, 'head');
  fs.truncateSync(shrinking, SIZE);
  const s = await serve({ port: 0, quiet: true, files: [shrinking] });
  try {
    const url = `http://127.0.0.1:${s.address().port}${s.files[0].url}`;
    const served = [];
    s.prependListener('request', (req, res) => {
      const answer = { finished: false };
      served.push(answer);
      res.on('finish', () => (answer.finished = true));
    });
    const outcome = await new Promise((resolve, reject) => {
      http.get(url, (res) => {
        let got = 0;
        res.once('data', () => {
          fs.truncateSync(shrinking, 1024);   // the file shrinks under the server
        });
        res.on('data', (b) => (got += b.length));
        res.on('error', () => {});            // the reset itself: what counts is how the response closes
        res.on('close', () => resolve({ got, complete: res.complete, length: Number(res.headers['content-length']) }));
      }).on('error', reject);
    });
    assert.equal(outcome.length, SIZE, 'the answer promised the whole file');
    assert.equal(outcome.complete, false, 'the answer is cut, not passed off as whole');
    assert.ok(outcome.got < SIZE, `got ${outcome.got} of ${SIZE} bytes`);
    assert.deepEqual(served, [{ finished: false }], 'the server destroyed the answer, it did not end it short');
  } finally {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

test('the service worker of streamed exports is served from the root as JavaScript (scope: the whole viewer)', async () => {
  const response = await get(childPort, '/sw.js');
  assert.equal(statusOf(response), 200);
  assert.match(headersOf(response)['content-type'], /^text\/javascript/);
  assertSecurityHeaders(headersOf(response), 'sw.js');
});
