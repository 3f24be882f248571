// ckptscope convert DIR ... for a DCP folder (docs/distributed.md "Converting", format.md 12.8):
// DIR OPTIMIZER.pt --model MODEL.pt, the consolidated torch.optim state dict that
// optimizer.load_state_dict takes and the model part's torch.save state dict, each written
// atomically, payloads streamed from the folder's records; DIR OUT.ckpt [--to V] [--kind K] ...,
// TorchLean through that pair (never written); both routes are js/cli/convert-folder.js's, with
// the PyTorch route's options and refusals. The core numbers the ids and refuses what it cannot
// number; nothing here restates a rule.

import { STDIN } from '../user-files.js';
import { UsageError } from './args.js';
import { shown, PATH_ECHO_MAX } from '../suggest.js';
import { toTorchLean, writePair } from './convert-folder.js';

const TORCH_OUT = /\.(pt|pth|bin)$/i;
const USAGE = 'convert DIR OPTIMIZER.pt --model MODEL.pt';

export async function convertDcpFolder([dir, output], seen) {
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  if (!TORCH_OUT.test(output)) {
    for (const option of ['--state', '--lr', '--names', '--model']) {
      if (seen[option] !== undefined) throw new UsageError(`${option} does nothing here: ${shown(dir, PATH_ECHO_MAX)} is a distributed checkpoint (DCP), converted with its own model part: convert DIR OUT.ckpt (or ${USAGE})`, 'convert');
    }
    return toTorchLean(dir, output, seen, { what: 'a distributed checkpoint (DCP)', pair: 'optimizer and model' });
  }
  for (const option of Object.keys(seen)) {
    if (option !== '--model') throw new UsageError(`${option} does nothing here: ${shown(dir, PATH_ECHO_MAX)} is a distributed checkpoint (DCP): ${USAGE}`, 'convert');
  }
  const model = seen['--model'];
  if (model === STDIN) throw new UsageError('--model needs a file name, not -', 'convert');
  if (model === undefined) throw new UsageError(`convert ${shown(dir, PATH_ECHO_MAX)} ${shown(output, PATH_ECHO_MAX)} needs --model MODEL.pt: the model part written beside the optimizer`, 'convert');
  if (!TORCH_OUT.test(model)) throw new UsageError(`--model takes a torch.save file name (.pt, .pth or .bin), not ${shown(model, PATH_ECHO_MAX)}`, 'convert');
  return writePair(dir, output, model, {
    describe: (name, s, what) => [what === 'optimizer'
      ? `${name}: torch.save file, torch.optim state_dict, ${s.entryCount} parameter${s.entryCount === 1 ? '' : 's'} with state, ${s.optimizer.groups.length} group${s.optimizer.groups.length === 1 ? '' : 's'}`
      : `${name}: torch.save file, the model: ${s.tensorCount} tensor${s.tensorCount === 1 ? '' : 's'}`],
  });
}
