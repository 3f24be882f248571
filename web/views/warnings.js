// Warnings of the open files: the file stays valid, but something deserves attention.
import { el, testid } from '../dom.js';

export class WarningsView {
  constructor({ store }) {
    this.store = store;
  }

  mount(root) {
    this.card = el('section', 'card warnings');
    this.card.id = 'warnings';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const { store } = this;
    const main = store.primary;
    const second = store.optimizer && store.stateFile && !store.stateFile.asModel ? store.stateFile : null;   // a file holding both: its warnings once
    const warnings = main ? [...main.summary.warnings, ...(second?.summary.warnings ?? [])] : [];
    this.card.hidden = !warnings.length;
    const ul = el('ul');
    for (const w of warnings) ul.append(testid(el('li', '', w), 'warning'));
    this.card.replaceChildren(el('h2', '', 'Warnings (the file stays valid)'), ul);
  }

  onSelect() {}

  onLabels() {}
}
