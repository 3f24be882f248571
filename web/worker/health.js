// The health request: the package's health pass over the open optimizer (and its model state),
// run by `ckptscope view` on its machine when it serves the files, else here.
import { health } from '/js/index.js';
import { handles, throttled } from './handles.js';
import { UrlBytes } from './sources.js';
import { serverPass, passUrl } from './server-pass.js';

export const healthRequests = {
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
};
