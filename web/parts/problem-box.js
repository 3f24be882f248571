// The one problem view: every error the page shows (a broken file, a file that would not load
// into a layout, a malformed layout, a pair that does not pair, a file that cannot be read) is
// drawn here from the error object as the package gives it: the reference text, where the
// offending field is (offset, length: the hex view highlights exactly those bytes), the slot it
// is about (named, and selectable), which input is at fault (subject), a hint, and for a
// configuration mismatch which fields differ (decoded values first, bit patterns below).
import { el, button, testid } from '../dom.js';
import { count, plain, plural } from '../format.js';
import { renderHex } from './hex.js';

const HEX_BEFORE = 48, HEX_WINDOW = 128;

/**
 * error: {message, code?, offset?, length?, slot?, subject?, hint?, configDiff?}
 * options:
 *   title          the heading ("Why this file is broken", …); none: no heading
 *   fileName       the file the offsets are in; expectedName: the layout's name
 *   fileSize       its size (for the hex view)
 *   readBytes(offset, length) -> Promise<{start, bytes}>: bytes for the hex view
 *   label(slot)    a slot's name, '' when unknown
 *   onSlot(slot)   select a slot (the slot named becomes a button)
 *   note           a line after everything (what is shown below, …)
 */
export function renderProblem(container, error, options = {}) {
  const { title, fileName, expectedName, fileSize, readBytes, label = () => '', onSlot, note } = options;
  container.replaceChildren();
  container.hidden = false;
  if (title) container.append(el('h2', '', title));
  const expected = error.subject === 'expected';
  if (expected) {
    container.append(testid(el('p', 'culprit', `The layout${expectedName ? ` (${expectedName})` : ''} is at fault, not the checkpoint: it is not a layout the trainer could hold.`), 'error-subject'));
  }
  const diag = el('p', 'diagnostic');
  diag.append(testid(el('code', '', error.message), 'error'));
  container.append(diag);

  const where = el('p', 'meta where');
  if (error.offset !== null && error.offset !== undefined) {
    where.append(`at byte `, testid(el('strong', '', count(error.offset)), 'error-offset'));
    if (error.length) where.append(` (${error.length === 1 ? '1 byte' : `${error.length} bytes`}${fileName ? ` of ${fileName}` : ''})`);
  }
  if (error.slot !== null && error.slot !== undefined) {
    if (where.childNodes.length) where.append(' · ');
    const name = label(Number(error.slot));
    const text = `${expected ? 'first broken slot' : 'slot'} ${error.slot}${name ? ` (${name})` : ''}`;
    if (onSlot && !expected) {
      const b = button(text, { cls: 'link', testid: 'error-slot', onClick: () => onSlot(Number(error.slot)) });
      where.append(b);
    } else where.append(testid(el('span', '', text), 'error-slot'));
  }
  if (where.childNodes.length) container.append(where);
  if (error.hint) container.append(testid(el('p', 'hint', expected ? `Reason: ${error.hint}` : error.hint), 'error-hint'));

  if (error.configDiff?.length) container.append(configTable(error.configDiff, expectedName));

  if (readBytes && !expected && error.offset !== null && error.offset !== undefined && Number.isSafeInteger(Number(error.offset))) {
    const hex = el('div', 'hex');
    hex.setAttribute('aria-label', 'bytes around the error');
    container.append(hex);
    const offset = Number(error.offset), length = Math.min(Number(error.length ?? 0), 64);
    const start = Math.max(0, offset - HEX_BEFORE);
    readBytes(start, HEX_WINDOW).then(({ start: at, bytes }) => {
      if (hex.isConnected) renderHex(hex, { bytes, start: at, offset, length, fileSize });
    }, () => hex.remove());
  }
  if (note) container.append(el('p', 'meta', note));
}

/** A configuration mismatch: per field, the decoded values on one line ("beta2: file 0.999,
 *  expected 0.95"), the bit patterns on a second. */
function configTable(diffs, expectedName) {
  const box = el('div', 'config-diff');
  box.append(el('p', 'meta', `${diffs.length === 1 ? 'This field differs' : `These ${diffs.length} fields differ`} (the file's value, then the expected${expectedName ? ` in ${expectedName}` : ''}):`));
  const list = testid(el('ul'), 'config-diff');
  for (const d of diffs) {
    const li = testid(el('li'), 'config-diff-row');
    li.append(el('div', 'value', `${d.field}: file ${plain(d.file)}, expected ${plain(d.expected)}`));
    if (d.fileBits || d.expectedBits) li.append(el('div', 'bits', `bits: file ${d.fileBits ?? '—'}, expected ${d.expectedBits ?? '—'}`));
    list.append(li);
  }
  box.append(list);
  return box;
}

/** What of a broken file is still shown, said plainly (nothing when nothing was read). */
function readNote(file) {
  const s = file.summary;
  if (s.ok) return null;
  if (s.kind === 'state') return file.cols.tensorTotal ? `The ${plural(file.cols.tensorTotal, 'tensor')} read before the error are listed below.` : null;
  if (s.schema && file.cols.n) return `The header above and the ${plural(file.cols.n, 'slot')} read before the error (below) are what the file still shows.`;
  if (s.version !== null && s.version !== undefined) return 'The header fields read before the error are shown above.';
  return null;
}

/** The problem of a broken file, in `box`. */
export function renderFileProblem(box, file, { store, readBytes }, { title, onSlot } = {}) {
  renderProblem(box, file.summary.error, {
    title, fileName: file.name, fileSize: Number(file.summary.size), readBytes: readBytes(file),
    label: (i) => store.label(i), onSlot, note: readNote(file),
  });
}
