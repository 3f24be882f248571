// "Will it load in your TorchLean?": one row per TorchLean reader (docs/format.md 8). For the open
// optimizer checkpoint alone, the report's `readers` (can that reader read the file at all); with
// a layout or another checkpoint to compare with, that reader's check of the file against it, run
// in the worker. Verdicts, texts, hints and warnings are the core's, shown as they come.
import { el, button, testid } from '../dom.js';
import { openConvert } from '../parts/convert.js';

function row(name, { verdict, good, message = null, hint = null, warnings = [] }) {
  const tr = testid(el('tr', good ? 'reader-ok' : 'reader-bad'), 'reader-row');
  tr.dataset.reader = name;
  tr.dataset.verdict = verdict;
  const what = el('td');
  what.append(el('code', '', name));
  const said = el('td', 'reader-text');
  said.append(testid(el('span', `badge ${good ? 'ok' : 'bad'}`, verdict), 'reader-verdict'));
  if (message) said.append(' ', testid(el('code', '', message), 'reader-text'));
  if (hint) said.append(el('div', 'meta', hint));
  for (const w of warnings) said.append(testid(el('div', 'meta warn-line', `warning: ${w}`), 'reader-warning'));
  tr.append(what, said);
  return tr;
}

export class ReadersView {
  constructor(ctx) {
    this.ctx = ctx;
    this.run = 0;
  }

  mount(root) {
    this.card = testid(el('section', 'card'), 'readers');
    this.card.id = 'readers';
    this.card.dataset.drop = 'expect';
    this.card.hidden = true;
    root.append(this.card);
  }

  onFiles() {
    this.render();
  }

  onExpected() {
    this.render();
  }

  onSelect() {}

  onLabels() {}

  async render() {
    const run = ++this.run;
    const { store, rpc } = this.ctx;
    const file = store.optimizer;
    const readers = file?.summary.readers;
    this.card.hidden = !readers;
    if (!readers) {
      this.card.replaceChildren();
      return;
    }
    const expected = store.expected;
    const head = el('div', 'card-head');
    head.append(el('h2', '', 'Will it load in your TorchLean?'),
      el('span', 'meta', expected ? `${file.name} into ${expected.name}, per reader` : `${file.name}: can each reader read it at all?`));
    if (file.summary.ok) {
      const tools = el('div', 'tools');
      tools.append(button('Convert…', { testid: 'readers-convert', title: 'Rewrite this file as another version', onClick: () => openConvert(this.ctx, file) }));
      head.append(tools);
    }
    const table = el('table', 'readers-table');
    const body = el('tbody');
    table.append(body);
    const note = el('p', 'meta');
    this.card.replaceChildren(head, table, note);
    if (!expected) {
      for (const [name, r] of Object.entries(readers)) {
        body.append(row(name, r.reads ? { verdict: 'reads it', good: true } : { verdict: 'cannot read it', good: false, message: r.error.message, hint: r.error.hint }));
      }
      note.textContent = 'The trainer\'s own readers: a Lean project pins a TorchLean commit, and each reads different versions with different checks. Drop a layout (or another checkpoint) to see which of them would load this file into it.';
      return;
    }
    note.textContent = 'Checking with each reader…';
    let rows;
    try {
      rows = await rpc.request('readers', { expected: expected.source, role: store.roleOf(file) });
    } catch (err) {
      if (err.name === 'AbortError' || run !== this.run) return;
      note.textContent = `Cannot check: ${err.message}`;
      return;
    }
    if (run !== this.run) return;
    for (const r of rows) {
      body.append(row(r.reader, r.ok ? { verdict: 'loads', good: true, warnings: r.warnings }
        : { verdict: 'would not load', good: false, message: r.error.message, hint: r.error.hint, warnings: r.warnings }));
    }
    const n = rows.filter((r) => r.ok).length;
    note.textContent = `${n} of ${rows.length} readers would load it.`;
  }
}
