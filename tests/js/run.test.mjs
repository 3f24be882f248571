// Checkpoints of one run (docs/runs.md) against runs whose truth is known:
// NumPy float32 Adam and AdamW (tests/run/adam_run.py: a tied slot, a frozen slot, a slot that
// starts late, a slot that skips a step, a warmup schedule) saved at steps with k = 1, k = 0 and
// k > 1 give 0 broken elements, the gradients used and the learning rates used; another seed,
// an optimizer reset, a changed value at the same step and a changed beta2 are each caught with
// their text. Real torch.optim.Adam/AdamW runs (tests/run/torch_run.py) give 0 broken elements.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { run, health, saveCheckpoint, saveState, exportGradient, CheckpointError } from '../../js/index.js';
import { runOrder, numberInName } from '../../js/run.js';
import { usageOf } from './scratch.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const PY = '/usr/bin/python3';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-run-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function generate(args) {
  const r = spawnSync(PY, [path.join(root, 'tests/run/adam_run.py'), ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** Save every checkpoint of a generated run: {opts, states} paths in save order. */
async function save(gen, tag) {
  const opts = [], states = [];
  for (const s of gen.saves) {
    const o = path.join(tmp, `${tag}-step-${s.step}.ckpt`), st = path.join(tmp, `${tag}-step-${s.step}.tlsf`);
    await saveCheckpoint(o, s.opt);
    await saveState(st, s.state);
    opts.push(o);
    states.push(st);
  }
  return { opts, states };
}

const relErr = (got, want) => Math.abs(got - want) / Math.abs(want);
const rms = (xs) => Math.sqrt(xs.reduce((a, x) => a + x * x, 0) / xs.length);
const figures = { worst: 0, gradRms: 0, gradMax: 0, lr: 0, residual: 0 };

for (const kind of ['adam', 'adamw']) {
  test(`a true ${kind} run: continuous, with the gradients and learning rates it used`, async () => {
    const gen = generate(['--kind', kind]);
    const { opts, states } = await save(gen, kind);
    const result = await run(opts, { states });
    assert.equal(result.ok, true, JSON.stringify(result.pairs.map((p) => p.verdict)));
    assert.equal(result.first, null);
    assert.equal(result.files.length, gen.saves.length);
    result.files.forEach((f, i) => {
      assert.equal(f.path, opts[i]);
      assert.equal(f.state, states[i]);
      assert.equal(f.step, gen.saves[i].step);
      assert.deepEqual(f.health, { flags: 0, warnings: 0, ratio: null });
    });
    const ks = new Set();
    result.pairs.forEach((p, j) => {
      assert.equal(p.continuous, true);
      assert.equal(p.verdict, null);
      assert.equal(p.configDiff, null);
      // owner slots only: 0, 1 and 4 (2 is frozen, 3 tied to 0)
      assert.deepEqual(p.slots.map((s) => s.slot), [0, 1, 4]);
      const sa = gen.saves[j], sb = gen.saves[j + 1];
      for (const s of p.slots) {
        ks.add(s.k);
        assert.equal(s.broken, 0);
        assert.equal(s.message, null);
        const entryA = sa.opt.entries.find((e) => e.id === s.slot), entryB = sb.opt.entries.find((e) => e.id === s.slot);
        assert.equal(s.stepA, entryA.step);
        assert.equal(s.stepB, entryB.step);
        assert.equal(s.k, entryB.step - entryA.step);
        if (s.k >= 1) figures.worst = Math.max(figures.worst, s.worst);
        if (s.k !== 1) {
          assert.equal(s.gradient, null);
          assert.equal(s.lr, null);
          continue;
        }
        // one step: the gradient of global step sb.step, and that step's learning rate
        const g = gen.steps[sb.step].gradients[s.slot];
        assert.ok(g, `slot ${s.slot} got a gradient at step ${sb.step}`);
        const want = { rms: rms(g), maxAbs: Math.max(...g.map(Math.abs)), zero: g.filter((x) => x === 0).length };
        figures.gradRms = Math.max(figures.gradRms, relErr(s.gradient.rms, want.rms));
        figures.gradMax = Math.max(figures.gradMax, relErr(s.gradient.maxAbs, want.maxAbs));
        assert.ok(relErr(s.gradient.rms, want.rms) < 1e-5, `gradient rms ${s.gradient.rms} vs ${want.rms}`);
        assert.ok(relErr(s.gradient.maxAbs, want.maxAbs) < 1e-5);
        assert.equal(s.gradient.nonFinite, 0);
        assert.equal(s.gradient.zero, want.zero);
        const lr = gen.steps[sb.step].lr;
        figures.lr = Math.max(figures.lr, relErr(s.lr, lr));
        figures.residual = Math.max(figures.residual, s.lrResidual);
        assert.ok(relErr(s.lr, lr) < 1e-3, `lr ${s.lr} vs ${lr} (slot ${s.slot}, step ${sb.step})`);
        assert.ok(s.lrResidual < 1e-2, `residual ${s.lrResidual}`);
      }
    });
    // the saves cover k = 0 (slot 1 skips step 8), k = 1 and k > 1
    assert.ok(ks.has(0) && ks.has(1) && [...ks].some((k) => k > 1), [...ks].join());
  });
}

test('without state files: the gradients, no learning rate', async () => {
  const gen = generate(['--kind', 'adam', '--saves', '3,4']);
  const { opts } = await save(gen, 'nostate');
  const result = await run(opts);
  assert.equal(result.ok, true);
  assert.equal(result.files[0].state, null);
  const s0 = result.pairs[0].slots[0];
  assert.equal(s0.k, 1);
  assert.ok(s0.gradient.rms > 0);
  assert.equal(s0.lr, null);
  assert.equal(s0.lrResidual, null);
});

test('with lr: each file\'s health ratio is the median of its slots\' ratios; a flagged file is first', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'ratio');
  const result = await run(opts, { states, lr: 1e-3 });
  for (let i = 0; i < 2; i++) {
    const h = await health(opts[i], states[i], { lr: 1e-3 });
    const ratios = h.slots.map((x) => x.ratio).filter((x) => x !== null).sort((a, b) => a - b);
    const mid = ratios.length >> 1;
    const median = ratios.length % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
    const warnings = h.flags.filter((f) => f.severity === 'warning').length;
    assert.deepEqual(result.files[i].health, { flags: h.flags.length, warnings, ratio: median });
  }
  // a tiny lr: every trainable slot's ratio is below the band, so both files get warnings, and a
  // warning (the band's rule of thumb) does not break the run, as it does not fail health
  const low = await run(opts, { states, lr: 1e-12 });
  assert.ok(low.files[0].health.flags > 0);
  assert.equal(low.files[0].health.warnings, low.files[0].health.flags);
  assert.equal(low.first, null);
  assert.equal(low.ok, true);
  assert.equal(low.pairs[0].continuous, true);
});

