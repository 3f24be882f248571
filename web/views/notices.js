// Files of the last drop, pick or address that were not used, each with why: a JSON that is
// neither slot names nor a layout, one that is not valid JSON, a layout with no checkpoint to
// compare, the files past the first two. A card, so that it is seen; Dismiss closes it.
import { el, button, testid } from '../dom.js';

export class NoticesView {
  constructor({ store }) {
    this.store = store;
  }

  mount(root) {
    this.card = testid(el('section', 'card warnings'), 'notices');
    this.card.id = 'notices';
    this.card.hidden = true;
    root.append(this.card);
  }

  onNotices(notices) {
    this.card.hidden = !notices.length;
    if (!notices.length) return;
    const head = el('div', 'card-head');
    const tools = el('div', 'tools');
    tools.append(button('Dismiss', { testid: 'notices-close', onClick: () => this.store.setNotices([]) }));
    head.append(el('h2', '', notices.length === 1 ? 'A file was not used' : `${notices.length} files were not used`), tools);
    const list = el('ul');
    for (const n of notices) {
      const li = testid(el('li'), 'notice');
      li.dataset.file = n.name;
      li.append(el('strong', '', n.name), `: ${n.text}`);
      list.append(li);
    }
    this.card.replaceChildren(head, list);
  }

  onFiles() {}

  onSelect() {}

  onLabels() {}
}
