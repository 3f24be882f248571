// The header card, for any family, from the report alone: family, name, version and element
// dtype; then what the report holds: the optimizer and its hyperparameters (value and exact
// bits), the random counter, slot counts (broken ties among them), the tensor count; how many
// bytes were read (asked for again after each pass that reads payloads), and the verdict badge. One view shows the main file (#summary), another the
// model-state file of a pair (#state-summary, with its own problem when it is broken).
import { el, testid } from '../dom.js';
import { dcpAlone } from '/js/index.js';
import { count, plain, plural, bytes, ioText } from '../format.js';
import { renderFileProblem } from '../parts/problem-box.js';

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

/** The card's byte count: what was read (or transferred) of the file so far, on the card's data
 *  attributes too (tests compare them with a counting source). */
function showIo(container, { summary: s, io }) {
  if (io?.via === 'http') container.dataset.bytesTransferred = String(io.bytesTransferred);
  else delete container.dataset.bytesTransferred;
  container.dataset.bytesRead = String(io?.bytesRead ?? io?.bytesTransferred ?? 0);
  const line = container.querySelector('.io-line');
  if (line) line.textContent = `${bytes(s.size)}; ${ioText(io, s.size)}`;
}

/** Ask the worker again what `role`'s file has read (statistics, a health pass, an export read
 *  payloads since it opened), then show it, unless other files were opened meanwhile. */
async function refreshIo(container, { store, rpc }, file) {
  const io = await rpc.request('io', { role: store.roleOf(file) }).catch(() => null);   // a worker replaced (Cancel): keep the last
  if (!io || container.hidden || store.files[store.roleOf(file)] !== file) return;
  file.io = io;
  showIo(container, file);
}

/** The sum of `n` exact counts (numbers, or decimal strings past 2^53), exact: a BigInt. */
function total(n, at) {
  let sum = 0n;
  for (let i = 0; i < n; i++) sum += BigInt(at(i));
  return sum;
}

/** The step of the entries: the one step, or the range when they differ; null for none. */
function stepsOf(cols) {
  let lo = null, hi = null;
  for (let k = 0; k < cols.entryTotal; k++) {
    const step = BigInt(cols.entry(k).step);
    if (lo === null || step < lo) lo = step;
    if (hi === null || step > hi) hi = step;
  }
  if (hi === null) return null;
  return lo === hi ? { key: 'Step', text: count(hi) } : { key: 'Steps', text: `${count(lo)}–${count(hi)}` };
}

