// An optimizer checkpoint and its model-state file: the package's pair verdict (pairs / does
// not pair, every failure in check order, warnings) and, for each tie of the sharing map,
// whether the state file saved the tied parameters with equal values.
import { el, testid, button } from '../dom.js';
import { plural } from '../format.js';
import { renderProblem } from '../parts/problem-box.js';

const MAX_TIES = 200;

function renderPair(card, result, { optName, stateName, cols, label = () => '', onSlot, stateBytes, stateSize, deepspeed = false }) {
  card.replaceChildren();
  card.hidden = false;
  // a DeepSpeed checkpoint is paired with the new model it will be loaded into, as DeepSpeed
  // pairs them (docs/deepspeed.md), a DCP folder by name (deepspeed 'dcp', docs/distributed.md):
  // the core's verdict, its failures and its note
  card.append(el('h2', '', deepspeed === 'dcp' ? 'Distributed checkpoint and the model, by name' : deepspeed ? 'DeepSpeed checkpoint and the new model' : 'Optimizer and model state'));
  card.append(el('p', 'meta', optName === stateName ? `${optName}: its optimizer with its model` : deepspeed ? `${optName} loaded into ${stateName}` : `${optName} with ${stateName}`));
  const verdict = testid(el('div', 'verdict'), 'pair-verdict');
  card.append(verdict);
  if (!result) {
    verdict.textContent = 'Pairing…';
    return;
  }
  if (result.error && !result.failures) {
    verdict.classList.add('fails');
    // an invalid file never pairs: its own diagnostic (the package says which file it is)
    const which = { state: `Does not pair: ${stateName} is invalid`, optimizer: `Does not pair: ${optName} is invalid` }[result.error.subject];
    renderProblem(verdict, result.error, { title: which ?? 'Cannot pair these files', label, onSlot });
    return;
  }
  verdict.classList.add(result.pairs ? 'loads' : result.pairs === null ? 'cannot-tell' : 'fails');
  // structural only: the package's note says what was not compared; pairs null: the files
  // cannot tell, and the package's condition says on what the pair holds
  const head = result.pairs ? 'Pairs, in structure:' : result.pairs === null ? 'Cannot tell whether they pair:' : `Does not pair: ${plural(result.failures.length, 'failure')}.`;
  verdict.append(el('strong', '', head));
  if (result.pairs || (deepspeed && result.note)) verdict.append(' ', testid(el('span', 'pair-note', result.note), 'pair-note'));
  if (result.pairs === null) verdict.append(' ', testid(el('span', 'pair-condition', result.error.message), 'pair-condition'));
  if (result.failures.length) {
    const list = el('ol', 'failures');
    for (const f of result.failures) {
      const li = testid(el('li'), 'pair-failure');
      // pairing failures point into the state file (docs/format.md 6): its name and bytes
      renderProblem(li, f, { label, onSlot, fileName: stateName, fileSize: stateSize, readBytes: stateBytes });
      list.append(li);
    }
    verdict.append(list);
  }
  for (const w of result.warnings ?? []) card.append(testid(el('p', 'meta warn-line', `warning: ${w}`), 'warning'));
  if (result.pytorch) card.append(positional(result.pytorch, result.pairs === false ? result.error : null));

  // Ties: the state file must hold the same values for every slot of a tied group (a DeepSpeed
  // checkpoint's new model is compared in structure only: its ties are the failures above).
  if (deepspeed) return;
  const sh = cols?.sharing;
  if (!sh || !sh.links) return;
  const bySlot = new Map();
  for (const f of result.failures) if (f.slot !== null && f.slot !== undefined) bySlot.set(Number(f.slot), f);
  const countFailed = result.failures.some((f) => f.slot === null || f.slot === undefined);
  const box = el('div', 'ties');
  box.append(el('h3', '', `Tied slots in the state file (${plural(sh.links, 'tie')})`));
  const list = el('ul', 'tie-list');
  let shown = 0;
  for (let i = 0; i < cols.n && shown < MAX_TIES; i++) {
    if (sh.tied[i] !== 1) continue;
    const r = cols.repAt(i);
    if (r === i || r < 0) continue;
    shown++;
    const f = bySlot.get(i);
    const li = testid(el('li', f ? 'bad' : 'good'), 'tie-equality');
    const name = (j) => `slot ${j}${label(j) ? ` ${label(j)}` : ''}`;
    li.append(onSlot ? button(name(i), { cls: 'link', onClick: () => onSlot(i) }) : name(i), ` and ${name(r)}: `);
    const unknown = countFailed || bySlot.has(r);
    li.append(f ? `saved values differ (failure ${result.failures.indexOf(f) + 1} above)` : unknown ? 'not compared (an earlier check failed for these slots)' : 'saved values equal');
    list.append(li);
  }
  if (sh.links > MAX_TIES) list.append(el('li', 'meta', `… and ${sh.links - MAX_TIES} more`));
  box.append(list);
  card.append(box);
}

