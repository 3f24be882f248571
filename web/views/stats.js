// Moment statistics of one entry: m and v side by side (min, max, mean, rms, counts), a
// histogram of log2|value|, and the bias-corrected moments the next step will use.
import { el } from './table.js';

const fmt = (x) => (x === null || x === undefined ? '—' : typeof x === 'number' ? (Number.isInteger(x) ? x.toLocaleString('en-US') : x.toPrecision(5)) : String(x));

function moment(title, s) {
  const box = el('div', 'moment');
  box.append(el('h4', '', title));
  const t = el('table');
  const rows = [['min', s.min], ['max', s.max], ['mean', s.mean], ['rms', s.rms], ['NaN', s.nan], ['±inf', s.inf], ['zero', s.zero], ['negative', s.negative]];
  for (const [k, v] of rows) {
    const tr = el('tr');
    const bad = (k === 'NaN' || k === '±inf' || (k === 'negative' && title.startsWith('v'))) && Number(v) > 0;
    tr.append(el('td', '', k), el('td', bad ? 'unhealthy' : '', fmt(v)));
    t.append(tr);
  }
  box.append(t);
  const counts = s.histogram.counts.map(Number);
  if (counts.length) {
    const hist = el('div', 'hist');
    hist.setAttribute('role', 'img');
    hist.setAttribute('aria-label', `histogram of log2|x| from ${s.histogram.log2Min} to ${s.histogram.log2Min + counts.length - 1}`);
    const max = counts.reduce((a, b) => Math.max(a, b), 0);
    counts.forEach((c, k) => {
      const bar = el('div');
      bar.style.height = `${c ? Math.max(2, (100 * c) / max) : 0}%`;
      bar.title = `2^${s.histogram.log2Min + k} ≤ |x| < 2^${s.histogram.log2Min + k + 1}: ${c.toLocaleString('en-US')}`;
      hist.append(bar);
    });
    const axis = el('div', 'hist-axis');
    axis.append(el('span', '', `2^${s.histogram.log2Min}`), el('span', '', 'log2 |x|'), el('span', '', `2^${s.histogram.log2Min + counts.length}`));
    box.append(hist, axis);
  }
  return box;
}

export function renderEntryDetail(container, entry, { config, label }) {
  container.replaceChildren();
  container.hidden = false;
  container.append(el('h3', '', `Entry for slot ${entry.id}${label ? ` (${label})` : ''}: step ${entry.step}, ${fmt(entry.count)} elements, at byte ${entry.offset}`));
  if (!entry.m) {
    container.append(el('p', 'meta', 'Statistics are being computed…'));
    return;
  }
  container.append(moment('m (first moment)', entry.m), moment('v (second moment)', entry.v));
  if (config && typeof entry.step === 'number') {
    const b1 = Number(config.beta1), b2 = Number(config.beta2), t = entry.step + 1;
    const c1 = 1 / (1 - b1 ** t), c2 = 1 / (1 - b2 ** t);
    const mMean = Number(entry.m.mean) * c1, vMean = Number(entry.v.mean) * c2;
    const p = el('p', 'bias');
    p.textContent = `Next step t = ${t}: m̂ = m / (1 − β1^${t}) = m × ${fmt(c1)} (mean ${fmt(mMean)}, rms ${fmt(Number(entry.m.rms) * c1)}); ` +
      `v̂ = v / (1 − β2^${t}) = v × ${fmt(c2)} (mean ${fmt(vMean)}). ` +
      `Typical |update| / lr ≈ rms(m̂) / (√mean(v̂) + ε) = ${fmt((Number(entry.m.rms) * c1) / (Math.sqrt(Math.max(0, vMean)) + Number(config.epsilon)))}.`;
    container.append(p);
  }
}
