// The viewer's host: the worker client, the page state, and the wiring between inputs (drop,
// pickers, examples, the page address) and the views. One open path for every way a file
// arrives; every fact about a file comes from the package through the worker.
import { $, el } from './dom.js';
import { RpcClient } from './rpc.js';
import { Store } from './state.js';
import { FileColumns } from './columns.js';
import { StatsStore } from './stats-store.js';
import { count, plural } from './format.js';
import { renderHeader, ioText } from './views/header.js';
import { renderProblem } from './views/problem.js';
import { renderWarnings } from './views/warnings.js';
import { renderCompare } from './views/compare.js';
import { renderPair } from './views/pair.js';
import { SharingMap, renderLegend, describeSlot } from './views/sharing-map.js';
import { DetailView } from './views/detail.js';
import { Exports } from './views/exports.js';
import { renderNamesNote as namesNote } from './views/names.js';
import { wireInputs, sortFiles, loadExamples, openFromAddress } from './inputs.js';
import { ParamsView } from './views/params-table.js';
import { EntriesView } from './views/entries-table.js';
import { TensorsView } from './views/state-tensors.js';
import { HealthView } from './views/health.js';

const store = new Store();
const stats = new StatsStore(store);
const rpc = new RpcClient(new URL('./worker.js', import.meta.url), { onRestart: reopen });

function status(text) {
  $('status').textContent = text;
}

const roleOf = (file) => (file === store.files.a ? 'a' : 'b');
const label = (i) => store.label(i);

// ---- views ------------------------------------------------------------------------------------

const params = new ParamsView(store, { stats, onNeedStats: () => scan('optimizer'), onSelect: (i) => store.select(i, 'table') });
const entries = new EntriesView(store, { stats, onSelect: (k) => store.select(store.optimizer.cols.entryId(k), 'entries') });
const tensors = new TensorsView(store, { stats, onSelect: (i) => store.select(i, 'tensors') });
const health = new HealthView(store, { rpc, onSelect: (i) => store.select(i, 'health'), status });
const exports = new Exports(store, { rpc, status, roleOf });
const detail = new DetailView(store, { stats, rpc, status, roleOf, params, entries, tensors, exports });
const renderNamesNote = () => namesNote($('names-note'), store);

const map = new SharingMap($('sharing-map'), {
  onHover: (i) => {
    const cols = store.optimizer?.cols;
    if (!cols || i < 0) {
      mapCaption(store.selected);
      params.setHighlight(null);
      return;
    }
    $('map-status').textContent = describeSlot(cols, i, { label, groupOf: (j) => map.groupOf(j) });
    params.setHighlight(map.groupOf(i));
  },
  onSelect: (i) => store.select(i, 'map'),
});

/** The map's caption: the selected slot when there is one, else how to use the map. */
function mapCaption(selected = -1) {
  const cols = store.optimizer?.cols;
  $('map-status').textContent = cols && selected >= 0 && selected < cols.n
    ? describeSlot(cols, selected, { label, groupOf: (j) => map.groupOf(j) })
    : 'Hover a slot to see its group; click to select it. Wheel or +/− to zoom, drag to pan.';
}

// ---- selection ----------------------------------------------------------------------------------

store.on('select', ({ slot, from }) => {
  const opt = store.optimizer;
  if (opt?.summary.schema && slot < opt.cols.n) {
    if (from !== 'table') params.select(slot);
    else params.showSelection(slot);
    if (from !== 'map') map.setSelected(slot);
    mapCaption(slot);
    const k = params.entryIndex(slot);
    if (k >= 0 && from !== 'entries') entries.select(k);
    detail.showSlot(slot);
  }
  const st = store.stateFile;
  if (st && slot < st.cols.tensorTotal) {
    if (from !== 'tensors') tensors.select(slot);
    if (!opt) detail.showTensor(slot);
  }
  health.select(slot, from);
});

// ---- statistics of every entry ------------------------------------------------------------------

