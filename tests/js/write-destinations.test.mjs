// Where the atomic writer (convert, write, export, run --grad) may write: a destination that
// exists and is not a regular file (a device, a FIFO, a socket, a directory, /dev/stdout on a
// pipe) is refused with exit status 2, never renamed over; a symlink to a regular file is written
// through, never one the kernel's fs.protected_symlinks would refuse; another user's file keeps
// its owner; a dangling link is named as one. A writer killed by SIGINT, SIGTERM or SIGHUP mid-write leaves no temporary behind and
// the destination as it was. (Device nodes need root, as the tests run.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeBase } from './table.mjs';
import { saveCheckpoint } from '../../js/index.js';

const CLI = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const NODE_IO = new URL('../../js/node-io.js', import.meta.url).href;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dest-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function run(args, options = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: tmp, ...options });
  assert.doesNotMatch(r.stderr ?? '', /\n\s+at .*:\d+:\d+/, 'no stack trace');
  return r;
}

const DESCRIPTION = { shapes: [[2]], requiresGrad: [true], config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 }, entries: [{ id: 0, step: 1, m: [1, 2], v: [1, 2] }] };
const temporaries = () => fs.readdirSync(tmp).filter((n) => n.includes('.tmp-'));
const refusal = (name, kind) => `ckptscope: cannot write ${name}: it is ${kind}, not a regular file: the output is a new file renamed over it, which would replace it; give a file name\n`;

async function inputs() {
  fs.writeFileSync(path.join(tmp, 'v3.ckpt'), await writeBase('model'));
  fs.writeFileSync(path.join(tmp, 'd.json'), JSON.stringify(DESCRIPTION));
}

test('a character device, a FIFO, a socket at OUT: refused (exit 2), never replaced', async () => {
  await inputs();
  const dev = path.join(tmp, 'null-dev');
  fs.rmSync(dev, { force: true });
  assert.equal(spawnSync('mknod', [dev, 'c', '1', '3']).status, 0, 'mknod (root)');
  const fifo = path.join(tmp, 'fifo');
  fs.rmSync(fifo, { force: true });
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const sock = path.join(tmp, 'sock');
  fs.rmSync(sock, { force: true });
  const server = net.createServer().listen(sock);
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    for (const [out, kind] of [['null-dev', 'a character device'], ['fifo', 'a FIFO (named pipe)'], ['sock', 'a socket']]) {
      for (const args of [['convert', 'v3.ckpt', out, '--to', '5'], ['write', 'd.json', out]]) {
        const r = run(args);
        assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stderr, refusal(out, kind));
        assert.equal(r.stdout, '');
      }
      const st = fs.lstatSync(path.join(tmp, out));
      assert.ok(!st.isFile(), `${out} is still not a regular file`);
    }
    assert.ok(fs.lstatSync(dev).isCharacterDevice());
    assert.deepEqual(temporaries(), []);
  } finally {
    server.close();
  }
});

test('export and run --grad: a device named .safetensors is refused too; a missing folder is OUT\'s error', async () => {
  await inputs();
  const dev = path.join(tmp, 'dev.safetensors');
  fs.rmSync(dev, { force: true });
  assert.equal(spawnSync('mknod', [dev, 'c', '1', '3']).status, 0);
  const r = run(['export', 'v3.ckpt', 'dev.safetensors']);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, refusal('dev.safetensors', 'a character device'));
  assert.ok(fs.lstatSync(dev).isCharacterDevice());
  // run --grad refuses it before reading A or B, in the same words (not as a read of A)
  const g = run(['run', 'v3.ckpt', 'v3.ckpt', '--grad', 'dev.safetensors']);
  assert.equal(g.status, 2, g.stderr);
  assert.equal(g.stderr, refusal('dev.safetensors', 'a character device'));
  assert.ok(fs.lstatSync(dev).isCharacterDevice());
  // any error writing OUT is OUT's, never a read of A
  const nodir = run(['run', 'v3.ckpt', 'v3.ckpt', '--grad', 'nodir/g.safetensors']);
  assert.equal(nodir.status, 2, nodir.stderr);
  assert.equal(nodir.stderr, 'ckptscope: cannot write nodir/g.safetensors: no such folder: nodir\n');
  assert.deepEqual(temporaries(), []);
});

test('write … /dev/full: refused, no "wrote"; OUT = /dev/stdout on a pipe: refused, not an unexpected error', async () => {
  await inputs();
  let r = run(['write', 'd.json', '/dev/full']);
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, refusal('/dev/full', 'a character device'));
  // stdout a pipe, as in `ckptscope write d.json /dev/stdout | cat`
  r = spawnSync('sh', ['-c', `"${process.execPath}" "${CLI}" write d.json /dev/stdout | cat; exit "\${PIPESTATUS:-0}"`], { encoding: 'utf8', cwd: tmp });
  assert.equal(r.stderr, refusal('/dev/stdout', 'a FIFO (named pipe)'));
  assert.equal(r.stdout, '');
  r = run(['write', 'd.json', '/dev/stdout']);   // spawnSync's stdout: a socket
  assert.equal(r.status, 2);
  assert.equal(r.stderr, refusal('/dev/stdout', 'a socket'));
  // the API refuses the same, with the code ENOTREG
  await assert.rejects(saveCheckpoint('/dev/full', DESCRIPTION), (err) => err.code === 'ENOTREG' && err.kind === 'a character device');
});

