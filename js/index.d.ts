// Types for the ckptscope package (docs/api.md). Exact integers: numbers up to 2^53 - 1,
// decimal strings beyond (U64); toNumber / toBigInt narrow them. A report is a union on `ok`
// and `kind`: once `report.ok` and `report.kind === 'optimizer'` are checked, every field is
// as plain as a valid checkpoint makes it.

/** An exact integer: a number up to 2^53 - 1, a decimal string beyond. */
export type U64 = number | string;
/** What an argument may be: a safe integer, a bigint or a decimal string, in [0, 2^64). */
export type U64Input = number | bigint | string;
/** A double; non-finite values (rare: a sum that overflowed) as strings. */
export type Float = number | 'NaN' | 'Infinity' | '-Infinity';
export type Dtype = 'float32' | 'float64';
export type Kind = 'adam' | 'adamw';
export type Family = 'TLADAMF' | 'TLSF32B' | 'TLPF32B';

/** A caller's own storage: read(offset, dest) copies up to dest.length bytes, returns how many. */
export interface CustomSource {
  size: number | null;
  read(offset: number, dest: Uint8Array): number;
  close?(): void;
}
/** What a checkpoint is read from. In Node a string or file: URL may name a folder the core reads
 *  as one checkpoint (a DeepSpeed save_dir, tag folder or Trainer checkpoint-N: docs/deepspeed.md). */
export type Source = Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | URL | number | CustomSource | Checkpoint;

/** An exact integer as a number; a RangeError when it is past 2^53 - 1 (use toBigInt). */
export function toNumber(x: U64 | Float | bigint): number;
export function toBigInt(x: U64 | bigint): bigint;

export interface ConfigBits {
  beta1: string;
  beta2: string;
  epsilon: string;
  weightDecay: string;
}

export interface Config {
  kind: Kind;
  beta1: Float;
  beta2: Float;
  epsilon: Float;
  weightDecay: Float;
  bits: ConfigBits;
}

export interface ConfigInput {
  kind: Kind | 0 | 1;
  beta1?: number | 'NaN' | 'Infinity' | '-Infinity';
  beta2?: number | 'NaN' | 'Infinity' | '-Infinity';
  epsilon?: number | 'NaN' | 'Infinity' | '-Infinity';
  weightDecay?: number | 'NaN' | 'Infinity' | '-Infinity';
  /** Exact bit patterns; they win over the decimal values. */
  bits?: Partial<ConfigBits>;
}

/** An expected layout (a destination), docs/layout.md. Without requiresGrad: shapes only. */
export interface Layout {
  shapes: U64Input[][];
  requiresGrad?: boolean[];
  representatives?: (U64Input | null)[] | null;
  dtype?: Dtype;
  config?: ConfigInput;
  /** Does the destination keep a random counter? Unset: not checked. */
  keepsRandomCounter?: boolean;
  /** The family the destination reads; unset: whatever the file is. */
  family?: Family;
}

export interface Histogram {
  log2Min: number;
  counts: U64[];
}

export interface Stats {
  count: U64;
  /** Over finite values; null when there are none. */
  min: Float | null;
  max: Float | null;
  mean: Float | null;
  rms: Float | null;
  nan: U64;
  inf: U64;
  zero: U64;
  negative: U64;
  histogram: Histogram;
}

export interface Entry {
  id: U64;
  step: U64;
  count: U64;
  offset: U64;
  /** With statistics: */
  m?: Stats;
  v?: Stats;
  /** NaN and infinities in m or v, negative values in v. */
  unhealthy?: U64;
}

export interface Tensor {
  /** A family that stores names and a dtype per tensor (safetensors): its name and dtype. */
  name?: string;
  dtype?: 'float64' | 'float32' | 'float16' | 'bfloat16' | 'int64' | 'int32' | 'int16' | 'int8' | 'uint8' | 'bool' | 'float8_e4m3' | 'float8_e5m2' | null;
  shape: U64[];
  count: U64;
  offset: U64;
  dataOffset: U64;
  values?: Stats;
  unhealthy?: U64;
}

export interface SchemaReport {
  shapes: U64[][];
  sizes: U64[];
  requiresGrad: boolean[];
  representatives: (U64 | null)[] | null;
  effectiveRepresentatives: (U64 | null)[] | null;
  /** The slots the sharing rule rejects (null until the map was read). */
  brokenSlots: U64[] | null;
}

export interface ConfigDifference {
  field: 'dtype' | 'kind' | 'beta1' | 'beta2' | 'epsilon' | 'weightDecay';
  file: Float | string;
  expected: Float | string;
  fileBits?: string;
  expectedBits?: string;
}

export interface ReportError {
  code: number;
  /** The reference diagnostic, exactly. */
  message: string;
  offset: U64 | null;
  /** Bytes of the offending field from offset (0: not known). */
  length: U64;
  /** The slot (or tensor) it is about. */
  slot: U64 | null;
  /** Which input is at fault: the file, or the expected layout. */
  subject: 'file' | 'expected';
  hint: string | null;
  configDiff?: ConfigDifference[];
  /** A PyTorch optimizer's index the error is about (docs/pytorch.md); absent otherwise. */
  index?: U64;
}

interface ReportCommon {
  size: U64 | null;
  statistics: boolean;
  warnings: string[];
}

/** A valid optimizer checkpoint's report. */
export interface OptimizerReport extends ReportCommon {
  ok: true;
  family: 'TLADAMF';
  name: 'CUDA Adam checkpoint';
  kind: 'optimizer';
  version: 2 | 3 | 4 | 5;
  dtype: Dtype;
  config: Config;
  /** the files do not say Adam or AdamW and no kind was given: config.kind is read as Adam's */
  kindUnknown: boolean;
  randomCounter: U64 | null;
  hasRandomCounter: boolean;
  schema: SchemaReport;
  slotCount: number;
  wellFormed: true;
  optimizerStateCount: U64;
  trainableCount: U64;
  hasAliases: boolean;
  elementCounts: ElementCounts | null;
  offsets: { schema: U64; tags: U64 | null; entries: U64 };
  entryCount: U64;
  entries: Entry[];
  error: null;
  /** Per TorchLean reader, whether it can read the file at all (docs/format.md 8). */
  readers: Readers;
}

/** The elements of a well-formed schema's slots by what they are (docs/report.md): `owned` the
 *  representative slots' (what the optimizer updates, a tied storage once), `tied` the slots
 *  sharing an earlier slot's storage, `frozen` the slots without optimizer state. */
export interface ElementCounts {
  owned: U64;
  tied: U64;
  frozen: U64;
}

/** TorchLean's six public readers of TLADAMF, oldest first (docs/format.md 8). */
export type ReaderName = 'v2' | 'v2-lists' | 'v2-v3' | 'v2-v4' | 'v2-v4-f32' | 'v2-v5';
export type Readers = Record<ReaderName, { reads: boolean; error: ReportError | null }>;
/** The readers' names, as the core's table has them. */
export function readerNames(): Promise<ReaderName[]>;

/** A valid model-state file's report. */
export interface StateReport extends ReportCommon {
  ok: true;
  family: 'TLSF32B' | 'TLPF32B';
  name: 'TorchLean float32 state checkpoint' | 'TorchLean float32 parameter checkpoint';
  kind: 'state';
  version: 1 | 2;
  tensorCount: U64;
  offsets: { tensors: U64 };
  tensors: Tensor[];
  error: null;
}