test('a state file that cannot be used: its text as stateError (health\'s), the file\'s health without parameters', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'badstate');
  // an optimizer checkpoint given as the state file: health refuses it with this text
  const refused = await health(opts[0], opts[1]).then(() => null, (e) => e.message);
  assert.ok(refused);
  const result = await run(opts, { states: [opts[1], states[1]], lr: 1e-3 });
  assert.equal(result.files[0].state, null);
  assert.equal(result.files[0].stateError, refused);
  const alone = await health(opts[0], null, { lr: 1e-3 });
  assert.deepEqual(result.files[0].health, { flags: alone.flags.length, warnings: alone.flags.filter((f) => f.severity === 'warning').length, ratio: null });
  assert.equal(result.files[1].state, states[1]);
  assert.equal('stateError' in result.files[1], false);
});

test('onHealth hears each file\'s health pass, in run order, as health() gives it', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'onhealth');
  const heard = [];
  await run(opts, { states, lr: 1e-3, onHealth: (i, h) => heard.push([i, h]) });
  assert.deepEqual(heard.map(([i]) => i), [0, 1]);
  for (const [i, h] of heard) assert.deepEqual(h, await health(opts[i], states[i], { lr: 1e-3 }));
});

test('cancelled: rejects with the signal\'s reason', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts } = await save(gen, 'cancel');
  const controller = new AbortController();
  controller.abort(new Error('stop'));
  await assert.rejects(run(opts, { signal: controller.signal }), /stop/);
});

test('a checkpoint of another seed is caught', async () => {
  const a = await save(generate(['--saves', '7', '--seed', '1']), 'seedA');
  const b = await save(generate(['--saves', '8', '--seed', '2']), 'seedB');
  const result = await run([a.opts[0], b.opts[0]]);
  assert.equal(result.ok, false);
  assert.equal(result.first, 1);
  const p = result.pairs[0];
  assert.equal(p.continuous, false);
  const s = p.slots.find((x) => x.broken > 0);
  assert.equal(p.verdict, s.message);
  assert.equal(s.message, `slot ${s.slot}: ${s.broken} elements cannot come from Adam steps ${s.stepA}\u2192${s.stepB} (first at element ${s.firstBroken})`);
  assert.ok(s.worst > 1);
});

test('an optimizer reset is caught: B is before A', async () => {
  // the state dropped after global step 5: at global step 7 every slot's counter restarted
  const gen = generate(['--saves', '4,7', '--reset-at', '5']);
  const { opts } = await save(gen, 'reset');
  const result = await run(opts);
  const p = result.pairs[0];
  assert.equal(p.continuous, false);
  assert.equal(result.first, 1);
  const s0 = p.slots[0];
  assert.equal(s0.k, -2);
  assert.equal(s0.broken, null);
  assert.equal(p.verdict, 'slot 0: step 2 in B is before step 4 in A');
});

test('a changed value at the same step is caught', async () => {
  const gen = generate(['--saves', '7']);
  const desc = structuredClone(gen.saves[0].opt);
  desc.entries.find((e) => e.id === 1).m[2] += 1e-3;
  const a = path.join(tmp, 'same-a.ckpt'), b = path.join(tmp, 'same-b.ckpt');
  await saveCheckpoint(a, gen.saves[0].opt);
  await saveCheckpoint(b, desc);
  const result = await run([a, b, a]);
  assert.deepEqual(result.pairs.map((p) => p.verdict), [
    'slot 1: both at step 7, but the moments differ (first at element 2)',
    'slot 1: both at step 7, but the moments differ (first at element 2)',
  ]);
  assert.equal(result.pairs[0].slots[1].broken, 1);
  assert.equal(result.pairs[0].slots[0].broken, 0);
  assert.equal(result.first, 1);
});

