// ckptscope/plumbing (js/plumbing.js): what the package's viewer and server are built on, apart
// from the API: the packed statistics of items (docs/api.md#statistics-gathered-apart), the read
// feed, the frames of a server pass, the choices the core offers a panel that converts.
import type { Checkpoint, ScanOptions } from './index.js';

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
