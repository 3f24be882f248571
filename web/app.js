// The viewer's page: one open(file) path for drop, picker and examples; one error view; the
// views render what the worker parsed. Nothing here parses a byte of a checkpoint.
import { VirtualTable, el } from './views/table.js';
import { SharingMap, groupColor } from './views/sharing-map.js';
import { renderHeader } from './views/header.js';
import { renderHex } from './views/hex.js';
import { renderVerdict } from './views/compare.js';
import { renderEntryDetail } from './views/stats.js';
import { ReportModel } from './report-model.js';

const $ = (id) => document.getElementById(id);

// ---- the worker ---------------------------------------------------------------------------

class Parser {
  constructor() {
    this.next = 1;
    this.spawn();
  }
  spawn() {
    this.pending = new Map();
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    this.worker.onmessage = ({ data }) => {
      const p = this.pending.get(data.id);
      if (!p) return;
      if (data.progress) return p.onProgress?.(data.progress);
      this.pending.delete(data.id);
      if (data.error) p.reject(Object.assign(new Error(data.error.message), data.error));
      else p.resolve(data.result);
    };
    this.worker.onerror = (e) => {
      for (const p of this.pending.values()) p.reject(new Error(`the parser stopped: ${e.message}`));
      this.pending.clear();
    };
  }
  request(type, payload = {}, onProgress) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ id, type, args: payload });
    });
  }
  /** Stop whatever runs (a statistics scan cannot be interrupted from inside): a new worker. */
  cancel() {
    this.worker.terminate();
    for (const p of this.pending.values()) p.reject(new DOMException('cancelled', 'AbortError'));
    this.spawn();
  }
}

const parser = new Parser();

// ---- state --------------------------------------------------------------------------------

const state = {
  file: null,
  report: null,
  labels: null,
  expected: null,
  filter: 'all',
  search: '',
  sort: null,
  selected: -1,
  bytesRead: 0,
  entryBySlot: new Int32Array(0),   // slot -> entry index, -1 for none
};

function status(text) {
  $('status').textContent = text;
}

function label(i) {
  return state.labels?.[i] ?? '';
}

const shapeText = (s) => `[${s.join(', ')}]`;

// ---- tables and map -----------------------------------------------------------------------

const entryOfSlot = (i) => {
  const k = i < state.entryBySlot.length ? state.entryBySlot[i] : -1;
  return k < 0 ? null : state.report.entry(k);
};

function unhealthy(entry) {
  if (!entry?.m) return false;
  return Number(entry.m.nan) + Number(entry.m.inf) + Number(entry.v.nan) + Number(entry.v.inf) + Number(entry.v.negative) > 0;
}

function representativeCell(i) {
  const m = state.report;
  const r = m.rep(i);
  if (r === undefined || m.trainable(i) === undefined) return { text: '?', title: 'not read (the file broke before the sharing map)' };
  if (r === null) return { text: 'frozen', cls: 'frozen' };
  if (r === i) return { text: 'owner', swatch: groupColor(i) };
  return { text: `→ ${r}${label(r) ? ` ${label(r)}` : ''}`, swatch: groupColor(r), title: `shares slot ${r}'s storage and optimizer history` };
}

const fmtStat = (x) => (x === null || x === undefined ? '' : typeof x === 'number' ? x.toPrecision(3) : String(x));