test('float64 moments near the largest double: a step that overflows is broken, with and without SIMD', async () => {
  // one step of float64 Adam on 6 elements; then m of opposite signs near 1.7e308 in element 1
  // (Δm = m_B − β1·m_A overflows) and a negative v_A with v_B near it in element 4 (Δv overflows)
  const b1 = 0.9, b2 = 0.999, g = [0.1, -0.2, 0.3, 0.05, -0.01, 0.4];
  const mA = [0.01, 0.02, -0.03, 0.004, 0.001, -0.02], vA = [1e-4, 2e-4, 3e-4, 1e-5, 1e-6, 4e-4];
  const mB = mA.map((m, j) => b1 * m + (1 - b1) * g[j]), vB = vA.map((v, j) => b2 * v + (1 - b2) * (g[j] * g[j]));
  const desc = (step, m, v) => ({ dtype: 'float64', shapes: [[6]], requiresGrad: [true],
    config: { kind: 'adam', beta1: b1, beta2: b2, epsilon: 1e-8, weightDecay: 0 }, entries: [{ id: 0, step, m, v }] });
  const files = async (tag, a, b) => {
    const pa = path.join(tmp, `${tag}-a.ckpt`), pb = path.join(tmp, `${tag}-b.ckpt`);
    await saveCheckpoint(pa, desc(3, ...a));
    await saveCheckpoint(pb, desc(4, ...b));
    return [pa, pb];
  };
  const whole = await run(await files('f64-true', [mA, vA], [mB, vB]));
  // nothing breaks; 6 weighing elements are too few to say continuous
  assert.equal(whole.pairs[0].continuous, null);
  assert.equal(whole.pairs[0].verdict, 'steps 3\u21924: only 6 elements can tell (64 needed)');
  assert.equal(whole.pairs[0].slots[0].broken, 0);
  const oa = [...mA], ob = [...mB], va = [...vA], vb = [...vB];
  oa[1] = 1.7e308, ob[1] = -1.7e308, va[4] = -1.7e308, vb[4] = 1.7e308;
  const opts = await files('f64-overflow', [oa, va], [ob, vb]);
  const result = await run(opts);
  assert.equal(result.pairs[0].verdict, 'slot 0: 2 elements cannot come from Adam steps 3\u21924 (first at element 1)');
  assert.equal(result.pairs[0].continuous, false);
  assert.equal(result.pairs[0].slots[0].broken, 2);
  assert.equal(result.pairs[0].slots[0].firstBroken, 1);
  assert.equal(result.ok, false);
  const nosimd = spawnSync(process.execPath, ['--input-type=module', '-e',
    `import { run } from ${JSON.stringify(path.join(root, 'js/index.js'))}; process.stdout.write(JSON.stringify(await run(${JSON.stringify(opts)})));`],
  { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: 'nosimd' } });
  assert.equal(nosimd.status, 0, nosimd.stderr);
  assert.deepEqual(JSON.parse(nosimd.stdout).pairs, result.pairs);
});

test('a changed beta2 is caught: the configuration diff is the verdict', async () => {
  const a = await save(generate(['--saves', '7']), 'b2a');
  const b = await save(generate(['--saves', '8', '--beta2', '0.99']), 'b2b');
  const result = await run([a.opts[0], b.opts[0]]);
  const p = result.pairs[0];
  assert.equal(p.continuous, false);
  assert.equal(p.verdict, 'beta2: 0.999 vs 0.99 (bits 0x3feff7ced916872b vs 0x3fefae147ae147ae)');
  assert.deepEqual(p.configDiff.map((d) => d.field), ['config.beta2']);
  assert.deepEqual(p.slots, []);
});

test('a file that is not valid breaks its pairs and is named first', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts } = await save(gen, 'broken');
  const bad = path.join(tmp, 'broken.ckpt');
  fs.writeFileSync(bad, fs.readFileSync(opts[1]).subarray(0, 100));
  const result = await run([opts[0], bad]);
  assert.equal(result.first, 1);
  assert.equal(result.files[1].ok, false);
  assert.equal(result.files[1].health, null);
  assert.equal(result.files[1].error.message, 'CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)');
  assert.equal(result.pairs[0].verdict, 'file 1 is invalid: CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)');
});

test('bad arguments are refused before any file is read', async () => {
  await assert.rejects(run(['a']), { name: 'RangeError', message: 'a run needs at least two checkpoints, got 1' });
  await assert.rejects(run('a'), { name: 'TypeError', message: 'files must be an array, or the path of a DeepSpeed save_dir or of a folder of DCP folders: a is neither' });
  await assert.rejects(run(42), { name: 'TypeError', message: 'files must be an array' });
  await assert.rejects(run(['a', 'b'], { states: ['x'] }), { name: 'RangeError', message: 'states must have one entry per file (2), got 1' });
});

