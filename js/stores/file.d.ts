// Types for edge-lease/stores/file (Node).
import type { Batch, Lessor, Storage } from "../index.js";

export interface FileStoreOptions {
  /** Compact when the journal is this many times the snapshot... Default 4. */
  compactFactor?: number;
  /** ...or past this many bytes, whatever the snapshot's size. Default 256 MiB. */
  maxJournalBytes?: number;
  /** ...and in either case at least this many bytes. Default 1 MiB. */
  minCompactBytes?: number;
  /**
   * `write` appends and returns a promise of the fsync that makes it durable,
   * one fsync covering every batch appended while the previous one ran
   * (operations return before they are durable: `await lessor.flush()`).
   * Default false: each `write` fsyncs before it returns.
   */
  groupCommit?: boolean;
  /**
   * With groupCommit, a lone write after a lone write is synced on the event
   * loop (no thread-pool round trip) while the last sync took at most this
   * many ms; a slower disk is synced on the pool so the loop goes on. Default 2.
   */
  loopSyncMaxMs?: number;
  /** Called with each journal sync's duration in ms (a server's metrics). */
  onSync?: (ms: number) => void;
}

/**
 * An append-only, fsync'd journal plus a compacted snapshot in one
 * directory. `write` is synchronous: when a lessor operation returns, its
 * change is on disk. One process at a time per directory (a lock file).
 */
export class FileStore implements Storage {
  /**
   * Opens or creates the store and takes its lock. Throws a LeaseError:
   * `Locked` (with `pid`) if another live process (or this one) has it
   * open; `CorruptEntry` (with `entry` = "journal-3@1234", or a missing
   * file's name) if anything but a torn last write does not check out.
   */
  static open(dir: string, options?: FileStoreOptions): FileStore;
  /**
   * The stored entries, for `new Lessor({ storage, restore: store.entries() })`:
   * read them once; each is let go as it is read, so that a restore never
   * holds the state twice.
   */
  entries(): IterableIterator<[string, Uint8Array]>;
  /**
   * The store's durable state now, to be read elsewhere (`readView`, in a
   * worker thread): its files, opened, so that a compaction that removes
   * them meanwhile takes nothing away, and the live journal only up to the
   * last record an fsync covered: the state after some write, every
   * acknowledged one included. `close()` it once read; `files` is plain
   * data (file descriptors and sizes).
   */
  view(): { files: StoreViewFile[]; close(): void };
  write(batch: Batch): void | Promise<void>;
  /** Whether this store was opened with `groupCommit`. */
  readonly pipelined: boolean;
  /** Bytes of records appended to the journal since the store was opened. */
  readonly bytesWritten: number;
  /**
   * Continues in a new journal at once, then writes `entries` as the new
   * snapshot without blocking the event loop, and removes the old
   * generation. Resolves when done. `entries`: an array of all state
   * including every write so far (`lessor.snapshot()`), or a fresh
   * `lessor.snapshotEntries()`, read as the snapshot is written.
   */
  compact(entries: Iterable<[string, Uint8Array]>): Promise<void>;
  /**
   * `compact(lessor.snapshotEntries())` when the journal is large enough (or
   * `force`): the state is read as the snapshot is written, never copied out
   * whole. Resolves to whether it compacted.
   */
  compactFrom(lessor: Lessor, options?: { force?: boolean }): Promise<boolean>;
  /** Bytes in the live journal and in the snapshot (file headers included), and a file header's. */
  readonly sizes: { journal: number; snapshot: number; header: number };
  /** The live journal's generation: 1 for a new store, one more per compaction. */
  readonly generation: number;
  /** Closes at once; resolves when the lock is released (after a compaction in progress stops). */
  close(): Promise<void>;
}

/** CRC-32 (IEEE) of `bytes`, as the store files record it. */
export function crc32(bytes: Uint8Array): number;

/** One file of a store view: its kind, generation, open descriptor and the bytes of it that count. */
export interface StoreViewFile {
  kind: "snapshot" | "journal";
  gen: number;
  fd: number;
  size: number;
}

/**
 * The entries of a store view (`store.view().files`), as `entries()` gives
 * them (read once, each let go as it is read), read from its open files
 * (which it does not close). Throws a LeaseError `CorruptEntry` if they do
 * not check out.
 */
export function readView(files: StoreViewFile[]): IterableIterator<[string, Uint8Array]>;
