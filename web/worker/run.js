// Run requests (docs/runs.md): the checkpoints of one run, and whether the files of one drop
// are a Trainer's checkpoint-N/ folder.
import { open, run, runFiles, trainerFolderRoles } from '/js/index.js';
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
  async run({ files, lr = null }, progress) {
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
      onHealth: (i, h) => {
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
    });
    return transfer({ order, states: stateOf, unused, result, series },
      series.flatMap((x) => (x ? [x.ratio.buffer, x.rms.buffer] : [])));
  },

  /** Which of the names (the files of one drop or pick) are a Trainer's checkpoint-N/ folder's
   *  optimizer and model (the core's names), or null when they are not one. */
  async trainerFolder({ names }) {
    if (new Set(names).size !== names.length) return null;   // several folders' files: a run
    const roles = await trainerFolderRoles(names);
    return roles.optimizer && roles.model ? roles : null;
  },
};
