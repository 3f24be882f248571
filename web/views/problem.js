// The problem card: why the main file is broken (the core's diagnostic, where, the slot it names,
// the bytes around it), or that the files could not be read at all. Opening a broken file selects
// the slot its error names.
import { el } from '../dom.js';
import { renderProblem, renderFileProblem } from '../parts/problem-box.js';

export class ProblemView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.card = el('section', 'card problem');
    this.card.id = 'problem';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const { store } = this.ctx;
    if (store.failure) {   // an I/O or HTTP error, or an address that names no file
      const { names, error } = store.failure;
      renderProblem(this.card, error, { title: `Could not read ${names.join(' or ')}` });
      return;
    }
    const main = store.primary;
    this.card.hidden = !main || main.summary.ok;
    if (this.card.hidden) return;
    renderFileProblem(this.card, main, this.ctx, { title: 'Why this file is broken', onSlot: (i) => store.select(i, 'problem') });
    const slot = main.summary.error.slot;
    const opt = store.optimizer;
    if (slot !== null && slot !== undefined && main.summary.error.subject !== 'expected' && opt === main && opt.summary.schema && Number(slot) < opt.cols.n) {
      store.select(Number(slot), 'problem');   // delivered once every view has the files
    }
  }

  onSelect() {}

  onLabels() {}
}
