// A DeepSpeed ZeRO checkpoint's own card, from the report alone (docs/deepspeed.md, the report's
// `deepspeed` member): its kind and stage, world size, module dtype, the DeepSpeed version and
// tag; the files of the tag folder that were read (each rank's partition with its size and the
// padding it records per group, a stale rank's marked); the parameter groups; the engine's
// steps; a file alone's note (which folder to open); and every failure of the checks, in the
// core's order and words. A folder's card offers Convert… (parts/convert-deepspeed.js).
import { el, button, testid } from '../dom.js';
import { count, plain, plural } from '../format.js';
import { openDeepSpeedConvert } from '../parts/convert-deepspeed.js';

function line(text, id, cls = 'meta') {
  const p = el('p', cls, text);
  return id ? testid(p, id) : p;
}

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
    for (const c of cells) tr.append(el('td', '', c));
    body.append(tr);
  }
  t.append(body);
  const box = el('div', 'torch-scroll');
  box.append(t);
  return box;
}

const ROLE = { model: 'model states', optimizer: 'optimizer partition' };
const flag = (b) => (b === null || b === undefined ? '—' : b ? 'yes' : 'no');

/** What the checkpoint is, in one line: kind, ranks, dtype, version, tag. */
function facts(d, kind) {
  const out = [d.kind ?? (kind === 'state' ? 'model states' : 'kind unknown')];
  if (d.stage !== null && d.stage !== undefined) out.push(`stage ${d.stage}`);
  if (d.worldSize !== null) out.push(d.lone ? `rank ${d.rank ?? '?'} of ${d.worldSize}` : `world size ${d.worldSize}`);
  if (d.dtype) out.push(`${d.dtype} module`);
  if (d.dsVersion !== null) out.push(`DeepSpeed ${d.dsVersion}`);
  if (d.tag !== null) out.push(`tag ${d.tag}`);
  return out.join(', ');
}

function renderDeepSpeed(card, file, ctx) {
  const s = file.summary, d = s.deepspeed;
  const head = el('div', 'card-head');
  head.append(el('h2', '', `DeepSpeed ${d.kind ?? 'checkpoint'}`));
  // a folder converts (a file alone is one rank's part); one that fails a check says why there
  if (!d.lone) {
    const tools = el('div', 'tools');
    tools.append(button('Convert…', { testid: 'ds-convert', title: 'As the torch.optim optimizer.pt and fp32 model, or a TorchLean TLADAMF file', onClick: () => openDeepSpeedConvert(ctx, file) }));
    head.append(tools);
  }
  card.replaceChildren(head);
  card.append(line(facts(d, s.kind), 'ds-facts'));
  if (d.note) card.append(line(d.note, 'ds-note'));
  if (!d.lone && d.files.length) {
    card.append(el('h3', '', `Files read (${plural(d.files.length, 'file')})`));
    const rows = d.files.map((f) => [f.name, f.rank === null ? '—' : String(f.rank), `${ROLE[f.role] ?? f.role}${f.stale ? ' (stale)' : ''}`, count(f.size),
      f.rank === null ? '—' : d.groups.map((g) => plain(g.paddings[f.rank])).join(', ')]);
    card.append(table(['file', 'rank', 'role', 'bytes', 'padding per group'], rows, 'ds-file'));
  }
  if (d.optimizerKind !== null) card.append(line(`${d.optimizerKind === 'adamw' ? 'AdamW' : 'Adam'}, as ${d.kindSaidBy === 'param_groups' ? 'its groups\' decoupled_weight_decay says' : 'ds_config.optimizer says'}.`, 'ds-optimizer'));
  if (d.groups.length) {
    card.append(el('h3', '', plural(d.groups.length, 'parameter group')));
    const rows = d.groups.map((g, k) => [String(k), plain(g.lr), g.betas ? g.betas.map(plain).join(', ') : '—', plain(g.eps), plain(g.weightDecay), flag(g.amsgrad),
      g.params ? count(g.params.length) : '—', plain(g.flatSize), g.paddings.length ? g.paddings.map(plain).join(', ') : '—', plain(g.step)]);
    card.append(table(['group', 'lr', 'betas', 'eps', 'weight decay', 'amsgrad', 'parameters', 'flat size', 'paddings', 'step'], rows, 'ds-group'));
  }
  if (d.globalSteps !== null) card.append(line(`The engine's global_steps ${d.globalSteps}, skipped_steps ${plain(d.skippedSteps)}.`, 'ds-engine'));
  if (d.failures?.length) {
    card.append(el('h3', '', `Fails ${d.failures.length === 1 ? 'a check' : `${d.failures.length} checks`}`));
    const ul = el('ul');
    for (const f of d.failures) ul.append(testid(el('li', 'bad', f.message), 'ds-failure'));
    card.append(ul);
  }
}

/** The card of a DeepSpeed checkpoint (a folder, or one of its files alone): shown while one is open. */
export class DeepSpeedView {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = ctx.store;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'deepspeed');
    this.card.id = 'deepspeed';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    const main = this.store.primary;
    this.card.hidden = !main?.summary.deepspeed;
    if (!this.card.hidden) renderDeepSpeed(this.card, main, this.ctx);
  }

  onSelect() {}

  onLabels() {}
}
