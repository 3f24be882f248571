// Property-based tests: random layouts with random sharing maps, written by the package and
// read back bit for bit; a random layout mutated at one slot fails `check` with the reference
// text the mutation calls for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inspect, check, readEntry, writeCheckpoint } from '../../js/index.js';

const F = 'CUDA Adam checkpoint: ';

/** A well-formed layout: slots in module order, each trainable slot owning its history or
 *  tied to an earlier owner of the same shape. */
const layouts = fc
  .array(
    fc.record({
      shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
      trainable: fc.boolean(),
      tieTo: fc.option(fc.nat(), { nil: null }),
    }),
    { minLength: 1, maxLength: 8 },
  )
  .map((slots) => {
    const shapes = slots.map((s) => s.shape);
    const requiresGrad = slots.map((s) => s.trainable);
    const representatives = [];
    slots.forEach((s, i) => {
      if (!s.trainable) return representatives.push(null);
      const owners = [];
      for (let r = 0; r < i; r++) if (representatives[r] === r && shapes[r].join() === s.shape.join()) owners.push(r);
      representatives.push(s.tieTo !== null && owners.length ? owners[s.tieTo % owners.length] : i);
    });
    return { shapes, requiresGrad, representatives };
  });

const size = (shape) => shape.reduce((a, b) => a * b, 1);

/** Raw bit patterns, so NaN payloads, -0.0 and subnormals are all covered. */
const momentsArb = (count, dtype) =>
  dtype === 'float64'
    ? fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: count * 2, maxLength: count * 2 }).map((w) => BigUint64Array.from(w))
    : fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: count * 2, maxLength: count * 2 }).map((w) => Uint32Array.from(w));

const configArb = fc.record({
  kind: fc.constantFrom('adam', 'adamw'),
  beta1: fc.double({ min: 0, max: 0.999999, noNaN: true }),
  beta2: fc.double({ min: 0, max: 0.999999, noNaN: true }),
  epsilon: fc.double({ min: 1e-30, max: 1, noNaN: true }),
  weightDecay: fc.double({ min: 0, max: 1, noNaN: true }),
}).map((c) => (c.kind === 'adam' ? { ...c, weightDecay: 0 } : c));

const caseArb = fc
  .record({
    layout: layouts,
    dtype: fc.constantFrom('float32', 'float64'),
    config: configArb,
    counter: fc.option(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { nil: null }),
    seed: fc.nat(),
  })
  .chain((c) => {
    const owners = c.layout.representatives.map((r, i) => (r === i ? i : -1)).filter((i) => i >= 0);
    return fc
      .tuple(...owners.map((i) => fc.tuple(fc.constant(i), fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }), momentsArb(size(c.layout.shapes[i]), c.dtype))))
      .map((entries) => ({ ...c, entries }));
  });

function description(c) {
  return {
    ...c.layout,
    dtype: c.dtype,
    config: c.config,
    randomCounter: c.counter,
    entries: c.entries.map(([id, step, words]) => {
      const half = words.length / 2;
      const bytes = new Uint8Array(words.buffer);
      const w = words.BYTES_PER_ELEMENT;
      return { id, step, m: bytes.slice(0, half * w), v: bytes.slice(half * w) };
    }),
  };
}

const dec = (v) => (typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString()) : v);

