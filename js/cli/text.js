import { weightsOnlyLines } from '../weights-only.js';
import { middleEllipsis, wrapLine, COLUMNS } from '../terminal.js';
import { kindNames } from '../options.js';
import { deepspeedLines, fragmentLines, failureLines } from './deepspeed-text.js';
import { dcpLines, dcpParamLines, dcpFailureLines } from './dcp-text.js';
import { dcpAlone } from '../dcp.js';
import { table, num, numColumns } from './table.js';

export { num, numColumns };

// What the CLI shows a person, as lines (terminal.js escapes them on the way out): the summary of
// a report (either family), an error with everything the core reported beside its reference
// text, a pairing verdict, the health table, a run's pairs, what TorchLean's readers make of a
// file, and each command's result line. Words only: every fact here comes from the core's
// report; the commands (js/cli/*.js) say nothing of their own on stdout.

const fmtShape = (s) => `[${s.join(', ')}]`;
const yesNo = (b) => (b ? 'yes' : 'no');
const plural = (n, word, many = `${word}s`) => `${Number(n).toLocaleString('en-US')} ${Number(n) === 1 ? word : many}`;

/** `[name] ` before a line about slot `slot` when names are given (the slot from the core's
 *  field, never from its text); '' otherwise. */
export const namedSlot = (names, slot) => (names && slot !== null && slot !== undefined && names[Number(slot)] !== undefined ? `[${names[Number(slot)]}] ` : '');

function head(report, name) {
  const size = report.size === null || report.size === undefined ? 'size unknown (a stream)' : plural(report.size, 'byte');
  if (!report.family) return `${name}: ${size}, not a TorchLean checkpoint`;
  // a container (safetensors, torch.save) has no version of its own
  const version = 'container' in report || report.deepspeed || report.dcp ? '' : ` version ${report.version ?? '?'}`;
  return `${name}: ${report.name} (${report.family})${version}${report.dtype ? `, ${report.dtype}` : ''}, ${size}`;
}

function optimizerLines(report, names, out, width) {
  if (report.config && !report.optimizer) {   // a PyTorch optimizer's groups are its config (torchLines)
    const c = report.config;
    out.push(`optimizer       ${c.kind === 'adamw' ? 'AdamW' : 'Adam'}  beta1 ${c.beta1}  beta2 ${c.beta2}  epsilon ${c.epsilon}  weight decay ${c.weightDecay}`);
    // two fields a line: the summary fits 80 columns
    out.push(`bits            beta1 ${c.bits.beta1}  beta2 ${c.bits.beta2}`);
    out.push(`                epsilon ${c.bits.epsilon}  weight decay ${c.bits.weightDecay}`);
  }
  if (report.hasRandomCounter !== null) {
    out.push(`random counter  ${report.hasRandomCounter ? report.randomCounter : 'none (stochastic training cannot be resumed exactly)'}`);
  }
  const s = report.schema;
  if (!s) return;
  const n = s.shapes.length;
  const broken = new Set(s.brokenSlots ?? []);
  const facts = report.wellFormed === null
    ? `${plural(n, 'slot')} read before the error`
    : `${plural(n, 'slot')}, ${report.trainableCount} trainable, ${plural(report.optimizerStateCount, 'optimizer state')}, ${report.hasAliases ? 'with tied (shared) slots' : 'no tied slots'}${broken.size ? `, ${plural(broken.size, 'slot')} breaking the sharing rules` : ''}`;
  out.push(...wrapLine(`parameters      ${facts}`, width, ' '.repeat(16)));
  const entries = new Map(report.entries.map((e) => [String(e.id), e]));
  const stats = report.statistics;
  const rows = [];
  for (let i = 0; i < n; i++) {
    const r = s.effectiveRepresentatives?.[i];
    const trainable = s.requiresGrad[i];
    const known = s.effectiveRepresentatives && trainable !== undefined;
    const rep = !known ? '?' : broken.has(i) ? `broken (${r === null ? 'none' : r})` : r === null ? '-' : r === i ? 'owner' : `shares ${r}`;
    const e = entries.get(String(i));
    const row = [i];
    if (names) row.push(names[i] ?? '');
    row.push(fmtShape(s.shapes[i]), s.sizes[i], trainable === undefined ? '?' : yesNo(trainable), rep, e ? e.step : '');
    rows.push(row);
  }
  const header = ['slot', ...(names ? ['name'] : []), 'shape', 'size', 'trainable', 'representative', 'step'];
  const off = names ? 1 : 0;
  out.push('');
  // a name too long for the room is shortened, and listed in full once (names: slot → name)
  const shown = new Set();
  const fit = names ? { width, shrink: 1, key: 0, what: 'slot names', shown, short: { 4: 'train', 5: 'sharing' } } : null;
  for (const l of table(rows, header, new Set([0, 2 + off, 5 + off]), fit)) out.push(l);   // a loop: no spreading a million lines
  // The statistics in a table of their own, one column a number: 80 columns, not 150.
  if (stats) {
    // amsgrad's running maximum of v (a PyTorch optimizer's entries have vmax): its own column
    const vmax = report.entries.some((e) => e.vmax !== undefined);
    const statRows = [];
    for (let i = 0; i < n; i++) {
      const e = entries.get(String(i));
      if (!e?.m) continue;
      const all = [e.m, e.v, e.vmax].filter(Boolean);
      const nan = all.reduce((a, x) => a + Number(x.nan), 0), inf = all.reduce((a, x) => a + Number(x.inf), 0);
      statRows.push([i, ...(names ? [names[i] ?? ''] : []), e.m.min, e.m.max, e.m.rms, e.v.max, e.v.rms, ...(vmax ? [e.vmax?.max ?? null] : []), nan || inf ? `${nan}/${inf}` : '']);
    }
    if (statRows.length) {
      const cols = (vmax ? [1, 2, 3, 4, 5, 6] : [1, 2, 3, 4, 5]).map((j) => j + off);
      numColumns(statRows, cols);
      out.push('');
      const header2 = ['slot', ...(names ? ['name'] : []), 'm min', 'm max', 'm rms', 'v max', 'v rms', ...(vmax ? ['vmax max'] : []), 'NaN/inf'];
      const last = cols.at(-1) + 1;
      const fit2 = names ? { width, shrink: 1, key: 0, what: 'slot names', shown, optional: [last] } : null;
      for (const l of table(statRows, header2, new Set([0, ...cols, last]), fit2)) out.push(l);
    }
  }
}

