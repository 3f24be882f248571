// The shared case table through the JS API: inspect, check (load into a layout) and pair give
// exactly the outcome each case states (code, text, offset, field length, slot, hint, subject,
// configuration differences, warnings). The CLI suite runs the same table (cli.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect, check, pair, open, CheckpointError } from '../../js/index.js';
import { table, makeFile, makeLayout, expectedError, pickError } from './table.mjs';

for (const c of table.cases) {
  test(`case: ${c.name}`, async () => {
    const bytes = await makeFile(c.file);
    if (c.inspect) {
      const report = await inspect(bytes, { stats: !!c.file.stats });
      if (c.inspect.code === 0) assert.equal(report.error, null, report.error?.message);
      else assert.deepEqual(pickError(report.error, c.inspect), expectedError(c.inspect));
      assert.equal(report.ok, c.inspect.code === 0);
      if (c.inspect.warnings) assert.deepEqual(report.warnings, c.inspect.warnings);
    } else if (c.load) {
      const layout = makeLayout(c.expect);
      if (c.load.code === 0) {
        const result = await check(bytes, layout);
        assert.equal(result.ok, true);
        if (c.load.warnings) assert.deepEqual(result.warnings, c.load.warnings);
      } else {
        await assert.rejects(check(bytes, layout), (err) => {
          assert.ok(err instanceof CheckpointError, String(err));
          assert.deepEqual(pickError(err, c.load), expectedError(c.load));
          assert.ok(err.report, 'the rejection carries the report of what was read');
          return true;
        });
      }
    } else if (c.pair) {
      const state = await makeFile(c.state);
      // a state file whose statistics were computed when opened ("stats": values read anyway)
      const stateCk = c.state.stats ? await open(state, { stats: true }) : null;
      const outcome = pair(bytes, stateCk ?? state).finally(() => stateCk?.close());
      if (c.pair.failures === undefined && c.pair.code !== 0) {
        // not a verdict: the files cannot be paired at all
        await assert.rejects(outcome, (err) => {
          assert.deepEqual(pickError(err, c.pair), expectedError(c.pair));
          return true;
        });
        return;
      }
      const result = await outcome;
      assert.equal(result.pairs, c.pair.code === 0);
      if (c.pair.code === 0) assert.equal(result.error, null);
      else assert.deepEqual(pickError(result.error, c.pair), expectedError(c.pair));
      assert.deepEqual(result.failures.map((f, k) => pickError(f, c.pair.failures[k])), c.pair.failures.map(expectedError));
      if (c.pair.warnings) assert.deepEqual(result.warnings, c.pair.warnings);
    }
  });
}

test('every diagnostic of the table is one of the templates of its code (tests/cases/templates.txt)', async () => {
  const { matchesTemplate } = await import('./templates.mjs');
  for (const c of table.cases) {
    for (const want of [c.inspect ?? c.load ?? c.pair, ...(c.pair?.failures ?? [])]) {
      if (want.code) assert.ok(matchesTemplate(want.code, want.message), `${c.name}: ${want.message}`);
    }
  }
  // and the matcher is strict: the right prefix with a wrong text, or the wrong code, fails
  assert.equal(matchesTemplate(9, 'CUDA Adam checkpoint: element count mismatch for parameter 2'), false);
  assert.equal(matchesTemplate(8, 'CUDA Adam checkpoint: element count mismatch for parameter 2 (file=4, expected=3)'), false);
  assert.equal(matchesTemplate(1, 'StateIO: truncated checkpoint (wanted 8 bytes, got 5)'), true);
  assert.equal(matchesTemplate(1, 'Foo: truncated checkpoint (wanted 8 bytes, got 5)'), false);
});
