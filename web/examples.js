// The built-in examples, made in the worker by the package's own writers: nothing is fetched.
// Each example is a list of files (an optimizer checkpoint, and for pairs its model-state file),
// slot names, and optionally the layout to compare against.
import { writeCheckpoint, writeState, open } from '/js/index.js';

const size = (s) => s.reduce((a, b) => a * b, 1);

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
function tiedSlots() {
  const vocab = 64, width = 16;
  return [
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
}

function tiedDescription() {
  const slots = tiedSlots();
  const entries = slots
    .map(([, shape, , rep], i) => ({ rep, i, shape }))
    .filter(({ rep, i }) => rep === i)
    .map(({ i, shape }) => ({ id: i, step: 1200, m: ramp(size(shape), 0.0005 * (1 + (i % 3))), v: positive(size(shape), 1e-4 * (1 + i)) }));
  return {
    labels: slots.map(([name]) => name),
    description: {
      shapes: slots.map(([, s]) => s),
      requiresGrad: slots.map(([, , t]) => t),
      representatives: slots.map(([, , , r]) => r),
      config: { kind: 'adamw', beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 },
      randomCounter: 98765,
      entries,
    },
  };
}

/** The tied model's parameters: tied slots hold the same values (as the trainer saves them). */
function tiedValues(shapes, reps) {
  return shapes.map((s, i) => ramp(size(s), 0.05 + 0.01 * (reps[i] ?? i), 0.001 * (reps[i] ?? i)));
}

function float64Description() {
  const shapes = [[8, 8], [8], [8, 8], [8], []];
  const entries = shapes.map((s, i) => {
    const n = size(s);
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

/** A deterministic generator (mulberry32) and normal deviates, so the examples are the same
 *  every time. */
function rng(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/**
 * A realistic pair: Adam's recurrences run for `steps` steps on synthetic gradients (a steady
 * signal plus noise, per slot), so the saved moments obey the consistency bound; the
 * parameters are what those steps made of the initial values. Then one slot is corrupted (its
 * m scaled up, as a bad cast or a wrong beta would), a few embedding rows are never updated
 * (tokens never seen), and one slot's weights are so large that its updates are negligible.
 */
export function adamRun({ steps = 120, lr = 1e-3 } = {}) {
  const width = 24, vocab = 96, blocks = 3;
  const slots = [['embed.weight', [vocab, width], 0.5], ['pos.weight', [32, width], 0.2]];
  for (let b = 0; b < blocks; b++) {
    slots.push(
      [`block${b}.ln1.weight`, [width], 1], [`block${b}.ln1.bias`, [width], 0],
      [`block${b}.attn.qkv.weight`, [3 * width, width], 0.2], [`block${b}.attn.qkv.bias`, [3 * width], 0],
      [`block${b}.attn.out.weight`, [width, width], 0.2], [`block${b}.ln2.weight`, [width], 1],
      [`block${b}.mlp.up.weight`, [4 * width, width], 0.2], [`block${b}.mlp.down.weight`, [width, 4 * width], 0.1],
    );
  }
  slots.push(['ln_f.weight', [width], 1], ['ln_f.bias', [width], 0], ['head.weight', [vocab, width], 0.5], ['logit.scale', [], 300]);
  const beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const normal = rng(7);
  const shapes = slots.map(([, s]) => s);
  const params = [], moments = [];
  slots.forEach(([name, shape, scale], i) => {
    const n = size(shape);
    const theta = new Float32Array(n), m = new Float32Array(n), v = new Float32Array(n);
    for (let k = 0; k < n; k++) theta[k] = (name.endsWith('bias') ? 0.05 : scale) * normal();
    const signal = new Float32Array(n);
    for (let k = 0; k < n; k++) signal[k] = 0.02 * normal();
    const noise = 0.05 * (1 + (i % 4));
    for (let t = 1; t <= steps; t++) {
      const c1 = 1 - beta1 ** t, c2 = 1 - beta2 ** t;
      for (let k = 0; k < n; k++) {
        // Rows of the embedding past token 80 are never seen: their gradient is zero.
        if (i === 0 && k >= 80 * width) continue;
        const g = signal[k] + noise * normal();
        m[k] = beta1 * m[k] + (1 - beta1) * g;
        v[k] = beta2 * v[k] + (1 - beta2) * g * g;
        theta[k] -= lr * (m[k] / c1) / (Math.sqrt(v[k] / c2) + eps);
      }
    }
    params.push(theta);
    moments.push({ m, v });
  });
  // The corrupted slot: m no longer fits v (|m| far above c·√v).
  const bad = slots.findIndex(([name]) => name === 'block1.mlp.up.weight');
  for (let k = 0; k < moments[bad].m.length; k += 3) moments[bad].m[k] *= 400;
  const labels = slots.map(([name]) => name);
  return {
    labels,
    lr,
    optimizer: {
      shapes,
      requiresGrad: shapes.map((_, i) => i !== 1),   // the positional table is frozen
      representatives: shapes.map((_, i) => (i === 1 ? null : i)),
      config: { kind: 'adam', beta1, beta2, epsilon: eps, weightDecay: 0 },
      randomCounter: 4096,
      entries: moments.map((mv, i) => ({ id: i, step: steps, ...mv })).filter((e) => e.id !== 1),
    },
    state: { shapes, values: params },
  };
}

/**
 * Checkpoints of one AdamW run (docs/runs.md), saved at the steps `saves` with their model-state
 * files: float32 moments and weights, β and 1 − β rounded once to float32 (as TorchLean's kernel
 * holds them), a warmup schedule (lr 0.0006 at step 3, 0.0008 at step 4, 0.001 from step 5). Slot
 * 2 is frozen. `reset` restarts the optimizer (moments and steps from zero) after that step, as a
 * crashed job resumed without its optimizer state; `beta2` is the run's (a file of a run with
 * another β2 swapped in is another run). Resolves [{name, bytes}]: step-{t}.ckpt, step-{t}.tlsf.
 */
export async function adamSeries({ saves = [3, 4, 8], reset = null, beta2 = 0.999 } = {}) {
  const shapes = [[12, 8], [4], [5], [3, 4]];
  const trainable = [true, true, false, true];
  const beta1 = 0.9, eps = 1e-8, wd = 0.01;
  const f = Math.fround;
  const b1 = f(beta1), b2 = f(beta2), c1 = f(1 - beta1), c2 = f(1 - beta2);
  const lrAt = (t) => (t <= 3 ? 0.0006 : t === 4 ? 0.0008 : 0.001);
  const normal = rng(11);
  const theta = shapes.map((s) => Float32Array.from({ length: size(s) }, () => 0.3 * normal()));
  const fresh = () => shapes.map((s) => ({ m: new Float32Array(size(s)), v: new Float32Array(size(s)) }));
  let moments = fresh(), t0 = 0;
  const files = [];
  const last = Math.max(...saves);
  for (let t = 1; t <= last; t++) {
    const step = t - t0, lr = lrAt(t);
    shapes.forEach((_, i) => {
      if (!trainable[i]) return;
      const { m, v } = moments[i], th = theta[i];
      const bc1 = 1 - beta1 ** step, bc2 = 1 - beta2 ** step;
      for (let k = 0; k < th.length; k++) {
        const g = 0.05 * normal() + 0.01 * th[k];
        m[k] = f(b1 * m[k] + c1 * g);
        v[k] = f(b2 * v[k] + c2 * g * g);
        th[k] = f(th[k] - lr * ((m[k] / bc1) / (Math.sqrt(v[k] / bc2) + eps) + wd * th[k]));
      }
    });
    if (saves.includes(t)) {
      const entries = moments.map((mv, i) => ({ id: i, step: t - t0, m: mv.m.slice(), v: mv.v.slice() })).filter((e) => trainable[e.id]);
      const optimizer = { shapes, requiresGrad: trainable, config: { kind: 'adamw', beta1, beta2, epsilon: eps, weightDecay: wd }, randomCounter: 7, entries };
      files.push({ name: `step-${t}.ckpt`, bytes: await writeCheckpoint(optimizer) });
      files.push({ name: `step-${t}.tlsf`, bytes: await writeState({ shapes, values: theta.map((x) => x.slice()) }) });
    }
    if (t === reset) {
      moments = fresh();
      t0 = t;
    }
  }
  return files;
}

/** Slot `slot`'s sharing tag set to `tag` (a tag is the representative + 1, 0 for none): the
 *  tags region (the report's offsets.tags up to offsets.entries) read as one word per slot. */
async function retag(bytes, slot, tag) {
  const ck = await open(bytes);
  const { tags, entries } = ck.summary.offsets;
  ck.close();
  const region = new BigUint64Array(bytes.slice(tags, entries).buffer);
  region[slot] = BigInt(tag);
  const out = bytes.slice();
  out.set(new Uint8Array(region.buffer), tags);
  return out;
}

export async function makeExamples() {
  const tied = tiedDescription();
  const f64 = float64Description();
  const tiedBytes = await writeCheckpoint(tied.description);
  const { shapes, representatives } = tied.description;
  const values = tiedValues(shapes, representatives);
  const stateBytes = await writeState({ shapes, values });
  // The mismatched state file: the head no longer equals the embedding it is tied to, and the
  // frozen positional table holds a NaN.
  const drifted = values.map((v) => v.slice());
  drifted[10][5] += 0.25;
  drifted[1][3] = NaN;
  const driftedBytes = await writeState({ shapes, values: drifted });
  const run = adamRun();
  const file = (name, bytes) => ({ name, bytes });
  return [
    { name: 'tied', title: 'Tied embedding (v4, AdamW, frozen slots)', files: [file('tied-embedding-v4.ckpt', tiedBytes)], labels: tied.labels },
    { name: 'float64', title: 'float64 moments (v5, Adam)', files: [file('float64-v5.ckpt', await writeCheckpoint(f64.description))], labels: f64.labels },
    // Corrupted: the tied model with the head's tag pointing at a frozen slot.
    { name: 'corrupted', title: 'Corrupted: a tie to a frozen slot', files: [file('corrupted-sharing-map.ckpt', await retag(tiedBytes, 10, 2))], labels: tied.labels },
    { name: 'state', title: 'Model state alone (TLSF32B)', files: [file('tied-embedding.tlsf', stateBytes)], labels: tied.labels },
    { name: 'pair', title: 'Optimizer + model state that pair', files: [file('tied-embedding-v4.ckpt', tiedBytes), file('tied-embedding.tlsf', stateBytes)], labels: tied.labels },
    { name: 'mismatched', title: 'Optimizer + model state that do not pair', files: [file('tied-embedding-v4.ckpt', tiedBytes), file('drifted.tlsf', driftedBytes)], labels: tied.labels },
    { name: 'training', title: 'Training run health (Adam pair, one corrupted slot)', files: [file('run-step120.ckpt', await writeCheckpoint(run.optimizer)), file('run-step120.tlsf', await writeState(run.state))], labels: run.labels, lr: run.lr },
    { name: 'run', title: 'A run: three checkpoints of one AdamW run', files: await adamSeries(), labels: ['fc.weight', 'fc.bias', 'embed.frozen', 'out.weight'], run: true },
    { name: 'compare', title: 'Will it load? (tied example vs. an untied layout)', files: [file('tied-embedding-v4.ckpt', tiedBytes)], labels: tied.labels, expected: untiedLayout() },
  ];
}

/** The tied example's layout without its ties: the compare example's destination. */
function untiedLayout() {
  const { description } = tiedDescription();
  const { shapes, requiresGrad, representatives, config } = description;
  return { shapes, requiresGrad, representatives: representatives.map((r, i) => (r === null ? null : i)), config, keepsRandomCounter: true };
}
