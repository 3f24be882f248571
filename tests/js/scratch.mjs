// What the suites that run the CLI as a user does share: the CLI run as a child process (never a
// stack trace on its stderr), a shell for what only a real pipe shows, a scratch folder removed
// at exit, and the files broken before their first slot that worker tests open.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { model } from './table.mjs';

export const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
export const STACK = /\n\s+at .*:\d+:\d+/;

/** `ckptscope ARGS` as a child process: {status, stdout, stderr}; a stack trace fails the test. */
export function cli(args, options = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20, ...options });
  assert.doesNotMatch(r.stderr ?? '', STACK, 'no stack trace');
  return r;
}

/** What a usage error prints after its message: the command's entries of `ckptscope --help`'s
 *  usage (each synopsis with its indented lines), then where its options are; with no command
 *  (no command given, or an unknown one), that usage whole. */
export function usageOf(command = null) {
  const help = cli(['--help']).stdout.split('\n');
  const usage = help.slice(0, help.indexOf(''));
  if (command === null) return `${usage.join('\n')}\n`;
  const lines = [];
  let mine = false;
  for (const line of usage.slice(1)) {
    if (line.startsWith('  ckptscope ')) mine = line.split(' ')[3] === command;
    if (mine) lines.push(line);
  }
  return `usage:\n${lines.join('\n')}\n(ckptscope ${command} --help: its options)\n`;
}

/** A bash script with $NODE and $CLI set (and `env`). */
export function sh(script, env = {}) {
  return spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { ...process.env, NODE: process.execPath, CLI, ...env } });
}

/** A scratch folder (removed at exit): {dir, put(name, bytes) -> its path}. */
export function scratch(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const put = (name, bytes) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, bytes);
    return p;
  };
  return { dir, put };
}

/** Files broken before their first slot, made with `put`: an LFS pointer, an unknown version;
 *  each with the diagnostic it gets. */
export async function brokenBeforeSlots(put) {
  const badVersion = await model();
  badVersion[7] = 99;
  return [
    [put('lfs.ckpt', 'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n'), /unsupported checkpoint family/],
    [put('bad-version.ckpt', badVersion), /unsupported format version 99/],
  ];
}