/** min, max, rms (numbers: numColumns writes them) and NaN/inf of a statistics object, one cell each. */
function statCells(x) {
  if (!x) return [null, null, null, ''];
  const bad = x.nan || x.inf ? `${x.nan}/${x.inf}` : '';
  return [x.min, x.max, x.rms, bad];
}

function stateLines(report, names, out, width) {
  const t = report.tensors;
  out.push(`tensors         ${plural(t.length, 'tensor')}${report.tensorCount !== null && report.tensorCount !== t.length ? ` read of ${report.tensorCount} declared` : ''}`);
  if (!t.length) return;
  const stats = report.statistics;
  // a family that stores a name and a dtype per tensor (safetensors) shows them
  const own = t[0].name !== undefined;
  names ??= own ? t.map((x) => x.name) : null;
  const rows = t.map((x, i) => {
    const row = [i, ...(names ? [names[i] ?? ''] : []), ...(own ? [x.dtype ?? ''] : []), fmtShape(x.shape), x.count, x.offset];
    if (stats) row.push(...statCells(x.values));
    return row;
  });
  const header = ['tensor', ...(names ? ['name'] : []), ...(own ? ['dtype'] : []), 'shape', 'count', 'offset', ...(stats ? ['min', 'max', 'rms', 'NaN/inf'] : [])];
  const off = (names ? 1 : 0) + (own ? 1 : 0);
  if (stats) numColumns(rows, [4, 5, 6].map((j) => j + off));
  out.push('');
  const fit = names ? { width, shrink: 1, key: 0, what: 'tensor names', shown: new Set() } : null;
  for (const l of table(rows, header, new Set([0, 2 + off, 3 + off, 4 + off, 5 + off, 6 + off, 7 + off]), fit)) out.push(l);
}

/** A file read through the torch object model (its report has `weightsOnly`): the container,
 *  the optimizer's groups, the weights-only verdict, the entries by index. */
