// The checkpoints of a run in a folder, each a folder read as one checkpoint (Node): a DeepSpeed
// save_dir's tag folders, a Hugging Face Trainer output folder's checkpoint-N/ folders saved with
// DeepSpeed, or the DCP folders of a folder (torchtitan's checkpoint/ of step-{N}/), in run order.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deepspeedPlan, dcpRunPaths } from './folder-source.js';
import { checkpointFolders, trainerFolder } from './trainer-folder.js';

/** The checkpoints of a DeepSpeed run in a folder, as paths in run order: a save_dir's tag
 *  folders (the core's order: the last run of digits of the name, `run SAVE_DIR`), or a Hugging
 *  Face Trainer output folder's checkpoint-N/ folders saved with DeepSpeed (in the order of N, the
 *  core's; each a save_dir, with no optimizer.pt); null when `dir` is neither. */
export async function deepspeedTagFolders(dir) {
  const plan = await deepspeedPlan(dir);
  if (plan) return Array.isArray(plan.tags) ? plan.tags.map((t) => path.join(plan.root, t)) : null;
  const root = dir instanceof URL ? fileURLToPath(dir) : String(dir);
  if (!fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) return null;
  const folders = await checkpointFolders(root).catch(() => []);
  if (!folders.length) return null;
  for (const f of folders) {
    if ((await trainerFolder(f.path)).optimizer || (await deepspeedPlan(f.path))?.family !== 'DeepSpeed') return null;
  }
  return folders.map((f) => f.path);
}

/** The checkpoints of a run in a folder of folders read as one checkpoint each, in run order:
 *  {family: 'DeepSpeed', folders} (deepspeedTagFolders), {family: 'DCP', folders} (its DCP
 *  folders, the core's order: the last number of the name), or null when `dir` holds neither
 *  (a DCP folder itself holds none). */
export async function checkpointRunFolders(dir) {
  const tags = await deepspeedTagFolders(dir);
  if (tags) return { family: 'DeepSpeed', folders: tags };
  const dcp = await dcpRunPaths(dir);
  return dcp?.length ? { family: 'DCP', folders: dcp } : null;
}
