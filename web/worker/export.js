// Export requests: the open file's moments (or tensors) in one of the core's export formats,
// whole or streamed, and one slot's array as .npy.
import { exportTo, exportTensors, exportNpy } from '/js/index.js';
import { transfer } from '../rpc.js';
import { handle, throttled } from './handles.js';
import { streamOut } from './stream-out.js';

export const exportRequests = {
  /** The open file's moments (or tensors) in `format`, named by `names` when given. */
  async exportFile({ role = 'a', format, names = null }, progress) {
    const h = handle(role);
    const bytes = await exportTensors(h.ck, { format, names: names ?? undefined, onProgress: throttled(progress) });
    return transfer({ bytes }, [bytes.buffer]);
  },

  /** The export of exportFile, streamed: chunks posted on `port` ({chunk}, then {done}), each
   *  made only when `credits` (an Int32 in a SharedArrayBuffer the page adds to as chunks reach
   *  the disk) is positive: memory stays a few chunks for any size. A negative credit is a
   *  cancel. Resolves {bytes}. */
  async exportStream({ role = 'a', format, names = null, port, credits }, progress) {
    const h = handle(role);
    return streamOut(port, credits, (write) => exportTo(h.ck, write, { format, names: names ?? undefined, onProgress: throttled(progress) }));
  },

  /** One slot's m or v (an optimizer file) or values (a state file) as .npy. */
  async exportNpy({ role = 'a', slot, what }) {
    const bytes = await exportNpy(handle(role).ck, slot, what);
    return transfer({ bytes }, [bytes.buffer]);
  },
};
