// Accelerate save_state folders through the package and the CLI (docs/distributed.md
// "Accelerate folders"), on folders laid out as Accelerate's source writes them
// (tests/c/accelerate_seeds.py, torch 1.13): inspect, check, health and export read pair 0 (or
// --pair I) as a pair of files; run orders a project's checkpoint_{k} folders by k; a DeepSpeed
// folder is routed to its tag folder; FSDP's two DCP folders are read as one checkpoint, rank
// files are said in words, exit 2, never an all-clear; the JSON's `accelerate` member; the API's
// inspect(dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect, pair, health, accelerateFolder, accelerateCheckpoints, readRandomStates, checkpointFolders } from '../../js/index.js';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-accelerate-'));
const at = (...p) => path.join(tmp, ...p);
let expected;

before(() => {
  execFileSync('/usr/bin/python3', [new URL('../c/accelerate_seeds.py', import.meta.url).pathname, tmp], { stdio: 'ignore' });
  expected = JSON.parse(fs.readFileSync(at('expected.json'), 'utf8'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The CLI in the seeds' folder; stderr's lines wrapped for the terminal joined again. */
function cli(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: tmp, encoding: 'utf8', env: { ...process.env, COLUMNS: '100' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.replace(/\n  /g, ' ') };
}

const PLAIN_FILES = [
  { name: 'custom_checkpoint_0.pkl', role: 'customCheckpoint', index: 0, process: null, rank: null },
  { name: 'model.safetensors', role: 'model', index: 0, process: null, rank: null },
  { name: 'optimizer.bin', role: 'optimizer', index: 0, process: null, rank: null },
  { name: 'random_states_0.pkl', role: 'randomStates', index: null, process: 0, rank: null },
  { name: 'random_states_1.pkl', role: 'randomStates', index: null, process: 1, rank: null },
  { name: 'scaler.pt', role: 'scaler', index: null, process: null, rank: null },
  { name: 'scheduler.bin', role: 'scheduler', index: 0, process: null, rank: null },
];

test('inspect DIR: the folder\'s pairs, Accelerate\'s step and its other files, then pair 0\'s optimizer with its model', () => {
  const r = cli('inspect', 'plain');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\n').slice(0, 5), [
    'Accelerate save_state folder plain',
    '* pair 0: optimizer.bin with model.safetensors',
    '  step 3 (Accelerate\'s counter, random_states_0.pkl; 2 processes)',
    '  also: custom_checkpoint_0.pkl (custom object), scaler.pt (GradScaler), scheduler.bin (scheduler)',
    'plain/optimizer.bin: torch.save file (PyTorch), float32, 5,207 bytes',
  ]);
  assert.match(r.stdout, /parameters +6 slots, 6 trainable, 6 optimizer states, no tied slots/);
});

test('inspect DIR --json: the report of pair 0 with its pairing and the `accelerate` member', () => {
  const r = cli('inspect', 'plain', '--json');
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.family, 'PyTorch');
  assert.equal(j.slotCount, 6);
  assert.equal(j.pair.pairs, true);
  assert.deepEqual(j.accelerate, {
    dir: 'plain',
    distributed: null,
    pair: 0,
    step: 3,
    files: PLAIN_FILES,
    pairs: [{ index: 0, model: 'model.safetensors', modelForm: 'safetensors', optimizer: 'optimizer.bin', optimizerForm: 'torch', reader: 'pytorch', note: null }],
    randomStates: [
      { name: 'random_states_0.pkl', process: 0, step: 3, error: null },
      { name: 'random_states_1.pkl', process: 1, step: 3, error: null },
    ],
  });
});

test('--pair I: optimizer_I.bin with model I; a pair the folder does not hold, or no index, is refused (exit 2)', () => {
  const r = cli('inspect', 'two', '--pair', '1', '--json');
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.accelerate.pair, 1);
  assert.equal(j.optimizer.groups[0].lr, 0.002);
  assert.deepEqual(j.accelerate.pairs.map((p) => [p.optimizer, p.model]), [['optimizer.bin', 'pytorch_model.bin'], ['optimizer_1.bin', 'pytorch_model_1.bin']]);
  const text = cli('inspect', 'two', '--pair', '1');
  // the docs' example, as far as it goes
  const doc = fs.readFileSync(new URL('../../docs/distributed.md', import.meta.url), 'utf8').split('$ ckptscope inspect two --pair 1\n')[1].split('…')[0];
  assert.equal(text.stdout.slice(0, doc.length), doc);
  assert.deepEqual(text.stdout.split('\n').slice(0, 4), [
    'Accelerate save_state folder two',
    '  pair 0: optimizer.bin with pytorch_model.bin',
    '* pair 1: optimizer_1.bin with pytorch_model_1.bin',
    '  step 2 (Accelerate\'s counter, random_states_0.pkl; 1 process)',
  ]);
  const missing = cli('inspect', 'two', '--pair', '2');
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr, 'ckptscope: two holds no pair 2 (optimizer_2, model_2): its pairs are 0, 1\n');
  const word = cli('inspect', 'two', '--pair', 'x');
  assert.equal(word.status, 2);
  assert.match(word.stderr, /^ckptscope: --pair takes a pair's index \(0, 1, \.\.\.\), not x\n/);
  const file = cli('inspect', 'plain/optimizer.bin', '--pair', '0');
  assert.equal(file.status, 2);
  assert.match(file.stderr, /^ckptscope: --pair picks one of an Accelerate folder's pairs: plain\/optimizer.bin is no folder\n/);
});

test('check, health and export DIR read pair 0 as a pair of files', () => {
  const check = cli('check', 'plain');
  assert.equal(check.status, 0, check.stderr);
  assert.match(check.stdout, /^plain\/optimizer.bin pairs with plain\/model.safetensors: same shapes, index by index/);
  const health = cli('health', 'two', '--pair', '1', '--json');
  assert.equal(health.status, 0, health.stderr);
  assert.equal(JSON.parse(health.stdout).slots.length, 6);
  const out1 = at('pair1.npz');
  assert.equal(cli('export', 'two', out1, '--pair', '1').status, 0);
  assert.ok(fs.statSync(out1).size > 0);
  const out = at('pair0.safetensors');
  const exp = cli('export', 'two', out);
  assert.equal(exp.status, 0, exp.stderr);
  const header = JSON.parse(fs.readFileSync(out).subarray(8, 8 + Number(fs.readFileSync(out).readBigUInt64LE(0))).toString());
  assert.deepEqual(Object.keys(header).filter((k) => k !== '__metadata__').sort(), ['0.bias', '0.weight', '1.bias', '1.weight', '2.bias', '2.weight']
    .flatMap((n) => [`${n}.exp_avg`, `${n}.exp_avg_sq`]).sort());
});

test('FSDP SHARDED_STATE_DICT: the folder is one DCP checkpoint, its optimizer part from optimizer_0/ and its model part from pytorch_model_fsdp_0/', () => {
  const JOINED = 'DCP: one checkpoint of two DCP folders: the model part from pytorch_model_fsdp_0, the optimizer part from optimizer_0';
  const text = cli('inspect', 'fsdp-sharded');
  assert.equal(text.status, 0, text.stderr);
  const lines = text.stdout.replace(/\n {16}/g, ' ').split('\n');   // wrapped lines joined
  assert.match(lines[0], /^fsdp-sharded: PyTorch Distributed Checkpoint \(DCP\), float32, [\d,]+ bytes$/);
  assert.ok(lines.includes(`note            ${JOINED}`), text.stdout);
  assert.match(lines[2], /^files +optimizer_0\/__0_0\.distcp \([\d,]+ bytes, 15 records, rank 0\), optimizer_0\/__1_0\.distcp .*, pytorch_model_fsdp_0\/__1_0\.distcp \([\d,]+ bytes, 10 records, rank 1\)$/);
  assert.ok(lines.includes('   9  head.weight    [11, 6]  F32         2  0,1       -  tied to emb.weight'), text.stdout);
  assert.equal(lines.at(-2), 'verdict: valid');
  const j = JSON.parse(cli('inspect', 'fsdp-sharded', '--json').stdout);
  assert.equal(j.family, 'DCP');
  assert.equal(j.ok, true);
  assert.deepEqual(j.warnings, []);
  assert.equal(j.dcp.note, JOINED);
  assert.deepEqual(j.dcp.indices, [
    { dir: 'optimizer_0/', keys: { model: 0, optimizer: j.dcp.keys.optimizer, other: 0 } },
    { dir: 'pytorch_model_fsdp_0/', keys: { model: 10, optimizer: 0, other: 0 } },
  ]);
  // the schema of the two: module order from the model part, trainable = having state, the tie
  assert.deepEqual(j.dcp.entries.map((e) => [e.name, e.role]), [
    ['emb.weight', 'owner'], ['l1.weight', 'owner'], ['l1.bias', 'owner'], ['ln.weight', 'owner'], ['ln.bias', 'owner'],
    ['l2.weight', 'owner'], ['l2.bias', 'owner'], ['frozen.weight', 'frozen'], ['frozen.bias', 'frozen'], ['head.weight', 'tied']]);
  assert.deepEqual(j.dcp.entries[0].shape, [11, 6]);
  assert.equal(j.slotCount, 10);
  // check, health: the checks across both parts
  const check = cli('check', 'fsdp-sharded');
  assert.equal(check.status, 0, check.stderr);
  // health reads the moments through both folders' records (these seeds' moments are random: flagged, exit 1)
  const health = cli('health', 'fsdp-sharded', '--json');
  assert.equal(health.status, 1, health.stderr);
  const h = JSON.parse(health.stdout);
  assert.equal(h.slots.length, 10);
  assert.deepEqual(h.slots.map((x) => x.trainable), [true, true, true, true, true, true, true, false, false, true]);
  // optimizer_0/ opened itself takes ../pytorch_model_fsdp_0/ beside it without asking
  const own = JSON.parse(cli('inspect', 'fsdp-sharded/optimizer_0', '--json').stdout);
  assert.equal(own.dcp.note, 'DCP: one checkpoint of two DCP folders: the model part from ../pytorch_model_fsdp_0, the optimizer part from optimizer_0');
  assert.deepEqual(own.dcp.entries.map((e) => e.name), j.dcp.entries.map((e) => e.name));
  assert.equal(cli('check', 'fsdp-sharded/optimizer_0').status, 0);
  // --pair I: pair I's optimizer_{I}/, with its model part beside it
  const picked = JSON.parse(cli('inspect', 'fsdp-sharded', '--pair', '0', '--json').stdout);
  assert.equal(picked.dcp.root, 'fsdp-sharded/optimizer_0');
  assert.equal(picked.dcp.note, own.dcp.note);
  const none = cli('inspect', 'fsdp-sharded', '--pair', '1');
  assert.equal(none.status, 2);
  assert.equal(none.stderr, 'ckptscope: fsdp-sharded is a distributed checkpoint (DCP), read whole: --pair 1 picks nothing in it\n');
  // alone, it is an optimizer part without a model part: converting it says what is missing
  fs.cpSync(at('fsdp-sharded', 'optimizer_0'), at('alone', 'optimizer_0'), { recursive: true });
  const alone = JSON.parse(cli('inspect', 'alone/optimizer_0', '--json').stdout);
  assert.equal(alone.dcp.note, null);
  assert.deepEqual(alone.dcp.keys, { model: 0, optimizer: j.dcp.keys.optimizer, other: 0 });
  const refused = cli('convert', 'alone/optimizer_0', at('alone.pt'), '--model', at('alone.model.pt'));
  assert.equal(refused.status, 1);
  assert.equal(refused.stderr, 'DCP: alone/optimizer_0 holds optimizer state but no model part: give --state MODEL (a torch.save state dict, a safetensors file or the model\'s DCP folder)\n');
  // converted: the consolidated optimizer and its model, checked with torch against the records
  const conv = cli('convert', 'fsdp-sharded', at('sharded.pt'), '--model', at('sharded.model.pt'));
  assert.equal(conv.status, 0, conv.stderr);
  execFileSync('/usr/bin/python3', [new URL('../c/dcp_consolidate_check.py', import.meta.url).pathname, '--files', at('fsdp-sharded'), at('sharded.pt'), at('sharded.model.pt')], { stdio: 'pipe' });
  // a project of such checkpoints: run does not read DCP checkpoints yet, and says so
  for (const k of [0, 1]) fs.cpSync(at('fsdp-sharded'), at('sharded-project', 'checkpoints', `checkpoint_${k}`), { recursive: true });
  const run = cli('run', 'sharded-project', '--kind', 'adam');
  assert.equal(run.status, 2);
  assert.equal(run.stderr, 'ckptscope: sharded-project/checkpoints/checkpoint_0 is a distributed checkpoint (DCP), read whole: a run of them is not read yet\n');
  // the model it converts to pairs with the checkpoint by name (format.md 12.8): names, shapes, the tie
  const paired = cli('check', 'fsdp-sharded', '--state', at('sharded.model.pt'));
  assert.equal(paired.status, 0, paired.stderr);
  assert.equal(paired.stdout, `fsdp-sharded pairs with ${at('sharded.model.pt')}\n  DCP: the model pairs with this checkpoint by name: same names, shapes and ties\n`);
});

test('FSDP: rank files are said in words (exit 2), never read as an all-clear', () => {
  const local = cli('check', 'fsdp-local');
  assert.equal(local.status, 2);
  assert.equal(local.stderr, 'ckptscope: fsdp-local: pytorch_model_fsdp_rank0.bin is one rank\'s FSDP file (LOCAL_STATE_DICT, or SHARDED_STATE_DICT saved without DCP): it holds that rank\'s flat shards, listed without per-parameter values\n');
  const none = cli('health', 'bad');
  assert.equal(none.status, 2);
  assert.equal(none.stderr, 'ckptscope: bad holds no pair 0 (optimizer_0, model_0): it holds no optimizer and no model\n');
});

test('FSDP FULL_STATE_DICT: the name-keyed optimizer.bin goes to the torch.save reader with pytorch_model_fsdp.bin as its model, paired by name', () => {
  const text = cli('inspect', 'fsdp-full');
  assert.equal(text.status, 0, text.stderr);
  // the verdict line, its wrapped lines joined
  assert.ok(text.stdout.replace(/\n +/g, ' ').includes('\nfsdp-full/optimizer.bin pairs with fsdp-full/pytorch_model_fsdp.bin: DCP: the model pairs with this checkpoint by name: same names, shapes and ties\n'), text.stdout);
  const r = cli('inspect', 'fsdp-full', '--json');
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.pair.pairs, true);
  assert.deepEqual(j.optimizer.groups[0].params, ['0.weight', '0.bias', '1.weight', '1.bias', '2.weight', '2.bias']);
  assert.equal(j.family, 'PyTorch');
  assert.deepEqual(j.accelerate.pairs, [{ index: 0, model: 'pytorch_model_fsdp.bin', modelForm: 'fsdpFull', optimizer: 'optimizer.bin', optimizerForm: 'nameKeyed', reader: 'pytorch', note: null }]);
  assert.equal(j.accelerate.distributed, 'fsdp');
});

