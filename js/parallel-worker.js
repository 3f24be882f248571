// One worker of js/parallel.js: its own WebAssembly instance opens the file itself and computes
// the statistics of a range of items (posted back packed) or the health of a range of slots.
import { isNode, adoptModule } from './wasm.js';
import { open, itemStatsPacked } from './checkpoint.js';
import { health } from './api.js';

const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (msg, transfer = []) => port.postMessage(msg, transfer);
const listen = (fn) => (isNode ? port.on('message', fn) : (port.onmessage = ({ data }) => fn(data)));

listen(async (job) => {
  try {
    if (job.module) adoptModule(job.module);   // compiled once, by the parent
    if (job.type === 'stats') {
      const ck = await open(job.source);
      try {
        const out = [];
        let base = 0;
        for (let k = job.from; k < job.to; k++) {
          let last = 0;
          const words = itemStatsPacked(ck, k, { onProgress: ({ done }) => ((last = done), post({ progress: { done: base + done } })) });
          base += last;
          out.push(words);
        }
        post({ result: out }, out.map((w) => w.buffer));
      } finally {
        ck.close();
      }
    } else if (job.type === 'health') {
      const result = await health(job.opt, job.state, { lr: job.lr ?? undefined, ratioBand: job.ratioBand, slots: { first: job.first, count: job.count },
        onProgress: ({ done, total }) => post({ progress: { done, total } }) });
      post({ result });
    } else {
      throw new TypeError(`unknown job type ${JSON.stringify(job.type)}`);
    }
  } catch (err) {
    post({ error: { name: err?.name ?? 'Error', message: err?.message ?? String(err), code: err?.code ?? null, offset: err?.offset ?? null } });
  }
});
