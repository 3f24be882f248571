// ckptscope serve [--port N] and ckptscope view FILE [FILE2 ...] [NAMES.json] [--port N]
// [--no-open]: the viewer's server on 127.0.0.1 (js/server/server.js), and the port it listens
// on: the one asked for (--port, else PORT), else 8080 (view: the first free one from 8080 up);
// a port that cannot be had is said with a free one near it. Both keep running until Ctrl-C.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
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
  const files = [];
  for (const p of positional) {
    if (isFolder(p)) {
      files.push(...await folderItems(p));
      continue;
    }
    regularFile(p);
    // a JSON array is the slots' names, read here (capped, checked) and served as read; a layout
    // JSON is served as a file
    files.push(/\.json$/i.test(p) && Array.isArray(readJsonFile(p, 'names')) ? { path: p, names: readNamesFile(p) } : p);
  }
  if (files.filter((f) => typeof f !== 'string' && f.names).length > 1) throw new UsageError('view takes one NAMES.json: the slots have one name each', 'view');
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

const isFolder = (p) => p !== STDIN && fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;

/** The files of a folder that the page reads, each served under its path in the folder (the
 *  page reads the folder from these names, by the core's rules): a DeepSpeed folder's files the
 *  core reads as one checkpoint (its plan's members: `latest`, the tag folder's files); a Trainer's checkpoint-N/
 *  folder's optimizer, model and training_args.bin (the optimizer's kind); an output folder's
 *  checkpoint-N folders', with their trainer_state.json (the logged learning rates). */
async function folderItems(dir) {
  const { deepspeedPlan } = await import('../folder-source.js');
  const plan = await deepspeedPlan(dir);
  const base = path.basename(path.resolve(dir));
  if (plan?.members) return plan.members.map((m) => ({ path: path.join(dir, m.name), as: `${base}/${m.name}` }));
  const { folderFiles, isOutputFolder, FolderError, notAPair } = await import('../trainer-run.js');
  const { trainerFolder, checkpointFolders } = await import('../trainer-folder.js');
  const serveAs = (folderName, file) => (file === null ? [] : [{ path: file, as: `${folderName}/${path.basename(file)}` }]);
  const refuse = (err) => {
    throw err instanceof FolderError ? new Failure(err.message) : err;
  };
  if (await isOutputFolder(dir)) {
    const items = [];
    for (const folder of await checkpointFolders(dir)) {
      const f = await folderFiles(folder.path).catch(refuse);
      if (!f) throw new Failure(await notAPair(folder.path));
      const args = (await trainerFolder(folder.path)).trainingArgs;
      items.push(...[f.optimizer, f.model, args, f.trainerState].flatMap((file) => serveAs(folder.name, file)));
    }
    return items;
  }
  const f = await folderFiles(dir).catch(refuse);
  if (!f) throw new FileError(`${dir} is a directory, not a checkpoint file, a Trainer checkpoint-N folder or an output folder of them`);
  const args = (await trainerFolder(dir)).trainingArgs;
  return [f.optimizer, f.model, args].flatMap((file) => serveAs(path.basename(path.resolve(dir)), file));
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