test('a symlink to a regular file is written through (the link stays a link)', async () => {
  await inputs();
  fs.writeFileSync(path.join(tmp, 'target.ckpt'), 'old');
  fs.rmSync(path.join(tmp, 'link.ckpt'), { force: true });
  fs.symlinkSync('target.ckpt', path.join(tmp, 'link.ckpt'));
  const r = run(['write', 'd.json', 'link.ckpt']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(fs.lstatSync(path.join(tmp, 'link.ckpt')).isSymbolicLink());
  assert.notEqual(fs.readFileSync(path.join(tmp, 'target.ckpt'), 'utf8'), 'old');
});

// The kernel's fs.protected_symlinks (its rule, may_follow_link): in a sticky folder anyone may
// write in, a link is followed only by its owner, or when the folder's owner owns it too. The
// writer resolves links itself, so it applies the rule itself (the tests run as root; `nobody`
// plants the link).
const NOBODY = 65534;

function stickyFolder(name, owner = 0) {
  const dir = path.join(tmp, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o1777);
  fs.chownSync(dir, owner, owner);
  return dir;
}

test('a link planted by another user in a sticky folder anyone may write in: refused (exit 2), the file it leads to untouched', async () => {
  await inputs();
  const victim = path.join(tmp, 'victim.ckpt');
  fs.writeFileSync(victim, 'the victim\'s data');
  const sticky = stickyFolder('sticky');
  const link = path.join(sticky, 'out.ckpt');
  fs.symlinkSync(victim, link);
  fs.lchownSync(link, NOBODY, NOBODY);
  for (const args of [['write', 'd.json', link], ['convert', 'v3.ckpt', link, '--to', '5'], ['export', 'v3.ckpt', path.join(sticky, 'out.npz')]]) {
    if (args[0] === 'export') {
      fs.symlinkSync(victim, args[2]);
      fs.lchownSync(args[2], NOBODY, NOBODY);
    }
    const out = args[0] === 'export' ? args[2] : link;
    const r = run(args);
    assert.equal(r.status, 2, `${args[0]}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `ckptscope: cannot write ${out}: it is a symbolic link of another user (uid ${NOBODY}) in ${sticky}, a sticky folder anyone may write in: it may lead to another user's file, and the kernel (fs.protected_symlinks) does not follow such a link either; remove it or give another name\n`);
    assert.equal(fs.readFileSync(victim, 'utf8'), 'the victim\'s data');
    assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.startsWith('victim.ckpt.tmp-')), []);
  }
  // the link's owner may follow it; so may anyone when the folder's owner owns the link
  fs.lchownSync(link, 0, 0);
  assert.equal(run(['write', 'd.json', link]).status, 0);
  assert.notEqual(fs.readFileSync(victim, 'utf8'), 'the victim\'s data');
  fs.writeFileSync(victim, 'the victim\'s data');
  const owned = stickyFolder('sticky-of-nobody', NOBODY);
  const ownLink = path.join(owned, 'out.ckpt');
  fs.symlinkSync(victim, ownLink);
  fs.lchownSync(ownLink, NOBODY, NOBODY);
  assert.equal(run(['write', 'd.json', ownLink]).status, 0);
  assert.notEqual(fs.readFileSync(victim, 'utf8'), 'the victim\'s data');
  // a folder that is not sticky: the link is followed, as the kernel follows it
  const plain = path.join(tmp, 'plain-folder');
  fs.rmSync(plain, { recursive: true, force: true });
  fs.mkdirSync(plain, { mode: 0o777 });
  fs.chmodSync(plain, 0o777);
  const plainLink = path.join(plain, 'out.ckpt');
  fs.symlinkSync(victim, plainLink);
  fs.lchownSync(plainLink, NOBODY, NOBODY);
  assert.equal(run(['write', 'd.json', plainLink]).status, 0);
});

test('root writing over another user\'s file keeps its owner, group and mode; the bytes written are the ones reported', async () => {
  await inputs();
  const out = path.join(tmp, 'users.ckpt');
  fs.writeFileSync(out, 'old');
  fs.chownSync(out, NOBODY, NOBODY);
  fs.chmodSync(out, 0o640);
  for (const args of [['write', 'd.json', out], ['convert', 'v3.ckpt', out, '--to', '5']]) {
    const r = run(args);
    assert.equal(r.status, 0, r.stderr);
    const st = fs.statSync(out);
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [NOBODY, NOBODY, 0o640], args[0]);
  }
  const r = run(['write', 'd.json', out]);
  assert.equal(r.stdout, `wrote ${out} (${fs.statSync(out).size} bytes)\n`);
  // the API says where the bytes went and how many
  const link = path.join(tmp, 'users-link.ckpt');
  fs.rmSync(link, { force: true });
  fs.symlinkSync('users.ckpt', link);
  const written = await saveCheckpoint(link, DESCRIPTION);
  assert.deepEqual(written, { path: out, bytes: fs.statSync(out).size });
});