function renderHeader(container, file, { role = 'main' } = {}) {
  const { summary: s, cols, name } = file;
  container.replaceChildren();
  container.hidden = false;
  const title = el('div', 'title-line');
  if (role !== 'main') title.append(el('span', 'role', role));
  title.append(el('span', 'file', name));
  // a DCP file alone is neither valid nor invalid: its records' checks need the whole folder
  const alone = dcpAlone(s);
  title.append(!s.ok ? el('span', 'badge bad', 'invalid') : alone ? Object.assign(el('span', 'badge warn', 'cannot tell'), { title: alone }) : el('span', 'badge ok', 'valid'));
  if (s.warnings.length) title.append(el('span', 'badge warn', plural(s.warnings.length, 'warning')));
  title.append(testid(el('span', 'meta io-line'), role === 'main' ? 'io' : 'io-b'));
  container.append(title);
  showIo(container, file);

  const grid = el('div', 'summary-grid');
  const fid = (id) => (role === 'main' ? id : undefined);
  // a PyTorch optimizer: its groups, container and indices are its own card's (views/pytorch.js);
  // TorchLean's fields (version, counter, one config) are not a PyTorch or safetensors file's
  const foreign = 'container' in s;   // a PyTorch or safetensors file
  const torch = foreign && s.kind === 'optimizer' && !!s.optimizer;
  grid.append(field('Family', s.family ? `${s.name} (${s.family})` : 'none ckptscope reads'));
  if (!foreign || s.version !== null) grid.append(field('Format version', plain(s.version), { id: fid('field-version') }));
  if (!foreign || s.dtype !== null) grid.append(field('dtype', plain(s.dtype), { id: fid('field-dtype'), title: 'the element type of the file\'s values' }));
  if (torch) {
    grid.append(field('Optimizer', { adam: 'Adam', adamw: 'AdamW' }[s.optimizer.kind] ?? 'Adam or AdamW', { id: fid('field-kind') }));
    grid.append(field('Param groups', count(s.optimizer.groups.length)));
    grid.append(field('Indices with state', count(s.entryCount ?? s.optimizer.entryCount)));
    if (s.tensorCount) grid.append(field('Model tensors', count(s.tensorCount), { title: 'the model state dict the file holds too' }));
  } else if ('tensorCount' in s) grid.append(field('Tensors', s.tensorCount === null ? '—' : count(s.tensorCount)));
  if (!torch && 'tensorCount' in s && s.tensorCount !== null) {
    grid.append(field('Stored values', count(total(cols.tensorTotal, (i) => cols.tensor(i).count)), { id: fid('field-values'), title: 'the values of every tensor the file stores (buffers and tied copies among them)' }));
  }
  if (!('config' in s) || (foreign && !torch)) {   // a family without an optimizer configuration
    container.append(grid);
    return;
  }
  const c = s.config;
  if (!torch) {
    // a kind the files do not say is no fact: Adam or AdamW (its configuration is read as Adam's)
    const unsaid = !!c && s.kindUnknown;
    grid.append(field('Optimizer', !c ? '—' : unsaid ? 'Adam or AdamW' : c.kind === 'adamw' ? 'AdamW' : 'Adam', {
      id: fid('field-kind'),
      title: unsaid ? 'the checkpoint does not say which: health shows no decay term until the kind is given (ckptscope --kind adam|adamw)'
        : c?.kind === 'adamw' ? 'decoupled weight decay: the update subtracts lr·wd·θ' : undefined,
    }));
  }
  if (c && !torch) {
    grid.append(field('beta1', plain(c.beta1), { bits: c.bits.beta1 }));
    grid.append(field('beta2', plain(c.beta2), { bits: c.bits.beta2 }));
    grid.append(field('epsilon', plain(c.epsilon), { bits: c.bits.epsilon }));
    grid.append(field('weight decay', plain(c.weightDecay), { bits: c.bits.weightDecay }));
  }
  const counter = s.hasRandomCounter === null ? '—' : s.hasRandomCounter ? String(s.randomCounter) : 'none (legacy)';
  if (!torch) {
    grid.append(field('Random counter', counter, {
      id: fid('field-counter'),
      title: 'seeded random operations already drawn (dropout masks…); without it stochastic training cannot resume exactly',
    }));
  }
  if (s.schema) {
    grid.append(field('Slots', s.wellFormed === null || s.trainableCount === null
      ? `${count(cols.n)} read${s.slotCount !== null && Number(s.slotCount) !== cols.n ? ` of ${count(s.slotCount)}` : ''}`
      : `${count(cols.n)} (${count(s.trainableCount)} trainable)`));
    // the core's counts (format.md 3): the storages the optimizer updates, each once; the slots
    // without optimizer state apart (a state dict's buffers are among them)
    const e = s.elementCounts;
    grid.append(field('Trainable parameters', e ? count(e.owned) : '—', {
      id: fid('field-params'),
      title: e ? 'the elements the optimizer updates, a tied slot\'s shared storage once: sum(p.numel() for p in model.parameters() if p.requires_grad)'
        : 'the slots are not known whole or break the sharing rules: their elements are not counted',
    }));
    if (e && Number(e.frozen) > 0) {
      grid.append(field('Frozen or buffers', count(e.frozen), { id: fid('field-frozen'), title: 'the elements of the slots without optimizer state: frozen parameters or buffers (the files do not say which)' }));
    }
    grid.append(field('Optimizer states', count(s.optimizerStateCount)));
    const steps = stepsOf(cols);
    if (steps) grid.append(field(steps.key, steps.text, { id: fid('field-step'), title: steps.key === 'Steps' ? 'the entries\' steps differ: the smallest and the largest' : 'the step of every entry' }));
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

/** The header of the main file: the optimizer checkpoint when one is open, else what was opened. */
export class HeaderView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'summary');
    this.card.id = 'summary';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const main = this.ctx.store.primary;
    this.card.hidden = !main;
    if (main) renderHeader(this.card, main);
  }

  /** Statistics arrived or a scan ended: payload bytes were read. */
  onStats() {
    this.onIo();
  }

  onIo() {
    const main = this.ctx.store.primary;
    if (main) refreshIo(this.card, this.ctx, main);
  }

  onSelect() {}

  onLabels() {}
}

/** The model-state file of a pair: its own header, and its own problem when it is broken. A
 *  file dropped on this card is taken as the model-state file. */
export class StateHeaderView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'state-summary');
    this.card.id = 'state-summary';
    this.card.dataset.drop = 'state';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const { store } = this.ctx;
    const second = store.optimizer && store.stateFile;
    this.card.hidden = !second;
    if (!second) return;
    renderHeader(this.card, second, { role: 'model state' });
    if (!second.summary.ok) {
      const p = el('div', 'problem-inline');
      this.card.append(p);
      renderFileProblem(p, second, this.ctx, { title: 'Why the model-state file is broken' });
    }
  }

  onStats() {
    this.onIo();
  }

  onIo() {
    const { store } = this.ctx;
    if (store.optimizer && store.stateFile) refreshIo(this.card, this.ctx, store.stateFile);
  }

  onSelect() {}

  onLabels() {}
}
