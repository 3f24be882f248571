// A Hugging Face Trainer's folders through the package (js/trainer-folder.js over the core's
// rules): a checkpoint-N/ folder's files by what they are, a sharded model's shards from its
// index, an output folder's checkpoint-{N} folders by N (numeric), and training_args.bin /
// trainer_state.json (made at test time by tests/c/trainer_seeds.py) read as data, exact.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { trainerFolder, checkpointFolders, readTrainingArgs, readTrainerState, CheckpointError } from '../../js/index.js';

const SEEDS = new URL('../c/trainer_seeds.py', import.meta.url).pathname;
const seeds = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-trainer-seeds-'));
execFileSync('/usr/bin/python3', [SEEDS, seeds], { stdio: 'ignore' });
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-trainer-'));

/** A folder with these files (name → content; null: a folder). */
function folder(rel, files) {
  const dir = path.join(root, rel);
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    if (content === null) fs.mkdirSync(path.join(dir, name), { recursive: true });
    else fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

test('a checkpoint folder: each file by what it is, the rest left out', async () => {
  const dir = folder('out/checkpoint-500', {
    'optimizer.pt': 'x', 'model.safetensors': 'x', 'scheduler.pt': 'x', 'trainer_state.json': '{}',
    'training_args.bin': 'x', 'rng_state.pth': 'x', 'config.json': '{}', 'pytorch_model.bin.index.json': '{}',
  });
  const at = (f) => path.join(dir, f);
  assert.deepEqual(await trainerFolder(dir), {
    optimizer: at('optimizer.pt'), model: at('model.safetensors'), modelShards: null, trainerState: at('trainer_state.json'),
    trainingArgs: at('training_args.bin'), scheduler: at('scheduler.pt'), config: at('config.json'),
  });
});

test('a folder named optimizer.pt is no optimizer; pytorch_model.bin comes before model.safetensors', async () => {
  const dir = folder('odd', { 'optimizer.pt': null, 'model.safetensors': 'x', 'pytorch_model.bin': 'x' });
  assert.deepEqual(await trainerFolder(dir), {
    optimizer: null, model: path.join(dir, 'pytorch_model.bin'), modelShards: null, trainerState: null, trainingArgs: null, scheduler: null, config: null,
  });
});

test('a sharded model: its index, and the shards its weight_map names, each once, sorted', async () => {
  const index = { metadata: { total_size: 96 }, weight_map: { 'b.weight': 'model-00002-of-00002.safetensors', 'a.weight': 'model-00001-of-00002.safetensors', 'a.bias': 'model-00002-of-00002.safetensors' } };
  const dir = folder('sharded', { 'model.safetensors.index.json': JSON.stringify(index), 'optimizer.pt': 'x' });
  const got = await trainerFolder(dir);
  assert.equal(got.model, path.join(dir, 'model.safetensors.index.json'));
  assert.deepEqual(got.modelShards, [path.join(dir, 'model-00001-of-00002.safetensors'), path.join(dir, 'model-00002-of-00002.safetensors')]);
});

test('an index naming a shard outside its folder is refused with code 66, nothing opened', async () => {
  const dir = folder('hostile', { 'pytorch_model.bin.index.json': '{"weight_map": {"w": "../../etc/passwd"}}' });
  await assert.rejects(trainerFolder(dir), (e) => {
    assert.ok(e instanceof CheckpointError);
    assert.equal(e.code, 66);
    assert.equal(e.message, 'pytorch_model.bin.index.json: weight_map\'s "w" at byte 21 is not the name of a file beside the index');
    assert.equal(e.offset, 21);
    return true;
  });
});

test('checkpoint folders in the order of N, not of their names; files and other folders left out', async () => {
  const out = folder('run', { 'checkpoint-1000': null, 'checkpoint-500': null, 'checkpoint-50': null, runs: null, 'checkpoint-x': null, 'checkpoint-7': 'a file' });
  assert.deepEqual(await checkpointFolders(out), [
    { path: path.join(out, 'checkpoint-50'), name: 'checkpoint-50', step: 50 },
    { path: path.join(out, 'checkpoint-500'), name: 'checkpoint-500', step: 500 },
    { path: path.join(out, 'checkpoint-1000'), name: 'checkpoint-1000', step: 1000 },
  ]);
});

test('training_args.bin read as data: AdamW from its optim, the numbers exact', async () => {
  assert.deepEqual(await readTrainingArgs(path.join(seeds, 'adamw.bin')), {
    class: 'transformers.training_args.TrainingArguments', optim: 'adamw_torch', kind: 'adamw',
    learningRate: 3e-4, weightDecay: 0.01, adamBeta1: 0.9, adamBeta2: 0.95, adamEpsilon: 1e-6,
  });
  const ada = await readTrainingArgs(fs.readFileSync(path.join(seeds, 'adafactor.bin')));
  assert.equal(ada.optim, 'adafactor');
  assert.equal(ada.kind, null);
  // pickled by name (Python 3.11 on): OptimizerNames.PAGED_ADAMW's value, not AdamW's own kind
  const paged = await readTrainingArgs(path.join(seeds, 'paged.bin'));
  assert.equal(paged.optim, 'paged_adamw_32bit');
  assert.equal(paged.kind, null);
});

test('training_args.bin refused: the core\'s text and offset', async () => {
  const want = fs.readFileSync(path.join(seeds, 'bad-lr.bin.error'), 'utf8').split('\n');
  await assert.rejects(readTrainingArgs(path.join(seeds, 'bad-lr.bin')), (e) => {
    assert.equal(e.code, 66);
    assert.equal(e.message, want[0]);
    assert.equal(e.offset, Number(want[1]));
    return true;
  });
});

test('trainer_state.json: the learning rates by step, exact as written', async () => {
  const text = fs.readFileSync(path.join(seeds, 'trainer_state.json'), 'utf8');
  const logged = new Map(JSON.parse(text.replace(/\bNaN\b/g, 'null').replace(/\bInfinity\b/g, 'null')).log_history
    .filter((e) => e.learning_rate !== undefined).map((e) => [e.step, e.learning_rate]));
  const got = await readTrainerState(path.join(seeds, 'trainer_state.json'));
  assert.equal(got.globalStep, 100);
  assert.deepEqual(got.learningRates, [...logged].map(([step, learningRate]) => ({ step, learningRate })));
  assert.equal(got.learningRates[1].learningRate, 0.00023999999999999998);
  const resumed = await readTrainerState(path.join(seeds, 'resumed.json'));
  assert.deepEqual(resumed.learningRates, [{ step: 10, learningRate: 1e-4 }, { step: 20, learningRate: 8.5e-5 }, { step: 30, learningRate: 0.30000000000000004 }]);
});

test('trainer_state.json refused with its text and offset', async () => {
  await assert.rejects(readTrainerState(new TextEncoder().encode('{"log_history": [{"step": -1, "learning_rate": 1}]}')), (e) => {
    assert.equal(e.code, 66);
    assert.equal(e.message, 'trainer_state.json: log_history[0].step at byte 26 is not a step count');
    assert.equal(e.offset, 26);
    return true;
  });
});
