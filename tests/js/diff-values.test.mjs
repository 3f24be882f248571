// diff of two checkpoints of one layout compares what they hold: each slot's step, the random
// counter, the configuration, and each slot's moments by their first differing element.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeCheckpoint } from '../../js/index.js';
import { cli, scratch } from './scratch.mjs';

const { put } = scratch('ckptscope-diff-values-');

const shapes = [[3], [2], [2]];
const checkpoint = ({ step = 100, counter = 5, beta2 = 0.95, m2 = 3, v1 = 0.25 } = {}) => writeCheckpoint({
  shapes, requiresGrad: [true, true, true], representatives: [0, 1, 1],   // slot 2 tied to slot 1
  config: { kind: 'adamw', beta1: 0.9, beta2, epsilon: 1e-8, weightDecay: 0.1 }, randomCounter: counter,
  entries: [{ id: 0, step, m: Float32Array.from([1, 2, m2]), v: Float32Array.from([1, 1, 1]) }, { id: 1, step, m: Float32Array.from([0.5, 0.5]), v: Float32Array.from([v1, 0.25]) }],
});

test('diff A B: steps, counter, configuration and moments of one layout', async () => {
  const a = put('a.ckpt', await checkpoint());
  const b = put('b.ckpt', await checkpoint({ step: 200, counter: 6, beta2: 0.999, m2: 3.5, v1: 0.1 }));
  const r = cli(['diff', a, b]);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, [
    `6 differences between ${a} and ${b}:`,
    '  beta2: 0.95 vs 0.999 (bits 0x3fee666666666666 vs 0x3feff7ced916872b)',
    '  random counter: 5 vs 6',
    '  parameter 0: step 100 vs 200',
    '  parameter 0: m[2] 3 vs 3.5',
    '  parameter 1: step 100 vs 200',
    '  parameter 1: v[0] 0.25 vs 0.100000001',
    ''].join('\n'));
  const again = put('a-again.ckpt', await checkpoint());
  const same = cli(['diff', a, again]);
  assert.equal(same.status, 0);
  assert.equal(same.stdout, `no differences between ${a} and ${again}\n`);
  // one value apart: that element alone
  const c = put('c.ckpt', await checkpoint({ m2: 3.0000002 }));
  assert.equal(cli(['diff', a, c]).stdout, `1 difference between ${a} and ${c}:\n  parameter 0: m[2] 3 vs 3.00000024\n`);
});
