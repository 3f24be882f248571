// Unknown keys in any JSON input (a description, a layout, its config) are refused, never ignored: `"weight_decay": 0.1` that is
// silently dropped writes weight decay 0. The message names the nearest known key, and the
// keys people bring from PyTorch (betas, eps, lr) get their own help.

import { LayoutError } from './errors.js';
import { nearest, didYouMean, shown } from './suggest.js';

// PyTorch's names for the same things, and what is not in a checkpoint at all.
const PYTORCH = {
  betas: 'ckptscope takes beta1 and beta2 (PyTorch\'s betas=(beta1, beta2))',
  eps: didYouMean('epsilon'),
  lr: 'a checkpoint does not store the learning rate (give it to health with --lr)',
  amsgrad: 'TorchLean\'s Adam and AdamW have no amsgrad',
};

/** Throw a LayoutError for the first key of `obj` (a plain object) not in `known`. */
export function refuseUnknownKeys(obj, known, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return;
  for (const key of Object.keys(obj)) {
    if (known.includes(key)) continue;
    const near = nearest(key, known);
    const pytorch = Object.hasOwn(PYTORCH, key) && known.includes('beta1') ? PYTORCH[key] : null;
    const help = pytorch ?? (near ? didYouMean(near) : `known keys: ${known.join(', ')}`);
    throw new LayoutError(`unknown key ${where}.${shown(key)}: ${help}`);
  }
}

// keepsRandomCounter, family and kind: a layout's or a report's fields, accepted (and ignored)
// so that a layout with its contents added is a description (docs/layout.md)
export const DESCRIPTION_KEYS = ['shapes', 'requiresGrad', 'representatives', 'dtype', 'config', 'randomCounter', 'version', 'entries', 'keepsRandomCounter', 'family', 'kind'];
export const CONFIG_KEYS = ['kind', 'beta1', 'beta2', 'epsilon', 'weightDecay', 'bits'];
export const ENTRY_KEYS = ['id', 'step', 'count', 'm', 'v'];
export const STATE_KEYS = ['family', 'shapes', 'values'];
// a layout's own fields, and a description's (a description is a layout with its contents)
export const LAYOUT_KEYS = ['shapes', 'requiresGrad', 'representatives', 'dtype', 'config', 'keepsRandomCounter', 'family',
  ...DESCRIPTION_KEYS.filter((k) => !['shapes', 'requiresGrad', 'representatives', 'dtype', 'config', 'keepsRandomCounter', 'family'].includes(k)),
  'values'];
export const BITS_KEYS = ['beta1', 'beta2', 'epsilon', 'weightDecay'];
