// The viewer's host: it opens files (one path for every way a file arrives: drop, pickers,
// examples, the page address) and wires the views (views.js) to the store (state.js). It owns the
// page's chrome only (the top bar, the welcome card, the status line); it never reaches inside a
// view's card. Every fact about a file comes from the package through the worker.
import { $ } from './dom.js';
import { RpcClient } from './rpc.js';
import { Store, EVENTS } from './state.js';
import { FileColumns } from './columns.js';
import { StatsStore } from './stats-store.js';
import { count, ioText } from './format.js';
import { VIEWS } from './views.js';
import { wireInputs, sortFiles, loadExamples, openFromAddress } from './inputs.js';
import { bindModel, trainerFiles, pairByNames } from './torch-pair.js';

const store = new Store();
const rpc = new RpcClient(new URL('./worker.js', import.meta.url), { onRestart: reopen });

function status(text) {
  $('status').textContent = text;
}

/** The status line's progress bar of a scan (null: none runs). */
function scanProgress(fraction, name) {
  $('scan-line').hidden = fraction === null;
  if (fraction === null) return;
  $('scan-label').textContent = `Statistics of ${name}`;
  $('stats-progress').value = fraction;
}

const stats = new StatsStore(store, { rpc, status, onScanProgress: scanProgress });

/** Bytes of an open file, for the hex views. */
const readBytes = (file) => (offset, length) => rpc.request('bytes', { role: store.roleOf(file), offset, length });

// ---- the views: mounted in order, each event of the store delivered to every view's handler ----

// openFiles: a view that opens a file itself (the run view's click-through to a checkpoint)
const ctx = { store, rpc, stats, status, readBytes, openFiles: (list, options) => openFiles(list, options) };
const views = VIEWS.map(({ View, place }) => {
  const view = new View(ctx);
  view.mount(place === 'bar' ? $('bar-views') : $('cards'));
  return view;
});
for (const type of Object.keys(EVENTS)) {
  const handler = `on${type[0].toUpperCase()}${type.slice(1)}`;
  store.on(type, (detail) => {
    for (const view of views) view[handler]?.(detail);
  });
}
store.on('files', () => ($('welcome').hidden = true));
store.on('run', () => ($('welcome').hidden = true));

// ---- files ------------------------------------------------------------------------------------

const columnsOf = ({ summary, columns }) => new FileColumns(summary, columns);

/** Open the files of one drop, pick, example or address: the first is the main file; a second
 *  is its model-state file (or the other way round). Two optimizer checkpoints are not a pair:
 *  the second is the first's question (Will it load?). A second file that is not shown (of no
 *  family the core reads beside one it does, a second model-state file) is said in `notices`,
 *  with why; `kind` ('adam' | 'adamw', a Trainer folder's training_args.bin) is given to a
 *  PyTorch optimizer whose file does not say it. */
async function openFiles(list, { labels = null, expected = null, lr = null, pairNames = null, notices = null, kind = null } = {}) {
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
    await dropUnshown(opened, unused, kind);
    slots = await bindModel(rpc, opened, pairNames);
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

/** Of two opened files, the one no card would show, closed and said in `unused` with why: a file
 *  of no family the core reads beside one of a family it reads (that one is then the main file,
 *  opened again as such), the second of two files of no known family (the first's problem card
 *  shows why), the second of two model-state files (one goes with an optimizer). */
async function dropUnshown(opened, unused, kind) {
  const { a, b } = opened;
  if (!b) return;
  const known = (f) => f.summary.kind !== null;
  let drop = null;
  if (known(a) && !known(b)) drop = b;
  else if (!known(a) && known(b)) drop = a;
  else if (!known(a) && !known(b)) drop = b;
  else if (a.summary.kind === 'state' && b.summary.kind === 'state' && !b.asModel) drop = b;
  if (!drop) return;
  const e = drop.summary.error;
  unused.push({
    name: drop.name,
    text: known(drop) ? `not used: a second model-state file; one goes with an optimizer checkpoint, and ${a.name} (the first) is shown.`
      : `not used: ${e ? `${e.message}${e.hint ? ` (${e.hint})` : ''}` : 'not a file of a family ckptscope reads'}.`,
  });
  await rpc.request('close', { role: 'b' });
  delete opened.b;
  if (drop === a) {   // the file that is shown becomes the main file
    const answer = await rpc.request('open', { role: 'a', source: b.source, kind });
    opened.a = { ...b, summary: answer.summary, cols: columnsOf(answer), io: answer.io };
  }
}

/** An I/O or HTTP error, as the problem view shows it. */
const readError = (err) => ({ message: err.message, hint: err.status ? `the server answered HTTP ${err.status}` : null });

/** Add a model-state file to the open optimizer checkpoint; says why not in the notices. */
async function addState(item, notices) {
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
    if (store.files.a.summary.needsModel || store.files.a.bound) return openFiles([store.files.a, item], { expected: store.expected, lr: store.lr });
    stats.clearState();
    store.addFile('b', { name: item.name, source: item.source, summary: answer.summary, cols: columnsOf(answer), io: answer.io });
  } catch (err) {
    notices.push({ name: item.name, text: `could not be read: ${err.message}` });
    return;
  }
  if (store.selected >= 0) store.select(store.selected, 'files');
  status(`Added ${item.name}.`);
}