const paramColumns = [
  { label: 'slot', width: '64px', num: true, sortKey: 'slot', cell: (i) => ({ text: String(i) }) },
  { label: 'name', width: 'minmax(80px, 1.3fr)', sortKey: 'name', cell: (i) => ({ text: label(i), title: label(i) }) },
  { label: 'shape', width: 'minmax(90px, 1fr)', mono: true, sortKey: 'rank', cell: (i) => ({ text: shapeText(state.report.shape(i)) }) },
  { label: 'size', width: '96px', num: true, sortKey: 'size', cell: (i) => ({ text: Number(state.report.slotSize(i)).toLocaleString('en-US') }) },
  { label: 'trainable', width: '76px', cell: (i) => {
    const g = state.report.trainable(i);
    return g === undefined ? { text: '?' } : g ? { text: 'yes' } : { text: 'frozen', cls: 'frozen' };
  } },
  { label: 'representative', width: 'minmax(110px, 1.1fr)', cell: representativeCell },
  { label: 'step', width: '72px', num: true, sortKey: 'step', cell: (i) => ({ text: String(entryOfSlot(i)?.step ?? '') }) },
  { label: 'm rms · v mean', width: 'minmax(120px, 1fr)', cell: (i) => {
    const e = entryOfSlot(i);
    if (!e?.m) return { text: '' };
    const bad = unhealthy(e);
    return { text: `${fmtStat(e.m.rms)} · ${fmtStat(e.v.mean)}${bad ? '  ⚠' : ''}`, cls: bad ? 'unhealthy' : '', title: bad ? 'NaN, infinity or a negative second moment' : '' };
  } },
];

const entryColumns = [
  { label: 'slot', width: '64px', num: true, cell: (k) => ({ text: String(state.report.entry(k).id) }) },
  { label: 'name', width: 'minmax(80px, 1.3fr)', cell: (k) => ({ text: label(Number(state.report.entry(k).id)) }) },
  { label: 'step', width: '72px', num: true, cell: (k) => ({ text: String(state.report.entry(k).step) }) },
  { label: 'elements', width: '96px', num: true, cell: (k) => ({ text: Number(state.report.entry(k).count).toLocaleString('en-US') }) },
  { label: 'offset', width: '110px', num: true, cell: (k) => ({ text: String(state.report.entry(k).offset) }) },
  { label: 'm mean · rms', width: 'minmax(120px, 1fr)', cell: (k) => {
    const e = state.report.entry(k);
    return { text: e.m ? `${fmtStat(e.m.mean)} · ${fmtStat(e.m.rms)}` : 'click for statistics', cls: e.m ? '' : 'frozen' };
  } },
  { label: 'v mean', width: 'minmax(90px, 0.8fr)', cell: (k) => ({ text: fmtStat(state.report.entry(k).v?.mean) }) },
  { label: 'health', width: '120px', cell: (k) => {
    const e = state.report.entry(k);
    if (!e.m) return { text: '' };
    if (!unhealthy(e)) return { text: 'ok' };
    const parts = [];
    const nan = Number(e.m.nan) + Number(e.v.nan), inf = Number(e.m.inf) + Number(e.v.inf);
    if (nan) parts.push(`${nan} NaN`);
    if (inf) parts.push(`${inf} inf`);
    if (Number(e.v.negative)) parts.push(`${e.v.negative} v<0`);
    return { text: parts.join(', '), cls: 'unhealthy' };
  } },
];

const params = new VirtualTable($('params'), {
  columns: paramColumns,
  rowTestId: 'param-row',
  label: 'parameter slots',
  onSelect: (i) => selectSlot(i, 'table'),
  onSort: (sort) => {
    state.sort = sort;
    refreshParams();
  },
});

const entries = new VirtualTable($('entries'), {
  columns: entryColumns,
  rowTestId: 'entry-row',
  label: 'moment entries',
  onSelect: (k) => showEntry(k),
});

const map = new SharingMap($('sharing-map'), {
  onHover: (i) => {
    if (i < 0) {
      $('map-status').textContent = 'Hover a slot to see its group; click to find it in the table. Wheel or +/− to zoom, drag to pan.';
      params.setHighlight(null);
      return;
    }
    const m = state.report;
    const r = m.rep(i);
    const group = map.groupOf(i);
    const what = !m.trainable(i) ? 'frozen (no optimizer state)' : r === i ? `owns its optimizer history${group.size > 1 ? `, shared by ${group.size - 1} tied slot(s)` : ''}` : `tied to slot ${r}${label(r) ? ` (${label(r)})` : ''}`;
    $('map-status').textContent = `slot ${i}${label(i) ? ` ${label(i)}` : ''} ${shapeText(m.shape(i))}: ${what}`;
    params.setHighlight(group);
  },
  onSelect: (i) => selectSlot(i, 'map'),
});

