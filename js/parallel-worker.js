// One worker of js/parallel.js: its own WebAssembly instance opens the file(s) as soon as it
// starts ('open', while the calling thread parses them too), then takes chunks of the job
// ('run') from the counter it shares with the other threads: the statistics of a range of items
// (posted back packed, by item) or the health of a range of slots (by its first slot), with how
// many chunks it took.
import { isNode, adoptModule } from './wasm.js';
import { open, itemStatsPacked } from './checkpoint.js';
import { claims } from './parallel.js';

const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (msg, transfer = []) => port.postMessage(msg, transfer);
const listen = (fn) => (isNode ? port.on('message', fn) : (port.onmessage = ({ data }) => fn(data)));

const fail = (err) => post({ error: { name: err?.name ?? 'Error', message: err?.message ?? String(err), code: err?.code ?? null, offset: err?.offset ?? null } });

let opened = null, counter = null, thread = -1, healthOf = null;

async function openAll({ source, opt, state }, variant) {
  if (source !== undefined) return { ck: await open(source, { variant }) };
  ({ healthOf } = await import('./api.js'));   // only health needs the API (a statistics worker starts sooner)
  const o = await open(opt, { variant });
  try {
    return { o, s: state === null || state === undefined ? null : await open(state, { variant }) };
  } catch (err) {
    o.close();
    throw err;
  }
}

const closeAll = (files) => [files.ck, files.o, files.s].forEach((ck) => ck?.close());

async function run(job, files) {
  const claim = claims(counter, job.chunks.length, thread);
  const out = [];
  let taken = 0;
  try {
    for (let k; (k = claim.next()) >= 0; taken++) {
      const [from, to] = job.chunks[k];
      if (job.type === 'stats') {
        let base = 0;
        for (let i = from; i < to; i++) {
          let last = 0;
          out.push([i, [itemStatsPacked(files.ck, i, { onProgress: ({ done }) => post({ progress: { chunk: k, done: base + (last = done) } }) })]]);
          base += last;
        }
      } else if (job.type === 'health') {
        out.push([from, await healthOf(files.o, files.s, { ...job.args, first: from, count: to - from,
          onProgress: ({ done, total }) => post({ progress: { chunk: k, done, total } }) })]);
      } else {
        throw new TypeError(`unknown job type ${JSON.stringify(job.type)}`);
      }
    }
  } catch (err) {
    claim.stopAll();   // the others stop at their next claim: the pass has failed
    throw err;
  }
  return { taken, parts: out };
}

listen(async (msg) => {
  try {
    if (msg.type === 'open') {
      if (msg.module) adoptModule(msg.module, msg.variant);   // compiled once, by the parent
      counter = msg.counter ? new Int32Array(msg.counter) : null;
      thread = msg.thread;
      opened = openAll(msg.files, msg.variant);
      opened.catch(() => {});   // reported when the work comes
      return;
    }
    const files = await opened;
    try {
      const result = await run(msg, files);
      post({ result }, msg.type === 'stats' ? result.parts.map(([, [w]]) => w.buffer) : []);
    } finally {
      closeAll(files);
    }
  } catch (err) {
    fail(err);
  }
});
