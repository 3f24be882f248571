// The viewer's worker: every byte of a checkpoint is read and parsed here, through the package,
// so the page never blocks. It keeps the open Checkpoint handles between requests: a file is
// parsed once when it opens; statistics, bytes for the hex view, tensors, checks and the pair
// verdict all use the open handle. Opening another file closes the previous ones.
// Protocol: rpc.js ({id, type, args} -> {id, result | error | progress}).
import { open, check, pair, diff, health, exportTo, exportTensors, exportNpy, HttpSource, BlobSource, Feed, readJsonSource, jsonKind, namesOf, readerNames, convertTo, convertToTorchTo, trainerFolderRoles } from '/js/index.js';
import { run, runFiles, attachPacked, itemCount, itemStatsPacked, Frames, PACKED_FRAME, unpackFrame } from '/js/index.js';
import { serve, transfer } from './rpc.js';
import { makeExamples } from './examples.js';

/** A File, read by the package's BlobSource (a page at least, pages kept), counting bytes read
 *  (the viewer shows it: payloads are skipped until statistics are asked for). */
class FileBytes extends BlobSource {
  get name() {
    return this.blob.name;   // *.json is JSON
  }

  io() {
    return { via: 'file', bytesRead: this.bytesRead };
  }
}

/** A URL of this origin (`ckptscope view` serves files at /files/TOKEN/NAME), read by the
 *  package's HTTP source: range requests, counted. */
class UrlBytes {
  constructor(path, feed = null) {
    const url = new URL(path, self.location.href);
    if (url.origin !== self.location.origin) throw new TypeError(`${path}: only files served by this viewer's own server are opened from the address`);
    this.http = HttpSource.open(url.href, { feed });
    this.path = url.pathname;   // /files/TOKEN/NAME: its passes on the server are /passes/KIND/TOKEN/NAME
    this.size = this.http.size;
    this.name = decodeURIComponent(url.pathname.split('/').pop() || url.pathname);   // *.json is JSON
  }
  read(offset, dest) {
    return this.http.read(offset, dest);
  }
  io() {
    return { via: 'http', bytesTransferred: this.http.bytesTransferred, requests: this.http.requests, reads: this.http.reads };
  }
  close() {}
}

/** A File, or a served path read through the feed where the page is cross-origin isolated
 *  (js/server/server.js's headers), else by synchronous requests (js/feed.js). */
async function sourceOf(source) {
  if (typeof source === 'string') return new UrlBytes(source, await Feed.start());
  if (source instanceof Blob) return new FileBytes(source);
  throw new TypeError('a file to open must be a File or a path of this viewer\'s server');
}

/**
 * A pass that `ckptscope view` runs on its machine over files it serves (js/server/server.js
 * /passes/, js/server/pass-worker.js), at the CLI's rate: progress to `tick`, each packed-statistics
 * frame to `onPacked(from, list)`. Resolves with the last message ({done, result?} or
 * {unsplit}), or null when the server runs no passes (the viewer of `serve`, another server) or
 * runs as many as it will (503): the page then reads the file itself. A failure ends the request,
 * so the pass on the server; so does Cancel (the worker ends).
 */
async function serverPass(url, tick, onPacked = () => {}) {
  const res = await fetch(url, { cache: 'no-store' });
  if (res.status === 404 || res.status === 503) return null;
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status}: ${(await res.text()).trim()}`);
  const reader = res.body.getReader();
  const frames = new Frames();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      frames.push(value);
      for (let f; (f = frames.take());) {
        if (f.kind === PACKED_FRAME) {
          const { from, list } = unpackFrame(f.payload);
          onPacked(from, list);
          continue;
        }
        const msg = JSON.parse(decoder.decode(f.payload));
        if (msg.progress) tick(msg.progress);
        else if (msg.error) throw Object.assign(new Error(msg.error.message), msg.error);
        else if (msg.done || msg.unsplit) return msg;
      }
    }
  } finally {
    reader.cancel().catch(() => {});   // a failure here: the server's pass stops
  }
  throw new Error(`${url}: the server's pass ended without its result`);
}

