// ckptscope/plumbing (js/plumbing.js): what the package's viewer and server are built on, apart
// from the API: the packed statistics of items (docs/api.md#statistics-gathered-apart), the read
// feed, the frames of a server pass, the choices the core offers a panel that converts, and a
// Trainer folder's checkpoints given as files.
import type { Checkpoint, ScanOptions, RunResult } from './index.js';

/** How many items (entries of an optimizer file, tensors of a state file) the open file has. */
export function itemCount(ck: Checkpoint): number;
/** Item k's statistics as the core's packed words (ckpt_packed_stats, then the words). */
export function itemStatsPacked(ck: Checkpoint, k: number, options?: ScanOptions): BigUint64Array;
/** Attach packed statistics of items from, from + 1, … to the open file (made elsewhere: another
 *  instance, another process); once every item has them its report is inspect's with stats. */
export function attachPacked(ck: Checkpoint, from: number, list: BigUint64Array[]): void;
/** Statistics of every item of a file by `workers` threads, handed over packed as they are
 *  attached; null when the file has no items or is invalid before its end. */
export function scanPacked(source: string | number | URL | Blob, options?: ScanOptions & {
  workers?: number | 'auto';
  onPacked?: (from: number, list: BigUint64Array[]) => void;
}): Promise<{ workers: number; items: number } | null>;
/** The read feed of a browser worker: a worker of its own makes range requests (streamed
 *  fetches) into shared memory while the core's thread waits for the bytes it needs (HttpSource).
 *  start() resolves null where it cannot run (not cross-origin isolated, not a worker). */
export class Feed {
  static start(): Promise<Feed | null>;
}
/** The answer of a pass `ckptscope view` runs for its page (GET /passes/…): a stream of frames,
 *  each a JSON message (JSON_FRAME: progress, then done or error) or the packed statistics of
 *  consecutive items (PACKED_FRAME, for attachPacked). push() each chunk as it arrives, then
 *  take() every whole frame. */
export class Frames {
  push(chunk: Uint8Array): void;
  take(): { kind: string; payload: Uint8Array } | null;
}
export const JSON_FRAME: 'j';
export const PACKED_FRAME: 'p';
/** A packed frame's payload: the packed words of items from, from + 1, … */
export function unpackFrame(payload: Uint8Array): { from: number; list: BigUint64Array[] };
/** The versions convert writes, oldest first (the core's; after the core is loaded). */
export function convertVersions(): number[];
/** What a panel that converts offers: the core's versions (oldest first) and optimizer kinds. */
export function convertChoices(): Promise<{ versions: number[]; kinds: string[] }>;
/** The open optimizer `ck` given `kind` ('adam' | 'adamw'; null: none), else `fallback` where its
 *  file says no kind; a kind its file contradicts rejects (CheckpointError). */
export function applyKind(ck: Checkpoint, kind: 'adam' | 'adamw' | null, fallback?: 'adam' | 'adamw' | null): Promise<void>;
/** A file of a Trainer folder: its name (for messages) and what open() takes. */
export interface TrainerFile { name: string; source: unknown }
/** An output folder's checkpoint-N folders given as files, in the order of N: each optimizer
 *  given `kind`, else its training_args.bin's, and paired with its model (open Checkpoints:
 *  close() closes them). */
export function openTrainerCheckpoints(checkpoints: { label: string; optimizer: TrainerFile | null; model: TrainerFile | null; trainingArgs: TrainerFile | null; trainerState: TrainerFile | null; config?: TrainerFile | null }[], options?: { kind?: 'adam' | 'adamw' | null }): Promise<{
  opts: Checkpoint[]; models: Checkpoint[]; paths: string[]; modelPaths: string[];
  logged: (Map<string, number> | null)[]; loggedAt: ('a' | 'b' | null)[]; warnings: string[][]; kinds: ('adam' | 'adamw' | null)[]; close(): void;
}>;
/** Each pair of a run's result given the rate trainer_state.json logged for its update: at A's
 *  step or B's as `loggedAt` says (config.json's transformers version), else the one that agrees. */
export function compareLogged(result: RunResult, logged: (Map<string, number> | null)[], loggedAt?: ('a' | 'b' | null)[]): Promise<RunResult>;

/** A folder's entry as the core's listing takes it: a name relative to the folder, and its size
 *  (null: a folder). */
export interface FolderEntry { name: string; size: number | null }
/** The core's listing of a folder's files (paths relative to it) and folders. */
export function folderListing(files: { name: string; size: number }[], folders?: string[]): FolderEntry[];
/** Whether the core takes a folder with these entries for a DeepSpeed checkpoint: its family, or null. */
export function folderFamily(root: string, entries: FolderEntry[]): Promise<string | null>;
/** The core's plan for reading a folder as one source, or null when it is no DeepSpeed folder. */
export function folderPlan(root: string, entries: FolderEntry[], readText: (name: string, limit: number) => Promise<string> | string): Promise<{
  root: string; family: string; tag: string | null; members: { name: string; offset: number | null; size: number | null }[]; size: number; header: Uint8Array;
} | null>;
/** The first `limit` bytes of a source, as text. */
export function sourceText(src: { read(offset: number, dest: Uint8Array): number }, limit: number): string;
/** A folder read as one source, each member opened when first read. */
export class BundleSource {
  constructor(plan: object, openMember: (name: string) => unknown);
  readonly name: string;
  readonly size: number;
  read(offset: number, dest: Uint8Array): number;
  close(): void;
}
