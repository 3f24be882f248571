// "Will it load?": the trainer's verdict for the open file against an expected layout (a layout
// JSON, a report, or another checkpoint), the problem view when it would not, and every
// difference between the two below, slots named by name when names are loaded. A close control
// leaves compare mode.
import { el, button, testid } from '../dom.js';
import { plural } from '../format.js';
import { renderProblem } from '../parts/problem-box.js';

/** A representative in words: whose storage the slot uses. */
function storage(r, slot) {
  if (r === null || r === undefined) return 'has no storage (frozen)';
  return Number(r) === slot ? 'has its own storage' : `shares slot ${r}'s storage (tied)`;
}

/** A difference in words where its fields allow, else the core's text. */
function differenceText(d) {
  if (d.field === 'representative' && d.slot !== null && d.slot !== undefined) {
    return `${storage(d.a, Number(d.slot))} in this file; ${storage(d.b, Number(d.slot))} in the layout`;
  }
  return d.text;
}

function renderCompare(card, result, { fileName, expectedName, label = () => '', onSlot, onClose, readBytes, fileSize }) {
  card.replaceChildren();
  card.hidden = false;
  const head = el('div', 'card-head');
  head.append(el('h2', '', 'Will it load?'));
  head.append(el('span', 'meta', `${fileName} into ${expectedName}`));
  const tools = el('div', 'tools');
  tools.append(button('Close', { testid: 'compare-close', onClick: onClose, title: 'Leave compare mode' }));
  head.append(tools);
  card.append(head);
  const verdict = testid(el('div', 'verdict'), 'verdict');
  card.append(verdict);
  if (!result) {
    verdict.textContent = 'Checking…';
    return;
  }
  if (result.ok) {
    verdict.classList.add('loads');
    verdict.textContent = 'Loads: the trainer would accept this checkpoint for that layout.';
  } else {
    verdict.classList.add('fails');
    const title = result.error.subject === 'expected' ? 'Cannot tell: the layout itself is malformed' : 'Would not load';
    renderProblem(verdict, result.error, { title, fileName, expectedName, readBytes, fileSize, label, onSlot });
  }
  const diff = el('div', 'diff');
  for (const w of result.warnings ?? []) diff.append(testid(el('p', 'meta warn-line', `warning: ${w}`), 'warning'));
  if (result.differences === null) {
    diff.append(el('p', 'meta', 'The two cannot be compared slot by slot (one of them is too broken to read its layout).'));
  } else if (!result.differences.length) {
    diff.append(el('p', 'meta', 'No differences in slot count, shapes, sizes, trainability, sharing, dtype, configuration or random counter.'));
  } else {
    diff.append(el('p', 'meta', `${plural(result.differences.length, 'difference')} (this file vs the expected layout):`));
    const list = testid(el('ul', 'diff-list'), 'diff-list');
    for (const d of result.differences.slice(0, 1000)) {
      const li = testid(el('li'), 'difference');
      if (d.slot !== null && d.slot !== undefined) {
        const name = label(Number(d.slot));
        const who = `slot ${d.slot}${name ? ` ${name}` : ''}`;
        li.append(onSlot ? button(who, { cls: 'link', onClick: () => onSlot(Number(d.slot)) }) : who, `: ${differenceText(d)}`);
      } else li.append(d.text);
      list.append(li);
    }
    if (result.differences.length > 1000) list.append(el('li', '', `… and ${result.differences.length - 1000} more`));
    diff.append(list);
  }
  card.append(diff);
}

/** The compare card: runs the check when files open with a layout to compare with, or when the
 *  layout changes; Close leaves compare mode. A checkpoint dropped on it is the one to compare. */
export class CompareView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'compare';
    this.card.dataset.drop = 'expect';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    this.run();
  }

  onExpected() {
    this.run();
  }

  onSelect() {}

  /** The differences name slots: again with the new names. */
  onLabels() {
    if (this.shown && this.shown.expected === this.ctx.store.expected) renderCompare(this.card, this.shown.result, this.shown.options);
  }

  async run() {
    const { store, rpc, readBytes, status } = this.ctx;
    const main = store.primary;   // the optimizer checkpoint when one is open: a layout is its question
    const expected = store.expected;
    this.card.hidden = !main || !expected;
    this.shown = null;
    if (this.card.hidden) {
      this.card.replaceChildren();
      return;
    }
    const options = {
      fileName: main.name, expectedName: expected.name, label: (i) => store.label(i), fileSize: Number(main.summary.size), readBytes: readBytes(main),
      onSlot: (i) => store.select(i, 'compare'),
      onClose: () => {
        store.setExpected(null);
        status('Compare mode closed.');
      },
    };
    renderCompare(this.card, null, options);
    let result;
    try {
      result = await rpc.request('check', { expected: expected.source, role: store.roleOf(main) });
    } catch (err) {
      if (err.name === 'AbortError') return;
      result = { ok: false, error: { ...err, message: err.message, subject: err.subject ?? 'expected' }, differences: null, warnings: [] };
    }
    if (store.expected !== expected || store.primary !== main) return;
    this.shown = { expected, result, options };
    renderCompare(this.card, result, options);
    const slot = result.ok ? null : result.error.slot;
    if (slot !== null && slot !== undefined && result.error.subject !== 'expected' && store.optimizer?.summary.schema && Number(slot) < store.optimizer.cols.n) {
      store.select(Number(slot), 'compare');
    }
  }
}