/** The server's address of pass `kind` over the served file of `src` (with what the page knows of
 *  it, for the server to check it is the same file), or null for a dropped File. */
function passUrl(kind, src, query) {
  if (!(src instanceof UrlBytes)) return null;
  query.set('size', String(src.size));
  return `/passes/${kind}${src.path.slice('/files'.length)}?${query}`;
}

/** The statistics of every item of h's file computed by the server and attached to h's open
 *  handle (the core then gives them to stats() without reading); {workers}, or null when the
 *  page computes them. If the pass fails, h's file is opened again: nothing half attached stays. */
async function serverStats(h, tick) {
  const url = passUrl('stats', h.src, new URLSearchParams({ items: String(itemCount(h.ck)) }));
  if (!url) return null;
  try {
    const msg = await serverPass(url, tick, (from, list) => attachPacked(h.ck, from, list));
    return msg?.done ?? null;
  } catch (err) {
    if (Object.values(handles).includes(h)) {
      const fresh = await open(h.src);
      h.ck.close();
      h.ck = fresh;
    }
    throw err;
  }
}

// The sources classify read, kept for the open that follows (by the id classify answered): the
// bytes of the sniff are then the opened file's own, in its count, and not read twice.
const sniffed = new Map();
let nextSniff = 1;

function keepSniffed(src) {
  const id = nextSniff++;
  sniffed.set(id, src);
  if (sniffed.size > 8) sniffed.delete(sniffed.keys().next().value);   // files classified, never opened
  return id;
}

function takeSniffed(id) {
  const src = sniffed.get(id);
  sniffed.delete(id);
  return src;
}

// role -> {ck, src, stats: Map(slot -> statistics)}
const handles = { a: null, b: null };

function close(role) {
  handles[role]?.ck.close();
  handles[role] = null;
}

function handle(role) {
  const h = handles[role];
  if (!h) throw new Error(`no file is open as ${role === 'a' ? 'the main file' : 'the model state'}`);
  return h;
}

function buffersOf(columns) {
  return Object.values(columns).filter((x) => ArrayBuffer.isView(x)).map((x) => x.buffer);
}

/** Progress messages at most every 50 ms: a scan of a million entries must not flood the page. */
function throttled(progress) {
  let last = 0;
  return (p, force = false) => {
    const now = performance.now();
    if (force || now - last > 50) {
      last = now;
      progress(p);
    }
  };
}

/** The optimizer and the state file, whichever roles they were opened in (a file holding both
 *  is open twice: as 'a' its optimizer, as 'b' its model). */
function pairHandles() {
  const [a, b] = [handles.a, handles.b];
  if (!a || !b) throw new Error('open an optimizer checkpoint and its model-state file first');
  return a.ck.kind === 'state' && !b.asModel ? [b, a] : [a, b];
}

/** The pair verdict of the open optimizer and model. A PyTorch optimizer is bound to its model
 *  by its first pairing (its slots are the model's from then on): that verdict is kept, and one
 *  that failed is final (the core pairs a bound file with nothing else); one that paired is asked
 *  again (the model's statistics add warnings), the first's `pytorch` pairing kept with it. */
async function pairOpen(names = null) {
  const [opt, state] = pairHandles();
  if (opt.bound && (opt.bound.error || !opt.bound.result.pairs)) {
    if (opt.bound.error) throw opt.bound.error;
    return opt.bound.result;
  }
  const pytorch = opt.ck.summary.needsModel;
  names = opt.bound?.names ?? names;   // a model that keeps no order is ordered by the same names again
  try {
    const result = await pair(opt.ck, state.ck, { names });
    if (pytorch) opt.bound = { result, names };
    return result.pytorch || !opt.bound ? result : { ...result, pytorch: opt.bound.result.pytorch };
  } catch (err) {
    if (pytorch && err.name !== 'AbortError') opt.bound = { error: err };
    throw err;
  }
}