function torchLines(report, out, width) {
  const c = report.container;
  if (c) out.push(`container       ${c.format}${c.prefix ? `, prefix ${c.prefix}` : ''}, ${plural(c.records, 'record')}`);
  const o = report.optimizer;
  if (o) {
    out.push(`optimizer       ${o.path === '' ? '(the file itself)' : o.path}: kind ${o.kind ?? 'unknown'}, ${plural(o.groups.length, 'group')}, ${plural(o.entryCount, 'entry', 'entries')}`);
    const flag = (b) => (b === null ? '?' : yesNo(b));
    o.groups.forEach((g, k) => {
      const line = `group ${k}${' '.repeat(Math.max(1, 10 - String(k).length))}lr ${g.lr ?? '?'}  betas ${g.betas ? g.betas.join(', ') : '?'}  eps ${g.eps ?? '?'}  wd ${g.weightDecay ?? '?'}  amsgrad ${flag(g.amsgrad)}  maximize ${flag(g.maximize)}  params ${g.params.join(', ')}`;
      out.push(...wrapLine(line, width, ' '.repeat(16)));
    });
  } else if (c) out.push('optimizer       none');
  for (const m of report.models) out.push(`model           ${m.path === '' ? '(the file itself)' : m.path}: ${plural(m.tensors.length, 'tensor')}`);
  // a Lightning checkpoint's place in training
  const progress = [report.epoch ?? null, report.globalStep ?? null];
  if (progress.some((x) => x !== null)) out.push(`progress        ${[progress[0] !== null ? `epoch ${progress[0]}` : null, progress[1] !== null ? `global step ${progress[1]}` : null].filter(Boolean).join(', ')}`);
  const loose = report.otherTensors ?? [];
  if (loose.length) out.push(`other tensors   ${plural(loose.length, 'tensor')} in no optimizer or model state dict`);
  for (const x of report.otherOptimizers) out.push(`other optimizer ${x.path}: kind ${x.kind ?? 'unknown'}, ${plural(x.entryCount, 'entry', 'entries')}`);
  if (report.weightsOnly !== null) {
    weightsOnlyLines(report.weightsOnlyBy).forEach((l, k) => out.push(...wrapLine(`${k ? ' '.repeat(16) : 'weights only    '}${l}`, width, ' '.repeat(18))));
    out.push(...wrapLine(`globals         ${report.globals.join(', ') || 'none'}`, width, ' '.repeat(16)));
  }
  if (loose.length) {
    // every tensor the file holds elsewhere, by its path in the object (torch.load's keys)
    const rows = loose.map((x, i) => [i, x.path === '' ? '(the file itself)' : x.path, fmtShape(x.shape), x.dtype, x.count]);
    out.push('');
    const fit = { width, shrink: 1, key: 0, what: 'tensor paths', shown: new Set() };
    for (const l of table(rows, ['tensor', 'path', 'shape', 'dtype', 'count'], new Set([0, 4]), fit)) out.push(l);
  }
  if (report.pairing?.paired || !report.entries.length) return;   // paired: its slots follow
  // a name-keyed optimizer (FSDP, docs/pytorch.md) keys its entries by FQN: shown beside the stored order
  const named = report.entries.some((e) => e.name !== null && e.name !== undefined);
  const rows = report.entries.map((e) => [e.index, ...(named ? [e.name ?? '-'] : []), e.group ?? '-', e.shape ? fmtShape(e.shape) : '-', e.dtype ?? '-', e.step ?? '-']);
  out.push('');
  const heads = named ? ['index', 'name', 'group', 'shape', 'dtype', 'step'] : ['index', 'group', 'shape', 'dtype', 'step'];
  for (const l of table(rows, heads, new Set(named ? [0, 2, 5] : [0, 1, 4]))) out.push(l);
  if (!report.statistics) return;
  const vmax = report.entries.some((e) => e.vmax !== undefined);
  const statRows = [];
  for (const e of report.entries) {
    if (!e.m && !e.v) continue;
    const all = [e.m, e.v, e.vmax].filter(Boolean);
    const nan = all.reduce((a, x) => a + Number(x.nan), 0), inf = all.reduce((a, x) => a + Number(x.inf), 0);
    statRows.push([e.index, e.m?.min ?? null, e.m?.max ?? null, e.m?.rms ?? null, e.v?.max ?? null, e.v?.rms ?? null, ...(vmax ? [e.vmax?.max ?? null] : []), nan || inf ? `${nan}/${inf}` : '']);
  }
  if (!statRows.length) return;
  const cols = vmax ? [1, 2, 3, 4, 5, 6] : [1, 2, 3, 4, 5];
  numColumns(statRows, cols);
  out.push('');
  const header = ['index', 'm min', 'm max', 'm rms', 'v max', 'v rms', ...(vmax ? ['vmax max'] : []), 'NaN/inf'];
  for (const l of table(statRows, header, new Set([0, ...cols, cols.length + 1]))) out.push(l);
}

/** The summary of a report as lines; `names` (optional) names the slots; tables fit `width`. */
export function summaryLines(report, name, names = null, { width = COLUMNS } = {}) {
  const out = [head(report, name)];
  if (report.deepspeed) {   // a DeepSpeed checkpoint or one of its files (js/cli/deepspeed-text.js)
    deepspeedLines(report, out, width);
    if (report.kind === 'state') stateLines(report, names, out, width);
    else if (!report.deepspeed.lone) {
      optimizerLines(report, names ?? report.deepspeed.slots, out, width);
      fragmentLines(report, out, width);
    }
  } else if (report.dcp) {   // a distributed checkpoint, or its .metadata or a data file (js/cli/dcp-text.js)
    dcpLines(report, out, width);
    dcpParamLines(report, out, width);
  } else if (report.weightsOnly !== undefined) {
    torchLines(report, out, width);
    if (report.pairing?.paired) optimizerLines(report, names ?? report.pairing.slots, out, width);
    else if (!report.optimizer && report.tensors.length) stateLines(report, names, out, width);
  } else if (report.kind === 'state') stateLines(report, names, out, width);
  else optimizerLines(report, names, out, width);
  for (const w of report.warnings) out.push(`warning: ${w}`);
  out.push(...failureLines(report));
  if (report.dcp) out.push(...dcpFailureLines(report));
  out.push('');
  // a DCP data file or index alone (format.md 12.1): the records' checks need both, so it is
  // neither valid nor invalid here: the core's note says where to look
  if (report.ok && dcpAlone(report)) out.push(`verdict: cannot tell (${dcpAlone(report)})`);
  else if (report.ok) out.push('verdict: valid');
  else {
    out.push(`verdict: invalid at byte ${report.error.offset ?? '-'}`);
    out.push(...errorLines(report.error));
  }
  return out;
}