function selectSlot(i, from) {
  state.selected = i;
  if (from !== 'table') params.select(i);
  if (from !== 'map') map.setSelected(i);
  const k = i < state.entryBySlot.length ? state.entryBySlot[i] : -1;
  if (k >= 0) {
    entries.select(k);
    showEntry(k);
  }
}

function passesFilter(i) {
  const m = state.report;
  switch (state.filter) {
    case 'trainable': return m.trainable(i) === true;
    case 'frozen': return m.trainable(i) === false;
    case 'aliases': return map.isTied(i);
    case 'unhealthy': return unhealthy(entryOfSlot(i));
    default: return true;
  }
}

function sortKey(i, key) {
  const m = state.report;
  switch (key) {
    case 'name': return label(i);
    case 'rank': {
      const shape = m.shape(i);
      return shape.length * 1e6 + Number(shape[0] ?? 0);
    }
    case 'size': return Number(m.slotSize(i));
    case 'step': return Number(entryOfSlot(i)?.step ?? -1);
    default: return i;
  }
}

function refreshParams() {
  const m = state.report;
  const n = m.n;
  const q = state.search.trim().toLowerCase();
  let order;
  if (state.filter === 'all' && !q) order = Array.from({ length: n }, (_, i) => i);
  else {
    order = [];
    for (let i = 0; i < n; i++) {
      if (!passesFilter(i)) continue;
      if (q && !label(i).toLowerCase().includes(q) && !shapeText(m.shape(i)).includes(q)) continue;
      order.push(i);
    }
  }
  if (state.sort && state.sort.key !== 'slot') {
    const { key, dir } = state.sort;
    // Keys in a typed array (numbers) or a plain one (names), indexed by slot; ties by slot.
    const numeric = key !== 'name';
    const keys = numeric ? new Float64Array(n) : new Array(n);
    for (const i of order) keys[i] = sortKey(i, key);
    const sorted = numeric ? Int32Array.from(order) : order;
    sorted.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b) * dir);
    order = sorted;
  } else if (state.sort?.dir === -1) order.reverse();
  params.setOrder(order instanceof Int32Array ? order : Int32Array.from(order));
  $('param-count').textContent = order.length === n ? `${n.toLocaleString('en-US')} slots` : `${order.length.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} slots`;
}

function refreshEntries() {
  const m = state.report;
  const total = m.entryTotal;
  const bySlot = new Int32Array(m.n).fill(-1);
  for (let k = 0; k < total; k++) {
    const id = Number(m.entry(k).id);
    if (id < bySlot.length) bySlot[id] = k;
  }
  state.entryBySlot = bySlot;
  entries.setOrder(Int32Array.from({ length: total }, (_, k) => k));
  const declared = m.entryCount;
  $('entry-count').textContent = `${total.toLocaleString('en-US')}${declared !== null && Number(declared) !== total ? ` of ${declared} declared` : ''}`;
}

// ---- entry statistics ---------------------------------------------------------------------