/** An open file's summary and columns as open() gives them (after a pairing: the pair's slots). */
function filePart(h) {
  const columns = h.ck.columns();
  return { summary: h.ck.summary, columns, io: h.src.io() };
}

async function statsOf(h, slot, onProgress) {
  if (!h.stats.has(slot)) h.stats.set(slot, await h.ck.stats(slot, { onProgress }));
  return h.stats.get(slot);
}

/** Run `make(write)` with its bytes posted on `port` as chunks of 4 MiB, each once the page gave
 *  a credit (`credits`, a shared counter: parts/save-stream.js; -1 stops at the next chunk), then
 *  {done}. Resolves {bytes, result}. */
async function streamOut(port, credits, make) {
  const count = new Int32Array(credits);
  const CHUNK = 4 << 20;
  let buf = new Uint8Array(CHUNK);
  let fill = 0;
  let bytes = 0;
  const flush = () => {
    while (Atomics.load(count, 0) === 0) Atomics.wait(count, 0, 0);
    if (Atomics.load(count, 0) < 0) throw new DOMException('cancelled', 'AbortError');
    Atomics.sub(count, 0, 1);
    const chunk = buf.subarray(0, fill);
    port.postMessage({ chunk }, [chunk.buffer]);
    buf = new Uint8Array(CHUNK);
    fill = 0;
  };
  const write = (data) => {
    bytes += data.length;
    for (let at = 0; at < data.length;) {
      const n = Math.min(CHUNK - fill, data.length - at);
      buf.set(data.subarray(at, at + n), fill);
      fill += n;
      at += n;
      if (fill === CHUNK) flush();
    }
  };
  try {
    const result = await make(write);
    if (fill) flush();
    port.postMessage({ done: true });
    return { bytes, result };
  } finally {
    port.close();
  }
}

