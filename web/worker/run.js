// Run requests (docs/runs.md): the checkpoints of one run (a Trainer output folder's too), and
// whether the files of one drop are a Trainer's folder.
import { open, run, runFiles, trainerFolderRoles, trainerLayout, readTrainingArgs } from '/js/index.js';
import { openTrainerCheckpoints, compareLogged } from '/js/plumbing.js';
import { transfer } from '../rpc.js';
import { throttled } from './handles.js';
import { sourceOf } from './sources.js';

export const runRequests = {
  /** Checkpoints of one run from a drop, a pick or a folder: `files` [{name, source}] in any
   *  order. The optimizer checkpoints go in run order, each with the model-state file of its stem
   *  (the package's runFiles: the number in the name); the package's run() does the rest, one
   *  health pass per file (its slots kept for the timeline). Resolves {order (indices into
   *  files), states (an index or null per checkpoint), unused [{index, text}], result, series:
   *  per file {ratio, rms} Float64Arrays per slot (NaN: none)}. */
  async run({ files, lr = null, trainer = null }, progress) {
    if (trainer) return trainerRun(files, trainer, lr, progress);
    // the headers only: what each file is, its steps
    const { order, states: stateOf, unused } = await runFiles(files.map((f) => f.name), async (k) => open(await sourceOf(files[k].source)));
    const n = order.length;
    if (n < 2) throw new RangeError(`a run needs at least two optimizer checkpoints, got ${n}`);
    // a File is named by itself; a served path by UrlBytes
    const source = (k) => (typeof files[k].source === 'string' ? sourceOf(files[k].source) : files[k].source);
    const series = new Array(n).fill(null);
    const tick = throttled(progress);
    const result = await run(await Promise.all(order.map((k) => source(k))), {
      states: stateOf.some((k) => k !== null) ? await Promise.all(stateOf.map((k) => (k === null ? null : source(k)))) : null,
      lr: lr ?? undefined,
      // first each file's health pass (its slots kept for the timeline), then the continuity pass
      ...timeline(series, n, tick),
    });
    return transfer({ order, states: stateOf, unused, result, series },
      series.flatMap((x) => (x ? [x.ratio.buffer, x.rms.buffer] : [])));
  },

  /** Which of the paths (the relative paths of a picked or served folder's files, or the names
   *  of a drop) are a Trainer's checkpoint folder or output folder: the package's trainerLayout. */
  trainerLayout({ paths }) {
    return trainerLayout(paths);
  },

  /** The optimizer kind a Trainer folder's training_args.bin says ('adamw' or null), read as data
   *  by the core. */
  async trainingArgs({ source }) {
    return (await readTrainingArgs(await sourceOf(source))).kind;
  },

  /** Which of the names (the files of one drop or pick) are a Trainer's checkpoint-N/ folder's
   *  optimizer and model (the core's names), or null when they are not one. */
  async trainerFolder({ names }) {
    if (new Set(names).size !== names.length) return null;   // several folders' files: a run
    const roles = await trainerFolderRoles(names);
    return roles.optimizer && roles.model ? roles : null;
  },
};

/** The run's per-file health, kept for the timeline: onHealth and onProgress for run(). */
function timeline(series, n, tick) {
  return {
    onHealth: (i, h) => {
      if (!h) return;
      const size = h.slots.reduce((m, s) => Math.max(m, s.slot + 1), 0);
      const ratio = new Float64Array(size).fill(NaN), rms = new Float64Array(size).fill(NaN);
      for (const s of h.slots) {
        if (typeof s.ratio === 'number') ratio[s.slot] = s.ratio;
        if (s.update) rms[s.slot] = s.update.rms;
      }
      series[i] = { ratio, rms };
      tick({ phase: 'health', done: i + 1, total: n }, true);
    },
    onProgress: ({ done, total }) => tick({ phase: 'continuity', done, total }),
  };
}

/** A Trainer output folder's run: `trainer` [{name, optimizer, model, trainingArgs,
 *  trainerState, config}] (indices into files, or null), in the order of N (trainerLayout's). Each
 *  optimizer given its folder's kind and paired with its model (the package's
 *  openTrainerCheckpoints), then run() with the models as states, each recovered learning rate
 *  beside the one trainer_state.json logged. Resolves as run does, with kinds (per file, the kind
 *  its optimizer was given) and slots (the first pair's names). */
async function trainerRun(files, trainer, lr, progress) {
  const at = async (k) => (k === null || k === undefined ? null : { name: files[k].name, source: await sourceOf(files[k].source) });
  const list = [];
  for (const c of trainer) {
    list.push({ label: c.name, optimizer: await at(c.optimizer), model: await at(c.model), trainingArgs: await at(c.trainingArgs), trainerState: await at(c.trainerState), config: await at(c.config) });
  }
  const n = list.length;
  if (n < 2) throw new RangeError(`a run needs at least two checkpoint folders, got ${n}`);
  const opened = await openTrainerCheckpoints(list);
  try {
    const series = new Array(n).fill(null);
    const result = await run(opened.opts, { states: opened.models, lr: lr ?? undefined, labels: { files: opened.paths, states: opened.modelPaths }, ...timeline(series, n, throttled(progress)) });
    await compareLogged(result, opened.logged, opened.loggedAt);
    return transfer({ order: trainer.map((c) => c.optimizer), states: trainer.map((c) => c.model), unused: [], result, series, kinds: opened.kinds, slots: opened.opts[0].summary.pairing?.slots ?? null },
      series.flatMap((x) => (x ? [x.ratio.buffer, x.rms.buffer] : [])));
  } finally {
    opened.close();
  }
}
