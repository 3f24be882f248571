// The statistics panel under the entries (or tensors) table: the selected slot's moments with
// the core's progress and Cancel, the parameter's own values when a model-state file is open, and
// the entry's exports. Statistics fetched once are kept (StatsStore).
import { $, el } from '../dom.js';
import { renderEntryDetail, renderTensorDetail } from './stats.js';

/** A progress tick: the bar and its figure updated in place (the Cancel button stays the same
 *  element, so a click on it is never lost to a redraw). False when there is no bar yet. */
function updateProgress(box, { done, total }) {
  const bar = box.querySelector('[data-testid=entry-progress]');
  if (!bar) return false;
  bar.value = total ? done / total : 0;
  const label = bar.previousElementSibling;
  if (label) label.textContent = `Computing statistics… ${total ? Math.floor((100 * done) / total) : 0}%`;
  return true;
}

export class DetailView {
  constructor(store, { stats, rpc, status, roleOf, params, entries, tensors, exports }) {
    Object.assign(this, { store, stats, rpc, status, roleOf, params, entries, tensors, exports });
    this.token = 0;
  }

  async slotStats(file, slot, onProgress) {
    const kind = file.cols.kind;
    const have = this.stats.get(kind, slot);
    if (have) return have;
    const s = await this.rpc.request('stats', { role: this.roleOf(file), slot }, { onProgress });
    if (this.store.files[this.roleOf(file)] === file) this.stats.put(kind, slot, s);
    return s;
  }

  /** The statistics panel of slot `slot` of the optimizer file (and its parameter's values). */
  async showSlot(slot) {
    const opt = this.store.optimizer, st = this.store.stateFile;
    const token = ++this.token;
    const box = $('entry-detail');
    const cols = opt.cols;
    const k = this.params.entryIndex(slot);
    const cancel = () => this.rpc.cancel().then(() => this.status('Statistics cancelled.'));
    let param = st && slot < st.cols.tensorTotal ? this.stats.get('state', slot) ?? undefined : st ? undefined : null;
    if (k < 0) {
      box.hidden = false;
      box.replaceChildren(el('h3', '', `Slot ${slot}${this.store.label(slot) ? ` (${this.store.label(slot)})` : ''}: ${cols.trainable(slot) === false ? 'frozen, no optimizer state' : cols.broken(slot) ? 'its tie is broken: no optimizer state can be read for it' : 'no optimizer state entry'}`));
      if (st && slot < st.cols.tensorTotal) {
        renderTensorDetail(box.appendChild(el('div', 'moment-wrap')), { index: slot, label: this.store.label(slot), tensor: st.cols.tensor(slot), shape: st.cols.shapeText(slot), stats: param });
        if (!param) {
          const p = await this.slotStats(st, slot).catch(() => null);
          if (token === this.token && p) renderTensorDetail(box.lastChild, { index: slot, label: this.store.label(slot), tensor: st.cols.tensor(slot), shape: st.cols.shapeText(slot), stats: p });
        }
      }
      return;
    }
    const entry = cols.entry(k);
    const owner = Number(entry.id);
    const base = { slot, entry, label: this.store.label(slot), ownerLabel: this.store.label(owner), config: opt.summary.config, onCancel: cancel };
    let s = this.stats.get('optimizer', slot) ?? this.stats.get('optimizer', owner);
    const draw = (extra = {}) => {
      if (token !== this.token) return;
      if (extra.progress && updateProgress(box, extra.progress)) return;
      renderEntryDetail(box, { ...base, stats: s, param, actions: s ? this.exports.entryActions(slot) : null, ...extra });
    };
    draw();
    try {
      if (!s) {
        s = await this.slotStats(opt, owner, (progress) => draw({ progress }));
        draw();
      }
      if (param === undefined) {
        param = await this.slotStats(st, slot);
        draw();
      }
      if (token === this.token) {
        this.entries.render();
        this.params.render();
        this.tensors.render();
      }
    } catch (err) {
      if (err.name === 'AbortError') draw({ error: 'cancelled' });
      else draw({ error: err.message });
    }
  }

  /** The statistics panel of a state file's tensor i. */
  async showTensor(i) {
    const st = this.store.stateFile;
    const token = ++this.token;
    const box = $('tensor-detail');
    const base = { index: i, label: this.store.label(i), tensor: st.cols.tensor(i), shape: st.cols.shapeText(i), onCancel: () => this.rpc.cancel() };
    const draw = (extra) => {
      if (token !== this.token || (extra.progress && updateProgress(box, extra.progress))) return;
      renderTensorDetail(box, { ...base, ...extra });
    };
    draw({ stats: this.stats.get('state', i) });
    if (this.stats.get('state', i)) return;
    try {
      const s = await this.slotStats(st, i, (progress) => draw({ progress }));
      draw({ stats: s });
      this.tensors.render();
    } catch (err) {
      draw({ error: err.name === 'AbortError' ? 'cancelled' : err.message });
    }
  }
}
