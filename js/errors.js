// Errors the package throws. A CheckpointError carries the core's reference diagnostic
// (FORMAT.md) unchanged, its stable code and the byte offset; a LayoutError says what is wrong
// with a layout or description object handed in by the caller.

export class CheckpointError extends Error {
  constructor({ message, code = 0, offset = null, hint = null }, extra = {}) {
    super(message);
    this.name = 'CheckpointError';
    this.code = code;
    this.offset = offset;
    this.hint = hint;
    Object.assign(this, extra);
  }
}

export class LayoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'LayoutError';
  }
}

export const FAMILY = 'CUDA Adam checkpoint: ';
