// `check OPT --state STATE` is structural (format.md 6): the verdict says so in the core's words
// (the CLI line, the JSON's note); an invalid file never pairs (exit 1, its own diagnostic
// first); files given the other way round get the command meant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pair, check, CheckpointError } from '../../js/index.js';
import { writeBase } from './table.mjs';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-pair-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

const NOTE = "same slots, same shapes, same ties; the values are not compared: `run` with both steps' state files compares them";

function run(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp });
  assert.doesNotMatch(r.stderr, /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

async function files() {
  const opt = await writeBase('model');
  const state = await writeBase('state');
  fs.writeFileSync(path.join(tmp, 'opt.ckpt'), opt);
  fs.writeFileSync(path.join(tmp, 'st.tlsf'), state);
  fs.writeFileSync(path.join(tmp, 'cut.tlsf'), state.slice(0, state.length - 3));
  fs.writeFileSync(path.join(tmp, 'cut.ckpt'), opt.slice(0, 300));
  fs.writeFileSync(path.join(tmp, 'trailing.tlsf'), Uint8Array.from([...state, 0]));
  return { opt, state };
}

test('check --state: a pair is structural, in the core\'s words (CLI and JSON)', async () => {
  await files();
  const r = run('check', 'opt.ckpt', '--state', 'st.tlsf');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `opt.ckpt pairs with st.tlsf: ${NOTE}\n`);
  const result = await pair(path.join(tmp, 'opt.ckpt'), path.join(tmp, 'st.tlsf'));
  assert.equal(result.pairs, true);
  assert.equal(result.invalid, null);
  assert.equal(result.note, NOTE);
  const checked = await check(path.join(tmp, 'opt.ckpt'), { state: path.join(tmp, 'st.tlsf') });
  assert.equal(checked.pair.note, NOTE);
});

test('check --state: a truncated state file never pairs: exit 1, its own diagnostic first', async () => {
  await files();
  const r = run('check', 'opt.ckpt', '--state', 'cut.tlsf');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, [
    'cut.tlsf: StateIO: truncated checkpoint (wanted 12 bytes, got 9)',
    'at byte 159, slot 2',
    'hint: the file ends at least 3 bytes early: an incomplete copy or download?',
    'opt.ckpt does not pair with cut.tlsf: cut.tlsf is invalid, and an invalid file never pairs',
    ''].join('\n'));
  assert.equal(r.stderr.split('\n')[0], 'cut.tlsf: StateIO: truncated checkpoint (wanted 12 bytes, got 9)');
  // the API: rejected with the file's own diagnostic, the file named
  await assert.rejects(pair(path.join(tmp, 'opt.ckpt'), path.join(tmp, 'cut.tlsf')), (err) => {
    assert.ok(err instanceof CheckpointError);
    assert.equal(err.message, 'StateIO: truncated checkpoint (wanted 12 bytes, got 9)');
    assert.equal(err.code, 1);
    assert.equal(err.offset, 159);
    assert.equal(err.subject, 'state');
    assert.equal(err.result.invalid, 'state');
    assert.equal(err.result.pairs, false);
    assert.equal(err.fileError.message, err.message);
    return true;
  });
});

test('check --state: trailing bytes and a truncated optimizer file never pair either', async () => {
  const { state } = await files();
  let r = run('check', 'opt.ckpt', '--state', 'trailing.tlsf');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout.split('\n')[0], 'trailing.tlsf: StateIO: trailing bytes after final state tensor');
  assert.equal(r.stdout.split('\n')[1], `at byte ${state.length}`);
  r = run('check', 'cut.ckpt', '--state', 'st.tlsf');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout.split('\n')[0], 'cut.ckpt: CUDA Adam checkpoint: truncated checkpoint (wanted 8 bytes, got 5)');
  assert.equal(r.stdout.split('\n').at(-2), 'cut.ckpt does not pair with st.tlsf: cut.ckpt is invalid, and an invalid file never pairs');
  await assert.rejects(pair(path.join(tmp, 'cut.ckpt'), path.join(tmp, 'st.tlsf')), (err) => err.subject === 'optimizer' && err.result.invalid === 'optimizer');
});

test('check STATE --state OPT (swapped): exit 2, the command meant', async () => {
  await files();
  const r = run('check', 'st.tlsf', '--state', 'opt.ckpt');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'ckptscope: cannot pair st.tlsf with opt.ckpt: the first file is not an optimizer checkpoint (TLADAMF, DCP, DeepSpeed or PyTorch): did you mean `ckptscope check opt.ckpt --state st.tlsf`?\n');
});

test('health: --lr without --state is refused as --ratio-band is (one rule)', async () => {
  await files();
  const why = 'the ratios need --lr and --state (lr · rms(u) / rms(θ))';
  let r = run('health', 'opt.ckpt', '--lr', '1e-3');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `ckptscope: --lr does nothing here: ${why}`);
  r = run('health', 'opt.ckpt', '--state', 'st.tlsf', '--ratio-band', '1e-5,1e-2');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `ckptscope: --ratio-band does nothing here: ${why}`);
  r = run('health', 'opt.ckpt', '--state', 'st.tlsf', '--lr', '1e-3');
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
});
