// Convert… of a DeepSpeed folder (docs/deepspeed.md "As PyTorch or TorchLean files: convert";
// parts/convert-deepspeed.js): its consolidated torch.optim optimizer and fp32 model, or a
// TLADAMF file through them, streamed as the other conversions are. The core writes every byte
// and says every refusal; here the panel's values cross into the package's API.
import { convertTo, consolidateTo, openUniversal } from '/js/index.js';
import { handle, throttled } from './handles.js';
import { streamOut, blobOut } from './stream-out.js';
import { Planned } from './convert.js';

/**
 * One conversion as the panel asks for it: `which` 'optimizer', 'model' or 'model.safetensors'
 * (consolidateTo's, `prefix`: the zip's folder, the download's stem), or 'tladamf' with convertTo's
 * options (to: 'oldest' or a version, kind, weightDecay, betas, eps, dropAmsgrad, untie,
 * roundToFloat32, randomCounter, frozen). The core checks every value.
 */
function dsConversion({ role = 'a', which, prefix = null, ...options }, write, onProgress) {
  const { ck } = handle(role);
  if (which !== 'tladamf') return consolidateTo(ck, which, write, { prefix, onProgress });
  const { to = 'oldest', kind = null, weightDecay = null, betas = null, eps = null, dropAmsgrad = false, untie = false, roundToFloat32 = false,
    randomCounter = null, frozen = null } = options;
  return convertTo(ck, write, { to, kind, weightDecay, betas, eps, dropAmsgrad, untie, roundToFloat32, randomCounter, frozen, onProgress });
}

export const dsConvertRequests = {
  /** Would the core make this conversion (`job`: dsConversion's)? null when it would, else its
   *  refusal {code, message, hint} (a folder that fails a check: its own diagnostic). Stopped at
   *  the first byte. */
  async dsConvertPlan({ job }) {
    try {
      await dsConversion(job, () => {
        throw new Planned();
      });
    } catch (err) {
      if (err instanceof Planned) return null;
      if (err.name !== 'CheckpointError') throw err;
      return { code: err.code ?? null, message: err.message, hint: err.hint ?? null };
    }
    return null;
  },

  /** The conversion streamed to `port` (as exportStream streams). {bytes, result}. */
  async dsConvertStream({ job, port, credits }, progress) {
    return streamOut(port, credits, (write) => dsConversion(job, write, throttled(progress)));
  },

  /** The conversion as a Blob, for a page that cannot stream (not cross-origin isolated). */
  async dsConvert({ job }, progress) {
    const { blob, result } = await blobOut((write) => dsConversion(job, write, throttled(progress)));
    return { blob, result: result ?? null };
  },
};

/** The universal checkpoint being written (one at a time): the core's plan, kept between the
 *  page's requests for its files. */
let universal = null;

export const dsUniversalRequests = {
  /** Start the universal checkpoint of the open folder: {files, warnings, tag}, or the core's
   *  refusal {refusal: {code, message, hint}} (ZeRO-3, a folder that fails a check). */
  async dsUniversalBegin({ role = 'a' }) {
    await universal?.close();
    universal = null;
    try {
      universal = await openUniversal(handle(role).ck);
    } catch (err) {
      if (err.name !== 'CheckpointError') throw err;
      return { refusal: { code: err.code ?? null, message: err.message, hint: err.hint ?? null } };
    }
    const { files, warnings, tag } = universal;
    return { files, warnings, tag, refusal: null };
  },

  /** File k of the universal checkpoint begun, as a Blob (one parameter's tensor). */
  async dsUniversalFile({ k }) {
    const { blob } = await blobOut((write) => universal.write(k, write));
    return { blob };
  },

  /** The plan freed. */
  async dsUniversalEnd() {
    await universal?.close();
    universal = null;
    return null;
  },
};
