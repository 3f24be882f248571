// ckptscope convert DIR OUT_DIR --to universal (docs/cli.md "convert", docs/deepspeed.md
// "Universal checkpoints"): a DeepSpeed ZeRO-1/2 or BF16_Optimizer folder written as the universal
// checkpoint OUT_DIR (OUT/UTAG, as ds_to_universal's --output_folder), OUT/latest_universal naming
// it; the core's warnings; then what ckptscope reads back from OUT.

import path from 'node:path';
import { open } from '../checkpoint.js';
import { say } from '../terminal.js';
import { STDIN, isStream, streamName, readBack } from '../user-files.js';
import { UsageError } from './args.js';
import { Failure, isFolder, isDeepSpeedFolder } from './inputs.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';

export async function cmdConvertUniversal(positional, seen) {
  for (const option of Object.keys(seen)) {
    if (option !== '--to') throw new UsageError(`${option} does nothing with --to universal: convert DIR OUT_DIR --to universal takes no other option`, 'convert');
  }
  if (positional.length !== 2) throw new UsageError('convert --to universal takes DIR OUT_DIR: a DeepSpeed folder and the universal checkpoint\'s folder (OUT/UTAG)', 'convert');
  const [input, output] = positional;
  if (input === STDIN || isStream(input)) throw new UsageError(`convert --to universal reads a DeepSpeed folder, not ${input === STDIN ? 'the standard input' : streamName(input)}`, 'convert');
  if (output === STDIN) throw new UsageError('convert --to universal needs a folder name for OUT_DIR, not -', 'convert');
  if (!isFolder(input) || !(await isDeepSpeedFolder(input))) throw new Failure(`${shown(input, PATH_ECHO_MAX)} is no DeepSpeed folder: convert --to universal reads a save_dir or a tag folder`);
  const { convertToUniversal } = await import('../universal.js');
  const ck = await open(input);
  let result;
  try {
    result = await convertToUniversal(ck, output).catch((err) => {
      if (err instanceof Error && !err.code && / exists: | is not a folder: /.test(err.message)) throw new Failure(err.message);
      throw err;
    });
  } finally {
    ck.close();
  }
  for (const w of result.warnings) say(process.stderr, `warning: ${w}`);
  const parent = path.dirname(output);
  const params = result.files.filter((f) => f.endsWith('/fp32.pt')).length;
  const lines = [`wrote ${output}: a DeepSpeed universal checkpoint of ${input} (${params} parameters, ${result.files.length} files)`,
    `${path.join(parent, 'latest_universal')} names ${result.tag}`];
  const back = await readBack(parent, async () => {
    const u = await open(parent);
    try {
      const s = u.summary;
      return s.ok ? `${parent}: read back as a DeepSpeed universal checkpoint: valid` : `${parent}: read back: ${s.error.message}`;
    } finally {
      u.close();
    }
  });
  if (back) lines.push(back);
  say(process.stdout, ...lines);
  return 0;
}
