// The header card: family, version, dtype, optimizer, hyperparameters (value and exact bits),
// random counter, and the verdict badge.
import { el } from './table.js';

function field(key, value, { testid, bits, title } = {}) {
  const f = el('div', 'field');
  f.append(el('div', 'k', key));
  const v = el('div', 'v', value);
  if (testid) v.setAttribute('data-testid', testid);
  if (title) v.title = title;
  f.append(v);
  if (bits) f.append(el('div', 'bits', bits));
  return f;
}

const show = (x) => (x === null || x === undefined ? '—' : String(x));
const count = (x) => (typeof x === 'number' ? x.toLocaleString('en-US') : show(x));

export function renderHeader(container, report, { name, bytesRead }) {
  container.replaceChildren();
  container.dataset.bytesRead = String(bytesRead);
  const title = el('div', 'title-line');
  title.append(el('span', 'file', name));
  const badge = report.ok ? el('span', 'badge ok', 'valid') : el('span', 'badge bad', 'invalid');
  title.append(badge);
  if (report.warnings.length) title.append(el('span', 'badge warn', `${report.warnings.length} warning${report.warnings.length > 1 ? 's' : ''}`));
  const sizeText = typeof report.size === 'number' ? `${report.size.toLocaleString('en-US')} bytes` : `${report.size} bytes`;
  title.append(el('span', 'meta', `${sizeText}; ${bytesRead.toLocaleString('en-US')} bytes read`));
  container.append(title);

  const grid = el('div', 'summary-grid');
  grid.append(field('Family', report.family ? `${report.name} (${report.family})` : 'not a TLADAMF checkpoint'));
  grid.append(field('Format version', show(report.version), { testid: 'field-version' }));
  grid.append(field('Moment dtype', show(report.dtype), { testid: 'field-dtype' }));
  const c = report.config;
  grid.append(field('Optimizer', c ? (c.kind === 'adamw' ? 'AdamW' : 'Adam') : '—', {
    testid: 'field-kind',
    title: c?.kind === 'adamw' ? 'decoupled weight decay: the update subtracts lr·wd·θ' : undefined,
  }));
  if (c) {
    grid.append(field('beta1', show(c.beta1), { bits: c.bits.beta1 }));
    grid.append(field('beta2', show(c.beta2), { bits: c.bits.beta2 }));
    grid.append(field('epsilon', show(c.epsilon), { bits: c.bits.epsilon }));
    grid.append(field('weight decay', show(c.weightDecay), { bits: c.bits.weightDecay }));
  }
  const counter = report.hasRandomCounter === null ? '—' : report.hasRandomCounter ? String(report.randomCounter) : 'none (legacy)';
  grid.append(field('Random counter', counter, {
    testid: 'field-counter',
    title: 'seeded random operations already drawn (dropout masks…); without it stochastic training cannot resume exactly',
  }));
  if (report.hasSchema) {
    const n = report.n;
    grid.append(field('Slots', report.wellFormed === null ? `${n.toLocaleString('en-US')} read` : `${n.toLocaleString('en-US')} (${Number(report.trainableCount).toLocaleString('en-US')} trainable)`));
    grid.append(field('Optimizer states', count(report.optimizerStateCount)));
    grid.append(field('Tied slots', report.hasAliases === null ? '—' : report.hasAliases ? 'yes' : 'none'));
  }
  container.append(grid);
}
