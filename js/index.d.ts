// Types for the ckptscope package. Integers up to 2^53 - 1 are numbers; larger ones are
// decimal strings (DESIGN.md "JSON report").

export type U64 = number | string;
export type U64Input = number | bigint | string;
export type Dtype = 'float32' | 'float64';
export type Kind = 'adam' | 'adamw';

export type Source = Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | URL | number;

export interface ConfigBits {
  beta1: string;
  beta2: string;
  epsilon: string;
  weightDecay: string;
}

export interface Config {
  kind: Kind;
  beta1: number | string;
  beta2: number | string;
  epsilon: number | string;
  weightDecay: number | string;
  bits: ConfigBits;
}

export interface ConfigInput {
  kind: Kind | 0 | 1;
  beta1?: number | string;
  beta2?: number | string;
  epsilon?: number | string;
  weightDecay?: number | string;
  /** Exact bit patterns; they win over the decimal values. */
  bits?: Partial<ConfigBits>;
}

export interface Layout {
  shapes: U64Input[][];
  requiresGrad: boolean[];
  representatives?: (U64Input | null)[] | null;
  dtype?: Dtype;
  config?: ConfigInput;
  /** Does the destination keep a random counter? Unset: not checked. */
  keepsRandomCounter?: boolean;
}

export interface Histogram {
  log2Min: number;
  counts: U64[];
}

export interface Stats {
  count: U64;
  min: number | string | null;
  max: number | string | null;
  mean: number | string | null;
  rms: number | string | null;
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
  m?: Stats | null;
  v?: Stats | null;
}

export interface SchemaReport {
  shapes: U64[][];
  sizes: U64[];
  requiresGrad: boolean[];
  representatives: (U64 | null)[] | null;
  effectiveRepresentatives: (U64 | null)[] | null;
}

export interface ReportError {
  code: number;
  message: string;
  offset: U64 | null;
  hint: string | null;
}

export interface Report {
  ok: boolean;
  family: 'TLADAMF' | null;
  name: 'CUDA Adam checkpoint' | null;
  version: U64 | null;
  size: U64 | null;
  dtype: Dtype | null;
  config: Config | null;
  randomCounter: U64 | null;
  hasRandomCounter: boolean | null;
  schema: SchemaReport | null;
  wellFormed: boolean | null;
  optimizerStateCount: U64 | null;
  trainableCount: U64 | null;
  hasAliases: boolean | null;
  entryCount: U64 | null;
  entries: Entry[];
  warnings: string[];
  error: ReportError | null;
}

export interface InspectOptions {
  /** Read the payloads and compute moment statistics (otherwise they are skipped). */
  stats?: boolean;
  onProgress?: (progress: { done: number; total: number | null }) => void;
  signal?: AbortSignal;
  /** Which WebAssembly build runs the core (benchmarking): 'simd' (default) or 'nosimd'. */
  variant?: 'simd' | 'nosimd';
}

export function inspect(source: Source, options?: InspectOptions): Promise<Report>;

export interface CheckResult {
  ok: true;
  warnings: string[];
  report: Report;
}

export type Expected = Layout | Report | Schema | Source;

export function check(source: Source, layout: Expected): Promise<CheckResult>;

export interface Difference {
  field: string;
  slot?: number;
  a: unknown;
  b: unknown;
  message: string;
}

export function diff(a: Expected, b: Expected): Promise<Difference[]>;

export interface EntryMoments {
  id: U64;
  step: U64;
  count: U64;
  dtype: Dtype;
  m: Float32Array | Float64Array;
  v: Float32Array | Float64Array;
}

export function readEntry(source: Source, id: U64Input): Promise<EntryMoments>;

/** Statistics of one entry's m and v, reading only its payloads. */
export function entryStats(source: Source, id: U64Input, options?: Omit<InspectOptions, 'stats'>): Promise<Entry>;

export interface EntryInput {
  id: U64Input;
  step: U64Input;
  /** Elements; defaults to the length of m. */
  count?: U64Input;
  m: Float32Array | Float64Array | Uint8Array | (number | string)[];
  v: Float32Array | Float64Array | Uint8Array | (number | string)[];
}

export interface Description extends Layout {
  config: ConfigInput;
  randomCounter?: U64Input | null;
  /** 0 or absent: the reference writer's choice; 2..5: forced. */
  version?: U64Input;
  entries: EntryInput[];
}

export function writeCheckpoint(description: Description): Promise<Uint8Array>;
export function saveCheckpoint(path: string | URL, description: Description): Promise<void>;

export class Schema {
  static create(layout: Layout): Promise<Schema>;
  readonly count: number;
  readonly optimizerStateCount: number;
  readonly trainableCount: number;
  readonly hasAliases: boolean;
  representative(i: number): number | null;
  isRepresentative(i: number): boolean;
  isWellFormed(): boolean;
  tags(): U64[];
  toJSON(): SchemaReport & { tags: U64[]; wellFormed: boolean; optimizerStateCount: U64; trainableCount: U64; hasAliases: boolean };
  dispose(): void;
}

export class CheckpointError extends Error {
  readonly name: 'CheckpointError';
  readonly code: number;
  readonly offset: U64 | null;
  readonly hint: string | null;
  readonly report?: Report;
  readonly role?: 'expected' | 'diff';
}

export class LayoutError extends Error {
  readonly name: 'LayoutError';
}

export function loadCore(variant?: 'simd' | 'nosimd'): Promise<unknown>;
