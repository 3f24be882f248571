// The case table shared by the API and CLI suites: each case is a file (made by the package's
// own writer, then patched) and the exact reference diagnostic and offset it must give, for
// inspection and, where given, for loading into an expected layout. Offsets in the model file
// (v3, float32, Adam, slots [p=2x3, p tied to 0, q=3]) match tests/c/test_diagnostics.c.
import { writeCheckpoint } from '../../js/index.js';

export const F = 'CUDA Adam checkpoint: ';

export const modelLayout = {
  shapes: [[2, 3], [2, 3], [3]],
  requiresGrad: [true, true, true],
  representatives: [0, 0, 2],
};

export const modelConfig = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 };

export function modelDescription(extra = {}) {
  return {
    ...modelLayout,
    config: modelConfig,
    entries: [
      { id: 2, step: 5, m: [-0.5, -0.5, -0.5], v: [0.125, 0.125, 0.125] },
      { id: 0, step: 5, m: new Float32Array(6).fill(0.5), v: new Float32Array(6).fill(0.25) },
    ],
    ...extra,
  };
}

/** The model without ties: slot 1 owns its own history (a version 2 layout). */
export function untiedDescription(extra = {}) {
  const d = modelDescription();
  return { ...d, representatives: null, entries: [...d.entries, { id: 1, step: 4, m: new Float32Array(6), v: new Float32Array(6) }], ...extra };
}

export async function model(extra) {
  return writeCheckpoint(modelDescription(extra));
}

export function patchU64(bytes, offset, value) {
  const out = bytes.slice();
  new DataView(out.buffer).setBigUint64(offset, BigInt(value), true);
  return out;
}

function f64Bits(x) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x, true);
  return dv.getBigUint64(0, true);
}

const patched = (offset, value) => async () => patchU64(await model(), offset, value);

/** name, make() -> bytes, error text (null: valid), offset, expect? (a layout for load cases). */
export const cases = [
  { name: 'valid model', make: () => model(), error: null },
  { name: 'truncated magic', make: async () => (await model()).slice(0, 4), error: `${F}truncated checkpoint (wanted 7 bytes, got 4)`, offset: 0 },
  { name: 'truncated u64', make: async () => (await model()).slice(0, 60), error: `${F}truncated checkpoint (wanted 8 bytes, got 5)`, offset: 55 },
  { name: 'truncated payload', make: async () => (await model()).slice(0, 320), error: `${F}truncated checkpoint (wanted 12 bytes, got 5)`, offset: 315 },
  { name: 'trailing bytes', make: async () => Uint8Array.from([...(await model()), 0]), error: `${F}trailing bytes after final state entry`, offset: 327 },
  { name: 'unsupported family', make: async () => { const b = await model(); b[0] = 0x58; return b; }, error: `${F}unsupported checkpoint family`, offset: 0 },
  { name: 'unsupported version', make: patched(7, 6), error: `${F}unsupported format version 6; expected 2 through 5`, offset: 7 },
  { name: 'invalid optimizer tag', make: patched(15, 2), error: `${F}invalid optimizer tag 2`, offset: 15 },
  { name: 'beta1', make: patched(23, f64Bits(1.0)), error: `${F}\`beta1\` must be finite and lie in [0, 1)`, offset: 23 },
  { name: 'beta2', make: patched(31, f64Bits(NaN)), error: `${F}\`beta2\` must be finite and lie in [0, 1)`, offset: 31 },
  { name: 'epsilon', make: patched(39, f64Bits(1e-50)), error: `${F}\`epsilon\` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32`, offset: 39 },
  { name: 'Adam weight decay', make: patched(47, f64Bits(0.01)), error: `${F}Adam checkpoints must have zero weight decay`, offset: 47 },
  { name: 'element count', make: patched(159, 4), error: `${F}element count mismatch for parameter 2 (file=4, expected=3)`, offset: 159 },
  { name: 'requiresGrad flag', make: patched(135, 2), error: `${F}invalid \`requiresGrad\` flag 2`, offset: 135 },
  { name: 'sharing map', make: patched(191, 1), error: `${F}malformed storage sharing map at parameter 2: representative 0 has a different shape`, offset: 191 },
  { name: 'entry count', make: patched(199, 3), error: `${F}expected 2 moment entries, got 3`, offset: 199 },
  { name: 'duplicate id', make: patched(279, 0), error: `${F}duplicate parameter id 0`, offset: 279 },
  { name: 'invalid id', make: patched(279, 3), error: `${F}invalid parameter id 3`, offset: 279 },
  { name: 'not owner', make: patched(279, 1), error: `${F}parameter 1 does not own optimizer state`, offset: 279 },
  { name: 'zero step', make: patched(287, 0), error: `${F}zero step counter for parameter 2`, offset: 287 },
  { name: 'moment size', make: patched(295, 4), error: `${F}moment-size mismatch for parameter 2 (file=4, expected=3)`, offset: 295 },
];

/** Loading the valid model into a destination: the trainer's checks. */
export const loadCases = [
  { name: 'loads', expect: { ...modelLayout, dtype: 'float32', config: modelConfig }, error: null },
  { name: 'parameter count', expect: { shapes: [[2, 3], [2, 3]], requiresGrad: [true, true], representatives: [0, 0] }, error: `${F}parameter count mismatch (file=3, expected=2)`, offset: 55 },
  { name: 'rank', expect: { ...modelLayout, shapes: [[2, 3], [2, 3], [1, 3]] }, error: `${F}rank mismatch for parameter 2 (file=1, expected=2)`, offset: 143 },
  { name: 'shape', expect: { ...modelLayout, shapes: [[2, 3], [2, 3], [4]] }, error: `${F}shape mismatch for parameter 2 (file=#[3], expected=#[4])`, offset: 151 },
  { name: 'requiresGrad', expect: { ...modelLayout, requiresGrad: [true, true, false], representatives: [0, 0, null] }, error: `${F}\`requiresGrad\` mismatch for parameter 2`, offset: 167 },
  { name: 'alias', expect: { ...modelLayout, representatives: null }, error: `${F}storage alias mismatch for parameter 1`, offset: 183 },
  { name: 'malformed destination', expect: { ...modelLayout, representatives: [0, 2, 2] }, error: `${F}malformed in-memory parameter schema`, offset: null },
  { name: 'dtype', expect: { ...modelLayout, dtype: 'float64' }, error: `${F}checkpoint belongs to a different optimizer configuration`, offset: 15, withConfig: true },
  { name: 'config', expect: { ...modelLayout, config: { ...modelConfig, beta1: 0.8 } }, error: `${F}checkpoint belongs to a different optimizer configuration`, offset: 15 },
  { name: 'bit-exact config', expect: { ...modelLayout, config: { ...modelConfig, weightDecay: -0 } }, error: `${F}checkpoint belongs to a different optimizer configuration`, offset: 15 },
  { name: 'random counter reference', file: { randomCounter: 5 }, expect: { ...modelLayout, keepsRandomCounter: false }, error: `${F}destination has no random-counter reference`, offset: 55 },
];
loadCases.find((c) => c.name === 'dtype').expect.config = modelConfig;
