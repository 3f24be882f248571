// Opening files for the host (app.js): the one path every way a file arrives ends in (drop,
// pickers, examples, the page address, the run view's click-through). Two files at most: the
// main file and its model-state file, a PyTorch optimizer paired with its model before the views
// draw; a model-state file added to the open optimizer; the same files opened again in a new
// worker after Cancel. Every fact about a file comes from the package through the worker.
import { FileColumns } from './columns.js';
import { ioText } from './format.js';
import { bindModel } from './torch-pair.js';
import { dropUnshown } from './unused.js';

const columnsOf = ({ summary, columns }) => new FileColumns(summary, columns);

/** An I/O or HTTP error, as the problem view shows it. */
const readError = (err) => ({ message: err.message, hint: err.status ? `the server answered HTTP ${err.status}` : null });

export class Opener {
  constructor({ store, rpc, stats, status }) {
    Object.assign(this, { store, rpc, stats, status });
  }

  /** Open the files of one drop, pick, example or address: the first is the main file; a second
   *  is its model-state file (or the other way round). Two optimizer checkpoints are not a pair:
   *  the second is the first's question (Will it load?). A file no card shows goes to `notices`;
   *  `kind`: a Trainer folder's, for a PyTorch optimizer whose file says none. */
  async openFiles(list, { labels = null, expected = null, lr = null, pairNames = null, notices = null, kind = null } = {}) {
    const { store, rpc, stats, status } = this;
    if (stats.scanning || rpc.busy) await rpc.cancel();
    const started = performance.now();
    status(`Reading ${list.map((f) => f.name).join(' and ')}…`);
    const opened = {};
    let slots = null;   // a PyTorch pair's slots, by its model's names
    const unused = [];   // [{name, text}]
    try {
      for (const [k, role] of [[0, 'a'], [1, 'b']]) {
        if (!list[k]) continue;
        const answer = await rpc.request('open', { role, source: list[k].source, sniffed: list[k].sniffed, kind });
        opened[role] = { name: list[k].name, source: list[k].source, summary: answer.summary, cols: columnsOf(answer), io: answer.io, kind };
      }
      if (opened.b && opened.a.summary.kind === 'optimizer' && opened.b.summary.kind === 'optimizer') {
        await rpc.request('close', { role: 'b' });
        expected ??= { source: opened.b.source, name: opened.b.name };
        delete opened.b;
      }
      await dropUnshown(rpc, opened, unused, (f, role) => rpc.request('open', { role, source: f.source, kind }).then((answer) => ({ ...f, summary: answer.summary, cols: columnsOf(answer), io: answer.io })));
      slots = await bindModel(rpc, opened, pairNames);
      // a DeepSpeed checkpoint's slots are named by its model states (the core's `slots`)
      const named = opened.a?.summary.deepspeed?.slots;
      slots ??= named?.length ? named : null;
    } catch (err) {
      status('');
      stats.clear();
      store.setFiles({}, { failure: { names: list.map((f) => f.name), error: readError(err) } });
      return;
    }
    stats.clear();
    // an example's own names come with its files; a PyTorch pair's slots are its model's names
    if (labels ?? slots) Object.assign(store, { labels: labels ?? slots, labelsSource: null, labelsPinned: store.labelsPinned && !slots });
    else if (!store.labelsPinned) store.labels = null;
    store.setFiles(opened, { expected, lr });
    notices?.push(...unused);
    const ms = Math.round(performance.now() - started);
    document.documentElement.dataset.openMs = String(ms);
    const shown = store.primary;   // the file the header shows
    status(`Opened ${list.map((f) => f.name).join(' and ')} in ${ms} ms (${shown.name}: ${ioText(shown.io, shown.summary.size)}; payloads are skipped until statistics are asked for).`);
  }

  /** Add a model-state file to the open optimizer checkpoint; says why not in the notices. */
  async addState(item, notices) {
    const { store, rpc, stats, status } = this;
    if (!store.optimizer || store.optimizer !== store.files.a) {
      notices.push({ name: item.name, text: 'open the optimizer checkpoint first, then add its model-state file.' });
      return;
    }
    if (stats.scanning || rpc.busy) await rpc.cancel();
    try {
      const answer = await rpc.request('open', { role: 'b', source: item.source, sniffed: item.sniffed });
      if (answer.summary.kind === 'optimizer') {   // the core's family, not the file's name
        await rpc.request('close', { role: 'b' });
        notices.push({ name: item.name, text: 'an optimizer checkpoint, not a model-state file: open it with Open checkpoint… (or drop both files together).' });
        return;
      }
      // a PyTorch optimizer takes its slots from its model: both opened afresh
      if (store.files.a.summary.needsModel || store.files.a.bound) return this.openFiles([store.files.a, item], { expected: store.expected, lr: store.lr });
      stats.clearState();
      store.addFile('b', { name: item.name, source: item.source, summary: answer.summary, cols: columnsOf(answer), io: answer.io });
    } catch (err) {
      notices.push({ name: item.name, text: `could not be read: ${err.message}` });
      return;
    }
    if (store.selected >= 0) store.select(store.selected, 'files');
    status(`Added ${item.name}.`);
  }

  /** A file dropped or picked while a DeepSpeed checkpoint folder is open: when the core reads it
   *  as a model (a torch.save state dict, model.safetensors), it is the new model the checkpoint
   *  is paired with (docs/deepspeed.md; the pair card asks the core); resolves false, nothing
   *  changed, when it is not one (the caller opens it as any file). */
  async addNewModel(item) {
    const { store, rpc, stats, status } = this;
    if (stats.scanning || rpc.busy) await rpc.cancel();
    let answer;
    try {
      answer = await rpc.request('open', { role: 'b', source: item.source, sniffed: item.sniffed });
    } catch {
      await rpc.request('close', { role: 'b' }).catch(() => {});
      return false;   // unreadable: opened as any file, its problem shown
    }
    if (answer.summary.kind !== 'state') {
      await rpc.request('close', { role: 'b' });
      return false;
    }
    stats.clearState();
    store.addFile('b', { name: item.name, source: item.source, summary: answer.summary, cols: columnsOf(answer), io: answer.io });
    status(`Added ${item.name}: the new model, paired as ${store.files.a?.summary.dcp ? 'DCP loads it, by name' : 'DeepSpeed pairs it'}.`);
    return true;
  }

  /** After the worker was replaced (Cancel), open the same files in the new one. */
  async reopen() {
    const { store, rpc } = this;
    for (const role of ['a', 'b']) {
      const f = store.files[role];
      if (f) await rpc.request('open', { role, source: f.source, asModel: !!f.asModel, kind: f.kind ?? null }).catch(() => {});
    }
    if (store.files.a?.bound) await rpc.request('bind', { names: store.files.a.pairNames }).catch(() => {});   // the PyTorch pair's slots again
  }
}