/** A core error as lines: the reference text first, then what the core says beside it. */
export function errorLines(err, { layoutName, names = null } = {}) {
  const out = [err.message];
  const where = [];
  if (err.offset !== null && err.offset !== undefined) where.push(`at byte ${err.offset}`);
  if (err.slot !== null && err.slot !== undefined) where.push(`slot ${err.slot}${names?.[Number(err.slot)] !== undefined && names ? ` (${names[Number(err.slot)]})` : ''}`);
  if (where.length) out.push(where.join(', '));
  if (err.configDiff?.length) {
    // decoded values first; the bit patterns tell apart what prints alike (-0 and 0)
    for (const d of err.configDiff) out.push(`  ${d.field}: file ${d.file}, expected ${d.expected}`);
    const bits = err.configDiff.filter((d) => d.fileBits);
    // one field a line: two 18-character patterns a line fit 80 columns
    for (const d of bits) out.push(`  bits: ${d.field} file ${d.fileBits}, expected ${d.expectedBits}`);
  }
  if (err.subject === 'expected' && layoutName) {
    out.push(`the layout ${layoutName} is at fault, not the checkpoint${err.hint ? `: ${err.hint}` : ''}`);
  } else if (err.hint) {
    out.push(`hint: ${err.hint}`);
  }
  return out;
}

/** A pairing result as lines: the verdict (pairs, does not pair with every failure, or cannot
 *  tell with the condition), the warnings, and beside a PyTorch pair what load_state_dict would
 *  do. `alone`: one file holding its optimizer and its model. */
export function pairLines(result, optName, stateName, names = null, { alone = false } = {}) {
  const out = [];
  // the check is structural: the core's note says what it compared and what not
  if (result.pairs) out.push(alone ? `${optName} holds its model, and they pair: ${result.note}` : `${optName} pairs with ${stateName}: ${result.note}`);
  else if (result.pairs === null) {
    out.push(alone ? `${optName} holds its model: cannot tell whether they pair` : `${optName} with ${stateName}: cannot tell whether they pair`);
    out.push(`  ${result.error.message}`);
  } else {
    const failures = plural(result.failures.length, 'failure');
    out.push(alone ? `${optName} holds its model, and they do not pair: ${failures}` : `${optName} does not pair with ${stateName}: ${failures}`);
    for (const f of result.failures.slice(0, 1000)) out.push(`  ${namedSlot(names, f.slot)}${f.message}${f.offset !== null ? ` (state file, byte ${f.offset})` : ''}`);
    if (result.failures.length > 1000) out.push(`  … and ${result.failures.length - 1000} more`);
  }
  for (const w of result.warnings) out.push(`warning: ${w}`);
  if (result.pytorch) out.push(...positionalLines(result.pytorch, result.pairs === false ? result.error : null));
  return out;
}

/** A DeepSpeed checkpoint with the model it will be loaded into (format.md 11.6): the verdict,
 *  every failure, then the core's note (what was compared, or that a universal checkpoint
 *  repairs the order and the world size), and the warnings. */
export function deepspeedPairLines(result, dirName, modelName) {
  if (result.pairs) return [`${dirName} pairs with ${modelName}`, `  ${result.note}`, ...result.warnings.map((w) => `warning: ${w}`)];
  const out = [`${dirName} does not pair with ${modelName}: ${plural(result.failures.length, 'failure')}`];
  for (const f of result.failures.slice(0, 1000)) out.push(`  ${f.message}`);
  if (result.failures.length > 1000) out.push(`  … and ${result.failures.length - 1000} more`);
  out.push(`  ${result.note}`);
  for (const w of result.warnings) out.push(`warning: ${w}`);
  return out;
}

/** The exit status of a pairing verdict: 0 pairs, 1 does not, 3 the files cannot tell. */
export const pairStatus = (result) => (result.pairs ? 0 : result.pairs === null ? 3 : 1);

/** The slots a PyTorch pair left out of the optimizer: known untrained (frozen, or buffers), or
 *  the ones the files do not say of (`untold`). */
function notInOptimizerLine(pairing) {
  if (!pairing.notInOptimizer.length) return [];
  return [pairing.untold?.length ? `not in the optimizer: ${pairing.notInOptimizer.join(', ')}` : `not in the optimizer (frozen or buffers): ${pairing.notInOptimizer.join(', ')}`];
}

