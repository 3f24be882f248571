// torch.save files that torch.load reads otherwise than another reader (format.md 10.1), made by
// tests/c/torch_container_seeds.py with torch at test time: the CLI refuses each (exit status 1,
// the core's text on stderr, no weights-only verdict in the JSON); a zip after another archive is
// read with its warning; a torch.save file through a pipe is refused as a stream (exit status 2).
// torch.save records back to back from byte 0 are a DCP data file (format.md 12.1): its note and
// last record, exit status 3; one record named __{r}_{n}.distcp is a torch.save file with the note.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';

const CLI = new URL('../../js/cli.js', import.meta.url).pathname;
const SEEDS = new URL('../c/torch_container_seeds.py', import.meta.url).pathname;
const PY = '/usr/bin/python3';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-containers-'));
execFileSync(PY, [SEEDS, dir], { stdio: 'ignore' });
const at = (f) => path.join(dir, f);
const cli = (args, input) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', input });

/** facts.txt's numbers for a file: {torch, other, ...} */
function facts(file) {
  const line = fs.readFileSync(at('facts.txt'), 'utf8').split('\n').find((l) => l.startsWith(`${file} `));
  return Object.fromEntries(line.split(' ').slice(1).map((w) => w.split('=')));
}

test('two members named archive/data.pkl: torch.load reads the second, the CLI refuses the file', () => {
  const f = facts('same-name.pt');
  assert.deepEqual([f.torch, f.other], ['0.5', '0.5']);   // the first member holds lr 0.001
  const text = 'PyTorch: two members are named "archive/data.pkl": which one torch.load reads is not defined; ckptscope does not read such a file';
  const r = cli(['inspect', at('same-name.pt')]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `${text}\n`);
  const j = cli(['inspect', at('same-name.pt'), '--json']);
  assert.equal(j.status, 1);
  const report = JSON.parse(j.stdout);
  assert.deepEqual([report.ok, report.weightsOnly, report.error.code, report.error.message, report.error.offset],
    [false, null, 61, text, Number(f.entry)]);
});

/** 12.1's note on a DCP data file opened alone */
const distcpNote = (file, folder) => `DCP: ${file} is a data file of a distributed checkpoint: torch.save records back to back, found only through the folder's .metadata; open ${folder}`;

test('torch.save records back to back (a .distcp file): a DCP data file, its note and last record, exit status 3 (never valid, never empty)', () => {
  const f = facts('records.distcp');
  assert.deepEqual([f.torch, f.other], ['0.001', '0.5']);
  const r = cli(['inspect', at('records.distcp'), '--json']);
  assert.equal(r.status, 3);
  const report = JSON.parse(r.stdout);
  assert.deepEqual([report.family, report.error, report.dcp.opened, report.dcp.note, report.dcp.record.offset],
    ['DCP', null, 'distcp', distcpNote('records.distcp', dir), Number(f.before)]);
  const t = cli(['inspect', at('records.distcp')]);
  assert.equal(t.status, 3);
  assert.match(t.stdout, /\nverdict: cannot tell \(a data file alone: open its folder\)\n$/);
  assert.equal(t.stderr, '');
});

test('one torch.save record named as a DCP data file (__{r}_{n}.distcp): section 10 reads it, with the note', () => {
  assert.deepEqual([facts('__0_3.distcp').torch, facts('__0_3.distcp').other], ['0.25', '0.25']);
  const r = cli(['inspect', at('__0_3.distcp'), '--json']);
  assert.equal(r.status, 0);
  const report = JSON.parse(r.stdout);
  assert.deepEqual([report.ok, report.family, report.optimizer.groups[0].lr], [true, 'PyTorch', 0.25]);
  assert.deepEqual(report.warnings, [distcpNote('__0_3.distcp', dir)]);
});

test('a legacy file whose first 512 bytes are a tar header: torch.load takes the tar path; refused', () => {
  assert.deepEqual([facts('tar-header.pt').torch, facts('tar-header.pt').other], ['KeyError', '0.001']);
  const r = cli(['inspect', at('tar-header.pt')]);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'PyTorch: the first 512 bytes are also a tar header (its checksum holds): torch.load reads such a file as the tar archive of the oldest torch.save format, not as the pickles ckptscope reads; ckptscope does not read such a file\n');
});

test('a zip after another archive, its offsets from byte 0: valid, with a warning naming the bytes before it', () => {
  const f = facts('after-another.pt');
  assert.deepEqual([f.torch, f.other], ['0.001', '0.001']);
  const r = cli(['inspect', at('after-another.pt'), '--json']);
  assert.equal(r.status, 0);
  const report = JSON.parse(r.stdout);
  assert.deepEqual([report.ok, report.weightsOnly, report.optimizer.groups[0].lr], [true, true, 0.001]);
  assert.deepEqual(report.warnings, [`PyTorch: bytes 0 to ${f.first} come before the zip's first member and its central directory does not describe them; an end-of-central-directory record at byte ${f.end} among them: several archives back to back; only the last is read`]);
});

test('a torch.save file through a pipe: refused as a stream, exit status 2', () => {
  const bytes = fs.readFileSync(at('after-another.pt'));
  const text = 'ckptscope: (standard input): PyTorch: a torch.save file is read by offsets (a zip from its end), not in one pass: it cannot be read from a stream (a pipe or standard input); give the file\'s path\n';
  for (const args of [['inspect', '-'], ['inspect', '-', '--json']]) {
    const r = cli(args, bytes);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, text);
    assert.equal(r.stdout, '');
  }
  const legacy = fs.readFileSync(at('tar-header.pt'));
  const r = cli(['inspect', '-'], legacy);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, text);
});

test('a .distcp written by torch 1.13\'s distributed checkpoint (its own file): its note and last record, exit status 3', () => {
  for (const name of ['__0_0.distcp', '__1_0.distcp']) {
    const file = new URL(`../fixtures/dcp-torch113/${name}`, import.meta.url).pathname;
    const bytes = fs.readFileSync(file);
    // torch's writer ends each archive with ZIP64 records: the last one's directory size and
    // stated offset, read here (the end record's 22 bytes, its locator's 20, the record's 56)
    const end = bytes.length - 22;
    assert.equal(bytes.readUInt32LE(end), 0x06054b50);
    assert.equal(bytes.readUInt32LE(end - 20), 0x07064b50);
    const z64 = end - 20 - 56;
    assert.equal(bytes.readUInt32LE(z64), 0x06064b50);
    const [size, stated] = [Number(bytes.readBigUInt64LE(z64 + 40)), Number(bytes.readBigUInt64LE(z64 + 48))];
    let records = 0;
    for (let k = bytes.indexOf('PK\x05\x06', 0, 'latin1'); k >= 0; k = bytes.indexOf('PK\x05\x06', k + 1, 'latin1')) records++;
    assert.ok(records > 1, `${name}: ${records} end records`);
    const r = cli(['inspect', file, '--json']);
    assert.equal(r.status, 3);
    const report = JSON.parse(r.stdout);
    // the last record starts where its directory's end less its size and stated offset says
    assert.deepEqual([report.family, report.error, report.dcp.opened, report.dcp.record.offset, report.dcp.record.length],
      ['DCP', null, 'distcp', z64 - size - stated, bytes.length - (z64 - size - stated)]);
    assert.equal(report.dcp.note, distcpNote(name, path.dirname(file)));
  }
});
