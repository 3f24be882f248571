// Verdict requests: would the open file load into a layout (check), per TorchLean reader
// (readers), and does the optimizer belong to the state file (pair).
import { check, diff, readJsonSource, jsonKind, readerNames } from '/js/index.js';
import { handle, pairOpen } from './handles.js';
import { sourceOf, UrlBytes } from './sources.js';

/** What to check against: a File, or a path of this server (`ckptscope view A B`): JSON (a
 *  layout, a report) or a checkpoint; a layout object as it is. */
async function layoutOf(expected) {
  let layout = typeof expected === 'string' ? await sourceOf(expected) : expected;
  if (layout instanceof Blob || layout instanceof UrlBytes) {
    const json = await readJsonSource(layout);
    if (json !== undefined) {
      const kind = jsonKind(json);
      if (kind === 'names') throw Object.assign(new TypeError(`${layout.name} is a list of slot names, not a layout`), { subject: 'expected' });
      layout = json;
    }
  }
  return layout;
}

/** A check's verdict as plain data: {ok: true, warnings} or {ok: false, error, warnings}. */
async function verdictOf(checking) {
  try {
    const r = await checking;
    return { ok: true, warnings: r.warnings };
  } catch (err) {
    if (err.name !== 'CheckpointError' && err.name !== 'LayoutError') throw err;
    const { message, code = null, offset = null, length = 0, slot = null, hint = null, configDiff = null } = err;
    const subject = err.name === 'LayoutError' ? 'expected' : err.subject;
    return { ok: false, error: { name: err.name, message, code, offset, length, slot, subject, hint, configDiff }, warnings: err.report?.warnings ?? [] };
  }
}

export const checkRequests = {
  /** Would the file open as `role` load into `expected` (a layout JSON File, a layout object, or
   *  another checkpoint)? {ok, warnings} or {ok: false, error}, and every difference (null when
   *  one side cannot be read as a layout). */
  async check({ expected, role = 'a' }) {
    const h = handle(role);
    const layout = await layoutOf(expected);
    const verdict = await verdictOf(check(h.src, layout));
    let differences = null;
    try {
      differences = await diff(h.ck, layout);
    } catch {
      differences = null;   // a side too broken to compare: the verdict says why
    }
    return { ...verdict, differences };
  },

  /** Every TorchLean reader's verdict for the open file against `expected` (check per reader):
   *  [{reader, ok, warnings, error?}], in the core's order (docs/format.md 8; views/readers.js). */
  async readers({ expected, role = 'a' }) {
    const h = handle(role);
    const layout = await layoutOf(expected);
    const rows = [];
    for (const reader of await readerNames()) rows.push({ reader, ...await verdictOf(check(h.src, layout, { reader })) });
    return rows;
  },

  /** Does the optimizer file belong to the state file? The package's pair verdict. */
  pair() {
    return pairOpen();
  },
};
