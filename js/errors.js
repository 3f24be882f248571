// Errors the package throws. A CheckpointError carries the core's error unchanged: the
// reference diagnostic (docs/format.md) as its message, the stable code, where the offending
// field is (offset, length), the slot it is about, which input is at fault (subject), a hint and,
// for a configuration mismatch, which fields differ. A LayoutError says what is wrong with a
// layout, description or names object handed in by the caller.

export class CheckpointError extends Error {
  constructor({ message, code = 0, offset = null, length = 0, slot = null, subject = 'file', hint = null, configDiff = null }, extra = {}) {
    super(message);
    this.name = 'CheckpointError';
    this.code = code;
    this.offset = offset;
    this.length = length;
    this.slot = slot;
    this.subject = subject;
    this.hint = hint;
    if (configDiff) this.configDiff = configDiff;
    Object.assign(this, extra);
  }
}

export class LayoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'LayoutError';
  }
}

/** Stable codes the JS side acts on (src/ckptscope.h, ckpt_code). */
export const Codes = Object.freeze({
  VALUE_TOO_LARGE: 3,
  NO_MEMORY: 36,
  CANCELLED: 37,
  FROZEN_SLOT: 40,
  NO_SUCH_SLOT: 41,
});

/** The one way a core error becomes a JS exception: read the ckpt_error at `errPtr`, clear it,
 *  and return a CheckpointError (an AbortError for a cancelled scan). */
export function coreError(core, errPtr, extra = {}, signal) {
  const json = core.takeJSON(core.exports.ckpt_error_json(errPtr));
  core.exports.ckpt_error_clear(errPtr);
  if (!json) return new CheckpointError({ message: 'the core failed without saying why', code: 0 }, extra);
  if (json.code === Codes.CANCELLED) return abortError(signal);
  return new CheckpointError(json, extra);
}

export function abortError(signal) {
  return signal?.reason ?? new DOMException('The operation was cancelled', 'AbortError');
}
