// Types for every entry point of edge-lease (Node ESM/CJS, Deno, Bun, workerd,
// browsers). They need only Event and EventTarget from the host's types, so
// they check with the DOM lib, with @types/node alone, and in Deno.

declare const leaseIdBrand: unique symbol;

/**
 * A lease id: 16 lowercase hex digits, as etcdctl prints it
 * (`ffffffffffffffff` is -1). Ids come from the API (grant, leases, entries,
 * events) or from `leaseId(text)`: a plain string is not one, so
 * `renew("hello")` does not compile. Methods also take an id as a bigint.
 */
export type LeaseId = string & { readonly [leaseIdBrand]: true };

/**
 * A lease id from elsewhere (etcdctl's 16 hex digits, or a bigint) as the
 * `LeaseId` the API returns; a LeaseError with code InvalidArgument for
 * anything else.
 */
export function leaseId(id: string | bigint): LeaseId;

/** Stable error codes, on `err.code`. */
export type ErrorCode =
  | "LeaseNotFound"
  | "LeaseExists"
  | "LeaseTtlTooLarge"
  | "NotPrimary"
  | "ExpiryHeld"
  | "InvalidArgument"
  | "StorageFailed"
  | "CorruptEntry"
  | "NoSpace"
  | "NoEntropy"
  | "Compacted"
  | "FutureRevision"
  | "KeyNotFound"
  | "DuplicateKey"
  | "TooManyOps"
  | "Locked"
  | "Closed"
  | "Reentrant"
  | "NotInitialized"
  | "EngineFailed" // the engine trapped (its wasm ran out of memory, say): reopen the lessor from its store
  | "Unavailable" | "Aborted" | "Unimplemented" | "NotLeader" | "NotHeld" // edge-lease/client's: a server away or timed out, a signal, a server without the feature, an election lost, a lock not held
  | "Unauthenticated" | "PermissionDenied" // edge-lease/client's: etcd's auth refused the token (or a Worker's token is missing), or the user's rights
  | "StaleToken" // edge-lease/fenced: a write with a token below the highest accepted
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
  /**
   * The whole batch in one buffer, as the lessor hands it over: a u32
   * count of puts, each a u32 length and the key (UTF-8), a u32 length and
   * the value, then a u32 count of deletes, each a u32 length and the key;
   * little endian. `put` and `delete` are read from it when first used.
   * A store that writes bytes can keep it as it is (the file store does).
   */
  readonly bytes?: Uint8Array;
}

export interface Storage {
  /**
   * Apply the batch atomically. Throwing fails the operation and changes
   * nothing; a returned promise makes the store async (see `flush()`).
   */
  write(batch: Batch): void | Promise<void>;
  /**
   * True if the store keeps the order of writes itself: it then gets each
   * batch at once rather than after the previous one's promise resolved.
   */
  readonly pipelined?: boolean;
}

