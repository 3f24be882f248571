// The passes `ckptscope view` runs on its machine over files it serves (js/server/server.js
// /passes/, js/server/pass-worker.js), read as the stream of frames the server writes.
import { open } from '/js/index.js';
import { Frames, PACKED_FRAME, unpackFrame, itemCount, attachPacked } from '/js/plumbing.js';
import { UrlBytes } from './sources.js';
import { handles } from './handles.js';

/**
 * A server pass at the CLI's rate: progress to `tick`, each packed-statistics frame to
 * `onPacked(from, list)`. Resolves with the last message ({done, result?} or {unsplit}), or null
 * when the server runs no passes (the viewer of `serve`, another server) or runs as many as it
 * will (503): the page then reads the file itself. A failure ends the request, so the pass on
 * the server; so does Cancel (the worker ends).
 */
export async function serverPass(url, tick, onPacked = () => {}) {
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
export function passUrl(kind, src, query) {
  if (!(src instanceof UrlBytes)) return null;
  query.set('size', String(src.size));
  return `/passes/${kind}${src.path.slice('/files'.length)}?${query}`;
}

/** The statistics of every item of h's file computed by the server and attached to h's open
 *  handle (the core then gives them to stats() without reading); {workers}, or null when the
 *  page computes them. If the pass fails, h's file is opened again: nothing half attached stays. */
export async function serverStats(h, tick) {
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
