// A PyTorch optimizer's own card, from the report alone (docs/pytorch.md): where the state dict
// sits in its torch.save container, whether torch.load(weights_only=True) takes the file and
// the globals it would refuse, the param groups (lr, betas, eps, weight decay, amsgrad), and the
// optimizer's entries by index. Once paired with its model each index also shows the parameter
// the pairing placed it on (the report's `pairing`); until then, that the model is needed.
import { el, testid } from '../dom.js';
import { count, plain, plural, shape } from '../format.js';
import { weightsOnlyLines } from '/js/index.js';

const MAX_ROWS = 1000;

const CONTAINER = { zip: 'a torch.save zip', legacy: 'a legacy torch.save file', safetensors: 'a safetensors file' };
const KIND = { adam: 'Adam', adamw: 'AdamW' };

/** Where a state dict is in the file's pickle: the top level, or the report's path to it. */
const at = (path) => (path ? `at ${path}` : 'at the top level');

function line(text, id, cls = 'meta') {
  const p = el('p', cls, text);
  return id ? testid(p, id) : p;
}

/** The param groups, one row each, their values as the file stores them. */
function groupsTable(groups) {
  const table = el('table', 'torch-table');
  const head = el('tr');
  for (const h of ['group', 'lr', 'betas', 'eps', 'weight decay', 'amsgrad', 'maximize', 'parameters']) head.append(el('th', '', h));
  const thead = el('thead');
  thead.append(head);
  table.append(thead);
  const body = el('tbody');
  groups.forEach((g, k) => {
    const tr = testid(el('tr'), 'torch-group');
    const cells = [String(k), plain(g.lr), g.betas ? `${plain(g.betas[0])}, ${plain(g.betas[1])}` : '—', plain(g.eps), plain(g.weightDecay),
      g.amsgrad ? 'yes' : 'no', g.maximize ? 'yes' : 'no', count(g.params.length)];
    for (const c of cells) tr.append(el('td', '', c));
    body.append(tr);
  });
  table.append(body);
  return table;
}

/** The entries by the optimizer's index: before pairing the report's entries, after it the
 *  pairing's indices with the parameter each was placed on. */
function indexTable(rows, paired) {
  const table = el('table', 'torch-table');
  const head = el('tr');
  // a name-keyed optimizer's entries (FSDP) carry their names before pairing too
  const named = !paired && rows.some((x) => x.name !== null && x.name !== undefined);
  for (const h of ['index', 'group', ...(paired ? ['parameter', 'slot'] : named ? ['name'] : []), 'shape', 'dtype', 'step']) head.append(el('th', '', h));
  const thead = el('thead');
  thead.append(head);
  table.append(thead);
  const body = el('tbody');
  for (const x of rows.slice(0, MAX_ROWS)) {
    const tr = testid(el('tr'), 'torch-index');
    tr.dataset.index = String(x.index);
    const cells = [String(x.index), x.group === null || x.group === undefined ? '—' : String(x.group)];
    if (paired) cells.push(x.name ?? (x.decided === false ? 'not told apart' : 'not placed'), x.slot === null ? '—' : String(x.slot));
    else if (named) cells.push(x.name ?? '—');
    cells.push(x.shape ? shape(x.shape) : '—', x.dtype ?? '—', x.step === null || x.step === undefined ? '—' : count(x.step));
    cells.forEach((c, j) => tr.append(el('td', paired && j === 2 && x.slot === null ? 'bad' : '', c)));
    body.append(tr);
  }
  table.append(body);
  const box = el('div', 'torch-scroll');
  box.append(table);
  if (rows.length > MAX_ROWS) box.append(line(`… and ${count(rows.length - MAX_ROWS)} more`));
  return box;
}

function renderTorch(card, file) {
  const s = file.summary;
  card.replaceChildren();
  card.append(el('h2', '', 'PyTorch optimizer state'));
  const c = s.container;
  const where = [`${file.name} is ${CONTAINER[c?.format] ?? 'a torch.save file'}${c?.records ? ` of ${plural(c.records, 'record')}` : ''}`,
    `its optimizer state dict ${at(s.optimizer.path)}`];
  if (s.model !== null && s.model !== undefined) where.push(`its model's state dict ${at(s.model)}`);
  card.append(line(`${where.join('; ')}.`, 'torch-container'));
  for (const o of s.otherOptimizers ?? []) card.append(line(`another optimizer state dict ${at(o.path ?? o)}: not the one shown`));

  // torch.load(weights_only=True): the report says whether it would, and what it would refuse
  const globals = s.globals ?? [];
  const refused = s.refused ?? [];
  // the newest release read speaks for the default; every release and range has its own line
  const by = s.weightsOnlyBy ?? [];
  const newest = by.length ? `torch ${by[by.length - 1].torch}` : 'the newest torch';
  const wo = testid(el('p', s.weightsOnly ? 'meta good' : 'meta bad'), 'weights-only');
  wo.textContent = s.weightsOnly
    ? `torch.load(weights_only=True) of ${newest} loads it${globals.length ? `: the globals it names are ${globals.join(', ')}` : ''}.`
    : `torch.load(weights_only=True) of ${newest} refuses it: ${refused.length ? `it names ${refused.join(', ')}` : 'see the globals below'}.${globals.length ? ` Every global it names: ${globals.join(', ')}.` : ''}`;
  card.append(wo);
  const list = testid(el('ul', 'meta weights-only-by'), 'weights-only-by');
  for (const l of weightsOnlyLines(by)) list.append(el('li', '', l));
  card.append(list);

  const groups = s.optimizer.groups ?? [];
  card.append(el('h3', '', `${KIND[s.optimizer.kind] ?? 'Adam or AdamW (the file does not say which)'}, ${plural(groups.length, 'param group')}`));
  const gbox = el('div', 'torch-scroll');
  gbox.append(groupsTable(groups));
  card.append(gbox);

  const pairing = s.pairing;
  const rows = pairing?.indices ?? s.entries ?? [];
  const byName = s.optimizer.keying === 'names' || s.optimizer.keying === 'flat';
  card.append(el('h3', '', byName ? `State by name (${plural(rows.length, 'parameter')})` : `State by index (${plural(rows.length, 'index', 'indices')})`));
  if (s.needsModel && !pairing) {
    card.append(line('Its slots (which parameter each index is) come from its model: drop the optimizer with its model (pytorch_model.bin, a .pt, model.safetensors), or add the model with Add model state….', 'needs-model'));
  }
  if (rows.length) card.append(indexTable(rows, !!pairing));
}

/** The card of a PyTorch optimizer: shown while one is open. */
export class TorchView {
  constructor({ store }) {
    this.store = store;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'torch');
    this.card.id = 'torch';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const opt = this.store.optimizer;
    this.card.hidden = !opt?.summary.optimizer;
    if (!this.card.hidden) renderTorch(this.card, opt);
  }

  onSelect() {}

  onLabels() {}
}
