// The worker's open files, kept between requests: role 'a' (the main file) and 'b' (its model
// state), each {ck, src, stats: Map(slot -> statistics), asModel, bound?}; the sources classify
// read, kept for the open that follows; and what every request kind shares (progress throttled,
// a file's part as open gives it, the pair verdict of the open pair).
import { pair } from '/js/index.js';

export const handles = { a: null, b: null };

export function close(role) {
  handles[role]?.ck.close();
  handles[role] = null;
}

export function handle(role) {
  const h = handles[role];
  if (!h) throw new Error(`no file is open as ${role === 'a' ? 'the main file' : 'the model state'}`);
  return h;
}

// The sources classify read, kept for the open that follows (by the id classify answered): the
// bytes of the sniff are then the opened file's own, in its count, and not read twice.
const sniffed = new Map();
let nextSniff = 1;

export function keepSniffed(src) {
  const id = nextSniff++;
  sniffed.set(id, src);
  if (sniffed.size > 8) sniffed.delete(sniffed.keys().next().value);   // files classified, never opened
  return id;
}

export function takeSniffed(id) {
  const src = sniffed.get(id);
  sniffed.delete(id);
  return src;
}

export function buffersOf(columns) {
  return Object.values(columns).filter((x) => ArrayBuffer.isView(x)).map((x) => x.buffer);
}

/** Progress messages at most every 50 ms: a scan of a million entries must not flood the page. */
export function throttled(progress) {
  let last = 0;
  return (p, force = false) => {
    const now = performance.now();
    if (force || now - last > 50) {
      last = now;
      progress(p);
    }
  };
}

/** An open file's summary and columns as open() gives them (after a pairing: the pair's slots). */
export function filePart(h) {
  const columns = h.ck.columns();
  return { summary: h.ck.summary, columns, io: h.src.io() };
}

/** One slot's statistics of an open file, kept. */
export async function statsOf(h, slot, onProgress) {
  if (!h.stats.has(slot)) h.stats.set(slot, await h.ck.stats(slot, { onProgress }));
  return h.stats.get(slot);
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
export async function pairOpen(names = null) {
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