test('DeepSpeed: the pytorch_model tag folder is read as section 11\'s checkpoint, the folder\'s reading beside it', () => {
  const r = cli('inspect', 'deepspeed', '--json');
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.family, 'DeepSpeed');
  assert.equal(j.slotCount, 10);
  assert.equal(j.accelerate.pair, 0);
  assert.equal(j.accelerate.distributed, 'deepspeed');
  assert.equal(j.accelerate.step, 2);
  assert.deepEqual(j.accelerate.pairs, [{ index: 0, model: 'pytorch_model/', modelForm: 'deepspeed', optimizer: 'pytorch_model/', optimizerForm: 'deepspeed', reader: 'deepspeed', note: null }]);
  const text = cli('inspect', 'deepspeed');
  assert.equal(text.stdout.split('\n')[1], '* pair 0: pytorch_model/, DeepSpeed\'s tag folder (its optimizer and model)');
  // pair i is the tag folder pytorch_model_{i}/ (latest names the last model saved)
  const other = cli('health', 'deepspeed', '--pair', '1');
  assert.equal(other.status, 2);
  assert.equal(other.stderr, 'ckptscope: deepspeed holds no DeepSpeed tag folder for pair 1 (pytorch_model_1/): its pairs are 0\n');
  const health = cli('health', 'deepspeed', '--json');
  assert.equal(health.status, 0, health.stderr);
  assert.equal(JSON.parse(health.stdout).slots.length, 10);
});