test('the gradient of a one-step pair, exported: the gradients used, as {name}.grad', async () => {
  const gen = generate(['--kind', 'adamw', '--saves', '7,8']);
  const { opts } = await save(gen, 'grad');
  const bytes = await exportGradient(opts[0], opts[1], { names: ['w', 'b', 'frozen', 'head', 'late'] });
  const headerLength = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  // slot 1 got no gradient at step 8 (k = 0): not exported
  assert.deepEqual(Object.keys(header).filter((k) => k !== '__metadata__').sort(), ['late.grad', 'w.grad']);
  for (const [name, slot] of [['w.grad', '0'], ['late.grad', '4']]) {
    const t = header[name];
    assert.equal(t.dtype, 'F32');
    assert.deepEqual(t.shape, gen.shapes[Number(slot)]);
    const [from, to] = t.data_offsets;
    const values = new Float32Array(bytes.slice(8 + headerLength + from, 8 + headerLength + to).buffer);
    const want = gen.steps['8'].gradients[slot];
    values.forEach((x, j) => {
      if (want[j] === 0) assert.equal(x, 0);
      // float32 rounding of m: relative to the slot's gradients, not to a small one of them
      else assert.ok(Math.abs(x - want[j]) < 1e-4 * rms(want), `${name}[${j}]: ${x} vs ${want[j]}`);
    });
  }
  // B before A: no slot is one step apart
  await assert.rejects(exportGradient(opts[1], opts[0]), (err) => err instanceof CheckpointError &&
    err.message === 'no slot is one Adam step from A to B: the gradient comes back from a one-step pair only');
});

test('folder order: the number in the name, then the largest step; never by step alone', () => {
  assert.equal(numberInName('run3/step-000100.ckpt'), 100n);
  assert.equal(numberInName('final.ckpt'), null);
  const order = runOrder([
    { name: 'final.ckpt', step: 900 },
    { name: 'step-200.ckpt', step: 5 },      // a restarted optimizer: its small step must not move it
    { name: 'step-100.ckpt', step: 100 },
    { name: 'best.ckpt', step: 50 },
  ]).map((x) => x.name);
  assert.deepEqual(order, ['step-100.ckpt', 'step-200.ckpt', 'best.ckpt', 'final.ckpt']);
});

test('real torch.optim.Adam and AdamW runs are continuous', async () => {
  assert.equal(spawnSync(PY, ['-c', 'import torch']).status, 0, 'python3-torch is missing: bash scripts/ensure-deps.sh test installs it');
  for (const kind of ['adam', 'adamw']) {
    const r = spawnSync(PY, [path.join(root, 'tests/run/torch_run.py'), '--kind', kind], { encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, r.stderr);
    const gen = JSON.parse(r.stdout);
    const { opts, states } = await save(gen, `torch-${kind}`);
    const result = await run(opts, { states });
    assert.equal(result.ok, true, JSON.stringify(result.pairs.map((p) => p.verdict)));
    for (const p of result.pairs) for (const s of p.slots) {
      assert.equal(s.broken, 0);
      if (s.k >= 1) figures.torchWorst = Math.max(figures.torchWorst ?? 0, s.worst);
      if (s.k === 1) {
        const lr = gen.steps[gen.saves[p.b].step].lr;
        figures.torchLr = Math.max(figures.torchLr ?? 0, relErr(s.lr, lr));
        assert.ok(relErr(s.lr, lr) < 1e-3, `torch ${kind} lr ${s.lr} vs ${lr}`);
      }
    }
  }
});

// the largest errors met, printed for the closing note (not a test: it asserts nothing)
after(() => console.log(`# run figures: ${JSON.stringify(figures)}`));

// ---- the command ----------------------------------------------------------------------------

const cli = (args, cwd) => spawnSync(process.execPath, [path.join(root, 'js/cli.js'), 'run', ...args], { encoding: 'utf8', cwd });

test('ckptscope run DIR: run order by the number in the name, states by stem; exit 0', async () => {
  const dir = path.join(tmp, 'folder');
  fs.mkdirSync(dir);
  const gen = generate(['--kind', 'adamw', '--saves', '3,4,12']);
  for (const s of gen.saves) {
    // step-12 sorts after step-4 by number (a name sort would put it first)
    await saveCheckpoint(path.join(dir, `step-${s.step}.ckpt`), s.opt);
    await saveState(path.join(dir, `step-${s.step}.tlsf`), s.state);
  }
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a checkpoint');
  const r = cli([dir, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const json = JSON.parse(r.stdout);
  assert.deepEqual(json.files.map((f) => path.basename(f.path)), ['step-3.ckpt', 'step-4.ckpt', 'step-12.ckpt']);
  assert.deepEqual(json.files.map((f) => path.basename(f.state)), ['step-3.tlsf', 'step-4.tlsf', 'step-12.tlsf']);
  assert.equal(json.first, null);
  assert.equal(typeof json.pairs[0].slots[0].lr, 'number');
  const text = cli([dir]);
  assert.equal(text.status, 0);
  // one line per pair: its worst slot, its power, the slots whose learning rate came back
  const lines = text.stdout.split('\n');
  const line = lines.find((l) => l.startsWith('0 → 1: '));
  const m = line.match(/^0 → 1: continuous \(worst (\S+) at slot (\d+), power (\S+), lr on (\d+) slots\)$/);
  assert.ok(m, line);
  const worst = json.pairs[0].slots.reduce((w, s) => (s.worst > w.worst ? s : w));
  assert.equal(Number(m[2]), worst.slot);
  assert.ok(Math.abs(Number(m[1]) - worst.worst) < 1e-3 && Math.abs(Number(m[3]) - json.pairs[0].power) < 1e-3, line);
  assert.equal(Number(m[4]), json.pairs[0].slots.filter((s) => s.lr !== null).length);
  assert.equal(lines.filter((l) => /^\s+slot\s+steps/.test(l)).length, 0);   // the slot tables only with --slots
  const slots = cli([dir, '--slots']);
  assert.equal(slots.status, 0);
  assert.equal(slots.stdout.split('\n').filter((l) => /^\s+slot\s+steps\s+k\s+broken\s+worst\s+power\s+rms\(g\)\s+lr\s+residual$/.test(l)).length, 2, slots.stdout);
  assert.match(text.stdout, /^verdict: one run, every pair continuous$/m);
  for (const line of text.stdout.split('\n')) assert.ok(line.length <= 80, `a line of ${line.length} columns: ${line}`);
});

test('ckptscope run A B: a broken pair exits 1 and names the first bad file', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts } = await save(gen, 'clibroken');
  const r = cli([opts[1], opts[0]]);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, [
    '2 checkpoints of one run:',
    '   file  step  flags  warn  path',
    `      0     4      0     0  ${opts[1]}`,
    `!     1     3      0     0  ${opts[0]}`,
    '',
    '0 → 1: NOT continuous: slot 0: step 3 in B is before step 4 in A',
    '',
    `verdict: something breaks at file 1 (${opts[0]})`,
    '',
  ].join('\n'));
  assert.equal(r.stderr, '');
});