/** After the worker was replaced (Cancel), open the same files in the new one. */
async function reopen() {
  for (const role of ['a', 'b']) {
    const f = store.files[role];
    if (f) await rpc.request('open', { role, source: f.source, asModel: !!f.asModel, kind: f.kind ?? null }).catch(() => {});
  }
  if (store.files.a?.bound) await rpc.request('bind', { names: store.files.a.pairNames }).catch(() => {});   // the PyTorch pair's slots again
}

// ---- names ------------------------------------------------------------------------------------

function setLabels(names, source) {
  store.setLabels(names, { source, pinned: true });
  status(`Slot names from ${source}: ${count(names.length)}.`);
}

/** The Slot names… picker: a JSON array of strings, else a notice saying what it is. */
async function readNames(file) {
  try {
    const kind = await rpc.request('classify', { source: file });
    if (kind.json !== 'names') throw new Error('expected a JSON array of slot names (strings)');
    setLabels(kind.names, file.name);
    await pairByNames(store, kind.names, openFiles);   // a model.safetensors paired by shape: by these names now
  } catch (err) {
    store.setNotices([{ name: file.name, text: err.message }]);
  }
}

// ---- inputs -----------------------------------------------------------------------------------

/** Every file of a drop or a pick, sorted by inputs.js: names applied, a layout to compare with,
 *  checkpoints to open (two at once: an optimizer and its model state); what is not used is
 *  said in the notices card, with why. */
async function handleFiles(fileList, target = 'open') {
  const notices = [];
  // a Trainer's checkpoint-N/ folder, or its output folder, picked, dropped or served whole
  const trainer = target === 'state' || target === 'expect' ? null : await trainerFiles(rpc, [...fileList], notices);
  if (trainer?.run) {
    store.openRun(trainer.run.files, trainer.run.trainer);
    store.setNotices(notices);
    return;
  }
  const sorted = await sortFiles(trainer ? trainer.rest : [...fileList], (file) => rpc.request('classify', { source: file.source ?? file }));
  const { checkpoints, expected, names } = sorted;
  notices.push(...sorted.notices);
  // one list of names applies: the last given
  for (const n of names.slice(0, -1)) notices.push({ name: n.name, text: `not used: one list of slot names applies, and ${names.at(-1).name} (the last given) is the one.` });
  if (names.length) setLabels(names.at(-1).names, names.at(-1).name);
  const pairNames = names.at(-1)?.names ?? null;   // names dropped with a PyTorch optimizer and its model.safetensors order it
  const noFile = (name) => notices.push({ name, text: 'open a checkpoint first, then choose the layout or checkpoint to compare it with.' });
  if (trainer?.pair) {
    notices.push(...checkpoints.map(trainer.shownWith));
    await openFiles(trainer.pair, { expected, pairNames, notices, kind: trainer.kind });   // its optimizer with its model
  } else if (target === 'expect' && (checkpoints.length || expected)) {
    const other = expected ?? checkpoints[0];
    for (const c of checkpoints) if (c !== other) notices.push({ name: c.name, text: `not used: one layout or checkpoint is compared at a time, and ${other.name} is the one.` });
    if (!store.files.a) noFile(other.name);
    else store.setExpected(other);
  } else if (checkpoints.length && (target === 'run' || checkpoints.length > 2)) {
    store.openRun(checkpoints);   // several checkpoints: one run, ordered and paired by the core's rules
    if (expected) notices.push({ name: expected.name, text: 'a layout: not used with a run (open one checkpoint, then compare it).' });
  } else if (target === 'state' && checkpoints.length) {
    // one model-state file pairs with the optimizer checkpoint: the first picked, said so
    for (const extra of checkpoints.slice(1)) notices.push({ name: extra.name, text: `not used: one model-state file goes with the optimizer checkpoint, and ${checkpoints[0].name} (the first picked) is the one used.` });
    await addState(checkpoints[0], notices);
  } else if (checkpoints.length) {
    await openFiles(checkpoints.slice(0, 2), { expected, pairNames, notices });
  } else if (expected) {
    if (!store.files.a) notices.push({ name: expected.name, text: 'a layout: open a checkpoint first, then drop the layout to see whether it would load.' });
    else store.setExpected(expected);
  }
  store.setNotices(notices);
}

wireInputs({ handleFiles, readNames });
loadExamples(rpc, { status, open: (files, options) => {
  if (options.run) {   // an example run: its names come with its files
    store.setLabels(options.labels, { source: null });
    store.openRun(files);
    return;
  }
  store.labelsPinned = false;
  openFiles(files, options).then(() => store.setNotices([]));
} });
openFromAddress((items) => handleFiles(items), (path, message) => {
  store.setFiles({}, { failure: { names: [path], error: { message } } });
});
$('cancel-scan').addEventListener('click', () => rpc.cancel());
