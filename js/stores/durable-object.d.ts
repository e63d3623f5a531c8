// Types for edge-lease/stores/durable-object (Cloudflare workerd).
import type { Batch, Lessor, LessorOptions, Storage } from "../index.js";

/** The parts of `DurableObjectStorage` (`ctx.storage`) this adapter uses. */
export interface DurableObjectStorageLike {
  list(options?: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, unknown>>;
  transaction<T>(closure: (txn: {
    put(entries: Record<string, unknown>): Promise<void>;
    delete(keys: string[]): Promise<number>;
  }) => Promise<T>): Promise<T>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number | Date): Promise<void>;
}

/** Each batch is one storage transaction, in calls of at most 128 keys; keys live under `prefix`. */
export class DurableObjectStore implements Storage {
  constructor(storage: DurableObjectStorageLike, prefix?: string);
  entries(): Promise<[string, Uint8Array][]>;
  write(batch: Batch): Promise<void>;
}

export interface DurableLessorOptions extends Omit<LessorOptions, "storage" | "restore" | "autoTick"> {
  /** Prefix of the lessor's keys in the object's storage. Default "edge-lease/". */
  prefix?: string;
}

/** A lessor persisted in a Durable Object, expiring leases from the object's (one) alarm. */
export class DurableLessor {
  /** Restores from `ctx.storage` and sets the alarm if a lease needs one. */
  static open(storage: DurableObjectStorageLike, options?: DurableLessorOptions): Promise<DurableLessor>;
  /** The lessor (autoTick off). After changing it, `await sync()`. */
  readonly lessor: Lessor;
  /** Resolves when every change is durable and the alarm is set no later than the next deadline. */
  sync(): Promise<void>;
  /** Call from the object's `alarm()`: idempotent tick, then sync. */
  alarm(): Promise<void>;
}
