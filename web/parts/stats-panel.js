// The statistics panel of one slot: its moments m and v side by side (min, max, mean, rms,
// counts, a histogram of log2|value|), the bias-corrected moments the next step will use, and
// with a model-state file open the parameter's own values beside them. While the core scans, a
// progress bar (the core's own fraction) and Cancel.
import { el, button, testid } from '../dom.js';
import { count, sci } from '../format.js';

const fmt = (x) => sci(x, 5);

function box(title, s, { badNegative = false } = {}) {
  const b = el('div', 'moment');
  b.append(el('h4', '', title));
  const t = el('table');
  const rows = [['min', fmt(s.min)], ['max', fmt(s.max)], ['mean', fmt(s.mean)], ['rms', fmt(s.rms)],
    ['NaN', count(s.nan)], ['±inf', count(s.inf)], ['zero', count(s.zero)], ['negative', count(s.negative)]];
  for (const [k, v] of rows) {
    const tr = el('tr');
    const n = Number(k === 'NaN' ? s.nan : k === '±inf' ? s.inf : k === 'negative' ? s.negative : 0);
    const bad = (k === 'NaN' || k === '±inf' || (k === 'negative' && badNegative)) && n > 0;
    tr.append(el('td', '', k), el('td', bad ? 'unhealthy' : '', v));
    t.append(tr);
  }
  b.append(t);
  const counts = s.histogram?.counts.map(Number) ?? [];
  if (counts.length) {
    const hist = el('div', 'hist');
    hist.setAttribute('role', 'img');
    const lo = s.histogram.log2Min;
    hist.setAttribute('aria-label', `histogram of log2|x| from ${lo} to ${lo + counts.length - 1}`);
    const max = counts.reduce((a, c) => Math.max(a, c), 0);
    counts.forEach((c, k) => {
      const bar = el('div');
      bar.style.height = `${c ? Math.max(2, (100 * c) / max) : 0}%`;
      bar.title = `2^${lo + k} ≤ |x| < 2^${lo + k + 1}: ${count(c)}`;
      hist.append(bar);
    });
    const axis = el('div', 'hist-axis');
    axis.append(el('span', '', `2^${lo}`), el('span', '', 'log2 |x|'), el('span', '', `2^${lo + counts.length}`));
    b.append(hist, axis);
  }
  return b;
}

/** A progress tick: the bar and its figure updated in place (the Cancel button stays the same
 *  element, so a click on it is never lost to a redraw). False when there is no bar yet. */
export function updateProgress(box, { done, total }) {
  const bar = box.querySelector('[data-testid=entry-progress]');
  if (!bar) return false;
  bar.value = total ? done / total : 0;
  const label = bar.previousElementSibling;
  if (label) label.textContent = `Computing statistics… ${total ? Math.floor((100 * done) / total) : 0}%`;
  return true;
}

/** While one item's statistics are computed: the core's progress as a bar and a percentage. */
function progressRow(progress, onCancel) {
  const row = el('div', 'progress-line');
  const bar = testid(el('progress'), 'entry-progress');
  bar.max = 1;
  bar.value = progress && progress.total ? progress.done / progress.total : 0;
  const pct = progress && progress.total ? Math.floor((100 * progress.done) / progress.total) : 0;
  row.append(el('span', 'meta', `Computing statistics… ${pct}%`), bar);
  if (onCancel) row.append(button('Cancel', { onClick: onCancel }));
  return row;
}

/**
 * container: the panel. entry: {id, step, count, offset} (the file's entry), slot: the slot
 * selected (a tied slot shows its owner's entry). stats: the core's statistics or null while
 * they are computed; progress: {done, total} or null. param: the state file's statistics of the
 * slot's values, or undefined without a state file.
 */
export function renderEntryDetail(container, { slot, entry, label, ownerLabel, config, stats, progress, error, param, onCancel, actions }) {
  container.replaceChildren();
  container.hidden = false;
  const owner = Number(entry.id);
  const head = el('h3', '', `Slot ${slot}${label ? ` (${label})` : ''}: `);
  head.append(owner === slot ? `entry at byte ${count(entry.offset)}, step ${count(entry.step)}, ${count(entry.count)} elements`
    : `tied: it shares slot ${owner}${ownerLabel ? ` (${ownerLabel})` : ''}'s moments (entry at byte ${count(entry.offset)}, step ${count(entry.step)})`);
  container.append(head);
  if (actions) container.append(actions);
  if (error) {
    container.append(el('p', 'meta bad', `Could not compute statistics: ${error}`));
    return;
  }
  if (!stats) {
    container.append(progressRow(progress, onCancel));
    return;
  }
  container.append(box('m (first moment)', stats.m), box('v (second moment)', stats.v, { badNegative: true }));
  if (param) container.append(box('θ (the parameter, from the state file)', param.values));
  else if (param === null) container.append(el('p', 'meta', 'The parameter\'s values are in the model-state file: add it (Add model state…) to see them beside the moments.'));
  if (config && Number.isSafeInteger(entry.step)) {
    const b1 = Number(config.beta1), b2 = Number(config.beta2), t = entry.step + 1;
    const c1 = 1 / (1 - b1 ** t), c2 = 1 / (1 - b2 ** t);
    const mMean = Number(stats.m.mean) * c1, vMean = Number(stats.v.mean) * c2;
    const p = el('p', 'bias');
    p.textContent = `Next step t = ${t}: m̂ = m / (1 − β1^${t}) = m × ${fmt(c1)} (mean ${fmt(mMean)}, rms ${fmt(Number(stats.m.rms) * c1)}); ` +
      `v̂ = v / (1 − β2^${t}) = v × ${fmt(c2)} (mean ${fmt(vMean)}). ` +
      `Typical |update| / lr ≈ rms(m̂) / (√mean(v̂) + ε) = ${fmt((Number(stats.m.rms) * c1) / (Math.sqrt(Math.max(0, vMean)) + Number(config.epsilon)))}.`;
    container.append(p);
  }
}

/** A state file's tensor: its values' statistics. */
export function renderTensorDetail(container, { index, label, tensor, shape, stats, progress, error, onCancel }) {
  container.replaceChildren();
  container.hidden = false;
  container.append(el('h3', '', `Tensor ${index}${label ? ` (${label})` : ''}: ${shape}, ${count(tensor.count)} values at byte ${count(tensor.dataOffset)}`));
  if (error) {
    container.append(el('p', 'meta bad', `Could not compute statistics: ${error}`));
    return;
  }
  if (!stats) {
    container.append(progressRow(progress, onCancel));
    return;
  }
  container.append(box('values', stats.values));
}
