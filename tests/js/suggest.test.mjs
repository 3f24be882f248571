// "Did you mean" (js/suggest.js): the one rule that suggests a known word for a slip, in a
// description's keys, the CLI's options and its commands; and its bounds: a key or an argument
// megabytes long gets no suggestion computed and is echoed cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nearest, shown, SUGGEST_MAX, ECHO_MAX } from '../../js/suggest.js';
import { writeCheckpoint, LayoutError, inspect, health, check } from '../../js/index.js';
import { model, modelDescription, writeBase } from './table.mjs';
import { cli, scratch } from './scratch.mjs';

const { dir: scratchDir, put } = scratch('ckptscope-suggest-scratch-');

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const INDEX = fileURLToPath(new URL('../../js/index.js', import.meta.url));

test('nearest: a slip of a known word (case, _ and -, an edit per three characters, a swap), else null', () => {
  const known = ['shapes', 'requiresGrad', 'weightDecay', 'step'];
  assert.equal(nearest('weight_decay', known), 'weightDecay');
  assert.equal(nearest('requires-grad', known), 'requiresGrad');
  assert.equal(nearest('stpe', known), 'step');
  assert.equal(nearest('shpaes', known), 'shapes');
  assert.equal(nearest('momentum', known), null);
  assert.equal(nearest('', []), null);
});

test('nearest and shown are bounded: past SUGGEST_MAX characters no suggestion, past ECHO_MAX an ellipsis and the length', () => {
  assert.equal(SUGGEST_MAX, 64);
  assert.equal(nearest('weightDecay'.padEnd(SUGGEST_MAX + 1, 'x'), ['weightDecay']), null);
  assert.equal(nearest('x'.repeat(3_000_000), ['weightDecay']), null);
  assert.equal(shown('abc'), 'abc');
  assert.equal(shown('a'.repeat(ECHO_MAX)), 'a'.repeat(ECHO_MAX));
  assert.equal(shown('a'.repeat(ECHO_MAX + 1)), `${'a'.repeat(ECHO_MAX)}… (81 characters)`);
  assert.equal(shown('b'.repeat(3_000_000)), `${'b'.repeat(ECHO_MAX)}… (3,000,000 characters)`);
});

test('a description key of 3 MB: refused with a message of bounded length, in bounded memory', () => {
  // In a Node with a 64 MiB heap: an edit-distance table over the key would need gigabytes.
  const script = `
    import { writeCheckpoint } from ${JSON.stringify(INDEX)};
    const config = { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, ['k'.repeat(3_000_000)]: 1 };
    try {
      await writeCheckpoint({ shapes: [[1]], requiresGrad: [true], config, entries: [] });
      console.log('written');
    } catch (err) {
      console.log(JSON.stringify({ name: err.name, message: err.message }));
    }`;
  const r = spawnSync(process.execPath, ['--max-old-space-size=64', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    name: 'LayoutError',
    message: `unknown key description.config.${'k'.repeat(ECHO_MAX)}… (3,000,000 characters): known keys: kind, beta1, beta2, epsilon, weightDecay, bits`,
  });
});

test('a misspelt description key gets the nearest known one', async () => {
  await assert.rejects(writeCheckpoint({ shapes: [[1]], requiresGrad: [true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weight_decay: 0.1 }, entries: [] }),
    (err) => err instanceof LayoutError && err.message === 'unknown key description.config.weight_decay: did you mean weightDecay?');
});

test('the CLI: an option or a command of 100,000 characters is refused with its first 80 and its length, exit 2', () => {
  const long = 'z'.repeat(100_000);
  const option = spawnSync(process.execPath, [CLI, 'inspect', `--${long}`], { encoding: 'utf8' });
  assert.equal(option.status, 2);
  assert.equal(option.stderr.split('\n')[0], `ckptscope: unknown option --${'z'.repeat(ECHO_MAX - 2)}… (100,002 characters)`);
  const command = spawnSync(process.execPath, [CLI, long], { encoding: 'utf8' });
  assert.equal(command.status, 2);
  assert.equal(command.stderr.split('\n')[0], `ckptscope: unknown command ${'z'.repeat(ECHO_MAX)}… (100,000 characters)`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-suggest-'));
  try {
    const band = spawnSync(process.execPath, [CLI, 'health', path.join(tmp, 'x.ckpt'), '--state', path.join(tmp, 'x.tlsf'), '--lr', '1e-3', '--ratio-band', long], { encoding: 'utf8' });
    assert.equal(band.status, 2);
    assert.equal(band.stderr.split('\n')[0], `ckptscope: --ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got ${'z'.repeat(ECHO_MAX)}… (100,000 characters)`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('the CLI: arguments in the wrong order and a misspelt command get the command line meant, with one command\'s usage', async () => {
  const opt = put('order-opt.ckpt', await model());
  const state = put('order-state.ckpt', await writeBase('state'));
  const layout = put('order-layout.json', '{"shapes": [[2, 3], [2, 3], [3]], "requiresGrad": [true, true, true]}');
  for (const [args, meant] of [
    [['health', state, opt], `health ${opt} --state ${state}`],
    [['health', opt, state, '--lr', '1e-3'], `health ${opt} --state ${state} --lr 1e-3`],
    [['check', state, opt], `check ${opt} --state ${state}`],
    [['check', opt, layout], `check ${opt} --expect ${layout}`],
    [['export', 'out.npz', opt], `export ${opt} out.npz`],
    [['write', 'out.ckpt', 'desc.json'], 'write desc.json out.ckpt'],
    [[opt, 'inspect'], `inspect ${opt}`],
    [['inspcet', opt], `inspect ${opt}`],
    [['serve', opt], `view ${opt}`],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 2, args.join(' '));
    const first = r.stderr.split('\n')[0];
    assert.ok(first.endsWith(`: did you mean \`ckptscope ${meant}\`?`), `${args.join(' ')}: ${first}`);
    const usages = r.stderr.split('\n').filter((l) => l.startsWith('  ckptscope '));
    const one = usages[0]?.split(' ')[3];
    assert.ok(usages.length && usages.every((l) => l.split(' ')[3] === one), `one command's usage, not all of it: ${r.stderr}`);
  }
});

test('the CLI: write refuses a misspelt description key with the nearest known one, exit 2, nothing written', async () => {
  const d = modelDescription();
  const desc = { ...d, config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weight_decay: 0.1 }, entries: d.entries.map((e) => ({ ...e, m: Array.from(e.m), v: Array.from(e.v) })) };
  const out = path.join(scratchDir, 'unknown-key.ckpt');
  const r = cli(['write', put('unknown-key.json', JSON.stringify(desc)), out]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: unknown key description.config.weight_decay: did you mean weightDecay?\n');
  assert.equal(fs.existsSync(out), false);
});
