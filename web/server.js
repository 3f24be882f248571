// A small static server for the viewer: web/ at the root and the package's js/ at /js/. It
// serves files only (no uploads, no directory listings) and sends a Content-Security-Policy
// that keeps every byte of a checkpoint on the machine.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const WEB = path.join(ROOT, 'web');
const JS = path.join(ROOT, 'js');

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
  const [base, rel] = decoded.startsWith('/js/') ? [JS, decoded.slice(4)] : [WEB, decoded === '/' ? 'index.html' : decoded.slice(1)];
  const file = path.resolve(base, rel);
  if (file !== base && !file.startsWith(base + path.sep)) return null;   // no escaping the folder
  if (base === WEB && path.basename(file) === 'server.js') return null;
  return file;
}

function handle(req, res) {
  const url = new URL(req.url, 'http://localhost');
  const file = resolve(url.pathname);
  const type = file && TYPES[path.extname(file)];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    return;
  }
  if (!file || !type || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  res.writeHead(200, {
    'Content-Type': type,
    'Content-Length': fs.statSync(file).size,
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-cache',
    'Referrer-Policy': 'no-referrer',
  });
  if (req.method === 'HEAD') res.end();
  else fs.createReadStream(file).pipe(res);
}

/** Serve the viewer on 127.0.0.1:port (0: any free port). Resolves with the server. */
export function serve({ port = 8080, host = '127.0.0.1', quiet = false } = {}) {
  if (!fs.existsSync(path.join(JS, 'ckptscope.wasm'))) {
    throw Object.assign(new Error('js/ckptscope.wasm is missing: run `npm run build` (npm start does it for you)'), { code: 'CKPT_NO_WASM' });
  }
  const server = http.createServer(handle);
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      if (!quiet) console.log(`ckptscope viewer: http://${host}:${actual}/  (Ctrl-C stops it)`);
      resolvePromise(server);
    });
  });
}