const handlers = {
  /** Open a File or a served path as role 'a' (the main file: closes both) or 'b' (its model
   *  state). Resolves {summary, columns, io}, the columns' buffers transferred. */
  async open({ role = 'a', source, sniffed: id = null, asModel = false }) {
    if (role === 'a') {
      close('a');
      close('b');
    } else close(role);
    const src = takeSniffed(id) ?? await sourceOf(source);
    const ck = await open(src);
    handles[role] = { ck, src, stats: new Map(), asModel };
    const part = filePart(handles[role]);
    return transfer(part, buffersOf(part.columns));
  },

  /** Pair a PyTorch optimizer with its model (the open pair, or a file holding both opened as 'a'
   *  and again as 'b' with asModel), once, before the views draw them: the pairing gives the
   *  optimizer its slots; `names` (the model's, in module order) order a model that keeps none.
   *  Resolves {a, b} as open gives them, the pair's slots in both. */
  async bind({ names = null } = {}) {
    await pairOpen(names).catch((err) => {
      if (err.name === 'AbortError') throw err;   // else the pair view shows why, from the kept verdict
    });
    const a = filePart(handles.a), b = filePart(handles.b);
    return transfer({ a, b }, [...buffersOf(a.columns), ...buffersOf(b.columns)]);
  },

  close({ role }) {
    close(role);
    return null;
  },

  /** What a file is: {json: null, sniffed} for a checkpoint (sniffed: an id for open, which
   *  then reads through the same source), else {json: 'names' | 'layout' | 'report' |
   *  'description' | 'unknown', names?}. */
  async classify({ source }) {
    const src = await sourceOf(source);
    const json = await readJsonSource(src);
    if (json === undefined) return { json: null, sniffed: keepSniffed(src) };
    const kind = jsonKind(json);
    return kind === 'names' ? { json: kind, names: namesOf(json, source.name ?? 'names') } : { json: kind };
  },

  /** Statistics of one slot (optimizer: its moments; state file: its values), kept. */
  async stats({ role = 'a', slot }, progress) {
    const h = handle(role);
    return statsOf(h, slot, throttled(progress));
  },

  /** Statistics of every entry (or tensor), one after the other. Progress is the core's, each
   *  scan's fraction weighted by its element count. Resolves {rows: Float64Array, fields}. */
  async scan({ role = 'a' }, progress) {
    const h = handle(role);
    const cols = h.ck.columns();
    const state = h.ck.kind === 'state';
    const list = state ? cols.tensorRows : cols.entryRows;
    const total = list.length;
    const ids = [], counts = [];
    let sum = 0;
    for (let k = 0; k < total; k++) {
      ids.push(state ? k : Number(list.get(k, 'id')));
      const c = Number(list.get(k, 'count'));
      counts.push(c);
      sum += c;
    }
    const fields = state ? ['mean', 'rms', 'min', 'max', 'nan', 'inf'] : ['mMean', 'mRms', 'vMean', 'unhealthy', 'nan', 'inf', 'negative'];
    const rows = new Float64Array(total * fields.length);
    const tick = throttled(progress);
    // Every item's statistics attached to the open file, computed by `ckptscope view` on its
    // machine or here: the report is then inspect --stats's (Export: Report), the pair verdict
    // warns of the values read (docs/format.md 6), and stats() gives them without reading.
    const served = await serverStats(h, tick);
    if (handles[role] !== h) throw new DOMException('cancelled', 'AbortError');   // another file opened meanwhile
    if (!served) {
      let before = 0;
      for (let k = 0; k < total; k++) {
        const words = itemStatsPacked(h.ck, k, { onProgress: ({ done, total: t }) => tick({ done: before + (t ? (counts[k] * done) / t : 0), total: sum }) });
        attachPacked(h.ck, k, [words]);
        before += counts[k];
      }
    }
    for (let k = 0; k < total; k++) {
      const s = await statsOf(h, ids[k]);
      const at = k * fields.length;
      if (state) {
        const v = s.values;
        rows.set([v.mean, v.rms, v.min, v.max, v.nan, v.inf].map(Number), at);
      } else {
        rows.set([s.m.mean, s.m.rms, s.v.mean, s.unhealthy, Number(s.m.nan) + Number(s.v.nan), Number(s.m.inf) + Number(s.v.inf), s.v.negative].map(Number), at);
      }
    }
    tick({ done: sum, total: sum }, true);
    return transfer({ rows, fields, ids, server: served }, [rows.buffer]);
  },

  /** Bytes [offset, offset + length) of an open file, for the hex view. */
  bytes({ role = 'a', offset, length }) {
    const { src } = handle(role);
    const start = Math.max(0, Math.min(offset, src.size));
    const dest = new Uint8Array(Math.max(0, Math.min(length, src.size - start)));
    const got = src.read(start, dest);
    return transfer({ start, bytes: dest.subarray(0, got) }, [dest.buffer]);
  },

  io({ role = 'a' }) {
    return handle(role).src.io();
  },

  /** Would the file open as `role` load into `expected` (a layout JSON File, a layout object, or
   *  another checkpoint)? {ok, warnings} or {ok: false, error}, and every difference (null when
   *  one side cannot be read as a layout). */
  async check({ expected, role = 'a' }) {
    const h = handle(role);
    const layout = await layoutOf(expected);
    const verdict = await verdictOf(check(h.src, layout));
    let differences = null;
    try {
      differences = await diff(h.ck, layout);
    } catch {
      differences = null;   // a side too broken to compare: the verdict says why
    }
    return { ...verdict, differences };
  },

  /** Does the optimizer file belong to the state file? The package's pair verdict. */
  pair() {
    return pairOpen();
  },

  /** The package's health pass over the optimizer file (and, withState, its model state). */
  async health({ lr = null, ratioBand = null, withState = false }, progress) {
    const opt = [handles.a, handles.b].find((h) => h?.ck.kind === 'optimizer');
    if (!opt) throw new Error('open an optimizer checkpoint first');
    const state = withState ? [handles.a, handles.b].find((h) => h?.ck.kind === 'state') ?? null : null;
    const tick = throttled(progress);
    if (!state || state.src instanceof UrlBytes) {
      const query = new URLSearchParams();
      if (state) {
        query.set('state', state.src.path);
        query.set('stateSize', String(state.src.size));
      }
      if (lr !== null) query.set('lr', String(lr));
      if (ratioBand) query.set('band', ratioBand.join(','));
      const url = passUrl('health', opt.src, query);
      const msg = url && await serverPass(url, tick);
      if (msg?.done) return { ...msg.result, server: msg.done };
    }
    return health(opt.ck, state?.ck ?? null, { lr: lr ?? undefined, ratioBand: ratioBand ?? undefined, onProgress: tick });
  },

  /** The open file's moments (or tensors) as safetensors or .npz, named by `names` when given. */
  async exportFile({ role = 'a', format, names = null }, progress) {
    const h = handle(role);
    const bytes = await exportTensors(h.ck, { format, names: names ?? undefined, onProgress: throttled(progress) });
    return transfer({ bytes }, [bytes.buffer]);
  },

  /** The export of exportFile, streamed: chunks of CHUNK bytes posted on `port` ({chunk}, then
   *  {done}), each made only when `credits` (an Int32 in a SharedArrayBuffer the page adds to as
   *  chunks reach the disk) is positive: memory stays a few chunks for any size. A negative
   *  credit is a cancel. Resolves {bytes}. */
  async exportStream({ role = 'a', format, names = null, port, credits }, progress) {
    const h = handle(role);
    return streamOut(port, credits, (write) => exportTo(h.ck, write, { format, names: names ?? undefined, onProgress: throttled(progress) }));
  },

  /** One slot's m or v (an optimizer file) or values (a state file) as .npy. */
  async exportNpy({ role = 'a', slot, what }) {
    const bytes = await exportNpy(handle(role).ck, slot, what);
    return transfer({ bytes }, [bytes.buffer]);
  },

  /** The core's JSON report of an open file (for "Export report"). */
  reportText({ role = 'a' }) {
    return handle(role).ck.reportText();
  },

  /** Checkpoints of one run (docs/runs.md) from a drop, a pick or a folder: `files` [{name,
   *  source}] in any order. The optimizer checkpoints go in run order, each with the model-state
   *  file of its stem (the package's runFiles: the number in the name); the package's run() does
   *  the rest, one health pass per file (its slots kept for the timeline). Resolves {order
   *  (indices into files), states (an index or null per checkpoint), unused [{index, text}],
   *  result, series: per file {ratio, rms} Float64Arrays per slot (NaN: none)}. */
  async run({ files, lr = null }, progress) {
    // the headers only: what each file is, its steps
    const { order, states: stateOf, unused } = await runFiles(files.map((f) => f.name), async (k) => open(await sourceOf(files[k].source)));
    const n = order.length;
    if (n < 2) throw new RangeError(`a run needs at least two optimizer checkpoints, got ${n}`);
    // a File is named by itself; a served path by UrlBytes
    const source = (k) => (typeof files[k].source === 'string' ? sourceOf(files[k].source) : files[k].source);
    const series = new Array(n).fill(null);
    const tick = throttled(progress);
    const result = await run(await Promise.all(order.map((k) => source(k))), {
      states: stateOf.some((k) => k !== null) ? await Promise.all(stateOf.map((k) => (k === null ? null : source(k)))) : null,
      lr: lr ?? undefined,
      // first each file's health pass (its slots kept for the timeline), then the continuity pass
      onHealth: (i, h) => {
        const size = h.slots.reduce((m, s) => Math.max(m, s.slot + 1), 0);
        const ratio = new Float64Array(size).fill(NaN), rms = new Float64Array(size).fill(NaN);
        for (const s of h.slots) {
          if (typeof s.ratio === 'number') ratio[s.slot] = s.ratio;
          if (s.update) rms[s.slot] = s.update.rms;
        }
        series[i] = { ratio, rms };
        tick({ phase: 'health', done: i + 1, total: n }, true);
      },
      onProgress: ({ done, total }) => tick({ phase: 'continuity', done, total }),
    });
    return transfer({ order, states: stateOf, unused, result, series },
      series.flatMap((x) => (x ? [x.ratio.buffer, x.rms.buffer] : [])));
  },

  /** Which of the names (the files of one drop or pick) are a Trainer's checkpoint-N/ folder's
   *  optimizer and model (the core's names), or null when they are not one. */
  async trainerFolder({ names }) {
    if (new Set(names).size !== names.length) return null;   // several folders' files: a run
    const roles = await trainerFolderRoles(names);
    return roles.optimizer && roles.model ? roles : null;
  },

  async examples() {
    const list = await makeExamples();
    return transfer(list, list.flatMap((e) => e.files.map((f) => f.bytes.buffer)));
  },
};

