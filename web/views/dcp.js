// A distributed checkpoint's own card (docs/distributed.md), from the report alone (its `dcp`
// member, src/families/dcp/json.c): what its .metadata is (version, the classes' module paths, the optimizer
// part's key form, planner_data), its data files with their sizes, records and ranks, the other
// files beside them, its keys, parameter groups and bytes items, and the model part's tensors,
// each with its chunk map (parts/chunk-map.js) over its global shape, coloured by rank.
import { el, testid } from '../dom.js';
import { count, plain, plural, shape } from '../format.js';
import { chunkMap, chunkLegend } from '../parts/chunk-map.js';

/** Past this many tensors the card lists the first ones (the parameter table has them all). */
const ENTRY_ROWS_MAX = 500;

const FORM_NAMES = { N: 'nested (N)', N23: 'nested, groups as one item (N23)', F: 'flattened (F)', I: 'by index (I)' };

function line(text, id, cls = 'meta') {
  const p = el('p', cls, text);
  return id ? testid(p, id) : p;
}

/** A table whose cells are texts or elements, a row each with test id `rowId`. */
function table(headers, rows, rowId) {
  const t = el('table', 'torch-table');
  const head = el('tr');
  for (const h of headers) head.append(el('th', '', h));
  const thead = el('thead');
  thead.append(head);
  t.append(thead);
  const body = el('tbody');
  for (const cells of rows) {
    const tr = testid(el('tr'), rowId);
    for (const c of cells) {
      const td = el('td', '', typeof c === 'string' ? c : undefined);
      if (typeof c !== 'string') td.append(c);
      tr.append(td);
    }
    body.append(tr);
  }
  t.append(body);
  const box = el('div', 'torch-scroll');
  box.append(t);
  return box;
}

const rankText = (r) => (r === null || r === undefined ? '—' : String(r));

/** The ranks of an entry's chunks, lowest first (null last). */
function ranksOf(chunks) {
  return [...new Set(chunks.map((c) => (c.rank === undefined ? null : c.rank)))].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b));
}

/** How a tensor is trained, from the core's role (a slot without state whose values were not
 *  compared is "frozen or tied": the core cannot tell which). */
function trained(e, entries) {
  if (e.role === 'owner') return 'yes';
  if (e.role === 'tied') return `tied to ${entries[Number(e.representative)]?.name ?? e.representative}`;
  if (e.role === 'frozen') return 'no';
  return e.role;
}

const OPENED = { metadata: 'the index (.metadata) alone', distcp: 'a data file alone' };

function facts(d) {
  return [...(OPENED[d.opened] ? [OPENED[d.opened]] : []), d.version === null ? 'unversioned metadata' : `metadata version ${d.version}`, `classes of ${d.classes ?? 'unknown'}`,
    d.form === null ? 'no optimizer part' : `optimizer keys ${FORM_NAMES[d.form] ?? d.form}`, d.plannerData ? 'planner_data kept' : 'no planner_data'].join(', ');
}

function renderDcp(card, file) {
  const d = file.summary.dcp;
  const entries = d.entries;
  const head = el('div', 'card-head');
  head.append(el('h2', '', 'Distributed checkpoint (DCP)'));
  card.replaceChildren(head);
  // a data file alone has no index: what it is, its last record and the note
  card.append(line(d.opened === 'distcp' ? OPENED.distcp : facts(d), 'dcp-facts'));
  if (d.note) card.append(line(d.note, 'dcp-note'));
  const r = d.record;   // a data file alone: its last record
  if (r) card.append(line(`Its last record: ${plural(r.length, 'byte')} at byte ${count(r.offset)}${r.dtype ? `, a ${r.dtype} tensor of shape ${shape(r.shape)}` : ''}.`, 'dcp-record'));
  if (d.files.length) {
    card.append(el('h3', '', `Data files (${plural(d.files.length, 'file')})`));
    const rows = d.files.map((f) => [f.name, rankText(f.rank), f.size === null ? 'missing' : count(f.size), count(f.items)]);
    card.append(table(['file', 'rank', 'bytes', 'records'], rows, 'dcp-file-row'));
  }
  if (d.strays.length) card.append(line(`Other files, not named by .metadata: ${d.strays.join(', ')}.`, 'dcp-strays'));
  if (d.opened !== 'distcp') card.append(line(`Keys: ${plural(d.keys.model, 'model key')}, ${plural(d.keys.optimizer, 'optimizer key')}, ${plural(d.keys.other, 'other key')}.`, 'dcp-keys'));
  if (d.groups.length) {
    card.append(el('h3', '', plural(d.groups.length, 'parameter group')));
    // the index alone: the groups' values are bytes items in the data files, not read
    const rows = d.groups.map((g, k) => [String(k), plain(g.lr), g.betas ? g.betas.map(plain).join(', ') : '—', plain(g.eps), plain(g.weightDecay), d.opened === 'metadata' ? '—' : count(g.params.length)]);
    card.append(table(['group', 'lr', 'betas', 'eps', 'weight decay', 'parameters'], rows, 'dcp-group'));
  }
  if (d.bytesItems.length) {
    card.append(el('h3', '', plural(d.bytesItems.length, 'bytes item')));
    const rows = d.bytesItems.map((b) => [b.key, b.file, count(b.offset), count(b.length)]);
    card.append(table(['key', 'file', 'at byte', 'bytes'], rows, 'dcp-bytes-row'));
  }
  if (entries.length) {
    card.append(el('h3', '', `Tensors of the model part and their chunks (${plural(entries.length, 'tensor')})`));
    const all = ranksOf(entries.flatMap((e) => e.chunks));
    card.append(chunkLegend(all));
    const shown = entries.slice(0, ENTRY_ROWS_MAX);
    const rows = shown.map((e) => [e.name, shape(e.shape), e.dtype ?? '—', chunkMap(e.shape, e.chunks), ranksOf(e.chunks).map(rankText).join(', '), plain(e.step), trained(e, entries)]);
    card.append(table(['name', 'shape', 'dtype', 'chunks', 'ranks', 'step', 'trained'], rows, 'dcp-entry-row'));
    if (entries.length > shown.length) card.append(line(`The first ${count(shown.length)} of ${count(entries.length)} tensors; the parameter table lists them all.`));
  }
  const errors = d.diagnostics.filter((g) => g.severity === 'error');
  if (errors.length) {
    card.append(el('h3', '', `Fails ${errors.length === 1 ? 'a check' : `${errors.length} checks`}`));
    const ul = el('ul');
    for (const g of errors) ul.append(testid(el('li', 'bad', g.text), 'dcp-failure'));
    card.append(ul);
  }
}

/** The card of a distributed checkpoint (a folder, its .metadata or a data file alone): shown
 *  while one is open. */
export class DcpView {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = ctx.store;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'dcp-card');
    this.card.id = 'dcp';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const main = this.store.primary;
    this.card.hidden = !main?.summary.dcp;
    if (!this.card.hidden) renderDcp(this.card, main);
  }

  onSelect() {}

  onLabels() {}
}
