// A DeepSpeed folder laid out as one source whose files are counting sources
// (tests/js/counting.mjs), for the tests and the benchmark that count what opening a folder
// reads: every byte read of every file of the folder, and the small text the plan reads
// (`latest`, read before the layout: counted as its size).
import fs from 'node:fs';
import path from 'node:path';
import { CountingFile } from './counting.mjs';
import { deepspeedPlan } from '../../js/folder-source.js';
import { BundleSource } from '../../js/folder-bundle.js';

/** {source, plan, files (member names), zips (the .pt files' paths), bytes(), reads(), perFile()} */
export async function countedFolder(dir) {
  const plan = await deepspeedPlan(dir);
  if (!plan?.members) throw new Error(`${dir}: no DeepSpeed folder`);
  const opened = new Map();
  const source = new BundleSource(plan, (name) => {
    const f = new CountingFile(path.join(plan.root, name));
    opened.set(name, f);
    return f;
  });
  // the plan read `latest` (a save_dir's) before the layout: its size, a few bytes
  const planBytes = fs.statSync(path.join(plan.root, 'latest'), { throwIfNoEntry: false })?.size ?? 0;
  return {
    source,
    plan,
    zips: plan.members.filter((m) => m.name.endsWith('.pt')).map((m) => path.join(plan.root, m.name)),
    bytes: () => planBytes + [...opened.values()].reduce((s, f) => s + f.bytes, 0),
    reads: () => [...opened.values()].reduce((s, f) => s + f.log.length, 0),
    perFile: () => Object.fromEntries([...opened].map(([n, f]) => [n, f.bytes])),
  };
}
