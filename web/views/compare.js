// "Will it load?": the trainer's verdict for the open file against an expected layout (a layout
// JSON, a report, or another checkpoint), the problem view when it would not, and every
// difference between the two below, slots named by name when names are loaded. A close control
// leaves compare mode.
import { el, button, testid } from '../dom.js';
import { plural } from '../format.js';
import { renderProblem } from './problem.js';

export function renderCompare(card, result, { fileName, expectedName, label = () => '', onSlot, onClose, readBytes, fileSize }) {
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
        li.append(onSlot ? button(who, { cls: 'link', onClick: () => onSlot(Number(d.slot)) }) : who, `: ${d.text}`);
      } else li.append(d.text);
      list.append(li);
    }
    if (result.differences.length > 1000) list.append(el('li', '', `… and ${result.differences.length - 1000} more`));
    diff.append(list);
  }
  card.append(diff);
}