/** What PyTorch's load_state_dict would do with a PyTorch pair: it pairs the k-th saved index
 *  with the k-th parameter in model order, without further verification; the indices it would
 *  give another parameter than the placement found, and the slots not in the optimizer. */
export function positionalLines(pairing, failure = null) {
  const out = [];
  // paired by name (docs/pytorch.md): a load by name gives each name its state, whatever the order
  if (pairing.byName) return notInOptimizerLine(pairing);
  if (!pairing.positionalKnown) {
    out.push('load_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell)');
    out.push(...notInOptimizerLine(pairing));
    return out;
  }
  const moved = pairing.indices.filter((x) => x.slot !== null && x.slot !== x.positionalSlot);
  const failed = failure?.index !== undefined && failure?.index !== null ? pairing.indices.find((x) => x.index === failure.index) : null;
  if (moved.length) {
    out.push(`load_state_dict pairs by position, without a word: ${plural(moved.length, 'index', 'indices')} to another parameter than found`);
    for (const x of moved.slice(0, 20)) out.push(`  index ${x.index} (${x.name}) -> ${x.positionalName ?? 'no parameter'}`);
    if (moved.length > 20) out.push(`  … and ${moved.length - 20} more`);
  } else if (!failed) out.push('load_state_dict pairs by position: here it gives every index the parameter found for it');
  if (failed) out.push(`load_state_dict gives index ${failed.index} to ${failed.positionalName ?? 'no parameter'}, without a word`);
  out.push(...notInOptimizerLine(pairing));
  return out;
}

/** A flag the core calls a warning (the ratio band, a heuristic): a warning unless --strict. */
export const isWarningFlag = (f) => f.severity === 'warning';

/** The health pass as lines: a table per slot (flagged slots marked), then the flags; ratio
 *  flags are warnings unless `strict`. */
/** The orders of health's table (--sort): the largest ratio or rms(u) first (none last), or by
 *  name (slot without names); ties and the default keep slot order. */
export const HEALTH_SORTS = ['ratio', 'rms', 'name'];

function sortedSlots(slots, sort, names) {
  if (!sort) return slots;
  const value = { ratio: (s) => s.ratio, rms: (s) => s.update?.rms }[sort];
  const key = (x) => (typeof x === 'number' && !Number.isNaN(x) ? x : x === 'Infinity' ? Infinity : -Infinity);
  const byNumber = (a, b) => key(value(b)) - key(value(a)) || a.slot - b.slot;
  const nameOf = (s) => names?.[s.slot] ?? '';
  const byName = (a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : a.slot - b.slot);
  return [...slots].sort(sort === 'name' ? byName : byNumber);
}

export function healthLines(result, optName, stateName, names = null, { strict = false, width = COLUMNS, sort = null } = {}) {
  const out = [];
  out.push(`${optName}${stateName ? ` with ${stateName}` : ''}: the next Adam step per slot${result.lr !== null ? ` at lr ${result.lr}${result.lrFrom === 'file' ? " (the optimizer's groups')" : ''}` : ' (no --lr: no update/weight ratios)'}`);
  if (result.pairs === false) out.push(`${stateName} does not pair with ${optName}: its parameters are not used`);
  if (result.pairCondition) out.push(`cannot tell whether ${stateName ? `${stateName} pairs with ${optName}` : `${optName} pairs with the model it holds`} (its parameters are used): ${result.pairCondition}`);
  if (result.c !== null) out.push(`consistency: |m| <= ${num(result.c)} * sqrt(v) for any gradient history with these betas`);
  // AdamW's step also shrinks θ by lr · weight decay (the core's per-slot decay)
  const decays = [...new Set(result.slots.map((s) => s.decay).filter((d) => typeof d === 'number' && d > 0))];
  if (decays.length) out.push(`AdamW's decoupled decay per unit θ (lr · weight decay): ${decays.map(num).join(', ')}`);
  const rows = sortedSlots(result.slots, sort, names).map((s) => [
    s.flags.length ? '!' : '',
    s.slot,
    ...(names ? [names[s.slot] ?? ''] : []),
    s.owner === null ? 'frozen' : s.owner === s.slot ? 'owner' : `shares ${s.owner}`,
    s.step ?? '',
    s.update?.rms,
    s.update?.maxAbs,
    s.param?.rms,
    s.ratio,
    s.neverUpdated || '',
    s.inconsistent || '',
  ]);
  numColumns(rows, [4, 5, 6, 7].map((j) => j + (names ? 1 : 0)));
  // 80 columns: the flags are the lines below the table (! marks their slots); bad m is the
  // count of inconsistent elements
  const header = ['', 'slot', ...(names ? ['name'] : []), 'moments', 'step', 'rms(u)', 'max|u|', 'rms(θ)', 'ratio', 'v=0', 'bad m'];
  const off = names ? 1 : 0;
  out.push('');
  const fit = names ? { width, shrink: 2, key: 1, what: 'slot names', shown: new Set(), optional: [8 + off, 9 + off] } : null;
  for (const l of table(rows, header, new Set([1, 3 + off, 4 + off, 5 + off, 6 + off, 7 + off, 8 + off, 9 + off]), fit)) out.push(l);
  out.push('');
  const warning = (f) => !strict && isWarningFlag(f);
  for (const f of result.flags) out.push(`${warning(f) ? 'warning' : 'flag'}: ${namedSlot(names, f.slot)}${f.message}`);
  const flagged = new Set(result.flags.filter((f) => !warning(f)).map((f) => f.slot)).size;
  const warned = result.flags.filter(warning).length;
  const warnings = warned ? ` (${plural(warned, 'ratio warning')}: --strict makes them failures)` : '';
  if (!result.ok) out.push(`verdict: not checked against the parameters (${result.error.message})${flagged ? `; ${plural(flagged, 'slot')} flagged by the moments alone` : ''}`);
  else out.push(flagged ? `verdict: ${plural(flagged, 'slot')} flagged${warnings}` : `verdict: healthy${warnings}`);
  return out;
}