test('run PROJECT: checkpoints/checkpoint_{k} by k (10 after 2), each optimizer.bin with its own model', () => {
  const r = cli('run', 'project', '--kind', 'adam', '--json');
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(j.files.map((f) => path.basename(f.path)), ['checkpoint_0', 'checkpoint_1', 'checkpoint_2', 'checkpoint_10']);
  assert.deepEqual(j.files.map((f) => f.step), [1, 2, 3, 4]);
  assert.equal(j.ok, true);
  assert.deepEqual(j.pairs.map((p) => p.continuous), [true, true, true]);
  const inner = cli('run', 'project/checkpoints', '--kind', 'adam', '--json');
  assert.equal(inner.status, 0, inner.stderr);
  assert.deepEqual(JSON.parse(inner.stdout).files.map((f) => path.basename(f.path)), ['checkpoint_0', 'checkpoint_1', 'checkpoint_2', 'checkpoint_10']);
  const lines = cli('run', 'project', '--kind', 'adam');
  assert.equal(lines.status, 0);
  assert.equal(lines.stdout, fs.readFileSync(new URL('../../docs/distributed.md', import.meta.url), 'utf8').split('$ ckptscope run project --kind adam\n')[1].split('```')[0]);
});

test('the API: inspect(dir) with its `accelerate` member, the folder\'s reading, checkpoint_{k} by k, random states as torch.load reads them', async () => {
  const report = await inspect(at('plain'));
  assert.equal(report.slotCount, 6);
  assert.equal((await pair(at('two'))).pairs, true);
  assert.equal((await health(at('two'))).slots.length, 6);
  assert.equal(report.accelerate.step, 3);
  assert.deepEqual(report.accelerate.files, PLAIN_FILES);
  const f = await accelerateFolder(at('fsdp-sharded'));
  assert.equal(f.accelerate, true);
  assert.deepEqual(f.pairs.map((p) => [p.reader, p.modelPath, p.optimizerPath]), [['dcp', at('fsdp-sharded', 'pytorch_model_fsdp_0/'), at('fsdp-sharded', 'optimizer_0/')]]);
  // inspect(dir) of an FSDP sharded save: the one DCP checkpoint of its two folders
  const sharded = await inspect(at('fsdp-sharded'), { stats: true });
  assert.equal(sharded.family, 'DCP');
  assert.equal(sharded.dcp.note, 'DCP: one checkpoint of two DCP folders: the model part from pytorch_model_fsdp_0, the optimizer part from optimizer_0');
  assert.equal(sharded.entries.length, 7);
  assert.ok(sharded.entries.every((e) => e.m && e.v));
  assert.deepEqual((await accelerateCheckpoints(at('project'))).map((c) => [c.name, c.iteration]), [['checkpoint_0', 0], ['checkpoint_1', 1], ['checkpoint_2', 2], ['checkpoint_10', 10]]);
  assert.deepEqual((await checkpointFolders(at('project'))).map((c) => c.name), ['checkpoint_0', 'checkpoint_1', 'checkpoint_2', 'checkpoint_10']);
  for (const [folder, files] of Object.entries(expected)) {
    for (const [name, want] of Object.entries(files)) {
      const got = await readRandomStates(at(folder, name), name);
      assert.deepEqual({ step: got.step, keys: got.keys }, want, `${folder}/${name}`);
    }
  }
  assert.equal((await readRandomStates(at('old', 'random_states_0.pkl'))).step, null);
  await assert.rejects(readRandomStates(at('bad', 'random_states_0.pkl'), 'random_states_0.pkl'), (err) => {
    assert.equal(err.message, 'random_states_0.pkl: the object at byte 2 of random_states_0/data.pkl is not a dict: not Accelerate\'s random states');
    return true;
  });
  const bad = await accelerateFolder(at('bad'));
  assert.deepEqual(bad.randomStates.map((s) => [s.name, s.step, s.error]), [
    ['random_states_0.pkl', null, 'random_states_0.pkl: the object at byte 2 of random_states_0/data.pkl is not a dict: not Accelerate\'s random states'],
    ['random_states_1.pkl', null, 'random_states_1.pkl: step at byte 16 of random_states_1/data.pkl is not a count (an int of at least 0)'],
  ]);
});
