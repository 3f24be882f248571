// A small static server for the viewer: web/ at the root and the package's js/ at /js/ (but
// js/server/, this server and its pass worker, which run in Node only). It
// serves files only (no uploads, no directory listings) and sends a Content-Security-Policy
// that keeps every byte of a checkpoint on the machine. web/sw.js (the service worker that
// answers streamed exports' downloads) is served from the root, so its scope is the whole viewer.
//
// It answers only to its own Host (127.0.0.1:PORT or localhost:PORT), so a page elsewhere
// cannot reach it by DNS rebinding; no request target can stop it (every request is handled
// inside a try); every answer, errors included, carries the same security headers.
//
// `ckptscope view FILE [FILE2 ...] [NAMES.json]` hands it files, each opened once when the server
// starts (that open file is what is served, whatever later happens to its path), and the slot
// names it read from NAMES.json (served as that JSON, from memory); each is served only at
// /files/{token}/{name}, token 128 random bits (hex) per file per run, name the file's
// basename (encodeURIComponent), by GET or HEAD with single byte ranges, streamed from disk.
// The page URL that opens them is
//     http://127.0.0.1:PORT/#open=<encodeURIComponent('/files/TOKEN/NAME')>[&open=...]
// one `open=` per file, in order, joined by `&` (see viewerUrl below); the viewer reads
// location.hash and fetches those paths by range requests.
//
// With `passes` (`ckptscope view` sets it) the server also runs the long passes over those files
// on this machine, at the CLI's rate, for the page to show: GET /passes/stats/{token}/{name} and
// /passes/health/{token}/{name}[?state=/files/{token}/{name}][&lr=X][&band=LO,HI] answer a
// stream of frames (js/pass-frames.js), paced by the page; a page that goes away ends the pass.
// Only the files handed in, only these two passes, nothing written.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { pipeline, Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { jsonFrame } from '../pass-frames.js';
import { decimalNumber } from '../options.js';
import { shown } from '../suggest.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WEB = path.join(ROOT, 'web');
const JS = path.join(ROOT, 'js');
const SERVER = path.join(JS, 'server');

export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// On every answer, 200 to 500: what the page may load, no sniffing, no referrer, no embedding
// of the page or its bytes by another site.
const SECURITY_HEADERS = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
  // Cross-origin isolation: the page and its worker share a counter (a SharedArrayBuffer) that
  // paces a streamed export to the speed of the disk (web/parts/save-stream.js).
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

function resolve(urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;   // never a name we serve
  const [base, rel] = decoded.startsWith('/js/') ? [JS, decoded.slice(4)] : [WEB, decoded === '/' ? 'index.html' : decoded.slice(1)];
  const file = path.resolve(base, rel);
  if (file !== base && !file.startsWith(base + path.sep)) return null;   // no escaping the folder
  if (base === JS && (file === SERVER || file.startsWith(SERVER + path.sep))) return null;   // Node's, not the page's
  return file;
}

function send(res, status, headers, body) {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

const sendText = (res, status, text, headers = {}) =>
  send(res, status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers }, `${text}\n`);

