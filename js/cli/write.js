// ckptscope write DESCRIPTION.json OUT: a checkpoint or a model-state file made by the reference
// writers' rules (docs/layout.md "Descriptions for write"), written atomically.

import fs from 'node:fs';
import { say } from '../terminal.js';
import { STDIN, writing, readJsonFile } from '../user-files.js';
import { UsageError, parseArgs, meant } from './args.js';
import { wroteLine } from './text.js';

export async function cmdWrite(argv) {
  const { positional } = parseArgs('write', argv);
  if (positional.length !== 2) throw new UsageError('write takes DESCRIPTION.json OUT', 'write');
  if (/\.json$/i.test(positional[1]) && !/\.json$/i.test(positional[0])) {
    throw new UsageError(`write takes DESCRIPTION.json first, then OUT${meant('write', positional[1], positional[0])}`, 'write');
  }
  if (positional[1] === STDIN) {
    throw new UsageError('write needs a file name for OUT, not -: the checkpoint is written to a temporary file beside it, then renamed');
  }
  const description = readJsonFile(positional[0], 'description');
  // A model-state description has one array of values per tensor; an optimizer one, entries.
  const state = description !== null && typeof description === 'object' && Array.isArray(description.values);
  const { saveState, saveCheckpoint } = await import('../write.js');
  await writing(positional[1], () => (state ? saveState : saveCheckpoint)(positional[1], description));
  say(process.stdout, wroteLine(positional[1], fs.statSync(positional[1]).size));
  return 0;
}