async function showEntry(k) {
  const e = state.report.entry(k);
  const detail = $('entry-detail');
  renderEntryDetail(detail, e, { config: state.report.config, label: label(Number(e.id)) });
  if (e.m) return;
  const file = state.file;
  const note = detail.querySelector('p.meta');
  try {
    const stats = await parser.request('entryStats', { file, id: e.id }, ({ done, total }) => {
      const start = Number(e.offset), span = 2 * Number(e.count) * (state.report.dtype === 'float64' ? 8 : 4);
      if (note && total) note.textContent = `Statistics are being computed… ${Math.min(100, Math.round((100 * (done - start)) / span))}%`;
    });
    if (state.file !== file) return;
    Object.assign(e, { m: stats.m, v: stats.v });
    renderEntryDetail(detail, e, { config: state.report.config, label: label(Number(e.id)) });
    entries.render(true);
    params.render(true);
  } catch (err) {
    if (err.name !== 'AbortError') detail.append(el('p', 'meta', `Could not compute statistics: ${err.message}`));
  }
}

async function scanAll() {
  const file = state.file;
  state.scanning = true;
  const bar = $('stats-progress');
  bar.hidden = false;
  bar.value = 0;
  $('cancel-scan').hidden = false;
  $('scan').disabled = true;
  status('Computing statistics for every entry…');
  const started = performance.now();
  try {
    const { packed } = await parser.request('inspect', { file, stats: true }, ({ done, total }) => {
      bar.value = total ? done / total : 0;
    });
    if (state.file !== file) return;
    // The scan re-reads everything: keep its entries (with stats) and its warnings.
    const report = new ReportModel(packed);
    state.report.setEntries(Array.from({ length: report.entryTotal }, (_, k) => report.entry(k)));
    state.report.warnings = report.warnings;
    refreshEntries();
    refreshParams();
    renderWarnings();
    renderHeader($('summary'), state.report, { name: file.name, bytesRead: state.bytesRead });
    status(`Statistics for ${report.entryTotal.toLocaleString('en-US')} entries in ${Math.round(performance.now() - started)} ms.`);
  } catch (err) {
    status(err.name === 'AbortError' ? 'Statistics scan cancelled.' : `Statistics failed: ${err.message}`);
  } finally {
    state.scanning = false;
    bar.hidden = true;
    $('cancel-scan').hidden = true;
    $('scan').disabled = false;
  }
}

// ---- problems, warnings, compare ----------------------------------------------------------

function renderWarnings() {
  const box = $('warnings');
  const list = state.report.warnings;
  box.hidden = !list.length;
  box.replaceChildren(el('h2', '', 'Warnings (the file stays valid)'));
  const ul = el('ul');
  for (const w of list) {
    const li = el('li', '', w);
    li.setAttribute('data-testid', 'warning');
    ul.append(li);
  }
  box.append(ul);
}

async function renderProblem() {
  const r = state.report;
  const box = $('problem');
  box.hidden = r.ok;
  if (r.ok) return;
  $('error').textContent = r.error.message;
  $('error-offset').textContent = r.error.offset === null ? '—' : String(r.error.offset);
  $('error-hint').textContent = r.error.hint ? `— ${r.error.hint}` : '';

  $('hex').replaceChildren();
  if (r.error.offset === null) return;
  const offset = Number(r.error.offset);
  const start = Math.max(0, offset - 48);
  const file = state.file;
  const bytes = await parser.request('bytes', { file, offset: start, length: 128 });
  if (state.file !== file) return;
  const field = offset === 0 ? 7 : /truncated/.test(r.error.message) ? Math.max(1, file.size - offset) : 8;
  renderHex($('hex'), bytes, start, offset, Math.min(field, 64), file.size);
}

/** Most reference texts name a slot ("… for parameter 4", "… parameter id 4"): show it. */
function selectNamedSlot(message) {
  const named = /parameter (?:id )?(\d+)/.exec(message);
  if (!named || !state.report?.hasSchema || Number(named[1]) >= state.report.n) return;
  params.select(Number(named[1]));
  map.setSelected(Number(named[1]));
}

