// A file the worker makes, posted to the page as it is made (export, convert to PyTorch).

/** Run `make(write)` with its bytes posted on `port` as chunks of 4 MiB, each once the page gave
 *  a credit (`credits`, a shared counter: parts/save-stream.js; -1 stops at the next chunk), then
 *  {done}. Resolves {bytes, result}. */
export async function streamOut(port, credits, make) {
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

/** `make(write)`'s bytes as one Blob, for a page that cannot stream. {blob, result}. */
export async function blobOut(make) {
  const chunks = [];
  const result = await make((bytes) => chunks.push(bytes.slice()));
  return { blob: new Blob(chunks, { type: 'application/octet-stream' }), result };
}
