// A PyTorch optimizer in the viewer (docs/pytorch.md): it has no slots until it is paired with
// its model, so the host pairs the two in the worker before the views draw them; and a Trainer's
// checkpoint-N/ folder picked whole opens as its optimizer with its model (the core's names).
import { FileColumns } from './columns.js';

const columnsOf = ({ summary, columns }) => new FileColumns(summary, columns);

/** A PyTorch optimizer has no slots of its own (its summary says it needs its model): paired
 *  with its model before the views draw, the second file or the model its own file holds (opened
 *  again as the model), the optimizer's and the model's columns then the pair's; `names` (slot
 *  names loaded with them) order a model that keeps no module order. Changes `opened` in place;
 *  resolves the slots' names (the model's), or null. */
export async function bindModel(rpc, opened, names = null) {
  const opt = [opened.a, opened.b].find((f) => f?.summary.kind === 'optimizer' && f.summary.needsModel);
  if (!opt) return null;
  if (!opened.b) {
    if (!(opt.summary.tensorCount > 0)) return null;   // no model here: the card says it needs one
    const answer = await rpc.request('open', { role: 'b', source: opt.source, asModel: true });
    opened.b = { name: opt.name, source: opt.source, summary: answer.summary, cols: columnsOf(answer), io: answer.io, asModel: true };
  }
  const bound = await rpc.request('bind', { names });
  for (const role of ['a', 'b']) Object.assign(opened[role], { summary: bound[role].summary, cols: columnsOf(bound[role]), io: bound[role].io, bound: true, pairNames: names });
  // the slots exist once the pair paired (the optimizer's schema): named by the model
  const paired = [opened.a, opened.b].find((f) => f.summary.kind === 'optimizer' && f.summary.schema);
  return paired?.summary.pairing?.slots ?? null;
}

/** The optimizer and model of a Trainer's checkpoint-N/ folder among `checkpoints` (one drop or
 *  pick), in that order, the others said in `notices`; null when they are not such a folder. */
export async function trainerPair(rpc, checkpoints, notices) {
  const folder = await rpc.request('trainerFolder', { names: checkpoints.map((c) => c.name) });
  if (!folder) return null;
  const pick = (name) => checkpoints.find((c) => c.name === name);
  for (const c of checkpoints) {
    if (c.name !== folder.optimizer && c.name !== folder.model) notices.push({ name: c.name, text: `not opened: a Trainer folder's ${folder.optimizer} is shown with its ${folder.model}.` });
  }
  return [pick(folder.optimizer), pick(folder.model)];
}

/** Slot names loaded while a PyTorch optimizer is paired with a model that keeps no module order
 *  (model.safetensors, paired by shape): both files opened again (openFiles), paired by them. */
export async function pairByNames(store, names, openFiles) {
  const { a, b } = store.files;
  if (!a?.bound || !b || b.summary.family !== 'safetensors') return;
  await openFiles([a, b].map((f) => ({ name: f.name, source: f.source })), { expected: store.expected, lr: store.lr, pairNames: names });
}
