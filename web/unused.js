// Files of one drop, pick or address that no card shows, said in the notices card with why
// (docs/viewer.md "Opening files"): the one of two files that is not shown, the lists of names
// and the layouts beside the one used, the checkpoints beside the one compared with.

/** Of two opened files ({a, b}, changed in place), the one no card would show, closed and said
 *  in `unused` with why: a file of no family the core reads beside one of a family it reads
 *  (that one then becomes the main file: `reopen(file, 'a')` opens it again as such), the second
 *  of two files of no known family (the first's problem card says why), the second of two
 *  model-state files (one goes with an optimizer). */
export async function dropUnshown(rpc, opened, unused, reopen) {
  const { a, b } = opened;
  if (!b) return;
  const known = (f) => f.summary.kind !== null;
  let drop = null;
  if (known(a) && !known(b)) drop = b;
  else if (!known(a) && known(b)) drop = a;
  else if (!known(a) && !known(b)) drop = b;
  else if (a.summary.kind === 'state' && b.summary.kind === 'state' && !b.asModel) drop = b;
  if (!drop) return;
  const e = drop.summary.error;   // the core's reason, as the problem card would say it
  unused.push({
    name: drop.name,
    text: known(drop) ? `not used: a second model-state file; one goes with an optimizer checkpoint, and ${a.name} (the first) is shown.`
      : `not used: ${e ? `${e.message}${e.hint ? ` (${e.hint})` : ''}` : 'not a file of a family ckptscope reads'}.`,
  });
  await rpc.request('close', { role: 'b' });
  delete opened.b;
  if (drop === a) opened.a = await reopen(b, 'a');
}

/** The list of slot names that applies, of those given together: the last; the others said. */
export function lastNames(names, notices) {
  const used = names.at(-1) ?? null;
  for (const n of names.slice(0, -1)) notices.push({ name: n.name, text: `not used: one list of slot names applies, and ${used.name} (the last given) is the one.` });
  return used;
}

/** The checkpoints given beside `other`, the one compared with, said. */
export function notComparedWith(other, checkpoints, notices) {
  for (const c of checkpoints) if (c !== other) notices.push({ name: c.name, text: `not used: one layout or checkpoint is compared at a time, and ${other.name} is the one.` });
}