test('write -> inspect + readEntry gives back the layout, config, counter, steps and moments bit for bit', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const desc = description(c);
      const bytes = await writeCheckpoint(desc);
      const report = await inspect(bytes);
      assert.equal(report.ok, true, report.error?.message);
      assert.deepEqual(report.schema.shapes, c.layout.shapes);
      assert.deepEqual(report.schema.requiresGrad, c.layout.requiresGrad);
      assert.deepEqual(report.schema.effectiveRepresentatives, c.layout.representatives);
      assert.equal(report.dtype, c.dtype);
      assert.equal(report.config.kind, c.config.kind);
      for (const f of ['beta1', 'beta2', 'epsilon', 'weightDecay']) assert.ok(Object.is(report.config[f], c.config[f]), f);
      assert.equal(report.randomCounter, c.counter === null ? null : dec(c.counter));
      const wantIds = c.entries.map(([id]) => id).sort((a, b) => a - b);
      assert.deepEqual(report.entries.map((e) => e.id), wantIds);
      for (const [id, step, words] of c.entries) {
        const e = await readEntry(bytes, id);
        assert.equal(e.step, dec(step));
        const half = words.length / 2;
        const w = words.BYTES_PER_ELEMENT;
        assert.deepEqual(new Uint8Array(e.m.buffer), new Uint8Array(words.buffer, 0, half * w));
        assert.deepEqual(new Uint8Array(e.v.buffer), new Uint8Array(words.buffer, half * w, half * w));
      }
      assert.equal((await check(bytes, { ...c.layout, dtype: c.dtype, config: c.config, keepsRandomCounter: c.counter !== null })).ok, true);
    }),
    { numRuns: 150, seed: 20261129 },
  );
});

/** One mutation of the destination at one slot, and the diagnostic the trainer must give. */
function mutate(layout, slot, how) {
  const shapes = layout.shapes.map((s) => [...s]);
  const requiresGrad = [...layout.requiresGrad];
  const representatives = [...layout.representatives];
  const n = shapes.length;
  switch (how) {
    case 'rank':
      shapes[slot] = [...shapes[slot], 1];
      // Ties to or from this slot would make the destination malformed: untie them.
      for (let i = 0; i < n; i++) if (representatives[i] === slot || i === slot) representatives[i] = requiresGrad[i] ? i : null;
      return { layout: { shapes, requiresGrad, representatives }, error: `${F}rank mismatch for parameter ${slot} (file=${layout.shapes[slot].length}, expected=${shapes[slot].length})` };
    case 'dim': {
      if (!shapes[slot].length) return null;
      const before = `#[${shapes[slot].join(', ')}]`;
      shapes[slot][0] += 1;
      for (let i = 0; i < n; i++) if (representatives[i] === slot || i === slot) representatives[i] = requiresGrad[i] ? i : null;
      return { layout: { shapes, requiresGrad, representatives }, error: `${F}shape mismatch for parameter ${slot} (file=${before}, expected=#[${shapes[slot].join(', ')}])` };
    }
    case 'flag':
      requiresGrad[slot] = !requiresGrad[slot];
      for (let i = 0; i < n; i++) if (representatives[i] === slot || i === slot) representatives[i] = requiresGrad[i] ? i : null;
      return { layout: { shapes, requiresGrad, representatives }, error: `${F}\`requiresGrad\` mismatch for parameter ${slot}` };
    case 'tie': {
      // Untie an alias, or tie an owner to an earlier owner of the same shape.
      const r = representatives[slot];
      if (r === null) return null;
      if (r !== slot) representatives[slot] = slot;
      else {
        const earlier = representatives.findIndex((x, i) => i < slot && x === i && shapes[i].join() === shapes[slot].join());
        if (earlier < 0) return null;
        representatives[slot] = earlier;
        for (let i = slot + 1; i < n; i++) if (representatives[i] === slot) representatives[i] = earlier;
      }
      const first = representatives.findIndex((x, i) => x !== layout.representatives[i]);
      return { layout: { shapes, requiresGrad, representatives }, error: `${F}storage alias mismatch for parameter ${first}`, needsTags: true };
    }
  }
  return null;
}

let executed = 0;
test('a layout mutated at one slot fails check with the expected reference text', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, fc.nat(), fc.constantFrom('rank', 'dim', 'flag', 'tie'), async (c, pick, how) => {
      const slot = pick % c.layout.shapes.length;
      const m = mutate(c.layout, slot, how);
      fc.pre(m !== null);
      executed++;
      const bytes = await writeCheckpoint({ ...description(c), version: 5 });   // v5 always keeps tags
      await assert.rejects(check(bytes, m.layout), (err) => {
        assert.equal(err.message, m.error);
        return true;
      });
    }),
    { numRuns: 200, seed: 7 },
  );
  assert.ok(executed >= 150, `only ${executed} mutations ran`);
});
