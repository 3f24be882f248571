// Errors the package throws, every field declared here (and in index.d.ts) and nowhere else. A
// CheckpointError carries the core's error unchanged: the reference diagnostic
// (docs/format.md) as its message, the stable code, where the offending field is (offset,
// length), the slot it is about, which input is at fault (subject), a hint and, for a
// configuration mismatch, which fields differ; and what the call had in hand: the report read,
// the pairing result, the broken file's own error, and in words which of the caller's inputs
// it concerns (context). A LayoutError says what is wrong with a layout, description or names
// object handed in by the caller, and which input that was (subject).

export class CheckpointError extends Error {
  /** error: the core's error object (ckpt_error_json). about: `subject` when the call knows
   *  better which input is at fault ('expected', 'first', 'second', 'optimizer', 'state'),
   *  `report`, `result`, `fileError`, `context`. */
  constructor({ message, code = 0, offset = null, length = 0, slot = null, index = null, subject = 'file', hint = null, configDiff = null },
    { subject: input = null, report = null, result = null, fileError = null, context = null } = {}) {
    super(message);
    this.name = 'CheckpointError';
    this.code = code;
    this.offset = offset;
    this.length = length;
    this.slot = slot;
    this.index = index;   // the optimizer's index (a PyTorch file's), else null
    this.subject = input ?? subject;
    this.hint = hint;
    this.configDiff = configDiff;
    this.report = report;
    this.result = result;
    this.fileError = fileError;
    this.context = context;
  }
}

export class LayoutError extends Error {
  /** subject: which input the object was ('expected', 'first', 'second'); null when the call
   *  takes one only (a description, names). */
  constructor(message, { subject = null } = {}) {
    super(message);
    this.name = 'LayoutError';
    this.subject = subject;
  }
}

/** The one way a core error becomes a JS exception: read the ckpt_error at `errPtr`, clear it,
 *  and return a CheckpointError (an AbortError for a cancelled scan). */
export function coreError(binding, errPtr, about = {}, signal) {
  const json = binding.errorTake(errPtr);
  if (!json) return new CheckpointError({ message: 'the core failed without saying why', code: 0 }, about);
  if (json.code === binding.codes.CANCELLED) return abortError(signal);
  return new CheckpointError(json, about);
}

export function abortError(signal) {
  return signal?.reason ?? new DOMException('The operation was cancelled', 'AbortError');
}