/** The path of an origin-form request target (`/a/b?q` -> `/a/b`); null for `*` or an absolute URL. */
function targetPath(target) {
  if (typeof target !== 'string' || !target.startsWith('/')) return null;
  return target.split(/[?#]/, 1)[0];
}

/**
 * The one range of a `Range` header within a file of `size` bytes: `bytes=a-b`, `bytes=a-` or
 * `bytes=-n` -> {start, end} (inclusive). null for anything else, several ranges included: the
 * caller answers 416 rather than send what may be a 20 GB file whole.
 */
export function parseRange(header, size) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(String(header).trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start;
  let end;
  if (m[1] === '') {                       // the last n bytes
    const n = Number(m[2]);
    if (n === 0) return null;
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Number(m[2]);
    if (end < start) return null;
    end = Math.min(end, size - 1);
  }
  if (start >= size || end < start) return null;
  return { start, end };
}

/** Files for /files/: token -> {path, name, url, fd}. Each file is opened once, here, and
 *  that open file is served: a path renamed over or a symlink re-pointed later changes
 *  nothing (the path is never resolved again). The descriptors close with the server. */
function fileRoutes(files) {
  const routes = new Map();
  try {
    for (const file of files) {
      const token = crypto.randomBytes(16).toString('hex');
      const from = typeof file === 'string' ? file : file.path;
      // a folder's file is served under its path in the folder (checkpoint-10/optimizer.pt, one
      // URL segment): the page reads a Trainer's folders from these names
      const name = typeof file !== 'string' && file.as ? file.as : path.basename(from);
      const url = `/files/${token}/${encodeURIComponent(name)}`;
      // slot names read by the caller: their JSON, from memory (no descriptor: no pass runs on it)
      if (typeof file !== 'string' && file.names) routes.set(token, { path: from, name, url, fd: null, body: Buffer.from(JSON.stringify(file.names)) });
      else routes.set(token, { path: from, name, url, fd: fs.openSync(from, 'r') });
    }
  } catch (err) {
    closeRoutes(routes);
    throw err;
  }
  return routes;
}

// A read stream that is destroyed (a client that goes away mid-answer: the viewer's Cancel)
// closes its fd even with autoClose false; the file's one descriptor serves every request and
// closes with the server, so a stream's close leaves it open.
const KEEP_OPEN = { open: fs.open, read: fs.read, close: (fd, done) => done(null) };

function closeRoutes(routes) {
  for (const route of routes.values()) {
    if (route.fd === null) continue;
    fs.closeSync(route.fd);
    route.fd = null;
  }
}

/** Passes `length` bytes through; a source that ends short (the file was truncated while it
 *  was served) is an error, so the pipeline destroys the socket: the client sees the answer
 *  cut at once instead of waiting for bytes that will never come. */
function exactly(length) {
  let seen = 0;
  return new Transform({
    transform(chunk, _, done) {
      seen += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      done(seen < length ? new Error(`the file ended ${length - seen} bytes early`) : null);
    },
  });
}

/** The route of a /files/ path: exactly /files/{token}/{name} of a file handed in, or null. */
function lookupFile(urlPath, routes) {
  const parts = urlPath.split('/');
  if (parts.length !== 4 || parts[0] !== '' || parts[1] !== 'files') return null;
  const route = routes.get(parts[2]);
  if (!route) return null;
  let name;
  try {
    name = decodeURIComponent(parts[3]);
  } catch {
    return null;
  }
  return name === route.name ? route : null;   // the name as handed in, nothing derived from the URL
}

function sendFile(req, res, route) {
  let st;
  try {
    st = route.body ? { isFile: () => true, size: route.body.length } : route.fd === null ? null : fs.fstatSync(route.fd);
  } catch {
    st = null;
  }
  if (!st?.isFile()) {
    sendText(res, 404, 'not found');
    return;
  }
  const size = st.size;
  const headers = { 'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes', 'Cache-Control': 'no-store' };
  let start = 0;
  let end = size - 1;
  let status = 200;
  if (req.headers.range !== undefined) {
    const range = parseRange(req.headers.range, size);
    if (!range) {
      sendText(res, 416, 'range not satisfiable', { 'Accept-Ranges': 'bytes', 'Content-Range': `bytes */${size}` });
      return;
    }
    ({ start, end } = range);
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  }
  const length = size === 0 ? 0 : end - start + 1;
  res.writeHead(status, { ...SECURITY_HEADERS, ...headers, 'Content-Length': length });
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  // Streamed from the file opened at start (positional reads: answers may overlap), only the
  // asked bytes, whatever the file's size; cut short if the file shrinks meanwhile. In 1 MiB
  // reads: Chromium took a 16 MiB range at 5-8 MiB/s in 64 KiB pieces, 15-19 in 1 MiB ones.
  if (route.body) {
    res.end(route.body.subarray(start, end + 1));
    return;
  }
  pipeline(fs.createReadStream(null, { fd: route.fd, start, end, autoClose: false, fs: KEEP_OPEN, highWaterMark: 1 << 20 }), exactly(length), res, () => {});
}

function sendStatic(req, res, urlPath) {
  const file = resolve(urlPath);
  const type = file && TYPES[path.extname(file)];
  let st = null;
  try {
    if (type) st = fs.statSync(file);
  } catch {
    st = null;
  }
  if (!st?.isFile()) {
    sendText(res, 404, 'not found');
    return;
  }
  res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': st.size });
  if (req.method === 'HEAD') res.end();
  else pipeline(fs.createReadStream(file), res, () => {});
}

/** The numbers of a pass's query (`band`: two, comma-separated), read by the CLI's rule for its
 *  options' numbers (js/options.js decimalNumber): {numbers} (null for one absent), or {refused}:
 *  the text of the first that is not a number. Their ranges are the pass's to check (the API's
 *  words, as for the CLI). */
function queryNumbers(query) {
  const numbers = {};
  for (const key of ['size', 'items', 'stateSize', 'lr', 'band']) {
    const text = query.get(key);
    if (text === null) {
      numbers[key] = null;
      continue;
    }
    const parts = key === 'band' ? text.split(',') : [text];
    const values = parts.map(decimalNumber);
    const bad = parts.findIndex((_, k) => Number.isNaN(values[k]));
    if (bad >= 0) return { refused: `${key} must be ${key === 'band' ? 'numbers LO,HI' : 'a number'} (decimal digits, a point, an exponent), got ${shown(parts[bad])}` };
    numbers[key] = key === 'band' ? values : values[0];
  }
  return { numbers };
}

// Passes at once, all pages together (serve's maxPasses): each takes a thread (and its workers)
// and the files' pages in the cache; a page runs one scan and one health pass at most.
const MAX_PASSES = 4;

// A pass whose page has not read what was sent for this long (its socket has not drained) is
// ended and its slot freed (serve's stallSeconds): a client that never reads holds no pass.
const STALL_SECONDS = 60;

/** Run a pass over served files in a worker of its own and stream its frames (js/server/pass-worker.js
 *  says what they hold), paced by the page; the pass ends when the page goes away. 404 for
 *  anything but a pass over files handed in. */
function sendPass(req, res, urlPath, routes, running) {
  const [, , kind, ...rest] = urlPath.split('/');
  const route = (kind === 'stats' || kind === 'health') && lookupFile(`/files/${rest.join('/')}`, routes);
  const query = new URL(req.url, 'http://x').searchParams;
  const state = kind === 'health' && query.has('state') ? lookupFile(targetPath(query.get('state')) ?? '', routes) : null;
  if (!route || route.fd === null || (query.has('state') && (!state || state.fd === null))) {
    sendText(res, 404, 'not found');
    return;
  }
  const { numbers, refused } = queryNumbers(query);
  if (refused) {
    sendText(res, 400, refused);
    return;
  }
  if (running.workers.size >= running.max) {
    sendText(res, 503, `${running.max} passes run already: try again when one has ended`, { 'Retry-After': '1' });
    return;
  }
  const paused = new SharedArrayBuffer(4);
  const job = { kind, paused, fd: route.fd, size: numbers.size, items: numbers.items,
    stateFd: state?.fd ?? null, stateSize: numbers.stateSize, lr: numbers.lr, ratioBand: numbers.band };
  res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'application/octet-stream', 'Cache-Control': 'no-store' });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  // none of the server's Node options (a worker refuses V8's); the file descriptors are shared
  const worker = new Worker(new URL('./pass-worker.js', import.meta.url), { workerData: job, execArgv: [] });
  running.workers.add(worker);
  // ended: 'done', 'error', 'cancelled' (the page went away) or 'stalled' (it read nothing for
  // stallSeconds)
  const record = { kind, ended: null };
  running.log.push(record);
  if (running.log.length > 16) running.log.shift();
  const flag = new Int32Array(paused);
  let stall = null;   // the timer of a page that is behind
  const resume = () => {
    clearTimeout(stall);
    stall = null;
    Atomics.store(flag, 0, 0);
    Atomics.notify(flag, 0);
  };
  const end = (how, error = null) => {
    if (record.ended) return;
    record.ended = how;
    clearTimeout(stall);
    if (how === 'stalled') res.destroy();   // what is queued would never drain
    else {
      if (error) res.write(jsonFrame({ error }));
      res.end();
    }
    worker.terminate();
    running.onEnd({ ...record });
  };
  res.on('drain', resume);   // one listener for the stream, however many writes wait
  worker.on('message', ({ frame, last }) => {
    if (record.ended) return;
    if (!res.write(frame) && !last && stall === null) {   // the page is behind: the pass waits until it has read this
      Atomics.store(flag, 0, 1);
      stall = setTimeout(() => end('stalled'), running.stallMs);
    }
    if (last) end(last);
  });
  worker.on('error', (err) => end('error', { name: err.name, message: err.message, code: err.code ?? null }));
  worker.on('exit', (code) => {
    running.workers.delete(worker);
    running.onIdle();
    end('error', { name: 'Error', message: `the pass stopped before its result (exit status ${code})` });
  });
  res.on('close', () => {
    resume();
    end('cancelled');   // the page went away (its Cancel): the pass stops
  });
}


