// The package as a user gets it: `npm pack`, installed into an empty folder, used from a plain
// `node script.mjs` there; and the hand-written index.d.ts type-checks a typed usage file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('npm pack installs into an empty folder and works from a plain script', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-pack-'));
  try {
    const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
    const tarball = path.join(dir, out.trim().split('\n').pop());
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true,"type":"module"}');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], { cwd: app, stdio: 'pipe' });
    fs.writeFileSync(path.join(app, 'script.mjs'), `
      import { writeCheckpoint, inspect } from 'ckptscope';
      import * as api from 'ckptscope';
      import * as plumbing from 'ckptscope/plumbing';
      const bytes = await writeCheckpoint({ shapes: [[3]], requiresGrad: [true],
        config: { kind: 'adam', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 },
        entries: [{ id: 0, step: 2, m: [1, 2, 3], v: [1, 1, 1] }] });
      const r = await inspect(bytes, { stats: true });
      const inner = ['Feed', 'Frames', 'JSON_FRAME', 'PACKED_FRAME', 'unpackFrame', 'itemCount', 'itemStatsPacked', 'attachPacked', 'scanPacked', 'convertVersions', 'convertChoices', 'applyKind', 'openTrainerCheckpoints', 'compareLogged'];
      console.log(JSON.stringify({ ok: r.ok, version: r.version, rms: r.entries[0].m.rms,
        inApi: inner.filter((n) => n in api), plumbing: Object.keys(plumbing).sort(), versions: (await plumbing.convertChoices()).versions }));
    `);
    const result = JSON.parse(execFileSync('node', ['script.mjs'], { cwd: app, encoding: 'utf8' }));
    // the main entry is the API; the viewer's and server's plumbing is ckptscope/plumbing
    assert.deepEqual(result, { ok: true, version: 2, rms: Math.sqrt(14 / 3), inApi: [],
      plumbing: ['BundleSource', 'Feed', 'Frames', 'JSON_FRAME', 'PACKED_FRAME', 'applyKind', 'attachPacked', 'compareLogged', 'convertChoices', 'convertVersions', 'folderFamily', 'folderListing', 'folderPlan', 'itemCount', 'itemStatsPacked', 'openTrainerCheckpoints', 'scanPacked', 'sourceText', 'unpackFrame'],
      versions: [2, 3, 4, 5] });
    // The CLI comes with it.
    const cli = execFileSync(path.join(app, 'node_modules/.bin/ckptscope'), ['--help'], { encoding: 'utf8' });
    assert.match(cli, /ckptscope inspect FILE/);
    const listed = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' });
    assert.match(listed, /package\/js\/ckptscope\.wasm/);
    assert.match(listed, /package\/js\/index\.d\.ts/);
    assert.match(listed, /package\/js\/plumbing\.js\n/);
    assert.match(listed, /package\/js\/plumbing\.d\.ts\n/);
    // the user's documentation comes with it, and the viewer `ckptscope serve` needs
    for (const page of ['README', 'format', 'layout', 'report', 'cli', 'api', 'diagnostics', 'health', 'runs', 'export', 'viewer', 'performance']) {
      assert.ok(listed.includes(`package/docs/${page}.md\n`), `docs/${page}.md is in the tarball`);
    }
    assert.match(listed, /package\/web\/index\.html/);
    // the server behind `ckptscope serve` and `view`, and its pass worker, are the package's
    for (const f of ['js/server/server.js', 'js/server/pass-worker.js', 'js/pass-frames.js']) assert.ok(listed.includes(`package/${f}\n`), `${f} is in the tarball`);
    assert.doesNotMatch(listed, /package\/web\/(server|pass-worker|pass-frames)\.js/, 'web/ is the page only');
    // and nothing in it sends a user to files they do not have
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => fs.readFileSync(path.join(root, 'docs', f), 'utf8'));
    for (const text of [readme, ...docs]) assert.doesNotMatch(text, /\.\.\/shared|shared folder|DESIGN\.md|FORMAT\.md/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('index.d.ts type-checks a typed usage file', () => {
  const dir = path.join(root, 'tests/js/types');
  const modules = path.join(dir, 'node_modules');
  fs.rmSync(modules, { recursive: true, force: true });
  fs.mkdirSync(modules);
  fs.symlinkSync(root, path.join(modules, 'ckptscope'));
  try {
    execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', dir], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    assert.fail(`tsc found errors:\n${err.stdout}${err.stderr}`);
  } finally {
    fs.rmSync(modules, { recursive: true, force: true });
  }
});
