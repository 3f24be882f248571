// "Will it load?": the trainer's verdict for the current file against an expected layout, and
// every difference between the two below it.
import { el } from './table.js';

export function renderVerdict(verdictEl, diffEl, result) {
  verdictEl.replaceChildren();
  diffEl.replaceChildren();
  verdictEl.className = `verdict ${result.loads ? 'loads' : 'fails'}`;
  if (result.loads) {
    verdictEl.append('Loads: the trainer would accept this checkpoint for that layout.');
  } else {
    verdictEl.append('Would not load: ');
    verdictEl.append(el('code', '', result.error.message));
    if (result.error.offset !== null) verdictEl.append(` (at byte ${result.error.offset})`);
  }
  for (const w of result.warnings ?? []) diffEl.append(el('p', 'meta', `warning: ${w}`));
  if (result.differences === null) {
    diffEl.append(el('p', 'meta', 'The two cannot be compared slot by slot (one of them is too broken to read its layout).'));
  } else if (!result.differences.length) {
    diffEl.append(el('p', 'meta', 'No differences in slot count, shapes, sizes, trainability, sharing, dtype, configuration or random counter.'));
  } else {
    diffEl.append(el('p', 'meta', `${result.differences.length} difference${result.differences.length > 1 ? 's' : ''} (this file vs the expected layout):`));
    const list = el('ul', 'diff-list');
    for (const d of result.differences.slice(0, 1000)) list.append(el('li', '', d.message));
    if (result.differences.length > 1000) list.append(el('li', '', `… and ${result.differences.length - 1000} more`));
    diffEl.append(list);
  }
}
