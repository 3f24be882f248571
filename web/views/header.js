// The header card: family, version, dtype, optimizer, hyperparameters (value and exact bits),
// random counter, slot counts (broken ties among them), how many bytes were read, and the verdict
// badge. A model-state file shows its family, version and tensor count.
import { el, testid } from '../dom.js';
import { count, plain, plural, bytes } from '../format.js';

function field(key, value, { id, bits, title, cls } = {}) {
  const f = el('div', 'field');
  f.append(el('div', 'k', key));
  const v = el('div', `v ${cls ?? ''}`.trim(), value);
  if (id) testid(v, id);
  if (title) v.title = title;
  f.append(v);
  if (bits) f.append(el('div', 'bits', bits));
  return f;
}

/** What was read to open the file: bytes from disk, or bytes over HTTP by range requests. */
export function ioText(io, size) {
  if (!io) return '';
  if (io.via === 'http') return `${count(io.bytesTransferred)} bytes transferred over HTTP in ${plural(io.requests, 'range request')}`;
  return `${count(io.bytesRead)} of ${count(size)} bytes read`;
}

export function renderHeader(container, file, { role = 'main', extra } = {}) {
  const { summary: s, cols, io, name } = file;
  container.replaceChildren();
  container.hidden = false;
  if (io?.via === 'http') container.dataset.bytesTransferred = String(io.bytesTransferred);
  else delete container.dataset.bytesTransferred;
  container.dataset.bytesRead = String(io?.bytesRead ?? io?.bytesTransferred ?? 0);
  const title = el('div', 'title-line');
  if (role !== 'main') title.append(el('span', 'role', role));
  title.append(el('span', 'file', name));
  title.append(s.ok ? el('span', 'badge ok', 'valid') : el('span', 'badge bad', 'invalid'));
  if (s.warnings.length) title.append(el('span', 'badge warn', plural(s.warnings.length, 'warning')));
  const sizeText = `${bytes(s.size)}; ${ioText(io, s.size)}`;
  title.append(testid(el('span', 'meta', sizeText), role === 'main' ? 'io' : 'io-b'));
  if (extra) title.append(extra);
  container.append(title);

  const grid = el('div', 'summary-grid');
  const fid = (id) => (role === 'main' ? id : undefined);
  grid.append(field('Family', s.family ? `${s.name} (${s.family})` : 'not a TorchLean checkpoint'));
  grid.append(field('Format version', plain(s.version), { id: fid('field-version') }));
  if (s.kind === 'state') {
    grid.append(field('Tensors', s.tensorCount === null ? '—' : count(s.tensorCount)));
    grid.append(field('Values', 'float32'));
    container.append(grid);
    return;
  }
  grid.append(field('Moment dtype', plain(s.dtype), { id: fid('field-dtype') }));
  const c = s.config;
  grid.append(field('Optimizer', c ? (c.kind === 'adamw' ? 'AdamW' : 'Adam') : '—', {
    id: fid('field-kind'),
    title: c?.kind === 'adamw' ? 'decoupled weight decay: the update subtracts lr·wd·θ' : undefined,
  }));
  if (c) {
    grid.append(field('beta1', plain(c.beta1), { bits: c.bits.beta1 }));
    grid.append(field('beta2', plain(c.beta2), { bits: c.bits.beta2 }));
    grid.append(field('epsilon', plain(c.epsilon), { bits: c.bits.epsilon }));
    grid.append(field('weight decay', plain(c.weightDecay), { bits: c.bits.weightDecay }));
  }
  const counter = s.hasRandomCounter === null ? '—' : s.hasRandomCounter ? String(s.randomCounter) : 'none (legacy)';
  grid.append(field('Random counter', counter, {
    id: fid('field-counter'),
    title: 'seeded random operations already drawn (dropout masks…); without it stochastic training cannot resume exactly',
  }));
  if (s.schema) {
    grid.append(field('Slots', s.wellFormed === null || s.trainableCount === null
      ? `${count(cols.n)} read${s.slotCount !== null && Number(s.slotCount) !== cols.n ? ` of ${count(s.slotCount)}` : ''}`
      : `${count(cols.n)} (${count(s.trainableCount)} trainable)`));
    grid.append(field('Optimizer states', count(s.optimizerStateCount)));
    const sh = cols.sharing;
    let tied = '—';   // the sharing map was not read: nothing is known about ties
    if (sh && cols.repsKnown) {
      tied = [sh.links ? `${plural(sh.links, 'tie')} in ${plural(sh.groups, 'group')}` : '', sh.broken.length ? plural(sh.broken.length, 'broken tie') : '']
        .filter(Boolean).join('; ') || 'none';
    }
    grid.append(field('Tied slots', tied, { id: fid('field-ties'), cls: sh?.broken.length ? 'bad' : '' }));
  }
  container.append(grid);
}
