// Compiled with tsc --noEmit (strict) by tests/js/package.test.mjs: the declarations must let
// ordinary code read a report and moments without casts, after narrowing on ok / kind / dtype.
import {
  open, inspect, check, diff, pair, health, readEntry, writeCheckpoint, writeState, exportTensors, Schema,
  CheckpointError, toNumber, toBigInt, type Report, type Layout,
  withModelSlots, dcpAlone,
} from 'ckptscope';

async function main(): Promise<void> {
  const layout: Layout = { shapes: [[2, 3], [2, 3]], requiresGrad: [true, true], representatives: [0, 0] };
  const bytes: Uint8Array = await writeCheckpoint({
    ...layout,
    requiresGrad: [true, true],
    config: { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 },
    randomCounter: 3n,
    entries: [{ id: 0, step: 1, m: new Float32Array(6), v: new Float32Array(6) }],
  });
  const report: Report = await inspect(bytes, { stats: true, onProgress: ({ done, total }) => void [done, total] });
  if (report.ok && report.family === 'TLADAMF') {   // a PyTorch optimizer is kind 'optimizer' too
    const version: number = report.version;           // a valid file: a plain number
    const dtype: 'float32' | 'float64' = report.dtype;
    const shapes = report.schema.shapes;
    const steps: number[] = report.entries.map((e) => toNumber(e.step));
    const rms: number | null = report.entries[0]?.m?.rms === undefined || report.entries[0].m.rms === null ? null : toNumber(report.entries[0].m.rms);
    console.log(version, dtype, shapes, steps, rms, report.config.bits.beta1);
  } else if (!report.ok) {
    console.log(report.error.message, report.error.offset, report.error.slot, report.error.subject);
  }
  try {
    await check(bytes, layout);
  } catch (err) {
    if (err instanceof CheckpointError) console.log(err.message, err.offset, err.code, err.hint, err.slot, err.configDiff?.[0]?.field);
    if (err instanceof CheckpointError && err.subject === 'expected') console.log(err.context, err.report?.ok, err.result?.pairs, err.fileError?.code);
  }
  for (const d of await diff(bytes, layout)) console.log(d.field, d.slot, d.text, d.message);
  const e = await readEntry(bytes, 1n);
  if (e.dtype === 'float32') {
    const sum: number = e.m.reduce((a, b) => a + b, 0);   // Float32Array after narrowing
    console.log(sum);
  } else {
    const last: number | undefined = e.v.at(-1);
    console.log(last);
  }
  const big: bigint = toBigInt(e.step);
  const state = await writeState({ family: 'TLSF32B', shapes: [[2, 3], [2, 3]], values: [new Float32Array(6), new Float32Array(6)] });
  const paired = await pair(bytes, state);
  const h = await health(bytes, state, { lr: 1e-3, ratioBand: [1e-4, 1e-2] });
  const ratio = h.slots[0]?.ratio;
  const failed: boolean = h.flags.some((f) => f.severity === 'failure');
  const [low, high]: [number, number] = h.ratioBand;
  console.log(failed, low, high);
  const st: Uint8Array = await exportTensors(bytes, { format: 'npz', names: ['a', 'b'] });
  {
    await using_(await open(bytes), async (ck) => {
      const cols = ck.columns();
      console.log(cols.n, ck.kind, ck.summary.ok);
      const step: bigint | undefined = cols.entries.length ? cols.entry(0).step : undefined;
      console.log(step, cols.entryFields.indexOf('count'));
    });
  }
  // open() is a union on kind: after narrowing, stats is a slot's moments or a tensor's values
  const ck = await open(bytes);
  if (ck.kind === 'optimizer') {
    const rms = (await ck.stats(1)).m.rms;
    console.log(rms);
  } else if (ck.kind === 'state') {
    console.log((await ck.stats(0)).values.rms);
  }
  ck.close();
  try {
    await pair(bytes, state);
  } catch (err) {
    if (err instanceof CheckpointError) console.log(err.fileError?.message, err.result?.pairs);
  }
  const schema = await Schema.create(layout);
  const tags = schema.tags();
  const owner = schema.representative(1);
  schema.close();
  console.log(big, paired.pairs, ratio, st.length, tags, owner);
}