// ---- check, diff, write and export -------------------------------------------------------------

/** check --expect's verdict: `FILE: loads into LAYOUT`, or does not. */
export const loadLine = (file, layout, loads) => `${file}: ${loads ? 'loads' : 'does not load'} into ${layout}`;

/** check --state with an invalid file: its own diagnostic, named (`why`), and the verdict. */
export function invalidPairLines(err, optName, stateName, invalidName) {
  return {
    why: [`${invalidName}: ${err.message}`, ...errorLines(err).slice(1)],
    verdict: `${optName} does not pair with ${stateName}: ${invalidName} is invalid, and an invalid file never pairs`,
  };
}

/** A pair that cannot be made (an invalid file, the wrong roles), in one line. */
export const unpairedLine = (optName, stateName, why) => `${optName} does not pair with ${stateName}: ${why}`;

/** inspect OPT --state MODEL: the pair's verdict below the summary. */
export const inspectPairLines = (result, optName, stateName, names, options) => ['', ...pairLines(result, optName, stateName, names, options)];

/** diff's answer: none, or every difference (its slot's name first when names are given). */
export function diffLines(differences, a, b, names) {
  if (!differences.length) return [`no differences between ${a} and ${b}`];
  return [`${differences.length} difference${differences.length === 1 ? '' : 's'} between ${a} and ${b}:`,
    ...differences.map((d) => `  ${namedSlot(names, d.slot)}${d.message}`)];
}

/** A file written: `wrote OUT (N bytes)`, with its format when one was chosen. */
export const wroteLine = (out, bytes, format = null) => `wrote ${out} (${bytes} bytes${format ? `, ${format}` : ''})`;

// ---- TorchLean's readers and convert (docs/format.md 8) ----------------------------------------

const pad = (name) => name.padEnd(11);

/** inspect's line: which readers can read the file at all (null for a model-state file). */
export function loadsInLine(readers) {
  if (!readers) return null;
  const names = Object.keys(readers);
  const yes = names.filter((n) => readers[n].reads), no = names.filter((n) => !readers[n].reads);
  if (!yes.length) return 'loads in: none of the TorchLean readers';
  return `loads in: ${yes.join(', ')}${no.length ? ` (not ${no.join(', ')})` : ''}`;
}

/** One line per reader: whether it reads the file, else its own first diagnostic. */
export function readerLines(readers) {
  return Object.entries(readers).map(([name, v]) => `  ${pad(name)}${v.reads ? 'reads it' : `does not read it: ${v.error.message}`}`);
}

/** check --reader all: one line per reader ({reader, loads, warnings, message}), with its own
 *  text and warnings. */
export function everyReaderLines(file, layout, verdicts) {
  const lines = [`${file} into ${layout}, per TorchLean reader:`];
  for (const v of verdicts) {
    if (!v.loads) {
      lines.push(`  ${pad(v.reader)}does not load: ${v.message}`);
      continue;
    }
    lines.push(`  ${pad(v.reader)}loads`);
    for (const w of v.warnings) lines.push(`  ${pad('')}warning: ${w}`);
  }
  return lines;
}

/** convert IN OUT --to V: the version written, and whether IN already was it (`same`). */
export function convertLines(input, output, result, { same, oldest }) {
  const lines = [`${output}: version ${result.version} (${result.dtype})`];
  if (same) lines.push(`${input} is already version ${result.version}${oldest ? ', the oldest that loses nothing' : ''}: ${output} holds the same state`);
  return lines;
}

/** convert optimizer.pt OUT: the version written, from which pair. */
export const fromTorchLine = (output, result, input, model) => `${output}: version ${result.version} (${result.dtype}), from ${input} with ${model}`;

