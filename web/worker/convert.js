// Convert requests between TorchLean's versions (docs/format.md 8; parts/convert.js): which
// versions the core writes the open file as, losing what, and the conversion itself.
import { convertTo } from '/js/index.js';
import { convertVersions } from '/js/plumbing.js';
import { handle, throttled } from './handles.js';
import { blobOut } from './stream-out.js';

/** The options convert may be given to lose or supply something, in the order the panel lists
 *  them; `randomCounter` only for a file without a counter (the core refuses it otherwise). */
const LOSSY = ['dropRandomCounter', 'untie', 'roundToFloat32', 'randomCounter'];

/** Stopped at the first byte: the core had planned the conversion (it writes nothing before). */
export class Planned extends Error {}

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

export const convertRequests = {
  /** Per version the core writes: does it convert the open file losing nothing (`lossless`),
   *  and with the chosen options (`refusal`: null, else the core's code and text)? `needs`: the
   *  lossy options without which the all-options attempt is refused (null when even that is).
   *  `offered`: the lossy options this file can be given. */
  async convertPlan({ role = 'a', chosen = {} }) {
    const { ck } = handle(role);
    const offered = LOSSY.filter((k) => k !== 'randomCounter' || !ck.summary.hasRandomCounter);
    const every = lossyOptions(ck, { dropRandomCounter: true, untie: true, roundToFloat32: true, randomCounter: chosen.randomCounter || '0' });
    const targets = [];
    for (const to of convertVersions()) {
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

  /** The open file converted (to: a version the core writes, the chosen lossy options), as a
   *  Blob: the viewer converts files it can hold (the CLI streams any size). {blob, result}. */
  async convert({ role = 'a', to, chosen = {} }, progress) {
    const { ck } = handle(role);
    return blobOut((write) => convertTo(ck, write, { to, ...lossyOptions(ck, chosen), onProgress: throttled(progress) }));
  },
};