test('ckptscope run A B --state … --lr: ratio warnings are counted apart and do not fail the run (exit 0)', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'cliwarn');
  const r = cli([opts[0], opts[1], '--state', states[0], states[1], '--lr', '1e-12']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const rows = r.stdout.split('\n');
  const head = rows.findIndex((l) => /^\s*file\s+step\s+flags\s+warn(ings)?\s+ratio\s+state\s+path$/.test(l));
  assert.ok(head >= 0, r.stdout);
  const low = await run(opts, { states, lr: 1e-12 });
  for (let i = 0; i < 2; i++) {
    const cells = rows[head + 1 + i].trim().split(/\s+/);
    // the table's flags and warnings are the JSON's: every flag, and those of them that are warnings
    assert.deepEqual(cells.slice(0, 4), [String(i), '3,4'.split(',')[i], String(low.files[i].health.flags), String(low.files[i].health.warnings)]);
    assert.ok(low.files[i].health.flags > 0);
  }
  assert.match(r.stdout, /^verdict: one run, every pair continuous$/m);
});

test('run --ratio-band LO,HI: the band the ratio warnings use, stated in the JSON; health\'s flags to the word', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'cliband');
  const usual = await run(opts, { states, lr: 1e-3 });
  assert.deepEqual(usual.ratioBand, [1e-5, 1e-2]);
  // a band above every ratio of these files: each slot with a ratio is flagged, as health flags it
  const band = [0.5, 1];
  const high = await run(opts, { states, lr: 1e-3, ratioBand: band });
  assert.deepEqual(high.ratioBand, band);
  for (let i = 0; i < 2; i++) {
    const h = await health(opts[i], states[i], { lr: 1e-3, ratioBand: band });
    const warned = h.flags.filter((f) => f.severity === 'warning').length;
    assert.ok(warned > 0);
    assert.equal(high.files[i].health.warnings, warned);
    assert.equal(high.files[i].health.flags, h.flags.length);
  }
  assert.equal(high.ok, usual.ok);   // warnings do not break the run
  await assert.rejects(run(opts, { states, lr: 1e-3, ratioBand: [1e-2, 1e-5] }), { name: 'RangeError', message: 'the ratio band LO,HI needs LO below HI, got 1e-2,1e-5' });
  // the CLI: both spellings, exit 0 (warnings only), the band in the JSON
  for (const spelled of [['--ratio-band', '0.5,1'], ['--ratio-band=0.5,1']]) {
    const r = cli([...opts, '--state', ...states, '--lr', '1e-3', ...spelled, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const json = JSON.parse(r.stdout);
    assert.deepEqual(json.ratioBand, band);
    assert.deepEqual(json.files.map((f) => f.health.warnings), high.files.map((f) => f.health.warnings));
  }
});

test('ckptscope run A B --grad OUT.npz: NumPy reads the gradients back', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts } = await save(gen, 'cligrad');
  const out = path.join(tmp, 'grad.npz');
  const r = cli([...opts, '--grad', out]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `wrote ${out} (${fs.statSync(out).size} bytes)\n`);
  const py = spawnSync(PY, ['-c', `import numpy as np, json, sys
z = np.load(sys.argv[1])
print(json.dumps({k: z[k].astype(float).ravel().tolist() for k in z.files if k.endswith('.grad')}))`, out], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const got = JSON.parse(py.stdout);
  assert.deepEqual(Object.keys(got).sort(), ['slot0.grad', 'slot1.grad', 'slot4.grad']);
  for (const [slot, want] of Object.entries(gen.steps['4'].gradients)) {
    got[`slot${slot}.grad`].forEach((x, j) => assert.ok(want[j] === 0 ? x === 0 : Math.abs(x / want[j] - 1) < 1e-4));
  }
  const three = cli([...opts, opts[0], '--grad', out]);
  assert.equal(three.status, 2);
  assert.equal(three.stderr.split('\n')[0], 'ckptscope: --grad takes exactly two checkpoints: A and B one step after it');
});