async function scan(kind) {
  const file = kind === 'optimizer' ? store.optimizer : store.stateFile;
  if (!file || stats.scanning) return;
  stats.scanning = true;
  const bar = $('stats-progress');
  bar.value = 0;
  $('scan-line').hidden = false;
  $('scan-label').textContent = `Statistics of ${file.name}`;
  $('scan').disabled = $('scan-tensors').disabled = true;
  params.refresh();
  status(`Computing statistics of every ${kind === 'optimizer' ? 'entry' : 'tensor'}…`);
  const started = performance.now();
  try {
    const result = await rpc.request('scan', { role: roleOf(file) }, { onProgress: ({ done, total }) => (bar.value = total ? done / total : 1) });
    if (store.files[roleOf(file)] !== file) return;
    stats.setScan(kind, result);
    status(`Statistics for ${plural(result.ids.length, kind === 'optimizer' ? 'entry' : 'tensor', kind === 'optimizer' ? 'entries' : 'tensors')} in ${Math.round(performance.now() - started)} ms.`);
  } catch (err) {
    status(err.name === 'AbortError' ? 'Statistics scan cancelled: statistics are not computed.' : `Statistics failed: ${err.message}`);
  } finally {
    stats.scanning = false;
    $('scan-line').hidden = true;
    $('scan').disabled = $('scan-tensors').disabled = false;
    params.refresh();
    entries.render();
    tensors.render();
  }
}

// ---- files ------------------------------------------------------------------------------------

/** Open the files of one drop, pick, example or address: checkpoints by role (the first is the
 *  main file; a second is its model-state file, or the other way round). */
async function openFiles(list, { labels = null, expected = null, lr = null } = {}) {
  if (stats.scanning || rpc.busy) await rpc.cancel();
  const started = performance.now();
  status(`Reading ${list.map((f) => f.name).join(' and ')}…`);
  const opened = {};
  try {
    for (const [k, role] of [[0, 'a'], [1, 'b']]) {
      if (!list[k]) continue;
      const { summary, columns, io } = await rpc.request('open', { role, source: list[k].source });
      opened[role] = { name: list[k].name, source: list[k].source, summary, cols: new FileColumns(summary, columns), io };
    }
  } catch (err) {
    status('');
    showReadError(list, err);
    return;
  }
  // Two optimizer checkpoints are not a pair: the second is the first's question (Will it load?).
  if (opened.b && opened.a.summary.kind === 'optimizer' && opened.b.summary.kind === 'optimizer') {
    await rpc.request('close', { role: 'b' });
    expected ??= { source: opened.b.source, name: opened.b.name };
    delete opened.b;
  }
  store.files = { a: opened.a, b: opened.b ?? null };
  store.expected = expected;
  stats.clear();
  if (labels) {
    store.labels = labels;
    store.labelsSource = null;
  } else if (!store.labelsPinned) store.labels = null;
  store.selected = -1;
  health.setLr(lr);   // an example's learning rate, or none: another run's is not this file's
  renderFiles();
  const ms = Math.round(performance.now() - started);
  store.openMs = ms;
  const shown = store.primary;   // the file the header shows
  status(`Opened ${list.map((f) => f.name).join(' and ')} in ${ms} ms (${shown.name}: ${ioText(shown.io, shown.summary.size)}; payloads are skipped until statistics are asked for).`);
  $('summary').dataset.openMs = String(ms);
}

/** Add a model-state file to the open optimizer checkpoint. */
async function addState(item) {
  if (!store.optimizer) {
    status('Open the optimizer checkpoint first, then add its model-state file.');
    return;
  }
  if (stats.scanning || rpc.busy) await rpc.cancel();
  const role = store.optimizer === store.files.a ? 'b' : 'a';
  try {
    const { summary, columns, io } = await rpc.request('open', { role, source: item.source });
    if (role === 'a') throw new Error('internal: the optimizer is not the main file');
    if (summary.kind === 'optimizer') {   // the core's family, not the file's name
      await rpc.request('close', { role });
      status(`${item.name} is an optimizer checkpoint, not a model-state file: open it with Open checkpoint… (or drop both files together).`);
      return;
    }
    store.files.b = { name: item.name, source: item.source, summary, cols: new FileColumns(summary, columns), io };
  } catch (err) {
    showReadError([item], err);
    return;
  }
  stats.clearState();
  renderFiles({ keepSelection: true });
  status(`Added ${item.name}.`);
}