async function runCompare() {
  if (!state.file || !state.expected) return;
  const card = $('compare');
  card.hidden = false;
  const name = state.expected.name ?? 'the example layout';
  $('compare-against').textContent = `${state.file.name} against ${name}`;
  $('verdict').textContent = 'Checking…';
  try {
    const result = await parser.request('check', { file: state.file, expected: state.expected });
    renderVerdict($('verdict'), $('diff'), result);
    if (!result.loads) selectNamedSlot(result.error.message);
  } catch (err) {
    $('verdict').className = 'verdict fails';
    $('verdict').textContent = err.role === 'expected' ? `The expected layout is not a valid checkpoint: ${err.message}` : err.message;
    $('diff').replaceChildren();
  }
}

// ---- the one open path --------------------------------------------------------------------

async function open(file, { labels = null } = {}) {
  // The worker runs one request at a time: a scan of the previous file would hold this one up.
  if (state.scanning) parser.cancel();
  status(`Reading ${file.name}…`);
  const started = performance.now();
  let result;
  try {
    result = await parser.request('inspect', { file, stats: false });
  } catch (err) {
    status(`Could not read ${file.name}: ${err.message}`);
    return;
  }
  Object.assign(state, { file, report: new ReportModel(result.packed), bytesRead: result.bytesRead, selected: -1, sort: null, filter: 'all', search: '' });
  if (labels) state.labels = labels;
  else if (!state.labelsPinned) state.labels = null;
  render();
  status(`Opened ${file.name} in ${Math.round(performance.now() - started)} ms (${result.bytesRead.toLocaleString('en-US')} of ${file.size.toLocaleString('en-US')} bytes read; payloads are skipped until statistics are asked for).`);
  if (state.expected) runCompare();
}

function render() {
  const r = state.report;
  $('welcome').hidden = true;
  $('summary').hidden = false;
  $('export').disabled = false;
  renderHeader($('summary'), r, { name: state.file.name, bytesRead: state.bytesRead });
  renderProblem();
  renderWarnings();
  $('compare').hidden = !state.expected;
  const s = r.hasSchema;
  $('map-card').hidden = $('params-card').hidden = !s;
  $('entries-card').hidden = !r.entryTotal && r.entryCount === null;
  $('entry-detail').hidden = true;
  for (const b of $('filters').children) b.setAttribute('aria-pressed', String(b.dataset.filter === 'all'));
  $('param-search').value = '';
  params.selected = entries.selected = -1;
  params.highlight = null;
  params.clearSort();
  if (s) {
    map.setData({ reps: r.repsArray(), flags: r.flagsArray() });   // before the table: its filters ask the map
    refreshEntries();
    refreshParams();
    renderLegend();
    if (!r.ok) selectNamedSlot(r.error.message);
  } else {
    state.entryBySlot = new Int32Array(0);
  }
}

function renderLegend() {
  const lg = $('map-legend');
  lg.replaceChildren();
  const add = (cls, text, color) => {
    const span = el('span');
    const sw = el('i', `sw ${cls}`);
    if (color) sw.style.background = color;
    span.append(sw, text);
    lg.append(span);
  };
  add('', 'trainable (coloured by group)', groupColor(0));
  add('frozen', 'frozen');
  lg.append(el('span', '', `${map.linkCount} tie${map.linkCount === 1 ? '' : 's'} in ${map.groupCount} group${map.groupCount === 1 ? '' : 's'}${state.report.repsKnown ? '' : ' (map not read)'}`));
}

// ---- inputs: drop, pickers, examples ------------------------------------------------------

function isJSONFile(file) {
  return file.name.endsWith('.json') || file.type === 'application/json';
}

async function handleFiles(files, target) {
  const [file] = files;
  if (!file) return;
  // A layout JSON, or any file dropped on the compare controls, is the expected destination.
  if (state.file && (target === 'expect' || isJSONFile(file))) {
    state.expected = file;
    runCompare();
    return;
  }
  if (!state.file && isJSONFile(file)) {
    status(`${file.name} looks like a layout: open a checkpoint first, then drop the layout to see whether it would load.`);
    return;
  }
  open(file);
}

