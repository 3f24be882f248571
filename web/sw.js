// The viewer's service worker: it answers the download of a streamed export. Chromium will not
// download a Blob past ~500 MiB, so an export is never held whole: the page hands this worker a
// MessagePort, then navigates a hidden frame to /download/{id}/{name}; the answer is a
// ReadableStream fed chunk by chunk from that port. Each chunk the download takes is acknowledged
// ({ack}) so the page lets the parsing worker make the next one: memory stays a few chunks.
// Port messages in: {chunk: Uint8Array} | {done: true} | {error: text}. Out: {ready} (the port is
// held: the frame may ask), {started} (the download's answer is given), {ack}, {cancel}.
// It serves nothing else: every other request goes to the network (the viewer's own server).
// While a download runs, the page sends {type: 'keep-alive'} every few seconds: a browser stops
// a service worker that has had no event for a while (Firefox after 30 s), and the messages of a
// port are no events of the worker's; a message to the worker itself is. `self.keepAlives`
// counts them (the browser tests read it).

const pending = new Map();   // id -> {port, name}, until the frame asks for it

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.keepAlives = 0;

self.addEventListener('message', ({ data, ports }) => {
  if (data?.type === 'keep-alive') {
    self.keepAlives++;   // the event itself is what keeps the worker alive
    return;
  }
  if (data?.type !== 'download' || typeof data.id !== 'string' || !ports[0]) return;
  pending.set(data.id, { port: ports[0], name: String(data.name) });
  ports[0].postMessage({ ready: true });
});

function streamOf(port) {
  const queue = [];
  let wake = null;
  port.onmessage = ({ data }) => {
    queue.push(data);
    wake?.();
  };
  return new ReadableStream({
    async pull(controller) {
      while (!queue.length) await new Promise((resolve) => (wake = resolve));
      wake = null;
      const m = queue.shift();
      if (m.done) {
        controller.close();
        port.close();
      } else if (m.error !== undefined) {
        controller.error(new Error(m.error));
        port.close();
      } else {
        controller.enqueue(m.chunk);
        port.postMessage({ ack: m.chunk.length });
      }
    },
    cancel() {   // the user cancelled the download: the page stops the export
      port.postMessage({ cancel: true });
      port.close();
    },
  }, { highWaterMark: 1 });
}

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (url.origin !== self.location.origin || !url.pathname.startsWith('/download/')) return;
  const id = url.pathname.split('/')[2];
  const job = pending.get(id);
  if (!job) {
    event.respondWith(new Response('no such download\n', { status: 404, headers: { 'Content-Type': 'text/plain; charset=utf-8' } }));
    return;
  }
  pending.delete(id);   // one download per id
  job.port.postMessage({ started: true });
  event.respondWith(new Response(streamOf(job.port), {
    headers: {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `attachment; filename*=UTF-8''${encodeURIComponent(job.name)}`,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    },
  }));
});