/** What a conversion to TLADAMF did to the values, then what each TorchLean reader makes of OUT. */
export function convertedLines(output, result, readers) {
  const lines = [];
  if (result.widened) lines.push('widened the moments to float32 (exactly: every float16 and bfloat16 value is a float32 value)');
  if (result.rounded) lines.push(`rounded float64 moments to float32: largest relative error ${result.maxRelativeError.toPrecision(3)}`);
  if (readers) lines.push(`${output}, per TorchLean reader:`, ...readerLines(readers));   // null: not read back
  return lines;
}

/** convert IN OUT.pt: what ckptscope's own reader sees in the torch.save file written. */
export function torchFileLines(output, s) {
  const n = s.entryCount;
  const dtypes = [...new Set(s.entries.map((e) => e.dtype))].join(', ') || 'no moments';
  return [`${output}: torch.save file, ${s.optimizer.kind === 'adamw' ? 'AdamW' : 'Adam'} state_dict, ${n} parameter${n === 1 ? '' : 's'} with state (${dtypes}), lr ${s.optimizer.groups[0].lr}`,
    ...weightsOnlyLines(s.weightsOnlyBy).map((l) => `weights only: ${l}`)];
}

// ---- runs (docs/runs.md) -------------------------------------------------------------------------

/** A count and its word as run's lines write it (no thousands separator). */
const runPlural = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** What a pair comes to: 'continuous', 'cannot tell' or 'NOT continuous'. */
const pairState = (p) => (p.continuous === null ? 'cannot tell' : p.continuous ? 'continuous' : 'NOT continuous');

/** A slot as the lines name it: `slot 4` or `slot 4 (name)`. */
const slotName = (names, slot) => `slot ${slot}${names && names[slot] !== undefined ? ` (${names[slot]})` : ''}`;

/** How many of a pair's slots cannot tell: `2 of 3 slots cannot tell`. */
const weakSlots = (p) => `${p.slotsCannotTell} of ${runPlural(p.slots.length, 'slot')} cannot tell`;

/** The one line of a pair: its state; the verdict's text (its slot's name first), and when it
 *  cannot tell how many slots could not; or its worst slot, its power, the slots that cannot tell
 *  (when some cannot) and the slots whose learning rate came back. */
function pairLine(p, names) {
  const head = `${p.a} → ${p.b}: ${pairState(p)}`;
  if (p.continuous === false) return `${head}: ${namedSlot(names, p.verdictSlot)}${p.verdict}`;
  if (p.continuous === null) return `${head}: ${namedSlot(names, p.verdictSlot)}${p.verdict}; ${weakSlots(p)}`;
  const parts = [];
  let worst = null;
  for (const s of p.slots) if (s.worst !== null && (worst === null || s.worst > worst.worst)) worst = s;
  if (worst) parts.push(`worst ${numColumnsOne(worst.worst)} at ${slotName(names, worst.slot)}`);
  if (p.power !== null) parts.push(`power ${numColumnsOne(p.power)}`);
  if (p.slotsCannotTell) parts.push(weakSlots(p));
  const lrs = p.slots.filter((s) => s.lr !== null).length;
  if (lrs) parts.push(`lr on ${runPlural(lrs, 'slot')}`);
  return parts.length ? `${head} (${parts.join(', ')})` : head;
}

/** A pair's recovered learning rate (its slots' range as printed, when they print apart) beside
 *  the one trainer_state.json logged for that update. */
function loggedLine(p) {
  const l = p.loggedLr;
  const shown = [...new Set(p.slots.filter((s) => s.lr !== null).sort((x, y) => x.lr - y.lr).map((s) => numColumnsOne(s.lr)))];
  const recovered = shown.length > 1 ? `${shown[0]} to ${shown[shown.length - 1]}` : shown[0];
  return `  lr ${recovered} ${l.agrees ? 'agrees with' : 'DIFFERS from'} the one logged at step ${l.step}: ${numColumnsOne(l.learningRate)}`;
}

/** A DeepSpeed pair's recovered learning rate beside the one A's groups stored for that step. */
function storedLine(p) {
  const l = p.storedLr;
  const shown = [...new Set(p.slots.filter((s) => s.lr !== null).sort((x, y) => x.lr - y.lr).map((s) => numColumnsOne(s.lr)))];
  const recovered = shown.length > 1 ? `${shown[0]} to ${shown[shown.length - 1]}` : shown[0];
  return `  lr ${recovered} ${l.agrees ? 'agrees with' : 'DIFFERS from'} the groups' stored lr at step ${l.step}: ${l.learningRates.map(numColumnsOne).join(', ')}`;
}

/** A figure as the tables print it. */
function numColumnsOne(x) {
  const rows = [[x]];
  numColumns(rows, [0]);
  return rows[0][0];
}