test('a dangling symbolic link: as OUT, its target\'s missing folder is named; as FILE, the link is', async () => {
  await inputs();
  const link = path.join(tmp, 'dangling-out.ckpt');
  fs.rmSync(link, { force: true });
  fs.symlinkSync('/nonexistent-folder/x.ckpt', link);
  const w = run(['write', 'd.json', 'dangling-out.ckpt']);
  assert.equal(w.status, 2);
  assert.equal(w.stderr, 'ckptscope: cannot write dangling-out.ckpt: it is a symbolic link to /nonexistent-folder/x.ckpt, whose folder /nonexistent-folder does not exist\n');
  const c = run(['convert', 'v3.ckpt', 'dangling-out.ckpt', '--to', '5']);
  assert.equal(c.status, 2);
  assert.equal(c.stderr, 'ckptscope: cannot write dangling-out.ckpt: it is a symbolic link to /nonexistent-folder/x.ckpt, whose folder /nonexistent-folder does not exist\n');
  for (const args of [['inspect', 'dangling-out.ckpt'], ['check', 'dangling-out.ckpt', '--expect', 'v3.ckpt'], ['export', 'dangling-out.ckpt', 'o.npz']]) {
    const r = run(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, 'ckptscope: dangling-out.ckpt is a symbolic link to /nonexistent-folder/x.ckpt, which does not exist\n', args.join(' '));
  }
});

/** Poll (no timing asserted) until `ok()` holds. */
async function until(ok, what) {
  for (let k = 0; k < 20000; k++) {
    if (ok()) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  assert.fail(`never: ${what}`);
}

// The core writes synchronously: no JS runs in the writing process between its chunks. The
// child here blocks the same way (Atomics.wait) after its first bytes.
const BLOCKED_WRITER = `
import { atomicWrite } from ${JSON.stringify(NODE_IO)};
await atomicWrite(process.argv[1], (write) => {
  write(new Uint8Array(1 << 20));
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600000);
});
`;

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  test(`${signal} mid-write: the temporary is removed, the destination untouched`, async () => {
    const dir = fs.mkdtempSync(path.join(tmp, `${signal}-`));
    const dest = path.join(dir, 'out.ckpt');
    fs.writeFileSync(dest, 'the old checkpoint');
    const child = spawn(process.execPath, ['--input-type=module', '-e', BLOCKED_WRITER, dest], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve(sig)));
    const tmps = () => fs.readdirSync(dir).filter((n) => n.startsWith('out.ckpt.tmp-'));
    await until(() => tmps().length === 1 && fs.statSync(path.join(dir, tmps()[0])).size > 0, 'the temporary is written');
    child.kill(signal);
    assert.equal(await exited, signal);
    await until(() => tmps().length === 0, 'the temporary is removed');
    assert.equal(fs.readFileSync(dest, 'utf8'), 'the old checkpoint');
  });
}

test('Ctrl-C during a real convert: no temporary left; the destination untouched, or the whole output if the convert ended first', async () => {
  // a v4 file of 2 x 8M float32 elements: a write that lasts long enough to be interrupted
  const n = 8 << 20;
  const big = path.join(tmp, 'big.ckpt');
  const { saveCheckpoint: save } = await import('../../js/index.js');
  await save(big, { shapes: [[n]], requiresGrad: [true], dtype: 'float32', version: 4, randomCounter: 7, config: DESCRIPTION.config,
    entries: [{ id: 0, step: 1, m: new Float32Array(n).fill(0.5), v: new Float32Array(n).fill(0.25) }] });
  const dir = fs.mkdtempSync(path.join(tmp, 'convert-'));
  const dest = path.join(dir, 'out.ckpt');
  fs.writeFileSync(dest, 'the old checkpoint');
  const child = spawn(process.execPath, [CLI, 'convert', big, dest, '--to', '5'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
  let done = null;
  exited.then((x) => { done = x; });
  const tmps = () => fs.readdirSync(dir).filter((n) => n.startsWith('out.ckpt.tmp-'));
  await until(() => tmps().length === 1 || done, 'the temporary exists');
  child.kill('SIGINT');
  const end = await exited;
  await until(() => tmps().length === 0, 'no temporary is left');
  // interrupted: the old checkpoint; ended first (or renamed before the signal came): the whole
  // output, never a part
  if (end.sig !== 'SIGINT') assert.equal(end.code, 0);
  if (!fs.readFileSync(dest).equals(Buffer.from('the old checkpoint'))) {
    const r = run(['inspect', dest]);
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout.split('\n')[0], /version 5, float32, /);
  }
});
