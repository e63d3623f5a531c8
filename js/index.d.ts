// Types for every entry point of edge-lease (Node ESM/CJS, Deno, Bun, workerd, browsers).

/** A lease id: 16 lowercase hex digits, as etcdctl prints it (`ffffffffffffffff` is -1). */
export type LeaseId = string;

/** Stable error codes, on `err.code`. */
export type ErrorCode =
  | "LeaseNotFound"
  | "LeaseExists"
  | "LeaseTtlTooLarge"
  | "NotPrimary"
  | "InvalidArgument"
  | "StorageFailed"
  | "CorruptEntry"
  | "Locked"
  | "Closed"
  | "Reentrant"
  | "NotInitialized"
  | "Internal";

export class LeaseError extends Error {
  readonly code: ErrorCode;
  /** With CorruptEntry: the stored key that could not be read. */
  readonly entry?: string;
  /** With a StorageFailed thrown by tick(): the leases that did expire before the failure. */
  readonly expired?: Expired[];
}

/** One atomic write for the host's store. */
export interface Batch {
  put: [key: string, value: Uint8Array][];
  delete: string[];
}

export interface Storage {
  /**
   * Apply the batch atomically. Throwing fails the operation and changes
   * nothing; a returned promise makes the store async (see `flush()`).
   */
  write(batch: Batch): void | Promise<void>;
}

export interface LessorOptions {
  /** The host clock, epoch milliseconds. Default `Date.now`. Called once per operation. */
  now?: () => number;
  /** TTLs below this are raised to it (seconds). Default 1. */
  minTtl?: number;
  /** At most this many leases expire in any 1 s of host time. Default 1000. */
  revokeRate?: number;
  /** Default 4096. */
  maxKeyBytes?: number;
  /** Default 1048576. */
  maxValueBytes?: number;
  /** Default 10000. */
  maxKeysPerLease?: number;
  /**
   * Run one timer at `nextDeadline()` that calls `tick()` (unref'd in Node).
   * Default true; turn off when the host ticks itself (alarms, simulated clocks).
   */
  autoTick?: boolean;
  /** Where every change is written, one batch per operation. */
  storage?: Storage;
  /** Stored `[key, value]` entries to rebuild from. */
  restore?: Iterable<[string, Uint8Array | string]>;
}

export type Value = string | Uint8Array;

export interface Entry<V extends Value = Value> {
  key: string;
  /** A string if it was written as one, else a Uint8Array. */
  value: V;
  /** The lease the key is attached to, or null. */
  lease: LeaseId | null;
  /** Revision that created the key: a lock's fencing token. */
  createRevision: number;
  modRevision: number;
  version: number;
}

export interface PutOptions {
  /** Attach the key to this lease; omitted, the key is detached from any lease. */
  lease?: LeaseId | bigint | null;
  /** Create-only: write nothing if the key exists. */
  ifAbsent?: boolean;
  /** Also return the previous entry. */
  prevKv?: boolean;
}

export interface PutResult {
  revision: number;
  /** The key did not exist (for ifAbsent: the put happened). */
  created: boolean;
  /** The previous entry (prevKv), or the holder when an ifAbsent put was refused. */
  prev?: Entry;
}

export interface DeleteResult {
  deleted: boolean;
  revision: number;
  prev?: Entry;
}

export interface Expired {
  id: LeaseId;
  keys: string[];
  revision: number;
}

export interface TimeToLive {
  id: LeaseId;
  /** Remaining whole seconds (truncated); -1 if the lease does not exist. */
  ttl: number;
  ttlMs: number;
  grantedTtl: number;
  keys: string[];
}

export class LeaseEvent extends Event {
  readonly lease: LeaseId | null;
  readonly key: string | null;
  readonly keys: string[];
  readonly revision: number;
  readonly ttl: number;
}

export interface LessorEventMap {
  grant: LeaseEvent;
  renew: LeaseEvent;
  revoke: LeaseEvent;
  expire: LeaseEvent;
  put: LeaseEvent;
  delete: LeaseEvent;
  error: Event & { error: unknown };
}

export class Lessor extends EventTarget {
  constructor(options?: LessorOptions);
  grant(ttl: number, options?: { id?: LeaseId | bigint }): { id: LeaseId; ttl: number };
  renew(id: LeaseId | bigint): number;
  revoke(id: LeaseId | bigint): Expired;
  timeToLive(id: LeaseId | bigint, options?: { keys?: boolean }): TimeToLive;
  leases(): LeaseId[];
  put(key: string, value: Value, options?: PutOptions): PutResult;
  get(key: string): Entry | undefined;
  range(prefix?: string): Entry[];
  delete(key: string, options?: { prevKv?: boolean }): DeleteResult;
  tick(): Expired[];
  nextDeadline(): number | null;
  promote(extendMs?: number): void;
  demote(): void;
  checkpoint(id: LeaseId | bigint, remainingMs: number): void;
  readonly revision: number;
  readonly isPrimary: boolean;
  snapshot(): [string, Uint8Array][];
  flush(): Promise<void>;
  memoryBytes(): number;
  close(): void;
  addEventListener<K extends keyof LessorEventMap>(
    type: K,
    listener: (event: LessorEventMap[K]) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
}

/**
 * Loads the wasm. Required once in browsers (`await init()`); a no-op
 * elsewhere. Accepts a URL, Response, bytes or WebAssembly.Module.
 */
export function init(input?: unknown): Promise<void>;
export default init;