/** After the worker was replaced (Cancel), open the same files in the new one. */
async function reopen() {
  for (const role of ['a', 'b']) {
    const f = store.files[role];
    if (f) await rpc.request('open', { role, source: f.source }).catch(() => {});
  }
}

/** A file that could not be read at all (an I/O or HTTP error): the problem view says so. */
function showReadError(list, err) {
  $('welcome').hidden = true;
  renderProblem($('problem'), { message: err.message, hint: err.status ? `the server answered HTTP ${err.status}` : null }, {
    title: `Could not read ${list.map((f) => f.name).join(' or ')}`,
  });
}

function readBytes(file) {
  return (offset, length) => rpc.request('bytes', { role: roleOf(file), offset, length });
}

/** What of a broken file is still shown, said plainly (nothing when nothing was read). */
function readNote(file) {
  const s = file.summary;
  if (s.ok) return null;
  if (s.kind === 'state') return file.cols.tensorTotal ? `The ${plural(file.cols.tensorTotal, 'tensor')} read before the error are listed below.` : null;
  if (s.schema && file.cols.n) return `The header above and the ${plural(file.cols.n, 'slot')} read before the error (below) are what the file still shows.`;
  if (s.version !== null && s.version !== undefined) return 'The header fields read before the error are shown above.';
  return null;
}

function renderFiles({ keepSelection = false } = {}) {
  const opt = store.optimizer, st = store.stateFile;
  const main = store.primary;
  $('welcome').hidden = true;
  exports.renderMenu();
  renderHeader($('summary'), main);
  if (main.summary.ok) $('problem').hidden = true;
  else {
    renderProblem($('problem'), main.summary.error, {
      title: 'Why this file is broken', fileName: main.name, fileSize: Number(main.summary.size), readBytes: readBytes(main),
      label, onSlot: (i) => store.select(i, 'problem'), note: readNote(main),
    });
  }
  // The second file of a pair: its own header, and its own problem when it is broken.
  const second = opt && st ? st : null;
  const box = $('state-summary');
  box.hidden = !second;
  if (second) {
    renderHeader(box, second, { role: 'model state' });
    if (!second.summary.ok) {
      const p = el('div', 'problem-inline');
      box.append(p);
      renderProblem(p, second.summary.error, { title: 'Why the model-state file is broken', fileName: second.name, fileSize: Number(second.summary.size), readBytes: readBytes(second), label, note: readNote(second) });
    }
  }
  renderWarnings($('warnings'), [...main.summary.warnings, ...(second?.summary.warnings ?? [])]);
  renderNamesNote();

  const hasSchema = !!opt?.summary.schema;
  $('map-card').hidden = $('params-card').hidden = !hasSchema;
  $('entries-card').hidden = true;
  $('entry-detail').hidden = true;
  $('tensor-detail').hidden = true;
  if (hasSchema) {
    $('filter-broken').hidden = !opt.cols.sharing?.broken.length;
    map.setData(opt.cols, store.labels);
    renderLegend($('map-legend'), opt.cols, { el });
    mapCaption();
    if (!keepSelection) params.reset();
    else params.updateColumns();
    entries.reset();
  }
  else {
    params.clear();
    entries.clear();
  }
  $('tensors-card').hidden = !st?.cols.tensorTotal;
  if (st?.cols.tensorTotal) tensors.reset();
  else tensors.clear();
  $('pair').hidden = !(opt && st);
  if (opt && st) runPair();
  health.reset();
  $('compare').hidden = !store.expected;
  if (store.expected) runCompare();
  const named = main.summary.error?.slot;
  if (!main.summary.ok && named !== null && named !== undefined && main.summary.error.subject !== 'expected') {
    const slot = Number(named);
    if (hasSchema && slot < opt.cols.n) store.select(slot, 'problem');
  } else if (keepSelection && store.selected >= 0) store.select(store.selected, 'files');
}