let dragDepth = 0;
window.addEventListener('dragenter', (e) => {
  e.preventDefault();
  dragDepth++;
  $('drop-overlay').hidden = false;
});
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) $('drop-overlay').hidden = true;
});
window.addEventListener('drop', (e) => {
  e.preventDefault();
  dragDepth = 0;
  $('drop-overlay').hidden = true;
  const onCompare = e.target instanceof Element && !!e.target.closest('#compare, label:has(#expect-input)');
  handleFiles(e.dataTransfer?.files ?? [], onCompare ? 'expect' : 'open');
});

$('file-input').addEventListener('change', (e) => {
  handleFiles(e.target.files, 'open');
  e.target.value = '';
});
$('expect-input').addEventListener('change', (e) => {
  if (!state.file) status('Open a checkpoint first, then choose the layout or checkpoint to compare it with.');
  else handleFiles(e.target.files, 'expect');
  e.target.value = '';
});
$('labels-input').addEventListener('change', async (e) => {
  const [file] = e.target.files;
  e.target.value = '';
  if (!file) return;
  try {
    const labels = JSON.parse(await file.text());
    if (!Array.isArray(labels) || !labels.every((x) => typeof x === 'string')) throw new Error('expected a JSON array of slot names');
    state.labels = labels;
    state.labelsPinned = true;
    if (state.report?.hasSchema) {
      params.render(true);
      entries.render(true);
    }
    status(`Slot names from ${file.name}: ${labels.length}.`);
  } catch (err) {
    status(`${file.name}: ${err.message}`);
  }
});
$('export').addEventListener('click', () => {
  if (!state.report) return;
  const blob = new Blob([JSON.stringify(state.report.toJSON(), null, 2) + '\n'], { type: 'application/json' });
  const a = el('a');
  a.href = URL.createObjectURL(blob);
  a.download = `${state.file.name}.report.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});
$('filters').addEventListener('click', (e) => {
  const b = e.target.closest('button[data-filter]');
  if (!b || !state.report?.hasSchema) return;
  state.filter = b.dataset.filter;
  for (const x of $('filters').children) x.setAttribute('aria-pressed', String(x === b));
  refreshParams();
});
$('param-search').addEventListener('input', (e) => {
  state.search = e.target.value;
  if (state.report?.hasSchema) refreshParams();
});
$('scan').addEventListener('click', scanAll);
$('cancel-scan').addEventListener('click', () => parser.cancel());
$('zoom-in').addEventListener('click', () => map.zoomAt(1.5, map.width / 2));
$('zoom-out').addEventListener('click', () => map.zoomAt(1 / 1.5, map.width / 2));
$('zoom-reset').addEventListener('click', () => {
  map.zoom = 1;
  map.offset = 0;
  map.draw();
});

// Built-in examples, made by the package's writer inside the worker.
parser.request('examples').then(({ examples, layout }) => {
  const box = $('examples');
  for (const ex of examples) {
    const b = el('button', '', ex.title);
    b.type = 'button';
    b.dataset.example = ex.name;
    b.addEventListener('click', () => {
      $('examples-menu').open = false;
      state.expected = null;
      open(new File([ex.bytes], ex.name), { labels: ex.labels });
    });
    box.append(b);
  }
  const tied = examples[0];
  const b = el('button', '', 'Will it load? (tied example vs. an untied layout)');
  b.type = 'button';
  b.dataset.example = 'compare';
  b.addEventListener('click', async () => {
    $('examples-menu').open = false;
    const untied = { ...layout, representatives: layout.representatives.map((r, i) => (r === null ? null : i)), name: 'an untied layout' };
    state.expected = new File([JSON.stringify(untied)], 'untied-layout.json', { type: 'application/json' });
    await open(new File([tied.bytes], tied.name), { labels: tied.labels });
  });
  box.append(b);
}, (err) => status(`Examples unavailable: ${err.message}`));