/** What to check against: a File, or a path of this server (`ckptscope view A B`): JSON (a
 *  layout, a report) or a checkpoint; a layout object as it is. */
async function layoutOf(expected) {
  let layout = typeof expected === 'string' ? await sourceOf(expected) : expected;
  if (layout instanceof Blob || layout instanceof UrlBytes) {
    const json = await readJsonSource(layout);
    if (json !== undefined) {
      const kind = jsonKind(json);
      if (kind === 'names') throw Object.assign(new TypeError(`${layout.name} is a list of slot names, not a layout`), { subject: 'expected' });
      layout = json;
    }
  }
  return layout;
}

/** A check's verdict as plain data: {ok: true, warnings} or {ok: false, error, warnings}. */
async function verdictOf(checking) {
  try {
    const r = await checking;
    return { ok: true, warnings: r.warnings };
  } catch (err) {
    if (err.name !== 'CheckpointError' && err.name !== 'LayoutError') throw err;
    const { message, code = null, offset = null, length = 0, slot = null, hint = null, configDiff = null } = err;
    const subject = err.name === 'LayoutError' ? 'expected' : err.subject;
    return { ok: false, error: { name: err.name, message, code, offset, length, slot, subject, hint, configDiff }, warnings: err.report?.warnings ?? [] };
  }
}