test('ckptscope run: usage errors exit 2 without a stack trace', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts, states } = await save(gen, 'cliusage');
  for (const [args, text] of [
    [[opts[0]], 'ckptscope: run takes at least two checkpoints, or a folder'],
    [[...opts, '--state', states[0]], 'ckptscope: --state takes one model-state file per checkpoint: 2 checkpoints, 1 state file'],
    [[opts[0], path.join(tmp, 'missing.ckpt')], `ckptscope: no such file: ${path.join(tmp, 'missing.ckpt')}`],
    [[...opts, '--bogus'], 'ckptscope: unknown option --bogus'],
    [[...opts, '--lr', '1e-3', '--ratio-band', '1e-2,1e-5'], 'ckptscope: --ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))'],
    [[...opts, '--state', ...states, '--ratio-band', '1e-5,1e-2'], 'ckptscope: --ratio-band goes with --lr and model-state files: the ratios need both (lr · rms(u) / rms(θ))'],
    [[...opts, '--state', ...states, '--lr', '1e-3', '--ratio-band', '1e-2,1e-5'], 'ckptscope: --ratio-band 1e-2,1e-5: the ratio band LO,HI needs LO below HI, got 1e-2,1e-5'],
    [[...opts, '--state', ...states, '--lr', '1e-3', '--ratio-band=1e-5'], 'ckptscope: --ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got 1e-5'],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.split('\n')[0], text);
    assert.doesNotMatch(r.stderr, /at .*\.js:\d+/);
  }
});

// ---- what a pair can tell: its power, and the learning-rate residual ------------------------