// The numeric defaults are the core's (Config::default()); a test keeps
// these and the README's equal to them.
export interface LessorOptions {
  /** The host clock, epoch milliseconds. Default `Date.now`. Called once per operation. */
  now?: () => number;
  /** TTLs below this are raised to it (seconds). @default 1 */
  minTtl?: number;
  /** At most this many leases expire in any 1 s of host time. @default 1000 */
  revokeRate?: number;
  /** Longest key, in UTF-8 bytes. @default 4096 */
  maxKeyBytes?: number;
  /** Longest value, in bytes (1 MiB). @default 1048576 */
  maxValueBytes?: number;
  /** Most keys attached to one lease. @default 10000 */
  maxKeysPerLease?: number;
  /** Most compares, and ops per branch, in one `txn` (etcd's --max-txn-ops). @default 128 */
  maxTxnOps?: number;
  /**
   * Revisions of history kept for reads at past revisions and watches from
   * the past; older ones are compacted as new ones come. `Infinity` keeps
   * everything until `compact()`, as etcd does by default. @default 1000
   */
  history?: number;
  /**
   * Most bytes of keys, values and history (64 bytes per version on top);
   * past it writes fail with `NoSpace` (etcd's --quota-backend-bytes).
   * Also the most there is: the wasm's memory must hold the data twice
   * (for a snapshot). @default 1073741824
   */
  quotaBytes?: number;
  /**
   * Run one timer at `nextDeadline()` that calls `tick()` (unref'd in Node),
   * and a compaction's sweep in steps on timers (see `compact`).
   * Default true; turn off when the host ticks itself (alarms, simulated clocks).
   */
  autoTick?: boolean;
  /** Where every change is written, one batch per operation. */
  storage?: Storage;
  /**
   * Stored `[key, value]` entries to rebuild from. Read once, as the
   * constructor builds the engine (a part at a time, each entry checked as
   * it is read; not copied first).
   */
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

/** A put that created its key (for ifAbsent: the put happened). */
export interface PutCreated {
  created: true;
  revision: number;
  /** Nothing was there before. */
  prev?: undefined;
}

/** A put on a key that existed: overwritten, or for ifAbsent left to its holder (revision unchanged). */
export interface PutExisting {
  created: false;
  revision: number;
  /** The previous entry (prevKv), or the holder when an ifAbsent put was refused. */
  prev?: Entry;
}

/** What a put did, discriminated on `created`. */
export type PutResult = PutCreated | PutExisting;

/** With ifAbsent or prevKv, a key that existed always comes with its entry. */
export type PutResultWithPrev = PutCreated | (PutExisting & { prev: Entry });

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

export interface Granted {
  id: LeaseId;
  ttl: number;
}

/**
 * The class of every lessor event (for `instanceof`). Which fields an event
 * has depends on its type: see LessorEventMap.
 */
/** A key and its value as etcd's KeyValue: bytes, whatever they were written as. */
export interface KeyValue {
  key: Uint8Array;
  value: Uint8Array;
  /** The revision that created the key: a lock's fencing token. */
  createRevision: number;
  modRevision: number;
  version: number;
  lease: LeaseId | null;
}

/** Keys and values: strings (UTF-8) or bytes. */
export type Bytes = string | Uint8Array;

/**
 * A key, a range `[key, rangeEnd)` (`rangeEnd` `"\0"`: every key from `key` on), or every key starting with `key`.
 * In etcd's requests (range, deleteRange, txn compares and ranges, watch) these are only compared, as on
 * etcd: any up to 4 MiB (or `maxKeyBytes`, if more) is taken, and one longer than a key can be finds
 * nothing. (`get`, `delete` and `range(prefix)` refuse such a key.)
 */
export type KeyRange = { key: Bytes } & ({ rangeEnd?: Bytes; prefix?: false } | { prefix: true; rangeEnd?: undefined });

/** etcd's Range options, beside the keys (the engine's, the client's and a backend's). */
export interface RangeOptions {
  /** Read as of this revision; 0 or omitted: the current one. */
  revision?: number;
  /** At most this many (0: all); `more` says whether there were others. */
  limit?: number;
  sortOrder?: "none" | "ascend" | "descend";
  /** Another target than `key` sorts ascending unless `sortOrder` says otherwise. */
  sortTarget?: "key" | "version" | "create" | "mod" | "value";
  keysOnly?: boolean;
  countOnly?: boolean;
  /** Filters; 0 or omitted: none. */
  minModRevision?: number;
  maxModRevision?: number;
  minCreateRevision?: number;
  maxCreateRevision?: number;
}

/** etcd's Range. */
export type RangeRequest = KeyRange & RangeOptions;

export interface RangeResult {
  kvs: KeyValue[];
  more: boolean;
  /** Keys in the range before limit and filters. */
  count: number;
  /** The store's revision. */
  revision: number;
}

export type DeleteRangeRequest = KeyRange & { prevKv?: boolean };

export interface DeleteRangeResult {
  deleted: number;
  revision: number;
  prevKvs: KeyValue[];
}

export type KvPutRequest = {
  key: Bytes;
  /** Checked even with `ignoreLease` by `put(request)`, as etcd's Put (its wire API refuses the pair). */
  lease?: LeaseId | bigint | null;
  prevKv?: boolean;
  /** Keep the key's lease (it must exist). */
  ignoreLease?: boolean;
} & (
  | { value: Bytes; ignoreValue?: false }
  /** Keep the key's value (it must exist). */
  | { value?: undefined; ignoreValue: true }
);

export type Compare = KeyRange &
  (
    | { target: "version" | "create" | "mod"; result: "=" | "!=" | "<" | ">"; value: number }
    | { target: "value"; result: "=" | "!=" | "<" | ">"; value: Bytes }
    | { target: "lease"; result: "=" | "!=" | "<" | ">"; value: LeaseId | bigint | null }
  );

export type TxnOp =
  | { range: RangeRequest }
  | { put: KvPutRequest }
  | { deleteRange: DeleteRangeRequest }
  | { txn: TxnRequest };

export interface TxnRequest {
  compare?: Compare[];
  success?: TxnOp[];
  failure?: TxnOp[];
}

export type TxnOpResult =
  | { range: RangeResult }
  | { put: { revision: number; prevKv?: KeyValue } }
  | { deleteRange: DeleteRangeResult }
  | { txn: TxnResult };

export interface TxnResult {
  succeeded: boolean;
  /** The transaction's revision (0 for a nested one, as etcd). */
  revision: number;
  responses: TxnOpResult[];
}

/** etcd's key bucket read in pieces (`Lessor.etcdKeyBucket`). */
export interface KeyBucketReader {
  /** Each record's key and its value's length, in order: u32 LE length, key, u32 LE length. */
  readonly heads: Uint8Array;
  /** The next records (u32 LE length, key, u32 LE length, value), about `maxBytes` (default 1 MiB), at least one; empty once done. */
  next(maxBytes?: number): Uint8Array;
  /** Frees the reader; the read that comes back empty frees it too. */
  close(): void;
}

/**
 * What a lessor has done, as etcd 3.4 counts it (`etcd_debugging_mvcc_*`,
 * `etcd_debugging_lease_*`): reads, puts and deletes per store transaction
 * (a put or delete that returns or keeps the previous value also reads it;
 * a txn that writes reads its compares in a transaction of its own; a
 * lease's end deletes each of its keys), `txns` those with more than one.
 */
export interface Counts {
  ranges: number;
  puts: number;
  deletes: number;
  txns: number;
  /** Bytes of the keys and values put (a kept value counts again). */
  putBytes: number;
  granted: number;
  revoked: number;
  /** Renewals of a live lease. */
  renewed: number;
  /** Leases ended by their deadline (counted in `revoked` too). */
  expired: number;
  /** Versions compactions dropped (the records etcd's compactions delete from its key bucket). */
  compacted: number;
}

export type WatchRequest = KeyRange & {
  /** The first revision to report; omitted: changes after the current one. */
  startRevision?: number;
  prevKv?: boolean;
  noPut?: boolean;
  noDelete?: boolean;
};

export interface WatchEvent {
  type: "put" | "delete";
  /** A delete's has only `key` and `modRevision` (the deletion's revision). */
  kv: KeyValue;
  prevKv?: KeyValue;
}

export interface WatchBatch {
  events: WatchEvent[];
  /** Non-zero: the start was compacted (this is the compaction point) and the watcher has ended. */
  compactRevision: number;
  revision: number;
}

export interface Watcher {
  readonly id: number;
  cancel(): void;
  /**
   * Gets nothing more until `resume()` (a batch already taken for it in the round of listener calls under
   * way still comes); where it is is kept, and so is the history it still needs: not for long.
   */
  pause(): void;
  /** Goes on from where it was paused. */
  resume(): void;
  /** Whether it has had every change so far (false while it catches up on history, or once cancelled). */
  readonly caughtUp: boolean;
}

export class LeaseEvent extends Event {}

/** A lease granted or renewed, with its TTL in seconds. */
export interface LeaseTtlEvent<T extends "grant" | "renew" = "grant" | "renew"> extends LeaseEvent {
  readonly type: T;
  readonly lease: LeaseId;
  readonly ttl: number;
}

/** A lease revoked or expired: its keys went with it, in one revision. */
export interface LeaseGoneEvent<T extends "revoke" | "expire" = "revoke" | "expire"> extends LeaseEvent {
  readonly type: T;
  readonly lease: LeaseId;
  readonly keys: string[];
  readonly revision: number;
}

/** A key written or deleted, with its lease (null: none) and the change's revision. */
export interface KeyEvent<T extends "put" | "delete" = "put" | "delete"> extends LeaseEvent {
  readonly type: T;
  readonly key: string;
  readonly lease: LeaseId | null;
  readonly revision: number;
}

/** A tick of the expiry timer failed (a refusing store, a bad clock); it is retried a second later, unless an async store failed. */
export interface TimerErrorEvent extends Event {
  readonly type: "error";
  readonly error: unknown;
}

/** A step of the compaction's sweep: the compaction point, the changes left to visit (0: done), the step's time. */
export interface CompactionEvent extends Event {
  readonly type: "compaction";
  readonly revision: number;
  readonly pending: number;
  readonly ms: number;
}

export interface LessorEventMap {
  grant: LeaseTtlEvent<"grant">;
  renew: LeaseTtlEvent<"renew">;
  revoke: LeaseGoneEvent<"revoke">;
  expire: LeaseGoneEvent<"expire">;
  put: KeyEvent<"put">;
  delete: KeyEvent<"delete">;
  compaction: CompactionEvent;
  error: TimerErrorEvent;
}

/** A listener as EventTarget takes one: a function, or an object with handleEvent. */
export type Listener<E> = ((event: E) => void) | { handleEvent(event: E): void };

export interface ListenerOptions {
  capture?: boolean;
  once?: boolean;
  passive?: boolean;
  signal?: AbortSignal;
}

export class Lessor extends EventTarget {
  constructor(options?: LessorOptions);
  grant(ttl: number, options?: { id?: LeaseId | bigint | null }): Granted;
  renew(id: LeaseId | bigint): number;
  revoke(id: LeaseId | bigint): Expired;
  timeToLive(id: LeaseId | bigint, options: { keys?: boolean; bytes: true }): Omit<TimeToLive, "keys"> & { keys: Uint8Array[] };
  timeToLive(id: LeaseId | bigint, options?: { keys?: boolean; bytes?: false }): TimeToLive;
  leases(): LeaseId[];
  put(key: string, value: Value, options: PutOptions & ({ ifAbsent: true } | { prevKv: true })): PutResultWithPrev;
  put(key: string, value: Value, options?: PutOptions): PutResult;
  /** etcd's Put: as a txn's put op, with the lease checked before the key `ignoreValue` needs. */
  put(request: KvPutRequest): { revision: number; prevKv?: KeyValue };
  get(key: string): Entry | undefined;
  range(prefix?: string): Entry[];
  range(request: RangeRequest): RangeResult;
  deleteRange(request: DeleteRangeRequest): DeleteRangeResult;
  txn(request: TxnRequest): TxnResult;
  /**
   * etcd's Compact: reads and watches before `revision` fail with code "Compacted" from now on. The versions it left
   * unreadable are dropped afterwards in steps of a few milliseconds on timers (with `autoTick: false`: before this
   * returns); `whenCompacted()` resolves once they are gone.
   */
  compact(revision: number): { revision: number };
  /** Resolves once the compactions so far have dropped what they left unreadable (etcd's physical compaction). */
  whenCompacted(): Promise<void>;
  /** How many changes the compaction's sweep has yet to visit: 0 once every compaction so far is done. */
  readonly compactionPending: number;
  /** etcd's HashKV of the history up to `revision` (default: the current one), a uint32. */
  hashKv(revision?: number): number;
  /**
   * The history as etcd 3.4's backend key bucket holds it, for etcd's snapshot file, read in pieces: `heads` gives each
   * record's key and value length (u32 LE length, key, u32 LE length); `next()` the records themselves (u32 LE length,
   * key, u32 LE length, value), about `maxBytes` (default 1 MiB) at a time, empty once done. Throws code "Compacted" if
   * a compaction dropped a record not yet read.
   */
  etcdKeyBucket(): KeyBucketReader;
  /** A host entry (a small named record kept in the store beside the state): a copy, or undefined. */
  hostEntry(name: string): Uint8Array | undefined;
  /** Sets (at most 1 MiB) or removes (null) host entry `name` (1 to 64 of A-Z a-z 0-9 . _ -); durable once `flush()` resolves. */
  setHostEntry(name: string, value: Uint8Array | null | undefined): void;
  /** The compaction point: -1 until the first compaction (etcd's; compacting at 0 is one). */
  readonly compactRevision: number;
  /** Bytes of keys, values and history as `quotaBytes` counts them. */
  readonly sizeBytes: number;
  /**
   * Calls `listener` with each revision's changes the watcher wants, in
   * order. Watchers of one change get the same event objects: read them,
   * don't change them. A watcher from far back gets the history about
   * 5,000 events per turn of the event loop (on timers), so that other
   * work runs in between; changes made meanwhile come after it, in order.
   * So do the changes of one write of more than 5,000 (a revoke of a lease
   * with many keys): from the next turn on, gathered over turns, then
   * handed in one call.
   */
  watch(request: WatchRequest, listener: (batch: WatchBatch) => void): Watcher;
  delete(key: string, options?: { prevKv?: boolean }): DeleteResult;
  tick(): Expired[];
  nextDeadline(): number | null;
  promote(extendMs?: number): void;
  demote(): void;
  /**
   * Holds expiry (etcd under its CORRUPT alarm): a lease past its deadline lives on with its keys (negative TTL in
   * timeToLive, listed by leases(), renew fails with code "ExpiryHeld") until released, then expires at once.
   */
  holdExpiry(held: boolean, options?: { since?: number }): void;
  readonly expiryHeld: boolean;
  /** Epoch ms the hold began (leases alive then are held), or null. */
  readonly expiryHeldSince: number | null;
  checkpoint(id: LeaseId | bigint, remainingMs: number): void;
  readonly revision: number;
  /** What it has done since it was made, counted as etcd 3.4's mvcc and lease metrics count it. */
  readonly counts: Counts;
  /** Keys held, O(1) (those of leases past their deadline until the next tick included). */
  readonly keyCount: number;
  readonly isPrimary: boolean;
  /** Everything it holds now, as storage entries (leases past their deadline left out, tick or no tick). */
  snapshot(): [string, Uint8Array][];
  /**
   * The snapshot read `step` entries at a time (default 1024) as they are
   * asked for. Fuzzy: each entry as it is when read; with every write made
   * since the first read applied over it in order, it restores the latest state.
   */
  snapshotEntries(step?: number): Generator<[string, Uint8Array], void, undefined>;
  /**
   * `snapshotEntries` as entry lists of about `step` entries each, in the
   * packed layout a restore takes as it is (each entry a u32 little-endian
   * key length, the key, a u32 value length, the value): for stores that
   * keep the snapshot in a few large records (a Durable Object's).
   */
  snapshotPacked(step?: number): Generator<Uint8Array, void, undefined>;
  /** Resolves when every storage write made so far is durable (not later ones); rejects if one failed. */
  flush(): Promise<void>;
  /** Storage writes made but not yet durable (0 with a synchronous store). */
  readonly pendingWrites: number;
  memoryBytes(): number;
  close(): void;
  addEventListener<K extends keyof LessorEventMap>(
    type: K,
    listener: Listener<LessorEventMap[K]> | null,
    options?: boolean | ListenerOptions,
  ): void;
  addEventListener(type: string, listener: Listener<Event> | null, options?: boolean | ListenerOptions): void;
  removeEventListener<K extends keyof LessorEventMap>(
    type: K,
    listener: Listener<LessorEventMap[K]> | null,
    options?: boolean | { capture?: boolean },
  ): void;
  removeEventListener(type: string, listener: Listener<Event> | null, options?: boolean | { capture?: boolean }): void;
}

/**
 * Loads the wasm. Required once in browsers (`await init()`); a no-op
 * elsewhere. Accepts a URL, Response, bytes or WebAssembly.Module.
 */
export function init(input?: unknown): Promise<void>;
export default init;
