// Where a streamed export goes, chunk by chunk: a file the user picks (the File System Access
// API, where the browser has it) or a download answered by the service worker (web/sw.js) from a
// stream. Either way the bytes pass through here once and are never held whole: the parsing
// worker makes a chunk only when one it made before has been taken (credits in a shared counter).

const CREDITS = 4;   // chunks in flight at most, between the worker and the disk

/** Whether exports can stream: a shared counter needs a cross-origin isolated page (the viewer's
 *  server sends COOP and COEP), a download stream a service worker. */
export function canStream() {
  return globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function' &&
    (typeof globalThis.showSaveFilePicker === 'function' || 'serviceWorker' in navigator);
}

/** A file the user picks: {write(chunk), close(), abort()}; null if the user declined. Must be
 *  called from the click (it needs the user's gesture). */
async function pickedFile(name) {
  let handle;
  try {
    handle = await globalThis.showSaveFilePicker({ suggestedName: name });
  } catch (err) {
    if (err.name === 'AbortError') return null;
    throw err;
  }
  const out = await handle.createWritable();
  return { write: (chunk) => out.write(chunk), close: () => out.close(), abort: () => out.abort().catch(() => {}), via: 'file' };
}

const START_MS = 30000;   // for the service worker to answer, and for the download to begin
// A browser stops a service worker with no event for a while (Firefox after 30 s; the messages of
// the download's port are not the worker's events): while a download runs, the page messages the
// worker itself this often (web/sw.js).
const KEEP_ALIVE_MS = 10000;

/** `promise`, or a rejection with `text` after `ms`: a step that never answers fails, said. */
function within(promise, ms, text) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(text)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

let registration = null;

/** The viewer's service worker, active (registered on the first export). */
async function serviceWorker() {
  registration ??= navigator.serviceWorker.register(new URL('../sw.js', import.meta.url), { scope: new URL('../', import.meta.url).pathname })
    .then(() => navigator.serviceWorker.ready)
    .catch((err) => {
      registration = null;   // the next export tries again
      throw err;
    });
  const { active } = await within(registration, START_MS, 'the viewer\'s service worker did not start: reload the page and export again');
  return active;
}

/** A download answered by the service worker: {write(chunk), close(), abort(), onCancel}.
 *  Each step waits for the worker's word: the frame asks for the download only once the worker
 *  said it holds this download's port ({ready}); a message to the worker and the frame's request
 *  reach it by different routes, in either order, and a request first got "no such download" and
 *  no download at all. Resolves once the download began ({started}), else fails with why. */
async function serviceWorkerDownload(name) {
  const worker = await serviceWorker();
  const { port1, port2 } = new MessageChannel();
  const id = crypto.randomUUID();
  const acks = [];   // resolvers of the chunks sent, in order
  const target = {
    via: 'download',
    onCancel: null,
    write(chunk) {
      port1.postMessage({ chunk }, [chunk.buffer]);
      return new Promise((resolve) => acks.push(resolve));
    },
    close() {
      quiet();
      port1.postMessage({ done: true });
    },
    abort(text = 'cancelled') {
      quiet();
      port1.postMessage({ error: text });
    },
  };
  let alive = null;
  const quiet = () => clearInterval(alive);
  let ready, started;
  const held = new Promise((resolve) => (ready = resolve));
  const began = new Promise((resolve) => (started = resolve));
  port1.onmessage = ({ data }) => {
    if (data.ready) ready();
    else if (data.started) started();
    else if (data.ack !== undefined) acks.shift()?.();
    else if (data.cancel) target.onCancel?.();
  };
  worker.postMessage({ type: 'download', id, name }, [port2]);
  const frame = document.createElement('iframe');
  frame.hidden = true;
  try {
    await within(held, START_MS, 'the viewer\'s service worker did not answer: reload the page and export again');
    frame.src = new URL(`../download/${id}/${encodeURIComponent(name)}`, import.meta.url).href;
    document.body.append(frame);
    await within(began, START_MS, 'the download did not begin: reload the page and export again');
    alive = setInterval(() => worker.postMessage({ type: 'keep-alive' }), KEEP_ALIVE_MS);
  } catch (err) {
    frame.remove();
    port1.close();
    throw err;
  }
  setTimeout(() => frame.remove(), 60000);   // the download goes on without the frame once it began
  return target;
}

/**
 * Stream one export into a file the user picks or a download named `name`. `run(port, credits)`
 * starts the export in the worker (which posts {chunk} | {done} | {error} on `port` and waits on
 * `credits`) and resolves with its result. Resolves {result, bytes, via}; null if the user
 * declined the file picker. cancel() (given through onStart at once: the service worker's
 * answer and the download's start can take up to START_MS) stops it and the download.
 */
export async function streamTo(name, run, { onStart } = {}) {
  let cancelled = false, stopWorker = null, cancelStart;
  const startCancelled = new Promise((_, reject) => (cancelStart = reject));
  startCancelled.catch(() => {});
  const cancel = () => {
    cancelled = true;
    cancelStart(new DOMException('cancelled', 'AbortError'));
    stopWorker?.();
  };
  onStart?.(cancel);
  const pending = typeof globalThis.showSaveFilePicker === 'function' ? pickedFile(name) : serviceWorkerDownload(name);
  let target;
  try {
    target = await Promise.race([pending, startCancelled]);
  } catch (err) {
    // cancelled while waiting: a download that begins after all is ended at once
    if (cancelled) pending.then((t) => t?.abort('cancelled'), () => {});
    throw err;
  }
  if (!target) return null;
  const credits = new Int32Array(new SharedArrayBuffer(4));
  credits[0] = CREDITS;
  const give = () => {
    if (Atomics.load(credits, 0) < 0) return;
    Atomics.add(credits, 0, 1);
    Atomics.notify(credits, 0);
  };
  const stop = () => {   // the worker's next chunk throws; it is waiting or will be
    Atomics.store(credits, 0, -1);
    Atomics.notify(credits, 0);
  };
  stopWorker = stop;
  target.onCancel = cancel;
  const { port1, port2 } = new MessageChannel();
  let bytes = 0;
  let failure = null;
  const finished = new Promise((resolve) => {
    port1.onmessage = ({ data }) => {
      if (data.chunk) {
        bytes += data.chunk.length;
        target.write(data.chunk).then(give, (err) => {
          failure ??= err;   // the disk refused: stop the worker
          stop();
        });
      } else resolve(data);
    };
  });
  let result;
  try {
    result = await run(port2, credits.buffer);
  } catch (err) {
    target.abort(cancelled ? 'cancelled' : err.message);
    port1.close();
    throw cancelled ? new DOMException('cancelled', 'AbortError') : (failure ?? err);
  }
  await finished;   // the last chunk was posted before {done}: every write is queued
  await target.close();
  port1.close();
  return { result, bytes, via: target.via };
}