/** A valid safetensors file's report: a model-state file's, with each tensor's name and dtype. */
export interface SafetensorsReport extends ReportCommon {
  ok: true;
  family: 'safetensors';
  name: 'safetensors file';
  kind: 'state';
  version: null;
  /** The tensors' dtype when they share one, else null. */
  dtype: Tensor['dtype'];
  tensorCount: U64;
  offsets: { tensors: U64 };
  tensors: Tensor[];
  container: { format: 'safetensors'; headerLength: U64; metadata: Record<string, string> | null };
  error: null;
}

/** An invalid file's report: what was read before the error, the rest null. */
export interface InvalidReport extends ReportCommon {
  ok: false;
  family: Family | null;
  name: string | null;
  kind: 'optimizer' | 'state' | null;
  version: U64 | null;
  dtype?: Dtype | null;
  config?: Config | null;
  kindUnknown?: boolean | null;
  randomCounter?: U64 | null;
  hasRandomCounter?: boolean | null;
  schema?: SchemaReport | null;
  slotCount?: number | null;
  wellFormed?: boolean | null;
  optimizerStateCount?: U64 | null;
  trainableCount?: U64 | null;
  hasAliases?: boolean | null;
  elementCounts?: ElementCounts | null;
  offsets: { schema?: U64 | null; tags?: U64 | null; entries?: U64 | null; tensors?: U64 | null };
  entryCount?: U64 | null;
  entries?: Entry[];
  tensorCount?: U64 | null;
  tensors?: Tensor[];
  /** a DeepSpeed checkpoint's members, every failure among them (docs/deepspeed.md) */
  deepspeed?: DeepSpeedMembers | null;
  /** a distributed checkpoint's members, every failure among them (docs/distributed.md) */
  dcp?: DcpMembers | null;
  error: ReportError;
}

/** A parameter group of a PyTorch optimizer. */
export interface TorchGroup {
  lr: number | null;
  betas: [number, number] | null;
  eps: number | null;
  weightDecay: number | null;
  amsgrad: boolean | null;
  maximize: boolean | null;
  /** ids; a name-keyed optimizer's (FSDP, docs/pytorch.md) FQNs as stored */
  params: number[] | string[];
  paramNames: string[] | null;
}

/** A PyTorch optimizer's entry (docs/pytorch.md): unpaired, one per index as saved (`id` is the
 *  index); paired, one per owner slot (`id` is the slot), with the index it came from and the
 *  slot's name. */
export interface TorchEntry {
  id: U64;
  /** a name-keyed optimizer's (FSDP): the entry's place in the stored order (groups' lists, then state) */
  index: number;
  /** Paired: the slot's name (the model's); unpaired: the FQN a name-keyed optimizer keys it by, else null. */
  name?: string | null;
  group: number | null;
  shape: U64[] | null;
  dtype: string | null;
  step: number | null;
  count: U64 | null;
  offset: U64 | null;
  /** State beside the moments (`momentum_buffer`, …), by key. */
  other: string[];
  /** With statistics: exp_avg, exp_avg_sq and (amsgrad) max_exp_avg_sq. */
  m?: Stats | null;
  v?: Stats | null;
  vmax?: Stats | null;
  unhealthy?: U64;
}

/** One range of torch versions' torch.load(weights_only=True) verdict on a torch.save file. */
/** One torch release, or a range of releases between two read, and whether its
 *  torch.load(weights_only=True) takes the file. A range is judged by its bounds (1.13 with
 *  BINFLOAT and 2.6; 2.6 and 2.14): `loads` null when they disagree (cannot tell), and its
 *  `reason` in ckptscope's words; a release's `reason` is torch's own. */
export interface TorchWeightsOnly {
  torch: string;
  source: string | null;
  loads: boolean | null;
  opcode: string | null;
  check: 'opcode' | 'global' | 'blocked' | 'reduce' | 'newobj' | 'build' | 'append' | 'setitem' | null;
  member: string | null;
  byte: U64 | null;
  offset: U64 | null;
  reason: string | null;
}

/** A valid torch.save file's report (docs/pytorch.md). Its optimizer has no slots until it is
 *  paired with its model (`needsModel`); then schema, slotCount and entries are the pair's, by
 *  slot, as a TLADAMF file's (each entry with its index), `names` the slots' names, and
 *  `pairing` says where each index went. */
export interface TorchReport extends ReportCommon {
  ok: true;
  family: 'PyTorch';
  name: 'torch.save file';
  kind: 'optimizer' | 'state';
  version: null;
  dtype: Dtype | null;
  container: { format: 'zip' | 'legacy'; prefix: string | null; records: U64 };
  optimizer: { path: string; kind: 'adam' | 'adamw' | null;
    /** how it keys its parameters: torch.optim's ids, FQNs (FSDP), or form F's flat keys (docs/pytorch.md) */
    keying: 'ids' | 'names' | 'flat'; groups: TorchGroup[]; entryCount: number;
    /** `kind` is the caller's (setKind, --kind): the file says none */
    kindGiven: boolean } | null;
  models: { path: string; tensors: { name: string; shape: U64[]; dtype: string; count: U64; offset: U64 }[] }[];
  /** The tensors outside every optimizer and model state dict (a bare tensor, a list of them),
   *  each with its path in the object ('' for the object itself). */
  otherTensors: { path: string; shape: U64[]; dtype: string; count: U64; offset: U64 }[];
  /** A Lightning checkpoint's `epoch` and `global_step` (the object's own integers), else null. */
  epoch: number | null;
  globalStep: number | null;
  /** torch.load(weights_only=True) of torch 2.14 and later (the newest release read) takes the file. */
  weightsOnly: boolean;
  /** Each release or range of torch versions, in order (1.13, 2.0 to 2.5, 2.6, 2.7 to 2.13, 2.14
   *  and later): `source` the release whose unpickler was read (null for a range, judged by its
   *  bounds), and where it stops, with the reason (format.md 10.2). */
  weightsOnlyBy: TorchWeightsOnly[];
  globals: string[];
  refused: string[];
  needsModel: boolean;
  pairing: TorchPairing | null;
  /** The slots' names once paired (the model's), else null. */
  names: string[] | null;
  schema: SchemaReport | null;
  slotCount: number | null;
  entries: TorchEntry[];
  tensors?: Tensor[];
  error: null;
}

/** A DeepSpeed ZeRO checkpoint's own members (docs/deepspeed.md): its kind and files, its
 *  groups, each trainable owner's fragments, every failure of the checks (format.md 11.5). */
