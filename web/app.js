// The viewer's host: it sorts what arrives (drop, pickers, examples, the page address) and opens
// it through one path (opener.js), and wires the views (views.js) to the store (state.js). It owns the
// page's chrome only (the top bar, the welcome card, the status line); it never reaches inside a
// view's card. Every fact about a file comes from the package through the worker.
import { $ } from './dom.js';
import { RpcClient } from './rpc.js';
import { Store, EVENTS } from './state.js';
import { StatsStore } from './stats-store.js';
import { count } from './format.js';
import { VIEWS } from './views.js';
import { wireInputs, sortFiles, loadExamples, openFromAddress } from './inputs.js';
import { trainerFiles, pairByNames } from './torch-pair.js';
import { deepspeedFiles } from './deepspeed-files.js';
import { lastNames, notComparedWith } from './unused.js';
import { Opener } from './opener.js';

const store = new Store();
const rpc = new RpcClient(new URL('./worker.js', import.meta.url), { onRestart: () => opener.reopen() });

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
const opener = new Opener({ store, rpc, stats, status });
const openFiles = (list, options) => opener.openFiles(list, options);

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
  // a DeepSpeed folder (or its files dropped together), picked, dropped or served whole
  const deepspeed = target === 'state' || target === 'expect' ? null : await deepspeedFiles(rpc, [...fileList], notices);
  if (deepspeed) {
    await openFiles([deepspeed.item], { notices });
    store.setNotices(notices);
    return;
  }
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
  const used = lastNames(names, notices);   // one list of names applies
  if (used) setLabels(used.names, used.name);
  const pairNames = used?.names ?? null;   // names dropped with a PyTorch optimizer and its model.safetensors order it
  const noFile = (name) => notices.push({ name, text: 'open a checkpoint first, then choose the layout or checkpoint to compare it with.' });
  // a DeepSpeed checkpoint folder open: a model dropped or picked beside it is the new model it
  // pairs with (docs/deepspeed.md), another file opens as any file
  const ds = store.files.a?.summary.deepspeed;
  // a distributed checkpoint (DCP) folder likewise, paired by name (docs/distributed.md)
  const dcp = store.files.a?.summary.dcp?.opened === 'folder';
  if (((ds && !ds.lone) || dcp) && store.optimizer === store.files.a && (target === 'open' || target === 'state') && checkpoints.length === 1 && !expected && !trainer
    && await opener.addNewModel(checkpoints[0])) {
    store.setNotices(notices);
    return;
  }
  if (trainer?.pair) {
    notices.push(...checkpoints.map(trainer.shownWith));
    await openFiles(trainer.pair, { expected, pairNames, notices, kind: trainer.kind });   // its optimizer with its model
  } else if (target === 'expect' && (checkpoints.length || expected)) {
    const other = expected ?? checkpoints[0];
    notComparedWith(other, checkpoints, notices);
    if (!store.files.a) noFile(other.name);
    else store.setExpected(other);
  } else if (checkpoints.length && (target === 'run' || checkpoints.length > 2)) {
    store.openRun(checkpoints);   // several checkpoints: one run, ordered and paired by the core's rules
    if (expected) notices.push({ name: expected.name, text: 'a layout: not used with a run (open one checkpoint, then compare it).' });
  } else if (target === 'state' && checkpoints.length) {
    // one model-state file pairs with the optimizer checkpoint: the first picked, said so
    for (const extra of checkpoints.slice(1)) notices.push({ name: extra.name, text: `not used: one model-state file goes with the optimizer checkpoint, and ${checkpoints[0].name} (the first picked) is the one used.` });
    await opener.addState(checkpoints[0], notices);
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
