// ckptscope convert DIR ... for a DeepSpeed checkpoint folder (docs/deepspeed.md "Conversions",
// format.md 11.8): DIR OPTIMIZER.pt --model MODEL.pt, the consolidated torch.optim state dict and
// its fp32 model; DIR OUT.ckpt [--to V] [--kind K] ..., TorchLean through that pair (never
// written), both js/cli/convert-folder.js's, with the PyTorch route's options and refusals. Files
// are written atomically.

import { STDIN } from '../user-files.js';
import { UsageError } from './args.js';
import { toTorchLean, writePair } from './convert-folder.js';
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
  return writePair(dir, output, model, {
    modelTarget: safetensors ? 'model.safetensors' : 'model',
    describe: (name, s, what) => [what === 'optimizer'
      ? `${name}: torch.save file, torch.optim state_dict, ${s.entryCount} parameter${s.entryCount === 1 ? '' : 's'} with state (${[...new Set(s.entries.map((e) => e.dtype))].join(', ') || 'no moments'}), ${s.optimizer.groups.length} group${s.optimizer.groups.length === 1 ? '' : 's'}`
      : `${name}: ${safetensors ? 'safetensors' : 'torch.save'} file, the fp32 model: ${s.tensorCount} tensor${s.tensorCount === 1 ? '' : 's'}`,
    ...(s.weightsOnlyBy ? weightsOnlyLines(s.weightsOnlyBy).map((l) => `weights only: ${l}`) : [])],
  });
}
