// A distributed checkpoint's summary lines (docs/distributed.md): what its .metadata says (version,
// the classes' module paths, the optimizer part's key form), its data files with their records
// and ranks, its parameter groups, and a table of the model part's tensors with their chunks.
// Every fact is the core's report (its `dcp` member, src/families/dcp/json.c); nothing here
// reads a name, a key or a byte range of the format.

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

/** What was opened, when it is not the folder. */
const OPENED = { metadata: 'the index (.metadata) alone', distcp: 'a data file alone' };

/** The ranks whose files hold an entry's chunks, lowest first ('?' for a file of no rank). */
export function chunkRanks(e) {
  const ranks = new Set((e.chunks ?? []).map((c) => c.rank));
  return [...ranks].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b)).map((r) => (r === null ? '?' : String(r)));
}

/** How an entry is trained, from the core's role: 'yes' (it has optimizer state), 'tied to NAME'
 *  (its values equal an earlier trained slot's), 'no' (frozen: values compared, no alias), or
 *  'frozen or tied' (no state, values not compared: the core cannot tell which). */
export function trainText(e, entries) {
  if (e.role === 'owner') return 'yes';
  if (e.role === 'tied') return `tied to ${entries[Number(e.representative)]?.name ?? e.representative}`;
  if (e.role === 'frozen') return 'no';
  return e.role;
}

/** The lines of report.dcp before the parameters: what .metadata is, the files, the keys, the
 *  groups, the bytes items. */
export function dcpLines(report, out, width) {
  const d = report.dcp;
  if (d.opened === 'distcp') {
    // a data file alone: no index was read, so no metadata, form or keys to state
    out.push(`dcp             ${OPENED.distcp}, without its .metadata`);
    return recordLines(d, out, width);
  }
  const facts = [...(OPENED[d.opened] ? [OPENED[d.opened]] : []), d.version === null ? 'unversioned metadata' : `metadata version ${d.version}`, `classes ${d.classes ?? 'unknown'}`,
    d.form === null ? 'no optimizer part' : `optimizer ${FORM_NAMES[d.form] ?? d.form}`, d.plannerData ? 'planner_data' : 'no planner_data'];
  out.push(...wrapLine(`dcp             ${facts.join(', ')}`, width, HANG));
  const files = d.files.map((f) => `${f.name} (${f.size === null ? 'missing' : plural(f.size, 'byte')}, ${plural(f.items, 'record')}${f.rank === null ? '' : `, rank ${f.rank}`})`);
  if (files.length) out.push(...wrapLine(`files           ${files.join(', ')}`, width, HANG));
  if (d.strays.length) out.push(...wrapLine(`other files     ${d.strays.join(', ')}`, width, HANG));
  out.push(`keys            ${plural(d.keys.model, 'model key')}, ${plural(d.keys.optimizer, 'optimizer key')}, ${plural(d.keys.other, 'other key')}`);
  if (d.kindSaid) out.push(`optimizer       ${d.kindSaid === 'adamw' ? 'AdamW' : 'Adam'} (its groups' decoupled_weight_decay)`);
  else if (d.kindGiven) out.push(`optimizer       ${d.kindGiven === 'adamw' ? 'AdamW' : 'Adam'} (given: DCP keeps no optimizer class)`);
  d.groups.forEach((g, k) => {
    // the index alone: the groups' values are bytes items in the data files, not read
    const params = d.opened === 'metadata' ? 'parameters ?' : plural(g.params.length, 'parameter');
    const line = `group ${k}${' '.repeat(Math.max(1, 10 - String(k).length))}lr ${g.lr ?? '?'}  betas ${g.betas ? g.betas.join(', ') : '?'}  eps ${g.eps ?? '?'}  wd ${g.weightDecay ?? '?'}  ${params}`;
    out.push(...wrapLine(line, width, HANG));
  });
  if (d.bytesItems.length) out.push(...wrapLine(`bytes items     ${d.bytesItems.map((b) => b.key).join(', ')}`, width, HANG));
  recordLines(d, out, width);
}

/** A data file alone's last record, and the core's note. */
function recordLines(d, out, width) {
  const r = d.record;   // a data file alone: its last record
  if (r) out.push(...wrapLine(`last record     ${plural(r.length, 'byte')} at byte ${r.offset}${r.dtype ? `: a ${r.dtype} tensor of shape ${fmtShape(r.shape)}` : ''}`, width, HANG));
  if (d.note) out.push(...wrapLine(`note            ${d.note}`, width, HANG));
}

/** The model part's tensors (one row a slot): name, shape, dtype, chunks, the ranks holding
 *  them, step, and whether it is trained; with statistics the moments' in a table of their own. */
export function dcpParamLines(report, out, width) {
  const entries = report.dcp.entries;
  if (!entries.length) return;
  const rows = entries.map((e, i) => [i, e.name, fmtShape(e.shape), e.dtype ?? '?', e.chunks.length, chunkRanks(e).join(','), e.step ?? '-', trainText(e, entries)]);
  out.push('');
  const shown = new Set();
  const fit = { width, shrink: 1, key: 0, what: 'parameter names', shown, short: { 4: 'ch' } };
  for (const l of table(rows, ['slot', 'name', 'shape', 'dtype', 'chunks', 'ranks', 'step', 'trainable'], new Set([0, 4, 6]), fit)) out.push(l);
  if (!report.statistics) return;
  // the moments' statistics are the report's entries' (one per slot with state, by slot)
  const statRows = [];
  for (const e of report.entries ?? []) {
    if (!e.m && !e.v) continue;
    const all = [e.m, e.v].filter(Boolean);
    const nan = all.reduce((a, x) => a + Number(x.nan), 0), inf = all.reduce((a, x) => a + Number(x.inf), 0);
    statRows.push([e.id, entries[Number(e.id)]?.name ?? '', e.m?.min ?? null, e.m?.max ?? null, e.m?.rms ?? null, e.v?.max ?? null, e.v?.rms ?? null, nan || inf ? `${nan}/${inf}` : '']);
  }
  if (!statRows.length) return;
  numColumns(statRows, [2, 3, 4, 5, 6]);
  out.push('');
  const fit2 = { width, shrink: 1, key: 0, what: 'parameter names', shown, optional: [7] };
  for (const l of table(statRows, ['slot', 'name', 'm min', 'm max', 'm rms', 'v max', 'v rms', 'NaN/inf'], new Set([0, 2, 3, 4, 5, 6, 7]), fit2)) out.push(l);
}

/** The errors of the core's diagnostics, in its order (the first is the verdict's). */
export const dcpErrors = (report) => (report.dcp?.diagnostics ?? []).filter((g) => g.severity === 'error');

/** Every error after the first (the verdict's), in the core's order. */
export function dcpFailureLines(report) {
  return dcpErrors(report).slice(1).map((g) => `failure: ${g.text}`);
}
