// ckptscope convert DIR ... for a DeepSpeed checkpoint folder (docs/deepspeed.md "Conversions",
// format.md 11.8): DIR OPTIMIZER.pt --model MODEL.pt, the consolidated torch.optim state dict and
// its fp32 model; DIR OUT.ckpt [--to V] [--kind K] ..., TorchLean through that pair (never
// written, js/cli/convert-folder.js), with the PyTorch route's options and refusals. Files are
// written atomically.

import { open } from '../checkpoint.js';
import { say } from '../terminal.js';
import { STDIN, writing, displayName, readBack } from '../user-files.js';
import { UsageError } from './args.js';
import { openFolder, toTorchLean } from './convert-folder.js';
import { weightsOnlyLines } from '../weights-only.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';

const TORCH_OUT = /\.(pt|pth|bin)$/i;

export async function convertDeepSpeed([dir, output], seen) {
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  for (const option of ['--state', '--lr', '--names']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} does nothing here: ${shown(dir, PATH_ECHO_MAX)} is a DeepSpeed checkpoint, which holds its own parameters (convert DIR OPTIMIZER.pt --model MODEL.pt, or DIR OUT.ckpt)`, 'convert');
  }
  if (TORCH_OUT.test(output)) return consolidatePair(dir, output, seen);
  if (seen['--model'] !== undefined) throw new UsageError(`--model goes with a torch.save OUT (.pt, .pth or .bin): convert DIR OPTIMIZER.pt --model MODEL.pt`, 'convert');
  return toTorchLean(dir, output, seen, { what: 'a DeepSpeed checkpoint', pair: 'optimizer and fp32 model' });
}

/** convert DIR OPTIMIZER.pt --model MODEL.pt */
async function consolidatePair(dir, output, seen) {
  for (const option of ['--to', '--for', '--kind', '--weight-decay', '--betas', '--eps', '--drop-amsgrad', '--frozen', '--random-counter', '--drop-random-counter', '--untie', '--round-to-float32']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a TLADAMF OUT: ${shown(output, PATH_ECHO_MAX)} is written as a torch.save file (its extension)`, 'convert');
  }
  const model = seen['--model'];
  if (model === STDIN) throw new UsageError('--model needs a file name, not -', 'convert');
  if (model === undefined) throw new UsageError(`convert ${shown(dir, PATH_ECHO_MAX)} ${shown(output, PATH_ECHO_MAX)} needs --model MODEL.pt: the fp32 model written beside the optimizer`, 'convert');
  const safetensors = /\.safetensors$/i.test(model);
  if (!TORCH_OUT.test(model) && !safetensors) throw new UsageError(`--model takes a torch.save file name (.pt, .pth or .bin) or a .safetensors one, not ${shown(model, PATH_ECHO_MAX)}`, 'convert');
  const ck = await openFolder(dir);
  try {
    const { consolidateTo } = await import('../convert.js');
    const { saveAtomically } = await import('../sink.js');
    const stem = (p) => displayName(p).replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
    let warnings = [];
    await writing(output, () => saveAtomically(output, async (write) => {
      ({ warnings } = await consolidateTo(ck, 'optimizer', write, { prefix: stem(output) }));
    }));
    for (const w of warnings) say(process.stderr, `warning: ${w}`);
    await writing(model, () => saveAtomically(model, (write) => consolidateTo(ck, safetensors ? 'model.safetensors' : 'model', write, { prefix: stem(model) })));
  } finally {
    ck.close();
  }
  const lines = [];
  for (const [file, what] of [[output, 'optimizer'], [model, 'model']]) {
    const read = await readBack(file, async (written) => {
      const f = await open(written);
      try {
        const s = f.summary;
        const head = what === 'optimizer'
          ? `${displayName(file)}: torch.save file, torch.optim state_dict, ${s.entryCount} parameter${s.entryCount === 1 ? '' : 's'} with state (${[...new Set(s.entries.map((e) => e.dtype))].join(', ') || 'no moments'}), ${s.optimizer.groups.length} group${s.optimizer.groups.length === 1 ? '' : 's'}`
          : `${displayName(file)}: ${safetensors ? 'safetensors' : 'torch.save'} file, the fp32 model: ${s.tensorCount} tensor${s.tensorCount === 1 ? '' : 's'}`;
        return [head, ...(s.weightsOnlyBy ? weightsOnlyLines(s.weightsOnlyBy).map((l) => `weights only: ${l}`) : [])];
      } finally {
        f.close();
      }
    });
    if (read) lines.push(...read);
  }
  say(process.stdout, [`converted ${displayName(dir)} to ${displayName(output)} and ${displayName(model)}`, ...lines]);
  return 0;
}