// ---- TorchLean's readers and convert (docs/format.md 8; views/readers.js, parts/convert.js) ----

/** The options convert may be given to lose or supply something, in the order the panel lists
 *  them; `randomCounter` only for a file without a counter (the core refuses it otherwise). */
const LOSSY = ['dropRandomCounter', 'untie', 'roundToFloat32', 'randomCounter'];

/** Stopped at the first byte: the core had planned the conversion (it writes nothing before). */
class Planned extends Error {}

/** Would the core convert the open file with these options? null when it would, else its
 *  refusal (code, text). The conversion stops at its first byte. */
async function refusal(ck, options) {
  try {
    await convertTo(ck, () => {
      throw new Planned();
    }, options);
  } catch (err) {
    if (err instanceof Planned) return null;
    if (err.name !== 'CheckpointError') throw err;
    return { code: err.code, message: err.message };
  }
  return null;   // (not reached: every version starts with a header)
}

function lossyOptions(ck, chosen) {
  const out = {};
  for (const k of LOSSY) {
    if (chosen[k] === undefined || chosen[k] === null || chosen[k] === false) continue;
    if (k === 'randomCounter') {
      if (!ck.summary.hasRandomCounter) out.randomCounter = chosen.randomCounter;
    } else out[k] = true;
  }
  return out;
}

