// The documentation's code runs as written: the README's JS snippet (through
// docs/examples/verify.mjs, which runs every console, js, ts and python block of docs/*.md and
// README.md), and docs/README.md's setup line for a checkout, verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the README\'s blocks run as written (verify.mjs ../README.md)', () => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'docs/examples/verify.mjs'), '../README.md'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^2 examples checked, 0 differ$/m);
});

test('docs/README.md\'s setup line for a checkout runs verbatim there, with no ckptscope on the PATH', async () => {
  const line = fs.readFileSync(path.join(ROOT, 'docs/README.md'), 'utf8').split('\n').find((l) => /#\s*in a checkout\s*$/.test(l));
  assert.ok(line, 'the line is there');
  const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-checkout-'));
  try {
    for (const d of ['docs', 'js', 'package.json']) fs.symlinkSync(path.join(ROOT, d), path.join(checkout, d));
    const PATH = ['/usr/local/bin', '/usr/bin', '/bin'].filter((d) => !fs.existsSync(path.join(d, 'ckptscope'))).join(':');
    const node = path.dirname(process.execPath);
    const r = spawnSync('bash', ['-c', line], { cwd: checkout, encoding: 'utf8', env: { PATH: `${node}:${PATH}`, HOME: checkout }, timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    for (const f of ['model.ckpt', 'state.ckpt', 'unhealthy.ckpt', 'unhealthy-state.ckpt']) {
      assert.equal((await inspect(path.join(checkout, f))).ok, true, f);
    }
  } finally {
    fs.rmSync(checkout, { recursive: true, force: true });
  }
});

test('the README\'s list of commands is --help\'s: every form in its order, and only the options --help gives that form', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = readme.slice(readme.indexOf('The other commands:')).split('```')[1];
  const help = spawnSync(process.execPath, [path.join(ROOT, 'js/cli.js'), '--help'], { encoding: 'utf8' }).stdout;
  // --help's forms: a line `  ckptscope CMD ...` and its continuation lines (indented past the command)
  const forms = [];
  for (const line of help.slice(0, help.indexOf('\n\n')).split('\n')) {
    const m = /^ {2}ckptscope (\S+)(.*)$/.exec(line);
    if (m) forms.push({ command: m[1], synopsis: m[2] });
    else if (forms.length && /^ {10,}\[/.test(line)) forms[forms.length - 1].synopsis += ' ' + line.trim();
  }
  // an option or a whole placeholder (NAMES.json, OUT.safetensors), each a token of its own
  const tokens = (synopsis) => new Set(synopsis.match(/--[a-z-]+|\b[A-Z][A-Za-z0-9_.]*/g) ?? []);
  const commands = forms.filter((f) => !f.command.startsWith('-'));
  // serve and view share the README's last line
  const expected = commands.filter((f) => f.command !== 'view').map((f) => (f.command === 'serve' ? [f, commands.find((g) => g.command === 'view')] : [f]));
  // a README line: `ckptscope CMD SYNOPSIS   description` (the synopsis ends at three blanks)
  const lines = block.split('\n').filter((l) => l.startsWith('ckptscope '));
  assert.equal(lines.length, expected.length, 'one README line per form of --help');
  lines.forEach((line, i) => {
    const [command, ...rest] = line.slice('ckptscope '.length).split(/ {3,}/)[0].split(' ');
    const given = expected[i];
    assert.equal(command, given[0].command, `README line ${i + 1} is --help's form ${i + 1}`);
    const known = new Set(given.flatMap((f) => [...tokens(f.synopsis)]));
    for (const t of tokens(rest.join(' '))) assert.ok(known.has(t), `README: ${command} ${t} is not in --help's form: ${given.map((f) => f.synopsis.trim()).join(' / ')}`);
  });
});
