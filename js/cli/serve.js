// ckptscope serve [--port N] and ckptscope view FILE [FILE2 ...] [NAMES.json] [--port N]
// [--no-open]: the viewer's server on 127.0.0.1 (js/server/server.js), and the port it listens
// on: the one asked for (--port, else PORT), else 8080 (view: the first free one from 8080 up);
// a port that cannot be had is said with a free one near it. Both keep running until Ctrl-C.

import fs from 'node:fs';
import net from 'node:net';
import { say } from '../terminal.js';
import { FileError, STDIN, checkInput, readMessage, readJsonFile, readNamesFile } from '../user-files.js';
import { UsageError, parseArgs, meant } from './args.js';
import { Failure } from './inputs.js';
import { servingLine, openingLine } from './text.js';

const FIRST_PORT = 8080;
const PORTS_TO_TRY = 100;

export async function cmdServe(argv) {
  const { positional, seen } = parseArgs('serve', argv);
  if (positional.length) throw new UsageError(`serve takes no files${positional.length <= 2 ? meant('view', ...positional) : ''}`, 'serve');
  const port = askedPort(seen) ?? FIRST_PORT;
  const { serve } = await import('../server/server.js');
  const server = await listening(() => serve({ port, quiet: true }), port, (next) => `try --port ${next} or PORT=${next} npm start`);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, servingLine(server.origin));
  return null;   // keeps running
}

export async function cmdView(argv) {
  const { positional, seen } = parseArgs('view', argv);
  if (positional.length < 1) throw new UsageError('view takes FILE [FILE2 ...] [NAMES.json]', 'view');
  positional.forEach(regularFile);
  // a JSON array is the slots' names, read here (capped, checked) and served as read; a layout
  // JSON is served as a file
  const files = positional.map((p) => (/\.json$/i.test(p) && Array.isArray(readJsonFile(p, 'names')) ? { path: p, names: readNamesFile(p) } : p));
  if (files.filter((f) => typeof f !== 'string').length > 1) throw new UsageError('view takes one NAMES.json: the slots have one name each', 'view');
  const asked = askedPort(seen);
  const { serve } = await import('../server/server.js');
  const start = (port) => serve({ port, quiet: true, files, passes: true });
  const advice = (next) => `try --port ${next}`;
  const server = asked !== null
    ? await listening(() => start(asked), asked, advice)
    : await listening(() => firstFreePort(start), FIRST_PORT, advice);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, server.viewerUrl);
  const opened = !seen['--no-open'] && (await import('../open-browser.js')).openBrowser(server.viewerUrl);
  say(process.stderr, openingLine(opened));
  return null;   // keeps running
}

/** What view can serve: an existing regular file (ranges need a size and positional reads). */
function regularFile(file) {
  if (file === STDIN) throw new UsageError('view needs files: - (standard input) cannot be served by byte ranges');
  let st;
  try {
    st = fs.statSync(file);   // stat, not open: opening a FIFO would wait for a writer
  } catch (err) {
    throw new FileError(readMessage(err, file, 'checkpoint'));
  }
  if (st.isDirectory()) throw new FileError(readMessage({ code: 'EISDIR' }, file, 'checkpoint'));
  if (!st.isFile()) throw new FileError(`${file} is not a regular file: view serves a file by byte ranges`);
  checkInput(file, 'checkpoint');   // readable
}

/** The port asked for by --port, else by PORT (empty: unset); null when none was. */
function askedPort(seen) {
  const [given, from] = seen['--port'] !== undefined ? [seen['--port'], '--port'] : [process.env.PORT || undefined, 'PORT'];
  if (given === undefined) return null;
  if (!/^\d{1,5}$/.test(given) || Number(given) > 65535) throw new UsageError(`${from} must be a port number (0 to 65535), got ${given}`);
  return Number(given);
}

// ---- ports ----------------------------------------------------------------------------------

/** The first port from 8080 up that `start(port)` can listen on. */
async function firstFreePort(start) {
  for (let port = FIRST_PORT; port < FIRST_PORT + PORTS_TO_TRY; port++) {
    try {
      return await start(port);
    } catch (err) {
      if (err?.code !== 'EADDRINUSE') throw err;
    }
  }
  throw new Failure(`ports ${FIRST_PORT} to ${FIRST_PORT + PORTS_TO_TRY - 1} are all in use: choose one with --port N`);
}

/** Can 127.0.0.1:port be listened on right now? */
function isFree(port) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port near `port` that is free now (advice only: it may be taken before it is used). */
async function freePortNear(port) {
  for (let next = port + 1; next <= Math.min(65535, port + PORTS_TO_TRY); next++) if (await isFree(next)) return next;
  for (let next = port - 1; next >= Math.max(1024, port - PORTS_TO_TRY); next--) if (await isFree(next)) return next;
  return port < 65535 ? port + 1 : port - 1;
}

/** Start a server; a port that cannot be had becomes advice, not a stack. */
async function listening(start, port, advice) {
  try {
    return await start();
  } catch (err) {
    if (err?.code === 'EADDRINUSE') throw new Failure(`port ${port} is in use: ${advice(await freePortNear(port))}`);
    if (err?.code === 'EACCES') throw new Failure(`port ${port} needs privileges: choose one above 1023, e.g. --port 8080`);
    if (err?.code === 'CKPT_NO_WASM') throw new Failure(err.message);
    throw err;
  }
}

/** Ctrl-C (SIGINT) and SIGTERM: close the server and its open connections, exit status 0. */
function stopOnSignals(server) {
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();   // keep-alive connections would hold close() open
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