Object.assign(handlers, {
  /** Every TorchLean reader's verdict for the open file against `expected` (check per reader):
   *  [{reader, ok, warnings, error?}], in the core's order. */
  async readers({ expected, role = 'a' }) {
    const h = handle(role);
    const layout = await layoutOf(expected);
    const rows = [];
    for (const reader of await readerNames()) rows.push({ reader, ...await verdictOf(check(h.src, layout, { reader })) });
    return rows;
  },

  /** Per target version 2 to 5: does the core convert the open file losing nothing
   *  (`lossless`), and with the chosen options (`refusal`: null, else the core's code and text)?
   *  `needs`: the lossy options without which the all-options attempt is refused (null when even
   *  that is). `offered`: the lossy options this file can be given. */
  async convertPlan({ role = 'a', chosen = {} }) {
    const { ck } = handle(role);
    const offered = LOSSY.filter((k) => k !== 'randomCounter' || !ck.summary.hasRandomCounter);
    const every = lossyOptions(ck, { dropRandomCounter: true, untie: true, roundToFloat32: true, randomCounter: chosen.randomCounter || '0' });
    const targets = [];
    for (const to of [2, 3, 4, 5]) {
      const bare = await refusal(ck, { to });
      if (!bare) {
        targets.push({ to, lossless: true, refusal: null, needs: [] });
        continue;
      }
      let needs = null;
      if (!await refusal(ck, { to, ...every })) {
        needs = [];
        for (const k of offered) {
          const without = { ...every };
          delete without[k];
          if (await refusal(ck, { to, ...without })) needs.push(k);
        }
      }
      targets.push({ to, lossless: false, refusal: await refusal(ck, { to, ...lossyOptions(ck, chosen) }), needs });
    }
    return { offered, targets };
  },

  /** The open file converted (to: 2 to 5, the chosen lossy options), as a Blob: the viewer
   *  converts files it can hold (the CLI streams any size). {blob, result}. */
  async convert({ role = 'a', to, chosen = {} }, progress) {
    const { ck } = handle(role);
    const chunks = [];
    const result = await convertTo(ck, (bytes) => chunks.push(bytes.slice()), { to, ...lossyOptions(ck, chosen), onProgress: throttled(progress) });
    return { blob: new Blob(chunks, { type: 'application/octet-stream' }), result };
  },
});

// ---- Convert… between PyTorch and TorchLean (docs/pytorch.md; parts/convert-torch.js) ----

/**
 * One conversion as the panel asks for it: `to: 'pytorch'` writes the open TLADAMF file (`role`)
 * as a torch.save file (`lr`, `prefix`: the zip's folder, the download's stem; `stateRole`: the
 * model-state file open beside it, paired first); else `to` ('oldest', 2 to 5) writes the open
 * PyTorch optimizer, paired with its model, as a TLADAMF file with the options given (kind,
 * weightDecay, betas, eps, dropAmsgrad, untie, roundToFloat32). The core checks every value.
 */
function torchConversion({ role = 'a', to, lr = null, prefix = null, stateRole = null, ...options }, write, onProgress) {
  const { ck } = handle(role);
  if (to === 'pytorch') {
    return convertToTorchTo(ck, write, { lr, prefix, state: stateRole ? handle(stateRole).ck : null, onProgress });
  }
  const { kind = null, weightDecay = null, betas = null, eps = null, dropAmsgrad = false, untie = false, roundToFloat32 = false } = options;
  return convertTo(ck, write, { to, kind, weightDecay, betas, eps, dropAmsgrad, untie, roundToFloat32, onProgress });
}

Object.assign(handlers, {
  /** Would the core make this conversion (`job`: torchConversion's)? null when it would, else
   *  its refusal {code, message, hint}. Stopped at the first byte. */
  async torchConvertPlan({ job }) {
    try {
      await torchConversion(job, () => {
        throw new Planned();
      });
    } catch (err) {
      if (err instanceof Planned) return null;
      if (err.name !== 'CheckpointError') throw err;
      return { code: err.code, message: err.message, hint: err.hint ?? null };
    }
    return null;
  },

  /** The conversion streamed to `port` (as exportStream streams). {bytes, result}. */
  async torchConvertStream({ job, port, credits }, progress) {
    return streamOut(port, credits, (write) => torchConversion(job, write, throttled(progress)));
  },

  /** The conversion as a Blob, for a page that cannot stream (not cross-origin isolated). */
  async torchConvert({ job }, progress) {
    const chunks = [];
    const result = await torchConversion(job, (bytes) => chunks.push(bytes.slice()), throttled(progress));
    return { blob: new Blob(chunks, { type: 'application/octet-stream' }), result: result ?? null };
  },
});

serve(handlers);
