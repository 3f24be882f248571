// Slot names (a JSON array of strings) whose count differs from the slot count: said plainly,
// since they may belong to another model.
import { el } from '../dom.js';
import { plural } from '../format.js';

export class NamesView {
  constructor({ store }) {
    this.store = store;
  }

  mount(root) {
    this.card = el('section', 'card warnings');
    this.card.id = 'names-note';
    this.card.setAttribute('data-testid', 'names-warning');
    this.card.hidden = true;
    root.append(this.card);
  }

  render() {
    const { store } = this;
    const main = store.primary;
    const n = main ? (main.cols.kind === 'state' ? main.cols.tensorTotal : main.cols.n) : null;
    const names = store.labels;
    this.card.hidden = !(names && n !== null && names.length !== n && main.summary.ok);
    if (this.card.hidden) return;
    const from = store.labelsSource ? ` in ${store.labelsSource}` : '';
    this.card.replaceChildren(el('p', '', names.length < n
      ? `${plural(names.length, 'name')}${from} for ${plural(n, 'slot')}: slots ${names.length} to ${n - 1} have no name. The names may belong to another model.`
      : `${plural(names.length, 'name')}${from} for ${plural(n, 'slot')}: the last ${plural(names.length - n, 'name')} ${names.length - n === 1 ? 'matches' : 'match'} no slot. The names may belong to another model.`));
  }

  onFiles() {
    this.render();
  }

  onLabels() {
    this.render();
  }

  onSelect() {}
}
