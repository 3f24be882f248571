// The sharing map card: the map (parts/map-canvas.js), its legend (what each colour means, the
// ties counted, broken ties named), zoom controls, and a caption for the slot under the pointer
// or the selected one. Hovering a slot tells the store (the tables light up its group).
import { el, button } from '../dom.js';
import { plural } from '../format.js';
import { SharingMap, groupColor } from '../parts/map-canvas.js';

export class MapView {
  constructor({ store }) {
    this.store = store;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'map-card';
    this.card.hidden = true;
    const head = el('div', 'card-head');
    this.legend = el('div', 'legend');
    this.legend.setAttribute('data-testid', 'map-legend');
    const tools = el('div', 'tools');
    tools.append(
      button('−', { onClick: () => this.map.zoomAt(1 / 1.5, this.map.width / 2), title: 'Zoom out' }),
      button('Fit', { onClick: () => this.map.resetZoom() }),
      button('+', { onClick: () => this.map.zoomAt(1.5, this.map.width / 2), title: 'Zoom in' }),
    );
    tools.firstChild.setAttribute('aria-label', 'Zoom out');
    tools.lastChild.setAttribute('aria-label', 'Zoom in');
    head.append(el('h2', '', 'Sharing map'), this.legend, tools);
    this.caption = el('p', 'meta map-status');
    this.caption.id = 'map-status';
    this.caption.setAttribute('data-testid', 'map-caption');
    const box = el('div', 'sharing-map');
    box.id = 'sharing-map';
    box.setAttribute('data-testid', 'sharing-map');
    this.card.append(head, this.caption, box);
    root.append(this.card);
    this.map = new SharingMap(box, {
      onHover: (i) => this.store.hover(i),
      onSelect: (i) => this.store.select(i, 'map'),
    });
  }

  get cols() {
    return this.store.optimizer?.summary.schema ? this.store.optimizer.cols : null;
  }

  onFiles() {
    const cols = this.cols;
    this.card.hidden = !cols;
    if (!cols) return;
    this.map.setData(cols, this.store.labels);
    renderLegend(this.legend, cols);
    this.showCaption(-1);
  }

  onSelect({ slot, from }) {
    const cols = this.cols;
    if (!cols || slot >= cols.n) return;
    if (from !== 'map') this.map.setSelected(slot);
    this.showCaption(slot);
  }

  onLabels(names) {
    if (this.cols) this.map.setLabels(names);
  }

  onHover({ slot }) {
    this.showCaption(slot >= 0 ? slot : this.store.selected);
  }

  /** The caption: the slot given when there is one, else how to use the map. */
  showCaption(slot) {
    const cols = this.cols;
    this.caption.textContent = cols && slot >= 0 && slot < cols.n
      ? describeSlot(cols, slot, (i) => this.store.label(i))
      : 'Hover a slot to see its group; click to select it. Wheel or +/− to zoom, drag to pan.';
  }
}

/** The legend: what each colour means, and the counts (broken ties among them). */
function renderLegend(container, cols) {
  container.replaceChildren();
  const sh = cols.sharing;
  const add = (cls, text, color) => {
    const span = el('span');
    const sw = el('i', `sw ${cls}`);
    if (color) sw.style.background = color;
    span.append(sw, text);
    container.append(span);
  };
  add('neutral', 'trainable');
  if (sh.groups) add('', sh.groups === 1 ? 'tied group' : 'tied groups (one colour each)', groupColor(0));
  add('frozen', 'frozen');
  if (cols.c.flags.length < cols.n) add('unknown', 'not read');
  if (sh.broken.length) add('broken', 'broken tie');
  const ties = !cols.repsKnown ? 'the sharing map was not read (the file broke before it)'
    : sh.links ? `${plural(sh.links, 'tie')} in ${plural(sh.groups, 'group')}`
    : sh.broken.length ? '' : 'no ties';
  if (ties) container.append(el('span', 'counts', ties));
  if (sh.broken.length) {
    const list = sh.broken.slice(0, 3).map((i) => `slot ${i}`).join(', ') + (sh.broken.length > 3 ? ', …' : '');
    const b = el('span', 'bad', `${sh.broken.length} broken tie${sh.broken.length === 1 ? '' : 's'} (${list}): the sharing-map rule rejects ${sh.broken.length === 1 ? 'it' : 'them'}`);
    b.setAttribute('data-testid', 'broken-ties');
    container.append(b);
  }
}

/** The caption of a slot: its name, shape and place in the sharing map. */
function describeSlot(cols, i, label) {
  const r = cols.rep(i);
  const named = (j) => `slot ${j}${label(j) ? ` (${label(j)})` : ''}`;
  let what;
  if (cols.broken(i)) what = `broken: tied to ${r === null ? 'nothing' : named(Number(r))}, which the sharing-map rule rejects`;
  else if (cols.trainable(i) === undefined) what = 'trainability not read (the file broke before it)';
  else if (!cols.trainable(i)) what = 'frozen (no optimizer state)';
  else if (r === i) {
    const g = cols.groupMembers(i);
    what = `owns its optimizer history${g.size > 1 ? `, shared by ${`${g.size - 1} tied slot${g.size === 2 ? '' : 's'}`}` : ''}`;
  } else if (r !== null && r !== undefined) what = `tied to ${named(Number(r))}`;
  else what = 'trainable';
  return `slot ${i}${label(i) ? ` ${label(i)}` : ''} ${cols.shapeText(i)}: ${what}`;
}