async function using_<T extends { close(): void }>(x: T, fn: (x: T) => Promise<void>): Promise<void> {
  try {
    await fn(x);
  } finally {
    x.close();
  }
}
void main();

async function trainer(): Promise<void> {
  const { trainerFolder, checkpointFolders, readTrainingArgs, readTrainerState } = await import('ckptscope');
  for (const { path, step } of await checkpointFolders('out')) {
    const files = await trainerFolder(path);
    const shards: string[] = files.modelShards ?? (files.model ? [files.model] : []);
    const args = files.trainingArgs ? await readTrainingArgs(files.trainingArgs) : null;
    const adamw: boolean = args?.kind === 'adamw';
    const state = files.trainerState ? await readTrainerState(files.trainerState) : null;
    const lr = state?.learningRates.find((l) => toNumber(l.step) === toNumber(step))?.learningRate ?? null;
    console.log(shards.length, adamw, lr === null ? null : toNumber(lr));
  }
}
void trainer();

// a PyTorch optimizer and its model: the pair's slots, and where each index went
async function pytorchPair(opt: string, model: string) {
  const o = await open(opt), m = await open(model);
  try {
    const slots = await withModelSlots(o, m, opt, (oo) => (oo.report.ok && oo.report.family === 'PyTorch' ? oo.report.pairing?.slots.length ?? 0 : 0));
    const r = await pair(opt, model);
    const moved = r.pytorch?.positionalKnown ? r.pytorch.indices.filter((x) => x.slot !== x.positionalSlot) : [];
    console.log(slots, moved.length, r.failures[0]?.index ?? null);
  } finally {
    o.close();
    m.close();
  }
}
void pytorchPair;

// the plumbing entry: the packed statistics, the frames of a server pass, the core's choices
import { itemCount, itemStatsPacked, attachPacked, Frames, PACKED_FRAME, unpackFrame, convertChoices } from 'ckptscope/plumbing';
async function plumbingUsage(ck: import('ckptscope').Checkpoint): Promise<number> {
  const words: BigUint64Array = itemStatsPacked(ck, 0);
  attachPacked(ck, 0, [words]);
  const frames = new Frames();
  const f = frames.take();
  if (f && f.kind === PACKED_FRAME) attachPacked(ck, unpackFrame(f.payload).from, unpackFrame(f.payload).list);
  const { versions, kinds }: { versions: number[]; kinds: string[] } = await convertChoices();
  return itemCount(ck) + versions.length + kinds.length;
}
void plumbingUsage;

// a distributed checkpoint (a DCP folder): its data files, and each tensor's chunks with the rank
// that wrote them
async function distributed(dir: string): Promise<void> {
  const report = await inspect(dir, { stats: true });
  if (report.ok && report.family === 'DCP') {
    const d = report.dcp;
    const files: string[] = d.files.map((f) => `${f.name} ${f.size === null ? 'missing' : toNumber(f.size)} ${toNumber(f.items)} ${f.rank === null ? '-' : toNumber(f.rank)}`);
    const ranks: (number | null)[] = d.entries.flatMap((e) => e.chunks.map((c) => (c.rank === null ? null : toNumber(c.rank))));
    const boxes: number[][] = d.entries.flatMap((e) => e.chunks.map((c) => c.sizes.map(toNumber)));
    const form: string = d.form ?? 'no optimizer part';
    const moments = d.entries.map((e) => e.state.exp_avg?.chunks.length ?? 0);
    const rms = report.entries[0]?.m?.rms;
    const alone: string | null = dcpAlone(report);   // a file alone: "cannot tell", not valid
    console.log(files, ranks, boxes, form, moments, d.version, d.keys.model, rms, alone);
  } else if (!report.ok && report.dcp) {
    const failed = report.dcp.diagnostics.filter((g) => g.severity === 'error').map((g) => `${g.code} ${g.text} ${g.fqn ?? ''}`);
    console.log(failed, report.error.message);
  }
}
void distributed;
