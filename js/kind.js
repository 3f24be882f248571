// An open optimizer given its kind (Adam or AdamW) where its file does not say it: the core
// checks the kind against the file and reads the file again with it.
import { loadBinding } from './binding.js';
import { withFile, reread } from './checkpoint.js';
import { CheckpointError } from './errors.js';
import { optimizerKind, listed } from './options.js';

/**
 * The kind ('adam' or 'adamw') of the open optimizer `ck` whose files do not say it (torch 1.13's
 * AdamW writes no decoupled_weight_decay; a DeepSpeed checkpoint whose ds_config names no
 * optimizer; a DCP folder, which keeps no optimizer class): its groups' configurations take it
 * (health's decay term, a run's learning rate), and the report says it was given (`kindGiven`).
 * Call it before pairing. Rejects with the core's CheckpointError when the files say another
 * kind or hold no optimizer.
 */
export async function setKind(ck, kind) {
  await loadBinding();
  const { id } = optimizerKind(kind, (names) => new RangeError(`kind is ${listed(names, { quote: "'" })}, got ${String(kind)}`));
  const error = withFile(ck, (b, file) => b.setKind(file, id));
  if (error) throw new CheckpointError(error);
  reread(ck);
}
