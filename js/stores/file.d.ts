// Types for edge-lease/stores/file (Node).
import type { Batch, Lessor, Storage } from "../index.js";

export interface FileStoreOptions {
  /** Compact when the journal is this many times the snapshot. Default 4. */
  compactFactor?: number;
  /** ...and at least this many bytes. Default 1 MiB. */
  minCompactBytes?: number;
}

/**
 * An append-only, fsync'd journal plus a compacted snapshot in one
 * directory. `write` is synchronous: when a lessor operation returns, its
 * change is on disk. One process at a time per directory.
 */
export class FileStore implements Storage {
  /** Opens or creates the store; throws CorruptEntry (with `entry` = "journal@<byte>") on corruption. */
  static open(dir: string, options?: FileStoreOptions): FileStore;
  /** The stored entries, for `new Lessor({ storage, restore: store.entries() })`. */
  entries(): [string, Uint8Array][];
  write(batch: Batch): void;
  /** Rewrites the snapshot atomically from `entries` and empties the journal. */
  compact(entries: Iterable<[string, Uint8Array]>): void;
  /** `compact(lessor.snapshot())` when the journal is large enough (or `force`); returns whether it did. */
  compactFrom(lessor: Lessor, options?: { force?: boolean }): boolean;
  /** Current file sizes in bytes. */
  readonly sizes: { journal: number; snapshot: number };
  close(): void;
}

/** CRC-32 (IEEE) of `bytes`, as the journal records it. */
export function crc32(bytes: Uint8Array): number;
