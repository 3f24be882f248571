// Convert… between PyTorch and TorchLean (docs/pytorch.md; parts/convert-torch.js): what the
// panel offers (the core's versions and kinds), whether the core would convert, the conversion.
import { convertTo, convertToTorchTo } from '/js/index.js';
import { convertChoices } from '/js/plumbing.js';
import { handle, throttled } from './handles.js';
import { streamOut, blobOut } from './stream-out.js';
import { Planned } from './convert.js';

/**
 * One conversion as the panel asks for it: `to: 'pytorch'` writes the open TLADAMF file (`role`)
 * as a torch.save file (`lr`, `prefix`: the zip's folder, the download's stem; `stateRole`: the
 * model-state file open beside it, paired first); else `to` ('oldest' or a version) writes the
 * open PyTorch optimizer, paired with its model, as a TLADAMF file with the options given (kind,
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

export const torchConvertRequests = {
  /** What the panel offers: {versions, kinds}, the core's. */
  torchConvertChoices() {
    return convertChoices();
  },

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
    const { blob, result } = await blobOut((write) => torchConversion(job, write, throttled(progress)));
    return { blob, result: result ?? null };
  },
};
