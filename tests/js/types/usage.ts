// Compiled with tsc --noEmit by tests/js/package.test.mjs: the declarations must describe the
// API as it is used.
import { inspect, check, diff, readEntry, writeCheckpoint, Schema, CheckpointError, type Report, type Layout } from 'ckptscope';

async function main(): Promise<void> {
  const layout: Layout = { shapes: [[2, 3], [2, 3]], requiresGrad: [true, true], representatives: [0, 0] };
  const bytes: Uint8Array = await writeCheckpoint({
    ...layout,
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 },
    randomCounter: 3n,
    entries: [{ id: 0, step: 1, m: new Float32Array(6), v: new Float32Array(6) }],
  });
  const report: Report = await inspect(bytes, { stats: true, onProgress: ({ done, total }) => void [done, total] });
  const first = report.entries[0];
  const rms: number | string | null | undefined = first?.m?.rms;
  try {
    await check(bytes, layout);
  } catch (err) {
    if (err instanceof CheckpointError) console.log(err.message, err.offset, err.code, err.hint);
  }
  for (const d of await diff(bytes, layout)) console.log(d.field, d.slot, d.message);
  const e = await readEntry(bytes, 0);
  const m: Float32Array | Float64Array = e.m;
  const schema = await Schema.create(layout);
  const tags = schema.tags();
  const owner: number | null = schema.representative(1);
  const n: number = schema.optimizerStateCount;
  schema.dispose();
  console.log(rms, m.length, tags, owner, n, report.schema?.shapes);
}
void main();
