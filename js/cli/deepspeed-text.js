// A DeepSpeed checkpoint's summary lines (docs/deepspeed.md): its kind, world size and files, its
// groups, a file alone's note, and where each parameter's state lies (its fragments). Every fact
// is the core's report ("deepspeed", src/families/deepspeed/json.c).

import { wrapLine } from '../terminal.js';
import { table, numColumns } from './table.js';

const plural = (n, word, many = `${word}s`) => `${Number(n).toLocaleString('en-US')} ${Number(n) === 1 ? word : many}`;
const flag = (b) => (b === null || b === undefined ? '?' : b ? 'yes' : 'no');

/** The lines of report.deepspeed before the slots: kind, files, groups, note. */
export function deepspeedLines(report, out, width) {
  const d = report.deepspeed;
  const facts = [d.kind ?? (report.kind === 'state' ? 'model states' : 'kind unknown')];
  if (d.universal) facts.push('universal (loads by name on any world size)');
  if (d.worldSize !== null) facts.push(d.lone ? `rank ${d.rank ?? '?'} of ${d.worldSize}` : plural(d.worldSize, 'rank'));
  if (d.dtype) facts.push(`${d.dtype} module`);
  if (d.dsVersion !== null) facts.push(`DeepSpeed ${d.dsVersion}`);
  if (d.tag !== null) facts.push(`tag ${d.tag}`);
  out.push(...wrapLine(`deepspeed       ${facts.join(', ')}`, width, ' '.repeat(16)));
  if (!d.lone && d.files.length) {
    const files = d.files.map((f) => `${f.name}${f.stale ? ' (stale)' : ''}`).join(', ');
    out.push(...wrapLine(`files           ${files}`, width, ' '.repeat(16)));
  }
  if (d.optimizerKind !== null) out.push(`optimizer       ${d.optimizerKind === 'adamw' ? 'AdamW' : 'Adam'} (${d.kindSaidBy === 'param_groups' ? 'its groups\' decoupled_weight_decay' : 'ds_config'})`);
  else if (d.kindGiven) out.push(`optimizer       ${d.kindGiven === 'adamw' ? 'AdamW' : 'Adam'} (given: ds_config names none)`);
  d.groups.forEach((g, k) => {
    const size = g.params ? `${plural(g.params.length, 'parameter')}, flat ${g.flatSize}` : `flat ${g.flatSize ?? '?'}`;
    const pads = g.paddings.length && g.paddings.some((p) => p !== null) ? `, paddings ${g.paddings.map((p) => p ?? '?').join(', ')}` : '';
    const line = `group ${k}${' '.repeat(Math.max(1, 10 - String(k).length))}lr ${g.lr ?? '?'}  betas ${g.betas ? g.betas.join(', ') : '?'}  eps ${g.eps ?? '?'}  wd ${g.weightDecay ?? '?'}  amsgrad ${flag(g.amsgrad)}  ${size}${pads}  step ${g.step ?? '-'}`;
    out.push(...wrapLine(line, width, ' '.repeat(16)));
  });
  if (d.globalSteps !== null) out.push(`engine          global_steps ${d.globalSteps}, skipped_steps ${d.skippedSteps ?? '?'}`);
  if (d.note) out.push(...wrapLine(`note            ${d.note}`, width, ' '.repeat(16)));
}

/** Where each trainable owner's state lies: its fragments (rank: start + count), and with
 *  statistics its fp32 masters'. */
export function fragmentLines(report, out, width) {
  const d = report.deepspeed;
  if (!d.entries.length) return;
  const stats = report.statistics;
  const rows = d.entries.map((e) => {
    const where = e.fragments.map((f) => `${f.rank}:${f.start}+${f.count}`).join(' ');
    const row = [e.slot ?? '-', e.name, d.kind === 'ZeRO-3' ? `${e.group}/${e.subGroup}` : e.group, where];
    if (stats) row.push(e.master?.min ?? null, e.master?.max ?? null, e.master?.rms ?? null);
    return row;
  });
  if (stats) numColumns(rows, [4, 5, 6]);
  out.push('');
  const header = ['slot', 'name', d.kind === 'ZeRO-3' ? 'group/sub' : 'group', 'fragments (rank:start+count)', ...(stats ? ['master min', 'master max', 'master rms'] : [])];
  const fit = { width, shrink: 1, key: 0, what: 'parameter names', shown: new Set() };
  for (const l of table(rows, header, new Set([0, 2, 4, 5, 6]), fit)) out.push(l);
}

/** Every failure after the first (the verdict's), in the core's order. */
export function failureLines(report) {
  return (report.deepspeed?.failures ?? []).slice(1).map((f) => `failure: ${f.message}`);
}
