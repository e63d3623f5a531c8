// Types for edge-lease/stores/durable-object (Cloudflare workerd).
import type { Batch, Lessor, LessorOptions, Storage } from "../index.js";

/** The parts of `DurableObjectStorage` (`ctx.storage`) this adapter uses. */
export interface DurableObjectStorageLike {
  list(options?: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, unknown>>;
  transaction<T>(closure: (txn: {
    put(entries: Record<string, unknown>): Promise<void>;
    delete(keys: string[]): Promise<number>;
  }) => Promise<T>): Promise<T>;
  /** Used with `outputGate` only. */
  put?(entries: Record<string, unknown>): Promise<void>;
  /** Used with `outputGate` only. */
  delete?(keys: string[]): Promise<number>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number | Date): Promise<void>;
  /** SQLite-backed objects' synchronous API: when present (with `transactionSync`), the state is kept in snapshot and journal rows. */
  readonly kv?: {
    list(options?: { prefix?: string; start?: string; end?: string }): Iterable<[string, unknown]>;
    get(key: string): unknown;
    put(key: string, value: unknown): void;
    delete(key: string): boolean;
  };
  /** SQLite-backed objects: runs `closure` in one synchronous transaction. */
  transactionSync?<T>(closure: () => T): T;
}

/** Each batch is one storage transaction, in calls of at most 128 keys; keys live under `prefix`. */
export class DurableObjectStore implements Storage {
  /** `outputGate`: issue each batch's calls at once (one atomic write) and return nothing; see `DurableLessorOptions`. */
  constructor(storage: DurableObjectStorageLike, prefix?: string, options?: { outputGate?: boolean; compactRows?: number });
  /**
   * Every stored entry (keys without the prefix), for `restore`: read once;
   * lazily on SQLite-backed objects, whose snapshot rows go to the engine as
   * they are.
   */
  entries(): Promise<Iterable<[string, Uint8Array]>>;
  write(batch: Batch): Promise<void> | void;
  /** SQLite-backed objects: whether the journal has grown enough to write the snapshot again. */
  readonly compactionDue: boolean;
  /**
   * SQLite-backed objects: writes `lessor`'s state as the snapshot's rows and
   * removes the journal, in one synchronous transaction; does nothing while
   * a write is in flight.
   */
  compactFrom(lessor: Lessor): void;
  /** Resolves when every write issued so far is confirmed; rejects if one failed. */
  settled(): Promise<void>;
}

export interface DurableLessorOptions extends Omit<LessorOptions, "storage" | "restore" | "autoTick"> {
  /** Prefix of the lessor's keys in the object's storage. Default "edge-lease/". */
  prefix?: string;
  /**
   * The object's id (`String(ctx.id)`). Given, the lessor this id (and
   * prefix) opened before in this isolate is closed once this one is
   * restored: its instance was evicted or reset (an object has one live
   * instance), and its share of the engine's memory, which the runtime does
   * not free, is used again. Without it, each wake-up in a long-lived
   * isolate holds one more copy of the state.
   */
  id?: string;
  /**
   * Rely on the object's output gate: each change's put()/delete() calls are
   * issued at once (committed as one atomic write), and answers sent after
   * them wait until the write is confirmed, so handlers need not await
   * `sync()` (call `arm()` after a change). Default false: one transaction
   * per change, `await sync()` before answering.
   */
  outputGate?: boolean;
  /**
   * SQLite-backed objects: write the snapshot again (and drop the journal)
   * once the journal has this many rows (one per batch), or more bytes than
   * an eighth of the snapshot. Default 2048; Infinity: never.
   */
  compactRows?: number;
  /**
   * The Lessor class to build: by default this package's (the lean engine);
   * edge-lease-etcd's Worker passes its own, whose engine adds etcd's HashKV
   * and snapshot file.
   */
  Lessor?: new (options?: LessorOptions) => Lessor;
}

/** A lessor persisted in a Durable Object, expiring leases from the object's (one) alarm. */
export class DurableLessor {
  /** Restores from `ctx.storage` and sets the alarm if a lease needs one. */
  static open(storage: DurableObjectStorageLike, options?: DurableLessorOptions): Promise<DurableLessor>;
  /** The lessor (autoTick off). After changing it, `await sync()`. */
  readonly lessor: Lessor;
  /** Resolves when every change is durable and the alarm is set no later than the next deadline. */
  sync(): Promise<void>;
  /** Output-gate mode: sets the alarm (without waiting) if the next deadline is earlier than it. */
  arm(): void;
  /** Call from the object's `alarm()`: idempotent tick, then sync. */
  alarm(): Promise<void>;
}