async function runPair() {
  const opt = store.optimizer, st = store.stateFile;
  const card = $('pair');
  const options = { optName: opt.name, stateName: st.name, cols: opt.cols, label, onSlot: (i) => store.select(i, 'pair'),
    stateBytes: readBytes(st), stateSize: Number(st.summary.size) };
  renderPair(card, null, options);
  try {
    store.pair = await rpc.request('pair');
  } catch (err) {
    if (err.name === 'AbortError') return;
    store.pair = { error: err };
  }
  if (store.optimizer !== opt || store.stateFile !== st) return;
  renderPair(card, store.pair, options);
  health.pairChanged();
}

// ---- compare ----------------------------------------------------------------------------------

async function runCompare() {
  const main = store.primary;   // the optimizer checkpoint when one is open: a layout is its question
  const expected = store.expected;
  if (!main || !expected) return;
  $('compare').hidden = false;
  const options = {
    fileName: main.name, expectedName: expected.name, label, fileSize: Number(main.summary.size), readBytes: readBytes(main),
    onSlot: (i) => store.select(i, 'compare'), onClose: closeCompare,
  };
  renderCompare($('compare'), null, options);
  let result;
  try {
    result = await rpc.request('check', { expected: expected.source, role: roleOf(main) });
  } catch (err) {
    if (err.name === 'AbortError') return;
    result = { ok: false, error: { ...err, message: err.message, subject: err.subject ?? 'expected' }, differences: null, warnings: [] };
  }
  if (store.expected !== expected || store.primary !== main) return;
  renderCompare($('compare'), result, options);
  const slot = result.ok ? null : result.error.slot;
  if (slot !== null && slot !== undefined && result.error.subject !== 'expected' && store.optimizer?.summary.schema && Number(slot) < store.optimizer.cols.n) {
    store.select(Number(slot), 'compare');
  }
}

function closeCompare() {
  store.expected = null;
  $('compare').hidden = true;
  $('compare').replaceChildren();
  status('Compare mode closed.');
}

// ---- names ------------------------------------------------------------------------------------

function setLabels(names, source) {
  store.labels = names;
  store.labelsSource = source;
  store.labelsPinned = true;
  if (store.optimizer?.summary.schema) map.setLabels(names);
  renderNamesNote();
  params.render();
  params.refresh();
  entries.render();
  tensors.render();
  health.render();
  if (store.selected >= 0) params.showSelection(store.selected);
  status(`Slot names from ${source}: ${count(names.length)}.`);
}

// ---- inputs -----------------------------------------------------------------------------------

/** Every file of a drop or a pick, sorted by inputs.js: names applied, a layout to compare with,
 *  checkpoints to open (two at once: an optimizer and its model state). */
async function handleFiles(fileList, target = 'open') {
  const { checkpoints, expected } = await sortFiles([...fileList], {
    classify: (file) => rpc.request('classify', { source: file.source ?? file }), setLabels, status, hasFile: () => !!store.files.a,
  });
  if (target === 'expect' && checkpoints.length) {
    if (!store.files.a) return status('Open a checkpoint first, then choose the layout or checkpoint to compare it with.');
    store.expected = checkpoints[0];
    return runCompare();
  }
  if (target === 'state' && checkpoints.length) return addState(checkpoints[0]);
  if (checkpoints.length) {
    await openFiles(checkpoints.slice(0, 2), { expected });
    if (checkpoints.length > 2) status(`Opened the first two files; ${plural(checkpoints.length - 2, 'other file')} ignored.`);
  } else if (expected) {
    store.expected = expected;
    runCompare();
  }
}

wireInputs({ handleFiles, setLabels, classify: (file) => rpc.request('classify', { source: file }), hasFile: () => !!store.files.a, status });
loadExamples(rpc, { status, open: (files, options) => {
  store.labelsPinned = false;
  openFiles(files, options);
} });
openFromAddress((items) => handleFiles(items));   // sorted as a drop is: names, a layout, checkpoints
$('scan').addEventListener('click', () => scan('optimizer'));
$('scan-tensors').addEventListener('click', () => scan('state'));
$('cancel-scan').addEventListener('click', () => rpc.cancel());
$('zoom-in').addEventListener('click', () => map.zoomAt(1.5, map.width / 2));
$('zoom-out').addEventListener('click', () => map.zoomAt(1 / 1.5, map.width / 2));
$('zoom-reset').addEventListener('click', () => map.resetZoom());