export interface DeepSpeedMembers {
  kind: 'ZeRO-1' | 'ZeRO-2' | 'ZeRO-3' | 'BF16_Optimizer' | null;
  stage: 1 | 2 | 3 | null;
  /** ds_config's zero_optimization.stage, when it says */
  configStage: number | null;
  /** null for a universal checkpoint (it loads on any world size) */
  worldSize: number | null;
  bf16: boolean;
  /** a universal checkpoint (format.md 11.7): each tensor one fragment, in its own file */
  universal: boolean;
  /** the module's dtype (bfloat16 in a bf16 run); moments and masters are the report's dtype */
  dtype: string | null;
  dsVersion: string | null;
  /** one file opened alone: its rank, and what it is (`note`) */
  lone: boolean;
  rank: number | null;
  note: string | null;
  root: string | null;
  tag: string | null;
  dir: string | null;
  /** the kind the checkpoint says: ds_config.optimizer's (Adam is AdamW unless adam_w_mode is
   *  false), else (a client optimizer) every group's decoupled_weight_decay; null: not said */
  optimizerKind: 'adam' | 'adamw' | null;
  /** which says optimizerKind; null: neither */
  kindSaidBy: 'ds_config' | 'param_groups' | null;
  /** the kind the caller gave (setKind, --kind) where the checkpoint says none; null: none given,
   *  or the checkpoint's */
  kindGiven: 'adam' | 'adamw' | null;
  /** the schema's slots' names */
  slots: string[];
  files: { name: string; rank: number | null; role: 'model' | 'optimizer' | 'refused' | 'state' | 'other'; size: U64 | null; stale: boolean; dsVersion: string | null }[];
  groups: { lr: number | null; betas: [number, number] | null; eps: number | null; weightDecay: number | null; amsgrad: boolean | null; params: string[] | null; paddings: (number | null)[]; flatSize: U64 | null; step: number | null; lengths?: Record<'exp_avg' | 'exp_avg_sq' | 'max_exp_avg_sq' | 'fp32', U64 | null> }[];
  subGroups?: { group: number; params: number; partition: U64; step: number | null }[];
  globalSteps: U64 | null;
  skippedSteps: U64 | null;
  entries: {
    slot: number | null; name: string; group: number; subGroup?: number; shape: U64[]; count: U64; offset: U64; step: number | null;
    fragments: { rank: number; start: U64; count: U64; file: string | null }[];
    keys: ('exp_avg' | 'exp_avg_sq' | 'max_exp_avg_sq' | 'fp32')[];
    m?: Stats | null; v?: Stats | null; vmax?: Stats | null; master?: Stats | null;
  }[];
  failures: ReportError[];
}

/** A valid DeepSpeed checkpoint's report (a folder, or one of its files alone): an optimizer's (the
 *  schema of format.md 11.4, an entry per trainable owner) or, for model states alone, a
 *  model-state file's, with `deepspeed`. */
export interface DeepSpeedReport extends ReportCommon {
  ok: true;
  family: 'DeepSpeed';
  name: 'DeepSpeed ZeRO checkpoint';
  kind: 'optimizer' | 'state';
  version: null;
  dtype: Dtype | null;
  schema: SchemaReport | null;
  slotCount: number | null;
  entries?: Entry[];
  tensors?: Tensor[];
  /** The slots' names: the module's parameter names, in slot order (null for a file alone). */
  names: string[] | null;
  deepspeed: DeepSpeedMembers | null;
  error: null;
}

/** One chunk of a distributed checkpoint's tensor (docs/distributed.md): a box of the global
 *  tensor (`offsets`, `sizes`), stored as the torch.save record at bytes [offset, offset +
 *  length) of data file `file` (null: no storage entry), written by rank `rank` (null: a file not
 *  named `__{r}_{n}.distcp`). */
export interface DcpChunk {
  offsets: U64[];
  sizes: U64[];
  file: string | null;
  offset: U64 | null;
  length: U64 | null;
  rank: U64 | null;
}

/** A distributed checkpoint's tensor of the model part (one per slot, in slot order), with its
 *  optimizer state's chunks when it has any. */
export interface DcpEntry {
  /** the FQN, and the flat key it is saved under */
  name: string;
  key: string;
  group: U64 | null;
  shape: U64[];
  dtype: string | null;
  step: number | null;
  trainable: boolean;
  /** the schema's representative: itself when trainable, the slot it is tied to, else null */
  representative: U64 | null;
  /** owner: it has optimizer state; tied: its values equal an earlier owner's; frozen: compared,
   *  no alias; 'frozen or tied': no state, values not compared */
  role: 'owner' | 'tied' | 'frozen' | 'frozen or tied';
  chunks: DcpChunk[];
  state: Partial<Record<'exp_avg' | 'exp_avg_sq' | 'max_exp_avg_sq' | 'step', { key: string; dtype: string | null; shape: U64[]; chunks: DcpChunk[] }>>;
}

/** A check of a distributed checkpoint that failed (docs/distributed.md): an error (its code) or
 *  a warning, its text, and the facts it is about. */
export interface DcpDiagnostic {
  check: number;
  code: number | null;
  severity: 'error' | 'warning';
  text: string;
  fqn: string | null;
  file: string | null;
  offset: U64 | null;
}

/** A distributed checkpoint's own members (docs/distributed.md): what was opened and what its
 *  .metadata is, its data files, its keys by part, the optimizer part's groups, the bytes items,
 *  each tensor with its chunks, and every check that failed. */
export interface DcpMembers {
  opened: 'folder' | 'metadata' | 'distcp';
  root: string | null;
  /** Metadata.version; null: unversioned (torch before 2.4, 1.13) */
  version: string | null;
  /** the module paths of the classes .metadata names (null: not a Metadata) */
  classes: 'torch>=2.3' | 'torch 2.0-2.2' | 'torch 1.13' | null;
  plannerData: boolean;
  storageMeta: boolean;
  /** the optimizer part's key form (null: no optimizer part) */
  form: 'N' | 'N23' | 'F' | 'I' | null;
  /** a lone .metadata's or .distcp's note; for Accelerate's two folders read as one checkpoint,
   *  which part came from which folder */
  note: string | null;
  /** Adam or AdamW as every group's decoupled_weight_decay says it (torch's Adam saves it in its
   *  groups where it has the option); null: not every group saves it, or they differ */
  kindSaid: 'adam' | 'adamw' | null;
  /** the kind the caller gave (setKind, --kind): a DCP folder keeps no optimizer class; a group that
   *  saves decoupled_weight_decay keeps its own and a contradiction is refused; null: none given */
  kindGiven: 'adam' | 'adamw' | null;
  /** the .metadata indices read: one (dir ''), or Accelerate's two folders of one checkpoint
   *  ('optimizer_0/', 'pytorch_model_fsdp_0/'; '../pytorch_model_fsdp_0/' beside optimizer_0/),
   *  each with its keys by part */
  indices: { dir: string; keys: { model: number; optimizer: number; other: number } }[];
  /** the data files .metadata names, by name (inside their folder for two folders read as one);
   *  size null for a missing one */
  files: { name: string; size: U64 | null; items: U64; rank: U64 | null }[];
  /** other files in the folder */
  strays: string[];
  keys: { model: number; optimizer: number; other: number };
  groups: { lr: number | null; betas: [number, number] | null; eps: number | null; weightDecay: number | null; decoupledWeightDecay: boolean | null; params: string[] }[];
  bytesItems: { key: string; file: string | null; offset: U64 | null; length: U64 | null }[];
  entries: DcpEntry[];
  /** a data file alone: its last record */
  record: { offset: U64; length: U64; dtype: string | null; shape: U64[] | null } | null;
  diagnostics: DcpDiagnostic[];
}

/** A valid distributed checkpoint's report (a DCP folder, its .metadata or a data file alone): an
 *  optimizer's (the schema, an entry per slot with optimizer state, its moments' statistics with
 *  --stats), with `dcp`. An invalid one is an InvalidReport with `dcp`. */