/** A pair's per-slot table (--slots). */
function slotLines(p, names, width) {
  const rows = p.slots.map((s) => [
    s.message ? '!' : s.cannotTell ? '?' : '',
    s.slot,
    ...(names ? [names[s.slot] ?? ''] : []),
    `${s.stepA}→${s.stepB}`,
    s.k,
    s.broken ?? '',
    s.worst,
    s.power,
    s.gradient?.rms,
    s.lr,
    s.lrResidual,
  ]);
  const off = names ? 1 : 0;
  numColumns(rows, [5, 6, 7, 8, 9].map((j) => j + off));
  const header = ['', 'slot', ...(names ? ['name'] : []), 'steps', 'k', 'broken', 'worst', 'power', 'rms(g)', 'lr', 'residual'];
  const right = new Set([1, ...[3, 4, 5, 6, 7, 8, 9].map((j) => j + off)]);
  const fit = names ? { width: width - 2, shrink: 2, key: 1, what: 'slot names', shown: new Set() } : null;
  return table(rows, header, right, fit).map((l) => `  ${l}`);
}

/** The run's verdict line. */
function verdictLine(result, name) {
  const weak = result.cannotTell ?? 0;
  const apart = weak ? `${runPlural(weak, 'pair')} of ${result.pairs.length} cannot tell` : '';
  if (result.first !== null) return `verdict: something breaks at file ${result.first} (${name(result.first)})${weak ? `; ${apart}` : ''}`;
  if (weak) return `verdict: nothing breaks, but ${apart} (too far apart): not shown to be one run`;
  return 'verdict: one run, every pair continuous';
}

/** The readable form: per file, one line per pair (with `slots`, its slot table), the verdict. */
export function runLines(result, { width = COLUMNS, names = null, slots = false } = {}) {
  const out = [];
  const name = (i) => result.files[i].path ?? `file ${i}`;
  out.push(`${result.files.length} checkpoints of one run:`);
  // the file's health as the JSON gives it: every flag, and how many of them are warnings
  const rows = result.files.map((f, i) => [
    i === result.first ? '!' : '',
    i,
    f.step ?? '',
    f.health ? f.health.flags : '',
    f.health ? f.health.warnings : '',
    f.health?.ratio,
    f.state ? 'yes' : '',
    f.ok ? name(i) : `${name(i)} (invalid)`,
  ]);
  numColumns(rows, [5]);
  // a long path is shortened in the middle, and listed in full below the table, once the
  // columns empty in every row (no flagged file, no ratios, no state files) made room for it
  // (in the middle: a path's dots are its file name's, not a module's blocks)
  const fit = { width, shrink: 7, key: 1, what: 'paths', shown: new Set(), short: { 4: 'warn' }, optional: [0, 5, 6], shorten: middleEllipsis };
  for (const l of table(rows, ['', 'file', 'step', 'flags', 'warnings', 'ratio', 'state', 'path'], new Set([1, 2, 3, 4, 5]), fit)) out.push(l);
  // a state file given and not used: which, and why
  for (const [i, f] of result.files.entries()) if (f.stateError) out.push(...wrapLine(`warning: state file ${f.stateFile ?? '?'} not used for file ${i}: ${f.stateError}`, width));
  for (const s of result.skipped ?? []) out.push(...wrapLine(`skipped ${s.name}: ${s.why}`, width));
  out.push('');
  for (const p of result.pairs) {
    out.push(pairLine(p, names));
    if (p.loggedLr && p.loggedLr.agrees !== null) out.push(...wrapLine(loggedLine(p), width));
    if (p.storedLr && p.storedLr.agrees !== null) out.push(...wrapLine(storedLine(p), width));
    if (slots && p.slots.length) {
      out.push(...slotLines(p, names, width));
      out.push('');
    }
  }
  if (!slots) out.push('');
  out.push(verdictLine(result, name));
  return out;
}

/** A run's warnings: a Trainer output folder's own, per folder, then the optimizers whose kind
 *  neither their file nor (in a folder) training_args.bin says (`unknown`: their paths, of
 *  `total`). */
export function trainerWarnings(perFolder, paths, unknown, total, { folder = true } = {}) {
  const warnings = perFolder.flatMap((list, i) => list.map((w) => `warning: ${paths[i]}: ${w}`));
  const said = folder ? 'neither its file nor training_args.bin says Adam or AdamW' : 'its file does not say Adam or AdamW';
  if (unknown.length) warnings.push(`warning: ${unknown.length === total ? 'every optimizer\'s' : `${runPlural(unknown.length, 'optimizer')}' (${unknown.join(', ')})`} kind is unknown (${said}): no learning rate comes back; give --kind ${kindNames().join('|')}`);
  return warnings;
}

// ---- serve and view ----------------------------------------------------------------------------

/** serve's line: where the viewer is. */
export const servingLine = (origin) => `ckptscope viewer: ${origin}/  (Ctrl-C stops it)`;

/** view's line on stderr, below the URL: whether a browser was asked to open it. */
export const openingLine = (opened) => `ckptscope: ${opened ? 'opening it in your browser' : 'open this URL in your browser'} (Ctrl-C stops the server)`;