/** What PyTorch's load_state_dict would do with this optimizer and model, from the pairing the
 *  core reports (`positionalKnown`, each index's `positionalSlot` beside the `slot` found): it
 *  gives the k-th saved index the k-th parameter the training code passes, without a word. The
 *  indices it gives another parameter, the failed index's, and the model's parameters no index
 *  reached (frozen, or buffers). */
function positional(pairing, failure) {
  const box = testid(el('div', 'positional'), 'pair-positional');
  const say = (text, id) => box.append(testid(el('p', 'meta', text), id));
  // a name-keyed optimizer (FSDP) pairs by name: no position is involved (docs/pytorch.md)
  if (pairing.byName) {
    box.append(el('h3', '', 'Paired by name'));
    say('The optimizer keys its state by parameter names: a load by name gives each parameter its own state, whatever the order.', 'positional-verdict');
    if (pairing.notInOptimizer.length) say(`Not in the optimizer (frozen, or buffers): ${pairing.notInOptimizer.join(', ')}.`, 'not-in-optimizer');
    return box;
  }
  box.append(el('h3', '', 'PyTorch\'s own pairing (load_state_dict, by position)'));
  if (!pairing.positionalKnown) {
    say('load_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell).', 'positional-verdict');
  } else {
    const moved = pairing.indices.filter((x) => x.slot !== null && x.slot !== x.positionalSlot);
    const failed = failure?.index !== undefined && failure?.index !== null ? pairing.indices.find((x) => x.index === failure.index) : null;
    if (moved.length) {
      say(`load_state_dict pairs by position, without a word: ${plural(moved.length, 'index', 'indices')} to another parameter than found:`, 'positional-verdict');
      const list = el('ul', 'positional-list');
      for (const x of moved.slice(0, MAX_TIES)) list.append(testid(el('li', 'bad', `index ${x.index} (${x.name}) → ${x.positionalName ?? 'no parameter'}`), 'positional-moved'));
      if (moved.length > MAX_TIES) list.append(el('li', 'meta', `… and ${moved.length - MAX_TIES} more`));
      box.append(list);
    } else if (!failed) say('load_state_dict pairs by position: here it gives every index the parameter found for it.', 'positional-verdict');
    if (failed) say(`load_state_dict gives index ${failed.index} to ${failed.positionalName ?? 'no parameter'}, without a word.`, 'positional-failed');
  }
  // frozen or buffers, when the files (or the names given) say so of every one
  if (pairing.notInOptimizer.length) say(`Not in the optimizer${pairing.untold?.length ? '' : ' (frozen, or buffers)'}: ${pairing.notInOptimizer.join(', ')}.`, 'not-in-optimizer');
  return box;
}

/** The pair card: with an optimizer checkpoint and its model-state file open, asks the worker for
 *  the verdict and tells the store (the health pass runs again with the parameters). */
export class PairView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'pair';
    this.card.hidden = true;
    root.append(this.card);
  }

  async onFiles() {
    const { store, readBytes } = this.ctx;
    const opt = store.optimizer, st = store.stateFile;
    this.card.hidden = !(opt && st);
    this.shown = null;
    this.pairedWithStats = null;
    if (this.card.hidden) return;
    const options = { optName: opt.name, stateName: st.name, cols: opt.cols, label: (i) => store.label(i), onSlot: (i) => store.select(i, 'pair'),
      stateBytes: readBytes(st), stateSize: Number(st.summary.size), deepspeed: opt.summary.dcp ? 'dcp' : !!opt.summary.deepspeed };
    renderPair(this.card, null, options);
    await this.verdict(opt, st, options);
  }

  /** Ask the worker for the pair verdict and show it (unless other files opened meanwhile). */
  async verdict(opt, st, options) {
    const { store, rpc } = this.ctx;
    let result;
    try {
      result = await rpc.request('pair');
    } catch (err) {
      if (err.name === 'AbortError') return;
      result = { error: err };
    }
    if (store.optimizer !== opt || store.stateFile !== st) return;
    this.shown = { result, options };
    renderPair(this.card, result, options);
    store.setPair(result);
  }

  onSelect() {}

  /** The state file's statistics arrived (a scan of its tensors attached them to it in the
   *  worker): the verdict again, now with its warnings about the values read (docs/format.md 6). */
  onStats({ kind }) {
    const { store, stats } = this.ctx;
    const scan = stats.scans.state;
    if (kind !== 'state' || !scan || !this.shown || this.pairedWithStats === scan) return;
    this.pairedWithStats = scan;
    this.verdict(store.optimizer, store.stateFile, this.shown.options);
  }

  /** The ties and failures name slots: again with the new names. */
  onLabels() {
    const { store } = this.ctx;
    if (this.shown && store.pair === this.shown.result) renderPair(this.card, this.shown.result, this.shown.options);
  }
}
