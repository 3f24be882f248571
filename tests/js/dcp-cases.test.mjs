// The DCP case table (tests/cases/dcp.json, whose folders tests/c/dcp_seeds.py writes) through the
// JS API and the CLI, as test_dcp.c runs it through the core: every folder opened with statistics
// gives the table's verdict (code and exact text), exactly its listed errors in order, each of its
// warnings, and its check's number on a diagnostic; a valid folder gives no error and none of the
// broken folders' warnings. The CLI says the same: exit status, the verdict and its text, each
// failure and warning.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from '../../js/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'js/cli.js');
const table = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/cases/dcp.json'), 'utf8'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-dcp-cases-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// every folder of the table, written once by the same writer the C tests use
execFileSync('/usr/bin/python3', ['-c', `
import sys
sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'tests/c'))})
import dcp_seeds
for c in dcp_seeds.CASES:
    dcp_seeds.write_case(c['name'], sys.argv[1] + '/' + c['name'])
`, tmp], { stdio: ['ignore', 'ignore', 'inherit'] });

/** The folders a case opens: Accelerate's save holds two DCP folders, each opened as a checkpoint. */
const foldersOf = (c) => (c.name === 'accelerate'
  ? ['pytorch_model_fsdp_0', 'optimizer_0'].map((p) => path.join(tmp, c.name, p))
  : [path.join(tmp, c.name)]);
const withDir = (text, dir) => text.replaceAll('{dir}', dir);
const brokenWarnings = table.cases.flatMap((c) => c.warnings ?? []);

for (const c of table.cases) {
  for (const dir of foldersOf(c)) {
    const label = path.relative(tmp, dir);
    test(`${label}: the API gives the table's outcome`, async () => {
      const r = await inspect(dir, { stats: true });
      assert.equal(r.family, 'DCP');
      if (c.check === undefined) {
        assert.equal(r.error, null, r.error?.message);
        for (const w of brokenWarnings) assert.ok(!r.warnings.includes(withDir(w, dir)), w);
        return;
      }
      if (c.message === null) assert.equal(r.error, null, r.error?.message);
      else assert.deepEqual([r.error?.code, r.error?.message], [c.code, withDir(c.message, dir)]);
      // every error when the table lists them all, else the verdict's first
      const errors = r.dcp.diagnostics.filter((g) => g.severity === 'error').map((g) => g.text);
      if (c.failures) assert.deepEqual(errors, c.failures.map((t) => withDir(t, dir)));
      else assert.equal(errors[0], withDir(c.message, dir));
      for (const w of c.warnings ?? []) assert.ok(r.warnings.includes(withDir(w, dir)), `missing warning: ${w}`);
      // the check's number is a diagnostic's, unless its warnings are the report's own (section 5's)
      assert.equal(r.dcp.diagnostics.some((g) => g.check === c.check), c.diagnostic !== false);
    });

    test(`${label}: ckptscope inspect --stats says the same`, () => {
      const p = spawnSync(process.execPath, [CLI, 'inspect', '--stats', dir], { encoding: 'utf8', env: { ...process.env, COLUMNS: '2000' } });
      const out = p.stdout + p.stderr;
      const invalid = c.check !== undefined && c.message !== null;
      assert.equal(p.status, invalid ? 1 : 0, out);
      if (invalid) {
        assert.match(p.stdout, /\nverdict: invalid at byte /);
        assert.ok(p.stdout.includes(`\n${withDir(c.message, dir)}\n`), p.stdout);
        for (const f of (c.failures ?? []).slice(1)) assert.ok(p.stdout.includes(`failure: ${withDir(f, dir)}\n`), f);
      }
      for (const w of c.warnings ?? []) assert.ok(out.includes(`warning: ${withDir(w, dir)}\n`), w);
    });
  }
}

// groups that save decoupled_weight_decay (torch's Adam where it has the option) say Adam or AdamW:
// the report says it, health's decay term follows it, and a --kind that contradicts it is refused
for (const [name, kind, other, said] of [['n-says-adamw', 'adamw', 'adam', 'True (AdamW)'], ['f-says-adam', 'adam', 'adamw', 'False (Adam)']]) {
  const dir = path.join(tmp, name);
  test(`${name}: the API reads the kind its groups say`, async () => {
    const r = await inspect(dir);
    assert.equal(r.error, null);
    assert.deepEqual([r.dcp.kindSaid, r.dcp.kindGiven, r.config.kind], [kind, null, kind]);
    assert.deepEqual(r.dcp.groups.map((g) => g.decoupledWeightDecay), [kind === 'adamw']);
  });

  test(`${name}: ckptscope says the kind, health follows it, --kind ${other} is refused`, () => {
    const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, COLUMNS: '2000' } });
    const i = run('inspect', dir);
    assert.equal(i.status, 0, i.stderr);
    assert.ok(i.stdout.includes(`\noptimizer       ${kind === 'adamw' ? 'AdamW' : 'Adam'} (its groups' decoupled_weight_decay)\n`), i.stdout);
    const h = run('health', dir);
    assert.equal(h.stdout.includes('\nAdamW\'s decoupled decay per unit θ (lr · weight decay): 1e-5\n'), kind === 'adamw', h.stdout);
    const refused = run('health', dir, '--kind', other);
    assert.equal(refused.status, 2);
    assert.equal(refused.stderr, `ckptscope: ${dir}: --kind ${other} contradicts the folder: its param_groups say decoupled_weight_decay ${said}\n`);
    const same = run('health', dir, '--kind', kind);
    assert.equal(same.stdout, h.stdout);
  });
}
