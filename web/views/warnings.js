// Warnings of the open file: the file stays valid, but something deserves attention.
import { el, testid } from '../dom.js';

export function renderWarnings(box, warnings, { title = 'Warnings (the file stays valid)' } = {}) {
  box.hidden = !warnings.length;
  box.replaceChildren(el('h2', '', title));
  const ul = el('ul');
  for (const w of warnings) ul.append(testid(el('li', '', w), 'warning'));
  box.append(ul);
}