/** C's %.3g, as the core's texts print a figure. */
function g3(x) {
  const [mant, exp] = x.toExponential(2).split('e');
  const e = Number(exp);
  const trim = (t) => (t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t);
  if (e < -4 || e >= 3) return `${trim(mant)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return trim(x.toFixed(Math.max(0, 2 - e)));
}

test('a true run has power: every pair continuous, power near 1, nothing cannot tell', async () => {
  const gen = generate(['--kind', 'adamw', '--saves', '3,4,7,12']);
  const { opts, states } = await save(gen, 'power');
  const result = await run(opts, { states });
  assert.equal(result.ok, true);
  assert.equal(result.cannotTell, 0);
  assert.equal(result.residualLimit, 0.1);
  for (const p of result.pairs) {
    assert.equal(p.continuous, true);
    assert.ok(p.power > 0.9, `power ${p.power}`);
    for (const s of p.slots) {
      assert.equal(s.cannotTell, null);
      if (s.k === 0) assert.equal(s.power, 1);   // bit identity: all of it
    }
  }
});

test('another seed at k = 100 with beta2 = 0.95: cannot tell (continuous null), not an all-clear (exit 3)', async () => {
  const a = await save(generate(['--saves', '100', '--seed', '1', '--beta2', '0.95']), 'farA');
  const b = await save(generate(['--saves', '200', '--seed', '2', '--beta2', '0.95']), 'farB');
  const result = await run([a.opts[0], b.opts[0]]);
  const p = result.pairs[0];
  assert.equal(p.continuous, null);
  assert.equal(result.ok, false);
  assert.equal(result.first, null);   // nothing breaks
  assert.equal(result.cannotTell, 1);
  assert.ok(p.power < 0.01, `power ${p.power}`);
  for (const s of p.slots) {
    assert.equal(s.broken, 0);   // B's own moments satisfy the bound whatever A held
    assert.equal(s.cannotTell, `slot ${s.slot}: steps ${s.stepA}\u2192${s.stepB} are too far apart to tell (\u03b21^k = 2.66e-05, \u03b22^k = 0.00592)`);
  }
  assert.equal(p.verdict, p.slots[0].cannotTell);
  assert.equal(p.verdictSlot, 0);
  assert.equal(p.slotsCannotTell, 3);
  // the command: its own line, its own verdict, exit status 3
  const r = cli([a.opts[0], b.opts[0]]);
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stdout, [
    '2 checkpoints of one run:',
    'file  step  flags  warn  path',
    `   0   100      0     0  ${a.opts[0]}`,
    `   1   200      0     0  ${b.opts[0]}`,
    '',
    `0 → 1: cannot tell: ${p.verdict}; 3 of 3 slots cannot tell`,
    '',
    'verdict: nothing breaks, but 1 pair of 1 cannot tell (too far apart): not shown to be one run',
    '',
  ].join('\n'));
  const json = JSON.parse(cli([a.opts[0], b.opts[0], '--json']).stdout);
  assert.equal(json.pairs[0].continuous, null);
  assert.equal(json.cannotTell, 1);
  // a broken pair beside it: exit 1, both counted
  const broken = await save(generate(['--saves', '7', '--seed', '3', '--beta2', '0.95']), 'farC');
  const both = cli([a.opts[0], b.opts[0], broken.opts[0]]);
  assert.equal(both.status, 1);
  assert.equal(both.stdout, [
    '3 checkpoints of one run:',
    '   file  step  flags  warn  path',
    `      0   100      0     0  ${a.opts[0]}`,
    `      1   200      0     0  ${b.opts[0]}`,
    `!     2     7      0     0  ${broken.opts[0]}`,
    '',
    `0 → 1: cannot tell: ${p.verdict}; 3 of 3 slots cannot tell`,
    '1 → 2: NOT continuous: slot 0: step 7 in B is before step 200 in A',
    '',
    `verdict: something breaks at file 2 (${broken.opts[0]}); 1 pair of 2 cannot tell`,
    '',
  ].join('\n'));
});

test('another seed at k = 100 with beta2 = 0.95 beside a slot of 24 elements where A weighs once: cannot tell (exit 3), not continuous', async () => {
  const ga = generate(['--saves', '100', '--seed', '1', '--beta2', '0.95']), gb = generate(['--saves', '200', '--seed', '2', '--beta2', '0.95']);
  // slot 4 holds 24 elements, m 0; v 84.4 in element 0 at A (0.5 after beta2^100), 0 elsewhere;
  // v 1 at B: A weighs in element 0 alone (power 1/24, above 1%), and nothing breaks
  const small = (desc, v) => ({ ...desc, shapes: desc.shapes.map((s, i) => (i === 4 ? [24] : s)),
    entries: desc.entries.map((e) => (e.id === 4 ? { ...e, m: new Array(24).fill(0), v } : e)) });
  const a = path.join(tmp, 'small-a.ckpt'), b = path.join(tmp, 'small-b.ckpt');
  await saveCheckpoint(a, small(ga.saves[0].opt, [84.4, ...new Array(23).fill(0)]));
  await saveCheckpoint(b, small(gb.saves[0].opt, new Array(24).fill(1)));
  const result = await run([a, b]);
  const p = result.pairs[0];
  assert.deepEqual(p.slots.map((s) => [s.slot, s.k, s.broken, s.cannotTell === null]), [[0, 100, 0, false], [1, 100, 0, false], [4, 100, 0, true]]);
  assert.equal(p.slots[2].power, 1 / 24);
  assert.equal(p.continuous, null);
  assert.equal(p.verdict, 'steps 100\u2192200: only 1 elements can tell (64 needed)');
  assert.equal(p.verdictSlot, null);
  assert.equal(p.slotsCannotTell, 2);
  assert.equal(result.ok, false);
  assert.equal(result.first, null);
  assert.equal(result.cannotTell, 1);
  const r = cli([a, b]);
  assert.equal(r.status, 3, r.stderr);
  assert.deepEqual(r.stdout.split('\n').slice(5), [
    '0 → 1: cannot tell: steps 100→200: only 1 elements can tell (64 needed); 2 of 3 slots cannot tell',
    '',
    'verdict: nothing breaks, but 1 pair of 1 cannot tell (too far apart): not shown to be one run',
    '',
  ]);
});

/** The weigh count of FORMAT's rule, element by element in binary64 (beta and 1 - beta rounded
 *  once to float32, as the core takes them). */
function weighCount(ma, va, mb, vb, k, beta1, beta2) {
  const f = Math.fround, b1 = f(beta1), b2 = f(beta2), omb1 = f(1 - beta1), omb2 = f(1 - beta2), u = 2 ** -24, nu = 2 ** -126;
  const b1k = b1 ** k, b2k = b2 ** k, rho = (b1 * b1) / b2;
  const ck = k === 1 ? omb1 / Math.sqrt(omb2) : (omb1 / Math.sqrt(omb2)) * Math.sqrt((1 - rho ** k) / (1 - rho));
  const kv = 2 * (k + 1) * u, km = 4 * (k + 1) * u;
  let n = 0;
  for (let j = 0; j < ma.length; j++) {
    const tv = kv * (vb[j] + b2k * va[j]) + nu, vt = vb[j] + tv, bma = b1k * Math.abs(ma[j]);
    const tm = km * (ck * Math.sqrt(vb[j]) + Math.abs(mb[j]) + bma);
    n += vt / 10 < b2k * va[j] || (ck * Math.sqrt(vt) + tm) / 10 < bma ? 1 : 0;
  }
  return n;
}

test('the power counts as the rule is written, with and without SIMD (both wasm builds)', async () => {
  const gen = generate(['--saves', '20,30', '--beta2', '0.95', '--skip', '']);
  const { opts } = await save(gen, 'count');
  const result = await run(opts);
  const nosimd = spawnSync(process.execPath, ['--input-type=module', '-e',
    `import { run } from ${JSON.stringify(path.join(root, 'js/index.js'))}; process.stdout.write(JSON.stringify(await run(${JSON.stringify(opts)})));`],
  { encoding: 'utf8', env: { ...process.env, CKPTSCOPE_WASM: 'nosimd' } });
  assert.equal(nosimd.status, 0, nosimd.stderr);
  assert.deepEqual(JSON.parse(nosimd.stdout).pairs, result.pairs);
  const [ea, eb] = gen.saves.map((s) => s.opt.entries);
  let weighs = 0, count = 0;
  for (const s of result.pairs[0].slots) {
    const a = ea.find((e) => e.id === s.slot), b = eb.find((e) => e.id === s.slot);
    const w = weighCount(a.m, a.v, b.m, b.v, s.k, 0.9, 0.95);
    assert.equal(s.power, w / a.m.length, `slot ${s.slot}`);
    weighs += w, count += a.m.length;
  }
  assert.equal(result.pairs[0].power, weighs / count);
  assert.ok(weighs > 0 && weighs < count, `${weighs} of ${count}`);   // some elements, not all
});

test('the wrong weights at k = 1 (the state file of another step) break the pair: its residual', async () => {
  const gen = generate(['--kind', 'adamw', '--saves', '3,4,8']);
  const { opts, states } = await save(gen, 'residual');
  const result = await run([opts[0], opts[1]], { states: [states[0], states[2]] });
  const p = result.pairs[0];
  assert.equal(p.continuous, false);
  assert.equal(result.first, 1);
  const s = p.slots.find((x) => x.message !== null);
  assert.ok(s.lrResidual > 0.1, `residual ${s.lrResidual}`);
  assert.equal(s.broken, 0);   // the moments continue: the weights do not
  assert.equal(s.message, `slot ${s.slot}: the weights did not move as one Adam step at one learning rate (residual ${g3(s.lrResidual)})`);
  assert.equal(p.verdict, s.message);
  // the true weights: residuals near 1e-4, continuous
  const right = await run([opts[0], opts[1]], { states: [states[0], states[1]] });
  assert.equal(right.pairs[0].continuous, true);
  // a limit above the residual: the pair holds (the residual still reported)
  const loose = await run([opts[0], opts[1]], { states: [states[0], states[2]], residualLimit: 1e9 });
  assert.equal(loose.pairs[0].continuous, true);
  assert.equal(loose.residualLimit, 1e9);
  assert.equal(loose.pairs[0].slots.find((x) => x.slot === s.slot).lrResidual, s.lrResidual);
  await assert.rejects(run(opts, { residualLimit: 0 }), { name: 'RangeError', message: 'residualLimit must be a positive number, got 0' });
  await assert.rejects(run(opts, { residualLimit: '0.1' }), { name: 'RangeError', message: 'residualLimit must be a positive number, got 0.1' });
  // the command: exit 1, the text; --residual-limit (both spellings) and its refusals
  const r = cli([opts[0], opts[1], '--state', states[0], states[2]]);
  assert.equal(r.status, 1);
  assert.ok(r.stdout.split('\n').includes(`0 → 1: NOT continuous: ${s.message}`), r.stdout);
  for (const spelled of [['--residual-limit', '1e9'], ['--residual-limit=1e9']]) {
    assert.equal(cli([opts[0], opts[1], '--state', states[0], states[2], ...spelled]).status, 0);
  }
  for (const bad of ['0', '-1', 'x', '1e400']) {
    const u = cli([...opts.slice(0, 2), '--residual-limit', bad]);
    assert.equal(u.status, 2);
    assert.equal(u.stderr, `ckptscope: --residual-limit must be a positive number, got ${bad}\n${usageOf('run')}`);
  }
});

test('a residual that rounding θ to float32 alone can cause does not break a pair (a learning rate of 1e-7)', async () => {
  // Δθ is a few ulps of θ: the fit is poor (residual above 0.1) but within 10·u·‖θ_B‖/‖Δθ‖
  const gen = generate(['--saves', '3,4', '--lr', '1e-7']);
  const { opts, states } = await save(gen, 'rounding');
  const result = await run(opts, { states });
  const p = result.pairs[0];
  assert.ok(p.slots.some((s) => s.lrResidual > 0.1), JSON.stringify(p.slots.map((s) => s.lrResidual)));
  assert.equal(p.continuous, true);
  for (const s of p.slots) assert.equal(s.message, null);
});

test('ckptscope run --names: the slots named in the pair lines and the --slots table', async () => {
  const gen = generate(['--saves', '3,4']);
  const { opts } = await save(gen, 'names');
  const names = path.join(tmp, 'run-names.json');
  fs.writeFileSync(names, JSON.stringify(['w', 'b', 'frozen', 'head', 'late']));
  // a broken pair: the verdict's slot named first, as health names its flags
  const r = cli([opts[1], opts[0], '--names', names]);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, [
    '2 checkpoints of one run:',
    '   file  step  flags  warn  path',
    `      0     4      0     0  ${opts[1]}`,
    `!     1     3      0     0  ${opts[0]}`,
    '',
    '0 → 1: NOT continuous: [w] slot 0: step 3 in B is before step 4 in A',
    '',
    `verdict: something breaks at file 1 (${opts[0]})`,
    '',
  ].join('\n'));
  const ok = cli([...opts, '--names', names, '--slots']);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /^0 → 1: continuous \(worst \S+ at slot \d \((w|b|late)\), power \S+\)$/m);
  const head = ok.stdout.split('\n').findIndex((l) => /^\s+slot\s+name\s+steps\s+k\s+broken/.test(l));
  assert.ok(head > 0, ok.stdout);
  assert.deepEqual(ok.stdout.split('\n').slice(head + 1, head + 4).map((l) => l.trim().split(/\s+/).slice(0, 2)), [['0', 'w'], ['1', 'b'], ['4', 'late']]);
  // too few names: said, as the other commands say it
  const short = path.join(tmp, 'run-names-short.json');
  fs.writeFileSync(short, JSON.stringify(['w', 'b']));
  const warned = cli([...opts, '--names', short]);
  assert.equal(warned.status, 0);
  assert.equal(warned.stderr, `warning: ${short} has 2 names for 5 slots\n`);
});
