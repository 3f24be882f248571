// A distributed checkpoint's summary lines (docs/distributed.md): what its .metadata says (version,
// the classes' module paths, the optimizer part's key form), its data files with their records
// and ranks, its parameter groups, and a table of the model part's tensors with their chunks.
// Every fact is the core's report (its `dcp` member and entries); nothing here reads a name, a
// key or a byte range of the format.

import { wrapLine } from '../terminal.js';
import { table, numColumns } from './table.js';

const plural = (n, word, many = `${word}s`) => `${Number(n).toLocaleString('en-US')} ${Number(n) === 1 ? word : many}`;
const fmtShape = (s) => `[${s.join(', ')}]`;
const HANG = ' '.repeat(16);

/** What the optimizer part's key forms are called (format.md 12.2). */
export const FORM_NAMES = {
  N: 'nested (N)',
  N23: 'nested, groups as one item (N23)',
  F: 'flattened (F)',
  I: 'by index (I)',
};

/** A data file's rank: the core's, for the file or, failing that, for a chunk it holds. */
export function fileRanks(d, entries) {
  const ranks = new Map();
  for (const e of entries ?? []) {
    for (const c of e.chunks ?? []) if (c.rank !== null && c.rank !== undefined && !ranks.has(c.file)) ranks.set(c.file, c.rank);
  }
  return d.files.map((f) => (f.rank !== undefined && f.rank !== null ? f.rank : ranks.get(f.name) ?? null));
}

/** The ranks whose files hold an entry's chunks, lowest first ('?' for a file of no rank). */
export function chunkRanks(e) {
  const ranks = new Set((e.chunks ?? []).map((c) => c.rank));
  return [...ranks].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b)).map((r) => (r === null ? '?' : String(r)));
}

/** How an entry is trained: 'yes' (it has optimizer state), 'tied to NAME' (an alias of an
 *  earlier slot), or 'no'. */
export function trainText(e, entries) {
  if (e.trainable) return 'yes';
  const k = e.representative;
  if (k !== null && k !== undefined && entries[k] && entries[k] !== e) return `tied to ${entries[k].name}`;
  return 'no';
}

/** The lines of report.dcp before the parameters: what .metadata is, the files, the keys, the
 *  groups, the bytes items. */
export function dcpLines(report, out, width) {
  const d = report.dcp;
  const entries = report.entries ?? [];
  const facts = [d.version === null ? 'unversioned metadata' : `metadata version ${d.version}`, `classes ${d.classes}`,
    d.form === null ? 'no optimizer part' : `optimizer ${FORM_NAMES[d.form] ?? d.form}`, d.plannerData ? 'planner_data' : 'no planner_data'];
  out.push(...wrapLine(`dcp             ${facts.join(', ')}`, width, HANG));
  const ranks = fileRanks(d, entries);
  const files = d.files.map((f, k) => `${f.name} (${f.size === null ? 'missing' : plural(f.size, 'byte')}, ${plural(f.items, 'record')}${ranks[k] === null ? '' : `, rank ${ranks[k]}`})`);
  if (files.length) out.push(...wrapLine(`files           ${files.join(', ')}`, width, HANG));
  if (d.strays.length) out.push(...wrapLine(`other files     ${d.strays.join(', ')}`, width, HANG));
  out.push(`keys            ${plural(d.keys.model, 'model key')}, ${plural(d.keys.optimizer, 'optimizer key')}, ${plural(d.keys.other, 'other key')}`);
  d.groups.forEach((g, k) => {
    const line = `group ${k}${' '.repeat(Math.max(1, 10 - String(k).length))}lr ${g.lr ?? '?'}  betas ${g.betas ? g.betas.join(', ') : '?'}  eps ${g.eps ?? '?'}  wd ${g.weightDecay ?? '?'}  ${plural(g.params.length, 'parameter')}`;
    out.push(...wrapLine(line, width, HANG));
  });
  if (d.bytesItems.length) out.push(...wrapLine(`bytes items     ${d.bytesItems.map((b) => b.key).join(', ')}`, width, HANG));
}

/** The model part's tensors (one row a slot): name, shape, dtype, chunks, the ranks holding
 *  them, step, and whether it is trained; with statistics the moments' in a table of their own. */
export function dcpParamLines(report, out, width) {
  const entries = report.entries ?? [];
  if (!entries.length) return;
  const rows = entries.map((e, i) => [i, e.name, fmtShape(e.shape), e.dtype ?? '?', e.chunks.length, chunkRanks(e).join(','), e.step ?? '-', trainText(e, entries)]);
  out.push('');
  const shown = new Set();
  const fit = { width, shrink: 1, key: 0, what: 'parameter names', shown, short: { 4: 'ch' } };
  for (const l of table(rows, ['slot', 'name', 'shape', 'dtype', 'chunks', 'ranks', 'step', 'trainable'], new Set([0, 4, 6]), fit)) out.push(l);
  if (!report.statistics) return;
  const statRows = [];
  entries.forEach((e, i) => {
    if (!e.m && !e.v) return;
    const all = [e.m, e.v].filter(Boolean);
    const nan = all.reduce((a, x) => a + Number(x.nan), 0), inf = all.reduce((a, x) => a + Number(x.inf), 0);
    statRows.push([i, e.name, e.m?.min ?? null, e.m?.max ?? null, e.m?.rms ?? null, e.v?.max ?? null, e.v?.rms ?? null, nan || inf ? `${nan}/${inf}` : '']);
  });
  if (!statRows.length) return;
  numColumns(statRows, [2, 3, 4, 5, 6]);
  out.push('');
  const fit2 = { width, shrink: 1, key: 0, what: 'parameter names', shown, optional: [7] };
  for (const l of table(statRows, ['slot', 'name', 'm min', 'm max', 'm rms', 'v max', 'v rms', 'NaN/inf'], new Set([0, 2, 3, 4, 5, 6, 7]), fit2)) out.push(l);
}

/** A diagnostic's words: a text as such, or the core's object's text. */
export const said = (x) => (typeof x === 'string' ? x : x.text ?? x.message);

/** Every error after the first (the verdict's), in the core's order. */
export function dcpFailureLines(report) {
  return (report.errors ?? []).slice(1).map((f) => `failure: ${said(f)}`);
}