export interface DcpReport extends ReportCommon {
  ok: true;
  family: 'DCP';
  name: string;
  kind: 'optimizer';
  version: null;
  dtype: Dtype | null;
  schema: SchemaReport | null;
  slotCount: number | null;
  entries: Entry[];
  dcp: DcpMembers;
  error: null;
}

export type Report = OptimizerReport | StateReport | SafetensorsReport | TorchReport | DeepSpeedReport | DcpReport | InvalidReport;

export interface Progress {
  /** Bytes of this scan done so far, and in all (null when unknown). */
  done: number;
  total: number | null;
}

export interface ScanOptions {
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

export interface InspectOptions extends ScanOptions {
  /** Read the payloads and compute statistics (otherwise they are skipped). */
  stats?: boolean;
  /** Which WebAssembly build runs the core (benchmarking): 'simd' (default) or 'nosimd'. */
  variant?: 'simd' | 'nosimd';
  /** Statistics by this many workers (each its own instance; a file path or a Blob): 'auto' is
   *  the machine's cores, at most 8. The report is the one a single worker gives. */
  workers?: number | 'auto';
}

/** The moments of a slot, exactly as stored: narrow on dtype for the array type. */
interface MomentsCommon {
  slot: U64;
  /** The slot whose entry holds them (its representative). */
  owner: U64;
  id: U64;
  step: U64;
  count: U64;
  offset: U64;
}
export type Moments =
  | (MomentsCommon & { dtype: 'float32'; m: Float32Array; v: Float32Array })
  | (MomentsCommon & { dtype: 'float64'; m: Float64Array; v: Float64Array });

export interface SlotStats extends Entry {
  slot: U64;
  owner: U64;
  m: Stats;
  v: Stats;
  unhealthy: U64;
}

export interface TensorStats {
  tensor: U64;
  count: U64;
  values: Stats;
}

export interface Columns {
  n: number;
  hasMap: boolean;
  complete: boolean;
  dimStart: BigUint64Array;
  dims: BigUint64Array;
  sizes: BigUint64Array;
  tooBig: Uint8Array;
  flags: Uint8Array;
  /** representative?(i), 2^64 - 1 for none; null until the map was read. */
  reps: BigUint64Array | null;
  broken: Uint8Array | null;
  /** Rows of u64 words, one per entry, the fields named in order by entryFields. */
  entries: BigUint64Array;
  /** Rows of u64 words, one per tensor, the fields named in order by tensorFields. */
  tensors: BigUint64Array;
  /** The fields of an entries row, in order: id, step, count, offset, mOffset, vOffset. */
  entryFields: string[];
  /** The fields of a tensors row, in order: count, offset, dataOffset. */
  tensorFields: string[];
  /** Entry k's row by name (a copy of the data survives postMessage; these methods do not). */
  entry(k: number): { id: bigint; step: bigint; count: bigint; offset: bigint; mOffset: bigint; vOffset: bigint };
  tensor(k: number): { count: bigint; offset: bigint; dataOffset: bigint };
}

/** One open file of any family, parsed once. Close it (or `using`). */
export class Checkpoint {
  readonly closed: boolean;
  readonly ok: boolean;
  readonly kind: 'optimizer' | 'state' | null;
  /** The report without its per-slot arrays: cheap for any size. */
  readonly summary: Report;
  readonly report: Report;
  /** Per TorchLean reader, whether it can read the file at all; null for a model-state file. */
  readonly readers: Readers | null;
  reportText(): string;
  writeReport(write: (bytes: Uint8Array) => void): void;
  columns(): Columns;
  entry(slot: U64Input): Promise<Moments>;
  stats(slot: U64Input, options?: ScanOptions): Promise<SlotStats | TensorStats>;
  tensor(i: U64Input): Promise<{ index: U64; shape: U64[]; count: U64; values: Float32Array }>;
  close(): void;
  [Symbol.dispose](): void;
}

/** What open() resolves with: a Checkpoint whose `kind` says what `stats` gives, a slot's
 *  moments or a tensor's values (narrow on `ck.kind`). */
export type OptimizerCheckpoint = { readonly kind: 'optimizer'; stats(slot: U64Input, options?: ScanOptions): Promise<SlotStats> } & Checkpoint;
export type StateCheckpoint = { readonly kind: 'state'; stats(slot: U64Input, options?: ScanOptions): Promise<TensorStats> } & Checkpoint;
/** A file that is no TorchLean checkpoint: `kind` null, nothing to read. */
export type ForeignCheckpoint = { readonly kind: null } & Checkpoint;
export type OpenCheckpoint = OptimizerCheckpoint | StateCheckpoint | ForeignCheckpoint;

export function open(source: Source, options?: InspectOptions): Promise<OpenCheckpoint>;
/** In Node, `source` may be a Trainer checkpoint-N/ folder: the report of its optimizer paired
 *  with its model. */
export function inspect(source: Source, options?: InspectOptions): Promise<Report>;

export interface CheckResult {
  ok: true;
  warnings: string[];
  /** The report of the load, without its per-slot arrays (schema arrays and entries empty). */
  report: Report;
}

export type Expected = Layout | Report | Schema | Source;

export function check(source: Source, layout: Expected, options?: { reader?: ReaderName }): Promise<CheckResult>;
export function check(opt: Source, against: { state: Source }, options?: ScanOptions): Promise<{ ok: true; warnings: string[]; pair: PairResult }>;

export interface PairResult {
  ok: boolean;
  /** null: the checks passed but the files cannot tell (a PyTorch optimizer's parameter without
   *  state that may be trained; `error` is that condition, code 79). */
  pairs: boolean | null;
  /** The invalid file (it never pairs: pair() then rejects with its own diagnostic), else null. */
  invalid: 'optimizer' | 'state' | null;
  /** What the verdict compared and what not: the check is structural, the values are not
   *  compared; a PyTorch optimizer saves no ties. */
  note: string;
  failures: ReportError[];
  warnings: string[];
  error: ReportError | null;
  /** A PyTorch optimizer and its model: each index's placement (docs/pytorch.md). */
  pytorch?: TorchPairing;
}

/** Where a PyTorch optimizer's indices went on its model's slots, and PyTorch's own positional
 *  pairing beside (the report's `pairing` once paired). */
export interface TorchPairing {
  paired: boolean;
  indices: { index: number; group: number; slot: U64 | null; name: string | null; decided: boolean;
    positionalSlot: U64 | null; positionalName: string | null; shape: U64[] | null; dtype: string | null; step: number | null }[];
  /** A name-keyed optimizer paired by name (docs/pytorch.md): no positional pairing applies. */
  byName: boolean;
  /** One group of every parameter: load_state_dict's positional pairing is known. */
  positionalKnown: boolean;
  positionalDiffers: boolean | null;
  groups: number;
  /** The model's slots by name, in slot order. */
  slots: string[];
  notInOptimizer: string[];
  /** Of notInOptimizer, the parameters the files (and `frozen`) do not say are untrained. */
  untold: string[];
}

/** What a PyTorch pairing may be told beside the two files (docs/api.md). */
export interface PairOptions {
  /** the model's state-dict keys in order: they order a state file that keeps no module order */
  names?: string[];
  /** names of the model's tensors the training code does not train (frozen parameters, buffers) */
  frozen?: string[];
  /** the model the optimizer was saved with (its Trainer folder's), compared first */
  trainedModel?: Source;
  trainedLabel?: string;
  modelLabel?: string;
  /** a DeepSpeed checkpoint: the data-parallel world size it will be loaded on (docs/deepspeed.md) */
  worldSize?: number;
}

/** A PyTorch optimizer (`summary.needsModel`) has no slots until paired with its model: run
 *  fn(o, s) once the open `o` is paired with `s` (or with the model o's own file holds, opened
 *  again from `source`). Any other file: fn(o, s) as it is. */
export function withModelSlots<T>(o: Checkpoint, s: Checkpoint | null, source: Source, fn: (o: Checkpoint, s: Checkpoint | null, result?: PairResult) => T | Promise<T>, options?: PairOptions): Promise<T>;

/** names: the model's state-dict keys in order; they order a state file that keeps no module
 *  order (safetensors), which without them is paired by shape alone, with a warning. `state`
 *  left out: `opt` holds both its optimizer and its model, or (in Node) `opt` is a Trainer
 *  checkpoint-N/ folder: its optimizer (given training_args.bin's kind where its file says none)
 *  with its model. A DeepSpeed checkpoint folder pairs with the model it will be loaded into
 *  (a torch.save state dict or a model.safetensors), or with `names` alone (`state` null), as
 *  DeepSpeed pairs them (format.md 11.6). */
export function pair(opt: Source, state?: Source | null, options?: ScanOptions & PairOptions): Promise<PairResult>;
/** The kind of an open PyTorch optimizer whose file does not say it (torch 1.13's AdamW writes no
 *  decoupled_weight_decay); call it before pairing. Rejects (CheckpointError) when the file says
 *  another kind or holds no optimizer. */
export function setKind(ck: Checkpoint, kind: 'adam' | 'adamw'): Promise<void>;

export interface Difference {
  field: string;
  slot: number | null;
  a: unknown;
  b: unknown;
  /** For the configuration's floats: the exact bit patterns of a and b. */
  aBits?: string;
  bBits?: string;
  /** Two checkpoints whose slots are named (DeepSpeed, DCP) and whose names differ are compared
   *  by name: for `field` 'name' (a name one side holds alone) and 'order' (the first place the
   *  names both hold part), a and b are the names (null: none) and these their slots. */
  aSlot?: number | null;
  bSlot?: number | null;
  /** The difference in words, without the slot. */
  text: string;
  message: string;
}

export function diff(a: Expected, b: Expected): Promise<Difference[]>;

export interface SlotHealth {
  slot: number;
  /** The slot's name: a PyTorch pair's model's; null without names. */
  name: string | null;
  owner: number | null;
  trainable: boolean;
  count: U64;
  step: U64 | null;
  param: { rms: Float | null; maxAbs: Float | null; nan: U64; inf: U64 } | null;
  update: { rms: Float | null; maxAbs: Float | null } | null;
  ratio: Float | null;
  decay: Float | null;
  neverUpdated: U64;
  inconsistent: U64;
  nonFinite: U64;
  flags: string[];
}

export interface HealthResult {
  ok: boolean;
  pairs: boolean;
  lr: number | null;
  /** 'file': lr is the PyTorch groups' (the next step's) as no lr was given. */
  lrFrom?: 'file';
  /** A PyTorch pair's slots by the model's names. */
  names?: string[];
  /** The ratio band of the pass: [low, high] (the default [1e-5, 1e-2], or the one given). */
  ratioBand: [number, number];
  c: number | null;
  first: number;
  slots: SlotHealth[];
  /** `severity`: the core's grade; 'warning' for the ratio band's flags (a heuristic). */
  flags: { slot: number; flag: string; severity: 'failure' | 'warning'; message: string }[];
  error: ReportError | null;
  /** A PyTorch pair the files cannot tell, used all the same: its condition (null: none);
   *  absent when nothing was paired. */
  pairCondition?: string | null;
}

/** In Node, `opt` may be a Trainer checkpoint-N/ folder (state null or left out): its optimizer
 *  with its model, as pair() takes it. */
export function health(opt: Source, state?: Source | null, options?: ScanOptions & PairOptions & { lr?: number; ratioBand?: [number, number]; slots?: { first?: U64Input; count?: U64Input }; workers?: number | 'auto' }): Promise<HealthResult>;

/** How many threads `workers` means for a pass over `sources` ('stats' or 'health'). */
export function workerCount(workers: number | 'auto' | undefined, sources: (string | number | URL | Blob | null)[], pass?: 'stats' | 'health'): Promise<number>;

/** One slot of a consecutive pair of a run (docs/runs.md). */
export interface RunSlot {
  slot: number;
  stepA: number | string;
  stepB: number | string;
  /** stepB - stepA: negative when B is before A. */
  k: number | string;
  /** Elements that cannot come from k Adam steps (k = 0: elements that differ); null when k < 0. */
  broken: number | string | null;
  firstBroken: number | string | null;
  /** The largest |dm| / bound over the elements (k >= 1); at most 1 on a continuous pair. */
  worst: number | null;
  /** The share of elements where A weighs (k >= 1; 1 at k = 0), null when k < 0 or the slot is empty. */
  power: number | null;
  /** The slot's verdict text (docs/runs.md), null when continuous. */
  message: string | null;
  /** `slot {i}: steps {tA}→{tB} are too far apart to tell (…)` when the power is below 1%, else null. */
  cannotTell: string | null;
  /** k = 1: the gradient of step tB, per element dm / (1 - beta1). */
  gradient: { rms: number | null; maxAbs: number | null; nonFinite: number; zero: number } | null;
  /** k = 1 with both state files: the learning rate of step tB, and its relative residual. */
  lr: number | null;
  lrResidual: number | null;
}

export interface RunPair {
  a: number;
  b: number;
  /** null: cannot tell (nothing breaks, but its slots that can tell, those of power 1% or more,
   *  hold fewer than 64 elements where A weighs): neither continuous nor broken. */
  continuous: boolean | null;
  /** The first reason the pair is not continuous: a configuration or layout difference, a
   *  slot's text, or a file that is not valid; when it cannot tell, its first slot's text when no
   *  slot can tell, else `steps {tA}→{tB}: only {n} elements can tell (64 needed)`. */
  verdict: string | null;
  /** The slot the verdict is about; null when it is no slot's. */
  verdictSlot: number | null;
  /** How many of its slots cannot tell (power below 1%). */
  slotsCannotTell: number;
  /** The share of its slots' elements where A weighs; null when no slot was compared. */
  power: number | null;
  configDiff: Difference[] | null;
  layoutDiff: Difference[] | null;
  slots: RunSlot[];
  /** A pair whose A is a DeepSpeed folder: the lr A's groups stored for the next step (the
   *  groups' distinct rates over the slots whose rate came back), and whether every recovered
   *  rate agrees with its group's (null: none came back). */
  storedLr?: { step: number | string | null; learningRates: number[]; agrees: boolean | null };
}

export interface RunFile {
  path: string | null;
  step: number | string | null;
  state: string | null;
  /** `flags` counts every flag health raises on the file; `warnings` those of them that are warnings (the default ratio band's): they do not break the run. */
  health: { flags: number; warnings: number; ratio: number | null } | null;
  ok: boolean;
  error: ReportError | null;
  /** Why the state file given was not used (not a model-state file, invalid, or it does not pair). */
  stateError?: string;
  /** The state file given, when it was not used. */
  stateFile?: string;
  /** An optimizer whose file does not say Adam or AdamW (torch 1.13's): no learning rate comes
   *  back for its pairs unless `kind` is given. */
  kindUnknown: boolean;
}

export interface RunResult {
  /** true only when every pair is continuous and no file is invalid or flagged. */
  ok: boolean;
  /** How many pairs cannot tell (continuous: null): not an all-clear. */
  cannotTell: number;
  /** The k = 1 learning-rate residual that breaks a pair: 0.1 or the one given. */
  residualLimit: number;
  /** The flag band of the update-to-weight ratios: the default [1e-5, 1e-2] or the one given. */
  ratioBand: [number, number];
  files: RunFile[];
  pairs: RunPair[];
  /** Index of the first file where something breaks (invalid, flagged, or B of a broken pair). */
  first: number | null;
  /** PyTorch optimizers paired with their models: the slots by the model's names (a DeepSpeed
   *  folder's: its module's; a DCP folder's: its FQNs). */
  names?: string[];
}

/** Checkpoints of one run in run order (at least two), with each file's state file or null; or,
 *  in Node, a DeepSpeed save_dir's path (its tag folders in run order) or a folder of DCP folders
 *  (torchtitan's checkpoint/ of step-N/: in the order of N). */
export function run(files: Source[] | string | URL, options?: ScanOptions & { states?: (Source | null)[] | null; lr?: number; ratioBand?: [number, number]; residualLimit?: number; onHealth?: (file: number, result: HealthResult) => void }): Promise<RunResult>;
/** The default residualLimit of run(): 0.1. */
export const DEFAULT_RESIDUAL_LIMIT: number;
/** The gradient of the one-step pair a → b as {name}.grad tensors (safetensors or npz). */
export function exportGradient(a: Source, b: Source, options?: ExportOptions): Promise<Uint8Array>;
export function exportGradientTo(a: Source, b: Source, write: (bytes: Uint8Array) => void, options?: ExportOptions): Promise<void>;
/** Node: the gradient export written to `path` atomically. */
export function saveGradient(path: string | URL, a: Source, b: Source, options?: ExportOptions): Promise<Written>;
/** The number in a file name: its last run of digits, or null. */
export function numberInName(name: string): bigint | null;
/** The stem of a file name (its base name without the last extension): a state file pairs with the checkpoint of the same stem. */
export function stemOf(name: string): string;
/** A folder's run order: by the number in the name, then by the largest step. */
export function runOrder<T extends { name: string; step?: number | bigint | string | null }>(items: T[]): T[];
/** The largest step of an optimizer checkpoint's entries, null when it has none. */
export function largestStep(ck: Checkpoint): number | string | null;
/** Files grouped into a run: the checkpoints in run order, each one's state file of the same stem, the files left out and why. */
export function runFiles(names: string[], openAt: (index: number) => Promise<Checkpoint>): Promise<{ order: number[]; states: (number | null)[]; unused: { index: number; text: string }[] }>;

/** The moments of one slot: see Checkpoint.entry. */
export function readEntry(source: Source, slot: U64Input): Promise<Moments>;
/** Statistics of one slot's moments (or a state file's tensor), reading only its payloads. */
export function entryStats(source: Source, slot: U64Input, options?: ScanOptions): Promise<SlotStats | TensorStats>;

export interface EntryInput {
  id: U64Input;
  step: U64Input;
  /** Elements; defaults to the length of m. */
  count?: U64Input;
  m: Float32Array | Float64Array | Uint8Array | (number | string)[];
  v: Float32Array | Float64Array | Uint8Array | (number | string)[];
}

export interface Description extends Layout {
  requiresGrad: boolean[];
  config: ConfigInput;
  randomCounter?: U64Input | null;
  /** 0 or absent: the reference writer's choice; a version of its family (the core checks it): forced. */
  version?: U64Input;
  entries: EntryInput[];
}

export interface StateDescription {
  family?: 'TLSF32B' | 'TLPF32B';
  shapes: U64Input[][];
  values: (Float32Array | number[])[];
}

/** What a save wrote, once the file is in place (nothing fails after it): `path`, where the bytes
 *  went (a symbolic link's target, which the link still points to); `bytes`, how many. */
export interface Written {
  path: string;
  bytes: number;
}

export function writeCheckpoint(description: Description): Promise<Uint8Array>;
export function saveCheckpoint(path: string | URL, description: Description): Promise<Written>;
export function writeState(description: StateDescription): Promise<Uint8Array>;
export function saveState(path: string | URL, description: StateDescription): Promise<Written>;

export interface ExportOptions extends ScanOptions {
  format?: 'safetensors' | 'npz';
  /** One per slot (or tensor); otherwise slot{i}. */
  names?: string[];
  /** Only these slots. */
  slots?: U64Input[];
}

export function exportTensors(source: Source, options?: ExportOptions): Promise<Uint8Array>;
export function exportTo(source: Source, write: (bytes: Uint8Array) => void, options?: ExportOptions): Promise<void>;
export function saveExport(path: string | URL, source: Source, options?: ExportOptions): Promise<Written>;
export function exportNpy(source: Source, slot: U64Input, what?: 'm' | 'v' | 'values'): Promise<Uint8Array>;

/** The JSON a source holds (a layout, a report, a description, slot names), or undefined when
 *  it is a checkpoint: a name ending in .json, or a first non-blank byte `{` or `[`. */
export function readJsonSource(source: Source): Promise<unknown | undefined>;
/** What a parsed JSON input is, by shape (never by file name). */
export function jsonKind(x: unknown): 'names' | 'report' | 'layout' | 'description' | 'unknown';
/** Slot names checked to be an array of strings (the count is the caller's to compare). */
export function namesOf(x: unknown, where?: string): string[];
/** A positive finite number written as text by the CLI's rule (decimal digits, a point, an
 *  exponent, a sign: not `0x10`, `Infinity` or a blank), as --lr takes it; NaN when it is not one. */
export function positiveNumber(text: string): number;
/** torch.load(weights_only=True) by torch release, one line each (`torch 1.13: no, BINFLOAT at
 *  byte 829 of "adamw/data.pkl": Unsupported operand 71`), as the CLI prints them. */
export function weightsOnlyLines(by: TorchWeightsOnly[]): string[];

export class HttpError extends Error {
  readonly url: string;
  readonly status: number | null;
}
/** A Blob or File read range by range with FileReaderSync (a worker only); what `open(file)`
 *  uses there. `bytesRead` counts what was read. */
export class BlobSource implements CustomSource {
  constructor(blob: Blob);
  readonly size: number;
  readonly bytesRead: number;
  read(offset: number, dest: Uint8Array): number;
  close(): void;
}
/** An http(s) file read by range requests (the first synchronous; the rest streamed through the
 *  feed when one is given); browser workers only. */
export class HttpSource implements CustomSource {
  static open(url: string | URL, options?: { feed?: import('./plumbing.js').Feed | null }): HttpSource;
  /** 'feed' or 'sync' (XMLHttpRequest). */
  readonly reads: 'feed' | 'sync';
  readonly url: string;
  readonly size: number;
  /** Bytes received and requests made so far: what opening a 20 GB file over HTTP cost. */
  readonly bytesTransferred: number;
  readonly requests: number;
  read(offset: number, dest: Uint8Array): number;
  close(): void;
}

export class Schema {
  static create(layout: Layout): Promise<Schema>;
  readonly closed: boolean;
  readonly count: number;
  readonly optimizerStateCount: U64;
  readonly trainableCount: U64;
  readonly hasAliases: boolean;
  representative(i: U64Input): U64 | null;
  isRepresentative(i: U64Input): boolean;
  isWellFormed(): boolean;
  tags(): U64[];
  toJSON(): Omit<SchemaReport, 'brokenSlots'> & { tags: U64[]; wellFormed: boolean; optimizerStateCount: U64; trainableCount: U64; hasAliases: boolean; elementCounts: ElementCounts | null; problem?: { slot: U64 | null; reason: string } };
  /** Free the core's schema (a call using it finishes first); then every query throws. */
  close(): void;
  [Symbol.dispose](): void;
}

/** Which input is at fault: the file read, the expected layout (check), a side of a diff, or
 *  the file of a pair that cannot be paired at all. */
export type Subject = 'file' | 'expected' | 'first' | 'second' | 'optimizer' | 'state';

export class CheckpointError extends Error {
  readonly name: 'CheckpointError';
  readonly code: number;
  readonly offset: U64 | null;
  readonly length: U64;
  readonly slot: U64 | null;
  /** A PyTorch optimizer's index the error is about, else null. */
  readonly index: U64 | null;
  readonly subject: Subject;
  readonly hint: string | null;
  readonly configDiff: ConfigDifference[] | null;
  /** check: the summary of what was read; a broken checkpoint given as a layout: its summary. */
  readonly report: Report | null;
  /** pair (and check with {state}): the pairing result. */
  readonly result: PairResult | null;
  /** pair, health: the broken file's own error, when a file cannot be used at all. */
  readonly fileError: ReportError | null;
  /** Which of the caller's inputs, in words, when the diagnostic alone does not say. */
  readonly context: string | null;
}

export class LayoutError extends Error {
  readonly name: 'LayoutError';
  /** Which input the object was ('expected', 'first', 'second'); null for a description or names. */
  readonly subject: Subject | null;
}

export function loadCore(variant?: 'simd' | 'nosimd'): Promise<unknown>;

/** convert(): the target (one of `to` and `for`) and what may be lost or supplied (docs/format.md 8). */
export interface ConvertOptions extends ScanOptions {
  to?: 2 | 3 | 4 | 5 | 'oldest';
  for?: ReaderName;
  randomCounter?: U64Input;
  dropRandomCounter?: boolean;
  untie?: boolean;
  roundToFloat32?: boolean;
  /** A PyTorch optimizer paired with its model (docs/pytorch.md): TorchLean's one configuration. */
  kind?: 'adam' | 'adamw';
  weightDecay?: number;
  betas?: [number, number];
  eps?: number;
  dropAmsgrad?: boolean;
  /** A DeepSpeed or DCP folder (docs/deepspeed.md "Conversions", docs/distributed.md "Converting"): names of its slots trained by none. */
  frozen?: string[];
}
export interface ConvertResult {
  version: 2 | 3 | 4 | 5;
  dtype: Dtype;
  rounded: boolean;
  /** The largest |float32(x) - x| / |x| over the rounded values (0 when nothing was rounded). */
  maxRelativeError: number;
  /** float16 / bfloat16 moments widened to float32 (exactly). */
  widened?: true;
  /** A DeepSpeed or DCP folder's pair holds only if its slots without state are not trained (the pairing's error). */
  pairError?: ReportError;
  /** A DeepSpeed or DCP folder's conversion warnings (a group stored in round-robin order, or a DCP group's list against module order, is numbered in module order). */
  warnings?: string[];
}
/** Node: `source` converted and written to `path` atomically. */
export function convert(source: Source, path: string | URL, options: ConvertOptions): Promise<ConvertResult>;
/** `source` converted, streamed through write(bytes). */
export function convertTo(source: Source, write: (bytes: Uint8Array) => void, options: ConvertOptions): Promise<ConvertResult>;

/** A checkpoint-N/ folder's files by what they are (Node), each a path or null. `model` is the
 *  model file (pytorch_model.bin, else model.safetensors) or a sharded model's index, whose
 *  shards (from its weight_map, sorted) are then `modelShards`. */
export interface TrainerFolder {
  optimizer: string | null;
  model: string | null;
  modelShards: string[] | null;
  trainerState: string | null;
  trainingArgs: string | null;
  scheduler: string | null;
  /** config.json: its transformers_version says which trainer_state.json entry logs an
   *  update's learning rate (docs/runs.md). */
  config: string | null;
}
export function trainerFolder(dir: string): Promise<TrainerFolder>;
/** Which of a checkpoint-N/ folder's file names is which (no disk read: the viewer's folder pick). */
export function trainerFolderRoles(names: string[]): Promise<{
  optimizer: string | null; model: string | null; modelIndex: string | null;
  trainerState: string | null; trainingArgs: string | null; scheduler: string | null; config: string | null;
}>;
/** A folder given as its files' relative paths (a picked or served folder) read as a Trainer's,
 *  by the core's names: one checkpoint folder's roles, or an output folder's checkpoint-N
 *  folders in the order of N; each role the index of a path, or null. */
export function trainerLayout(paths: string[]): Promise<TrainerLayout | null>;
export interface TrainerRoles {
  optimizer: number | null; model: number | null; modelIndex: number | null;
  trainerState: number | null; trainingArgs: number | null; scheduler: number | null;
  /** An Accelerate save_state folder read as one checkpoint (its pair 0): every file of a role
   *  Accelerate writes. */
  accelerate?: number[];
}
export type TrainerLayout =
  | { checkpoint: TrainerRoles; used: number[] }
  | { checkpoints: { name: string; step: U64; iteration?: number; dir: string; roles: TrainerRoles }[]; used: number[] };
/** An output folder's checkpoint-{N} folders in the order of N (Node); else an Accelerate
 *  project's checkpoint_{k} folders (in it or in its checkpoints/), by k (step and iteration: k). */
export function checkpointFolders(outputDir: string): Promise<{ path: string; name: string; step: U64; iteration?: number }[]>;

// ---- Accelerate save_state folders (docs/distributed.md "Accelerate folders") ----

export type AccelerateRole =
  | 'model' | 'optimizer' | 'scheduler' | 'sampler' | 'dataloaderState' | 'scaler' | 'randomStates'
  | 'customCheckpoint' | 'fsdpModel' | 'fsdpModelRank' | 'optimizerRank' | 'dcpModel' | 'dcpOptimizer'
  | 'deepspeedTag' | 'deepspeedLatest';
export interface AccelerateFile {
  /** a subfolder's name ends in '/' */
  name: string; path: string; role: AccelerateRole | null;
  index: number | null; process: number | null; rank: number | null;
}
export interface AcceleratePair {
  index: number;
  model: string | null; modelPath: string | null;
  modelForm: 'torch' | 'safetensors' | 'fsdpFull' | 'dcp' | 'deepspeed' | 'rankFiles' | null;
  optimizer: string | null; optimizerPath: string | null;
  optimizerForm: 'torch' | 'nameKeyed' | 'dcp' | 'deepspeed' | 'rankFiles' | null;
  /** what reads the pair: section 10's pair of files, DeepSpeed's tag folder, the DCP folders opened */
  reader: 'pytorch' | 'deepspeed' | 'dcp' | null;
  /** the core's words for a pair this folder's files do not give (null when they do) */
  note: string | null;
}
export interface AccelerateFolder {
  dir: string;
  accelerate: boolean;
  distributed: 'fsdp' | 'deepspeed' | null;
  files: AccelerateFile[];
  pairs: AcceleratePair[];
  randomStates: { name: string; path: string; process: number; step: number | null; keys: string[] | null; error: string | null }[];
  /** Accelerate's step counter (process 0's random states); null when not saved */
  step: number | null;
}
/** An Accelerate save_state folder on disk (Node), by the core's names; random states read as data. */
export function accelerateFolder(dir: string): Promise<AccelerateFolder>;
/** The same from names alone (subfolders ending in '/'); random states not read. */
export function accelerateFolderRoles(names: string[]): Promise<Omit<AccelerateFolder, 'dir'>>;
/** A project's checkpoint_{k} folders (in dir, or dir/checkpoints), by k (Node). */
export function accelerateCheckpoints(dir: string): Promise<{ path: string; name: string; iteration: number }[]>;
/** random_states_{p}.pkl read as data: Accelerate's step (null: not saved) and the dict's keys. */
export function readRandomStates(source: Source, name?: string): Promise<{ step: number | null; keys: string[]; keyCount: number }>;
/** A folder as the report's `accelerate` member: names, not paths. */
export function accelerateJson(folder: AccelerateFolder, pair?: number | null): unknown;
/** Why a DCP file opened alone (a data file without its .metadata, or a .metadata without its
 *  data files) is no all-clear, or null: its verdict is "cannot tell" (docs/distributed.md). */
export function dcpAlone(report: { dcp?: DcpMembers | null } | null | undefined): string | null;

/** training_args.bin read as data: kind 'adamw' when optim starts with "adamw", else null (unknown). */
export interface TrainingArgs {
  class: string | null;
  optim: string | null;
  kind: 'adamw' | null;
  learningRate: Float | null;
  weightDecay: Float | null;
  adamBeta1: Float | null;
  adamBeta2: Float | null;
  adamEpsilon: Float | null;
}
export function readTrainingArgs(source: Source): Promise<TrainingArgs>;
/** trainer_state.json: global_step, and the learning rates log_history logged, by step. */
export interface TrainerState {
  globalStep: U64 | null;
  learningRates: { step: U64; learningRate: Float }[];
}
export function readTrainerState(source: Source): Promise<TrainerState>;
/** convertToTorch(): TorchLean to PyTorch (docs/pytorch.md "TorchLean to PyTorch"). */
export interface TorchConvertOptions extends ScanOptions {
  /** The learning rate the group holds (required: TorchLean does not store it). */
  lr: number;
  /** A model-state file: the pair is checked first. */
  state?: Source;
  /** The zip's folder (torch.save uses the file's stem); default "archive". */
  prefix?: string;
}
/** Node: a TLADAMF file as a torch.save file of its Adam/AdamW state_dict, written to `path` atomically. */
export function convertToTorch(source: Source, path: string | URL, options: TorchConvertOptions): Promise<Written>;
/** DeepSpeed to PyTorch (docs/deepspeed.md "Conversions"): one of a DeepSpeed folder's
 *  consolidated files streamed through write(bytes): the torch.optim state dict ('optimizer') or
 *  the fp32 model ('model'). A DCP folder (docs/distributed.md "Converting") gives the same two
 *  files: ids numbered in module order, 'model' its model part as stored ('model.safetensors' is
 *  refused). */
export function consolidateTo(source: Source, which: 'optimizer' | 'model' | 'model.safetensors', write: (bytes: Uint8Array) => void,
  options?: ScanOptions & { prefix?: string }): Promise<{ warnings: string[] }>;
/** A name-keyed PyTorch optimizer (FSDP, docs/pytorch.md "Name-keyed optimizer files (FSDP)"),
 *  already paired with its model by pair(), as a consolidated torch.optim state dict keyed by ids
 *  streamed through write(bytes): each group's ids in module order, or as stored. */
export function convertToIdsTo(ck: Checkpoint, write: (bytes: Uint8Array) => void,
  options?: ScanOptions & { groupOrder?: 'module' | 'stored'; prefix?: string }): Promise<{ warnings: string[] }>;
/** Node: written to `path` atomically, the zip's folder the file's stem. */
export function convertToIds(ck: Checkpoint, path: string | URL, options?: ScanOptions & { groupOrder?: 'module' | 'stored' }): Promise<{ warnings: string[] }>;
/** Node: both files written, each atomically. */
export function consolidate(source: Source, optimizerPath: string | URL, modelPath: string | URL, options?: ScanOptions): Promise<{ warnings: string[] }>;
/** The torch.save file streamed through write(bytes). */
export function convertToTorchTo(source: Source, write: (bytes: Uint8Array) => void, options: TorchConvertOptions): Promise<void>;
/** convertToDcp(): a PyTorch optimizer file and its model as a DCP folder (docs/distributed.md
 *  "Writing a DCP folder"). */
export interface DcpConvertOptions extends ScanOptions {
  /** The model's torch.save state dict (required): its names key the folder. */
  state: Source;
  /** '1.13': torch 1.13's form; default torch >= 2.4's. */
  torch?: '1.13' | '2';
  /** StorageMeta's checkpoint_id: the folder's absolute path (convertToDcp sets it). */
  checkpointId?: string;
  /** StorageMeta's save_id; default a new UUID. */
  saveId?: string;
}
export interface DcpWritten {
  keys: number;
  modelKeys: number;
  tensors: number;
  bytesItems: number;
  dataBytes: number;
  dataFile: string;
}
/** The data file streamed through writeData(bytes), then .metadata through writeMetadata(bytes). */
export function convertToDcpTo(source: Source, writeData: (bytes: Uint8Array) => void, writeMetadata: (bytes: Uint8Array) => void,
  options: DcpConvertOptions): Promise<DcpWritten>;
/** Node: the folder written (created, or empty), .metadata last, each file a temporary renamed. */
export function convertToDcp(source: Source, outDir: string | URL, options: DcpConvertOptions): Promise<DcpWritten>;
/** A DeepSpeed folder's universal checkpoint (docs/deepspeed.md "Universal checkpoints"). */
export interface UniversalPlan {
  /** The files of the UTAG folder, as paths in it ("zero/{name}/fp32.pt", ...). */
  files: string[];
  /** The core's warnings, in its words. */
  warnings: string[];
  /** The tag read from the source folder. */
  tag: string | null;
}
export interface UniversalWritten {
  path: string;
  tag: string;
  files: string[];
  warnings: string[];
}
/** What convertToUniversal would write, or the core's refusal (a CheckpointError). */
export function universalPlan(source: Source): Promise<UniversalPlan>;
/** Node: a DeepSpeed ZeRO-1/2 or BF16_Optimizer folder written as the universal checkpoint
 *  `outDir` (OUT/UTAG, which must not exist), and OUT/latest_universal naming UTAG. */
export function convertToUniversal(source: Source, outDir: string | URL, options?: { signal?: AbortSignal }): Promise<UniversalWritten>;
/** The universal checkpoint file by file (a writer other than Node's file system): the plan
 *  decided once; write(k, fn) streams file k (a path in the folder) through fn; close() frees it. */
export function openUniversal(source: Source): Promise<UniversalPlan & { write(k: number, write: (bytes: Uint8Array) => void): Promise<void>; close(): Promise<void> }>;
