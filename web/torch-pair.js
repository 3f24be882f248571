// A PyTorch optimizer in the viewer (docs/pytorch.md): it has no slots until it is paired with
// its model, so the host pairs the two in the worker before the views draw them; and a Trainer's
// checkpoint-N/ folder picked, dropped or served whole opens as its optimizer with its model, an
// output folder as a run of its checkpoint-N folders (the core's names and order).
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

/** The path a file came with: a picked folder's relative path (out/checkpoint-10/optimizer.pt),
 *  a served file's name (which `ckptscope view DIR` gives its folders), else its name. */
const pathOf = (f) => f.webkitRelativePath || f.name;

const itemOf = (f) => ({ source: f.source ?? f, name: f.name.slice(f.name.lastIndexOf('/') + 1) });

/** Say why `f` is not used: a Trainer folder's file that this view does not read. */
const unusedBy = (what) => (f) => ({ name: pathOf(f), text: `not used: ${what}.` });

/**
 * The files of one drop, pick or address read as a Hugging Face Trainer's, by the core's names
 * (the package's trainerLayout): a checkpoint-N/ folder gives {pair: [optimizer, model] to open,
 * kind: its training_args.bin's (null: it says none, or has none)}, an output folder of
 * checkpoint-N/ folders {run: {files, trainer}} for the run view; either with `rest`, the files
 * no role names (sorted as any drop's: slot names dropped with a folder still apply). Files of
 * the folder that are not read are said in `notices`. Null when the files are neither.
 */
export async function trainerFiles(rpc, files, notices) {
  if (!files.length) return null;
  const layout = await rpc.request('trainerLayout', { paths: files.map(pathOf) });
  if (!layout) return null;
  const used = new Set(layout.used);
  if (layout.checkpoints) {
    const runFiles = files.map(itemOf).map((f, i) => ({ ...f, name: pathOf(files[i]) }));
    const trainer = layout.checkpoints.map(({ name, roles }) => ({ name, optimizer: roles.optimizer, model: roles.model, trainingArgs: roles.trainingArgs, trainerState: roles.trainerState, config: roles.config, accelerate: !!roles.accelerate }));
    const read = new Set(trainer.flatMap((c) => [c.optimizer, c.model, c.trainingArgs, c.trainerState, c.config]).filter((k) => k !== null));
    const accelerate = trainer.some((c) => c.accelerate);
    notices.push(...files.filter((_, i) => !read.has(i)).map(unusedBy(accelerate ? 'an Accelerate run reads each checkpoint_K folder\'s optimizer and model' : 'a Trainer run reads each checkpoint-N folder\'s optimizer, model, training_args.bin, trainer_state.json and config.json')));
    return { run: { files: runFiles, trainer }, rest: [] };
  }
  const roles = layout.checkpoint;
  const [opt, model] = [files[roles.optimizer], files[roles.model]];
  let kind = null;
  if (roles.trainingArgs !== null) {
    kind = await rpc.request('trainingArgs', { source: itemOf(files[roles.trainingArgs]).source }).catch((err) => {
      notices.push({ name: pathOf(files[roles.trainingArgs]), text: `not used: ${err.message}` });
      return null;
    });
  }
  const whose = roles.accelerate ? 'an Accelerate folder\'s' : 'a Trainer folder\'s';
  const shownWith = (f) => ({ name: itemOf(f).name, text: `not opened: ${whose} ${itemOf(opt).name} is shown with its ${itemOf(model).name}.` });
  for (const k of [roles.trainerState, roles.scheduler, roles.modelIndex]) if (k !== null) notices.push(shownWith(files[k]));
  // an Accelerate folder's other files (scheduler, random states, …): said, not opened
  for (const k of roles.accelerate ?? []) if (k !== roles.optimizer && k !== roles.model) notices.push(shownWith(files[k]));
  const rest = files.filter((_, i) => !used.has(i));
  return { pair: [itemOf(opt), itemOf(model)], kind, rest, shownWith };
}

/** Slot names loaded while a PyTorch optimizer is paired with a model that keeps no module order
 *  (model.safetensors, paired by shape): both files opened again (openFiles), paired by them. */
export async function pairByNames(store, names, openFiles) {
  const { a, b } = store.files;
  if (!a?.bound || !b || b.summary.family !== 'safetensors') return;
  await openFiles([a, b].map((f) => ({ name: f.name, source: f.source })), { expected: store.expected, lr: store.lr, pairNames: names });
}
