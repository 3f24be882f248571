// `npm start` (scripts/start.sh) on a first run installs and builds for a while: it says so on
// stderr. The script runs in a copy of the tree whose install, build and CLI are stubs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const START = fileURLToPath(new URL('../../scripts/start.sh', import.meta.url));

function tree({ installed, built }) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-start-'));
  for (const d of ['scripts', 'js', 'node_modules', 'build/wasm']) fs.mkdirSync(path.join(root, d), { recursive: true });
  fs.copyFileSync(START, path.join(root, 'scripts/start.sh'));
  fs.writeFileSync(path.join(root, 'scripts/ensure-deps.sh'), 'echo ensure-deps >>"$LOG"\n');
  fs.writeFileSync(path.join(root, 'scripts/build.sh'), 'echo "build $*" >>"$LOG"\necho "cmake chatter"\n');
  fs.writeFileSync(path.join(root, 'js/cli.js'), 'require("fs").appendFileSync(process.env.LOG, "cli " + process.argv.slice(2).join(" ") + "\\n");\n');
  if (installed) fs.writeFileSync(path.join(root, 'node_modules/.package-lock.json'), '{}');
  if (built) {
    fs.writeFileSync(path.join(root, 'js/ckptscope.wasm'), '');
    fs.writeFileSync(path.join(root, 'build/wasm/CMakeCache.txt'), '');
  }
  return root;
}

function start(root) {
  const log = path.join(root, 'log');
  const r = spawnSync('bash', [path.join(root, 'scripts/start.sh')], { encoding: 'utf8', env: { ...process.env, LOG: log } });
  fs.rmSync(root, { recursive: true, force: true });
  return r;
}

test('npm start says what it does on a first run (stderr), then serves', () => {
  const r = start(tree({ installed: false, built: false }));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^ckptscope: installing the npm packages \(first run\)…\n/m);
  assert.match(r.stderr, /^ckptscope: building the WebAssembly module \(first run, ~15 s\)…\n/m);
  assert.equal(r.stdout, '', 'the build chatter stays quiet');
});

test('npm start with everything in place is quiet until the server speaks', () => {
  const r = start(tree({ installed: true, built: true }));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
});
