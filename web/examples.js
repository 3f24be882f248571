// The built-in examples, made in the browser by the package's own writer: nothing is fetched.
import { writeCheckpoint } from '/js/index.js';

function ramp(n, scale, offset = 0) {
  const a = new Float32Array(n);
  for (let k = 0; k < n; k++) a[k] = offset + scale * Math.sin(0.37 * k + 1.3 * scale);
  return a;
}

function positive(n, scale) {
  const a = new Float32Array(n);
  for (let k = 0; k < n; k++) a[k] = scale * (1.05 + Math.cos(0.21 * k));
  return a;
}

/** A small transformer-like layout: the embedding is tied to the output projection, and the
 *  positional table and the first layer norm are frozen. */
function tiedEmbeddingDescription(extra = {}) {
  const vocab = 64, width = 16;
  const slots = [
    ['embed.weight', [vocab, width], true, 0],
    ['pos.weight', [32, width], false, null],
    ['ln0.weight', [width], false, null],
    ['block0.attn.qkv.weight', [3 * width, width], true, 3],
    ['block0.attn.qkv.bias', [3 * width], true, 4],
    ['block0.attn.out.weight', [width, width], true, 5],
    ['block0.mlp.up.weight', [4 * width, width], true, 6],
    ['block0.mlp.down.weight', [width, 4 * width], true, 7],
    ['ln_f.weight', [width], true, 8],
    ['ln_f.bias', [width], true, 9],
    ['head.weight', [vocab, width], true, 0],
    ['head.scale', [], true, 11],
  ];
  const size = (s) => s.reduce((a, b) => a * b, 1);
  const entries = slots
    .map(([, shape, , rep], i) => ({ rep, i, shape }))
    .filter(({ rep, i }) => rep === i)
    .map(({ i, shape }) => ({ id: i, step: 1200, m: ramp(size(shape), 0.01 * (1 + (i % 3))), v: positive(size(shape), 1e-5 * (1 + i)) }));
  return {
    labels: slots.map(([name]) => name),
    description: {
      shapes: slots.map(([, s]) => s),
      requiresGrad: slots.map(([, , t]) => t),
      representatives: slots.map(([, , , r]) => r),
      config: { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 },
      randomCounter: 98765,
      entries,
      ...extra,
    },
  };
}

function float64Description() {
  const shapes = [[8, 8], [8], [8, 8], [8], []];
  const entries = shapes.map((s, i) => {
    const n = s.reduce((a, b) => a * b, 1);
    const m = new Float64Array(n), v = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      m[k] = 1e-3 * Math.sin(k + i);
      v[k] = 1e-7 * (1 + k);
    }
    return { id: i, step: 37, m, v };
  });
  // One unhealthy entry: a NaN in m and a negative second moment, for the warnings view.
  entries[3].m[2] = NaN;
  entries[3].v[5] = -1e-9;
  return {
    labels: ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'temperature'],
    description: { shapes, requiresGrad: shapes.map(() => true), dtype: 'float64',
      config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-12, weightDecay: 0 }, entries },
  };
}

export async function makeExamples() {
  const tied = tiedEmbeddingDescription();
  const f64 = float64Description();
  const tiedBytes = await writeCheckpoint(tied.description);
  // Corrupted: the tied model with the head's tag pointing at a frozen slot.
  const corrupted = tiedBytes.slice();
  const n = tied.description.shapes.length;
  let at = 63 + 8;   // v4: the schema starts at 63, after the slot count
  for (const s of tied.description.shapes) at += 8 * (3 + s.length);
  new DataView(corrupted.buffer).setBigUint64(at + 8 * (n - 2), 2n, true);   // head.weight -> slot 1 (frozen)
  return [
    { name: 'tied-embedding-v4.ckpt', title: 'Tied embedding (v4, AdamW, frozen slots)', bytes: tiedBytes, labels: tied.labels },
    { name: 'float64-v5.ckpt', title: 'float64 moments (v5, Adam)', bytes: await writeCheckpoint(f64.description), labels: f64.labels },
    { name: 'corrupted-sharing-map.ckpt', title: 'Corrupted: a tie to a frozen slot', bytes: corrupted, labels: tied.labels },
  ];
}

/** The layout of the tied example, for trying the compare mode. */
export function exampleLayout() {
  const { description } = tiedEmbeddingDescription();
  const { shapes, requiresGrad, representatives, config } = description;
  return { shapes, requiresGrad, representatives, config, keepsRandomCounter: true };
}