function handler({ allowedHosts, routes, quiet, passes, running }) {
  const handle = (req, res) => {
    const host = String(req.headers.host ?? '').toLowerCase();
    if (!allowedHosts.has(host)) {
      const [a, b] = allowedHosts;
      sendText(res, 421, `this server answers only to ${a} and ${b}`);
      return;
    }
    const urlPath = targetPath(req.url);
    if (urlPath === null) {
      sendText(res, 400, 'bad request');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
      return;
    }
    if (urlPath.startsWith('/files/')) {
      const route = lookupFile(urlPath, routes);
      if (route) sendFile(req, res, route);
      else sendText(res, 404, 'not found');
      return;
    }
    if (urlPath.startsWith('/passes/')) {
      if (passes) sendPass(req, res, urlPath, routes, running);
      else sendText(res, 404, 'not found');
      return;
    }
    sendStatic(req, res, urlPath);
  };
  // Last resort: whatever a request does, the server keeps serving the next one.
  return (req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      if (!quiet) process.stderr.write(`ckptscope serve: ${String(err?.message ?? err).replace(/[^\x20-\x7e]/g, '?')}\n`);
      if (res.headersSent) res.destroy();
      else sendText(res, 500, 'internal error');
    }
  };
}

/** A request the HTTP parser rejects: 400 with the same headers, then the connection closes. */
function onClientError(err, socket) {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const headers = Object.entries({ ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' })
    .map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.end(`HTTP/1.1 400 Bad Request\r\n${headers}Content-Length: 12\r\n\r\nbad request\n`);
}

/** The page URL that opens `fileUrls` (paths /files/TOKEN/NAME) in the viewer. */
export function viewerUrl(origin, fileUrls) {
  const hash = fileUrls.map((u) => `open=${encodeURIComponent(u)}`).join('&');
  return `${origin}/${hash ? `#${hash}` : ''}`;
}

/**
 * Serve the viewer on host:port (0: any free port), and `files` (paths, {path, names}: slot
 * names already read from path, served as their JSON, or {path, as}: a folder's file served
 * under its path in the folder, e.g. checkpoint-10/optimizer.pt) at their tokened URLs. Resolves with the
 * http.Server, which also tells:
 *   server.origin     'http://127.0.0.1:PORT'
 *   server.files      [{path, name, url: '/files/TOKEN/NAME'}], in the order given
 *   server.viewerUrl  the page URL that opens them (the origin's root when there are none)
 *   server.passesRunning  how many passes run for pages now (`passes`)
 *   server.passLog    the last 16 passes, [{kind, ended: null | 'done' | 'error' | 'cancelled' | 'stalled'}]
 * and emits 'passEnded' ({kind, ended}) as each pass ends.
 * `passes`: also run statistics and health over those files here for the page (/passes/), at
 * most `maxPasses` at once; a pass whose page has read nothing of it for `stallSeconds` (its
 * socket has not drained) is ended, its answer cut.
 */
export function serve({ port = 8080, host = '127.0.0.1', quiet = false, files = [], passes = false, maxPasses = MAX_PASSES, stallSeconds = STALL_SECONDS } = {}) {
  if (!fs.existsSync(path.join(JS, 'ckptscope.wasm'))) {
    throw Object.assign(new Error('js/ckptscope.wasm is missing: run `npm run build` (npm start does it for you)'), { code: 'CKPT_NO_WASM' });
  }
  const routes = fileRoutes(files);
  const allowedHosts = new Set();   // filled once the port is known
  // the passes' threads (until they exit), the last 16 passes
  const running = { workers: new Set(), log: [], onIdle: () => {}, max: maxPasses, stallMs: stallSeconds * 1000, onEnd: () => {} };
  const server = http.createServer(handler({ allowedHosts, routes, quiet, passes, running }));
  running.onEnd = (record) => server.emit('passEnded', record);
  Object.defineProperty(server, 'passesRunning', { get: () => running.workers.size });
  Object.defineProperty(server, 'passLog', { get: () => running.log.map((r) => ({ ...r })) });
  server.on('clientError', onClientError);
  // The files close once no pass thread can read them any more (a descriptor closed under a
  // thread could be reused by another file)
  server.on('close', () => {
    running.onIdle = () => running.workers.size || closeRoutes(routes);
    for (const w of running.workers) w.terminate();
    running.onIdle();
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', (err) => {
      closeRoutes(routes);
      reject(err);
    });
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      const hostInUrl = host.includes(':') ? `[${host}]` : host;
      for (const h of [`127.0.0.1:${actual}`, `localhost:${actual}`, `${hostInUrl}:${actual}`]) allowedHosts.add(h.toLowerCase());
      server.origin = `http://${hostInUrl}:${actual}`;
      server.files = [...routes.values()].map(({ path: p, name, url }) => ({ path: p, name, url }));
      server.viewerUrl = viewerUrl(server.origin, server.files.map((f) => f.url));
      if (!quiet) console.log(`ckptscope viewer: ${server.origin}/  (Ctrl-C stops it)`);
      resolvePromise(server);
    });
  });
}
