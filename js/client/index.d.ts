// Types for edge-lease/client. They need only fetch's and AbortSignal's
// types from the host, so they check with the DOM lib and with @types/node.

import type { ErrorCode, LeaseId, Lessor, Listener, ListenerOptions } from "../index.js";

export type { LeaseId };

/**
 * The package's codes (`ErrorCode`), which include what a network and etcd's
 * recipes add: Unavailable (the server could not be reached or is not
 * serving, a request timed out; in-process, a standby lessor), Aborted (the
 * caller's signal; `cause` is its reason), Unimplemented (a server without
 * the feature), NotLeader (an election's proclaim or assertLeading() when
 * not leading, or a write guarded by a leadership that was lost), NotHeld (a
 * mutex's assertHeld() when not locked, or a write guarded by a lock that was
 * lost), Compacted (a read or watch below the compaction point, with
 * `compactRevision`).
 */
export type ClientErrorCode = ErrorCode;

/** The package's LeaseError (the same class as `edge-lease`'s), as the client throws it. */
export interface LeaseError extends Error {
  readonly code: ClientErrorCode;
  /** Compacted: the compaction point, when the server said it. */
  readonly compactRevision?: number;
  /** An error answered by a server: its gRPC code and HTTP status. */
  readonly grpcCode?: number;
  readonly status?: number;
  /** A lost session's reason: its lease and the deadline it passed (epoch ms). */
  readonly lease?: LeaseId;
  readonly deadline?: number;
  /**
   * A guarded write refused by the server (NotHeld, NotLeader): who holds
   * the lock (or leads) now, if anyone: its key and token; and the revision
   * the server judged at.
   */
  readonly holderKey?: string;
  readonly holderToken?: number;
  readonly revision?: number;
}
export declare const LeaseError: {
  new (code: ClientErrorCode, message: string, extra?: object): LeaseError;
  readonly prototype: LeaseError;
};

/** A lease id from elsewhere (etcdctl's hex digits, or a bigint) as a `LeaseId`. */
export function leaseId(id: string | bigint): LeaseId;

/** Keys and values go in as strings (UTF-8) or bytes. */
export type Key = string | Uint8Array;
export type Value = string | Uint8Array;

/** What reads give back: strings by default, Uint8Array with `{ bytes: true }`. */
export type Data<B extends boolean> = B extends true ? Uint8Array : string;

export interface Entry<B extends boolean = false> {
  key: Data<B>;
  /** Strings are decoded as UTF-8 (invalid sequences become U+FFFD): ask for bytes if values are not text. */
  value: Data<B>;
  /** The lease the key is attached to, or null. */
  lease: LeaseId | null;
  /** The revision that created the key: a lock's fencing token. */
  createRevision: number;
  modRevision: number;
  version: number;
}

interface Call {
  /** Aborts the call (LeaseError Aborted). */
  signal?: AbortSignal;
}

/**
 * A write that the server applies only while `ifHeld` is still held: in the
 * same transaction, a compare on the lock's key and create revision (Go's
 * `Mutex.IsOwner()`). Refused, with nothing written, by NotHeld (a Mutex)
 * or NotLeader (an Election) carrying the current holder's `holderToken`,
 * even when this process has not noticed the loss yet (a freeze, a
 * partition). Never locked or already unlocked: refused without a request.
 */
export interface Guarded {
  ifHeld?: Mutex | Election;
}

interface Bytes<B extends boolean> {
  /** Keys and values as Uint8Array instead of strings. */
  bytes?: B;
}

/** Which keys: one key; every key starting with it (`prefix`, `""` for all); from it on (`fromKey`); or [key, rangeEnd). */
export interface KeyRange {
  key: Key;
  prefix?: boolean;
  fromKey?: boolean;
  rangeEnd?: Key;
}

export type SortOrder = "none" | "ascend" | "descend";
export type SortTarget = "key" | "version" | "create" | "mod" | "value";

export interface RangeRequest extends KeyRange {
  /** Read at this past revision (0 or omitted: now). */
  revision?: number;
  limit?: number;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  keysOnly?: boolean;
  countOnly?: boolean;
  minModRevision?: number;
  maxModRevision?: number;
  minCreateRevision?: number;
  maxCreateRevision?: number;
}

export interface RangeResult<B extends boolean = false> {
  kvs: Entry<B>[];
  /** More keys matched than `limit` let through. */
  more: boolean;
  /** How many keys matched. */
  count: number;
  revision: number;
}

export interface PutOptions extends Call, Guarded {
  /** Attach the key to this lease; omitted or null, the key is detached from any lease. */
  lease?: LeaseId | bigint | null;
  /** Also return the previous entry, and whether the key was created. */
  prevKv?: boolean;
  /** Create-only (a txn on create revision 0): a refused put writes nothing and returns the holder as `prev`. */
  ifAbsent?: boolean;
}

export interface PutResult<B extends boolean = false> {
  revision: number;
  /** Whether the key did not exist: present with `prevKv` or `ifAbsent`. */
  created?: boolean;
  /** The previous entry (`prevKv`), or the holder of a refused `ifAbsent` put. */
  prev?: Entry<B>;
}

export interface DeleteResult<B extends boolean = false> {
  deleted: boolean;
  revision: number;
  prev?: Entry<B>;
}

export interface DeleteRangeRequest extends KeyRange {
  prevKv?: boolean;
}

export interface DeleteRangeResult<B extends boolean = false> {
  /** How many keys were deleted (all in one revision). */
  deleted: number;
  revision: number;
  /** The deleted entries, with `prevKv`. */
  prev: Entry<B>[];
}

export type CompareResult = "=" | "!=" | "<" | ">";

/** One condition of a txn, on one key or every key of a range (etcd's Compare). */
export type Compare = KeyRange &
  (
    | { target: "version" | "create" | "mod"; result?: CompareResult; value: number }
    | { target: "value"; result?: CompareResult; value: Value }
    | { target: "lease"; result?: CompareResult; value: LeaseId | bigint | null }
  );

export interface TxnPut {
  key: Key;
  value: Value;
  lease?: LeaseId | bigint | null;
  prevKv?: boolean;
}

export type TxnOp = { range: RangeRequest } | { put: TxnPut } | { deleteRange: DeleteRangeRequest } | { txn: TxnRequest };

export interface TxnRequest {
  /** All must hold for `success` to run; else `failure` runs. Default none (success). */
  compare?: Compare[];
  success?: TxnOp[];
  failure?: TxnOp[];
}

export type TxnOpResult<B extends boolean = false> =
  | { range: RangeResult<B> }
  | { put: { revision: number; prev?: Entry<B> } }
  | { deleteRange: DeleteRangeResult<B> }
  | { txn: TxnResult<B> };

export interface TxnResult<B extends boolean = false> {
  succeeded: boolean;
  /** Every write of the txn happened in this one revision. */
  revision: number;
  /** One per op of the branch that ran, in order. */
  responses: TxnOpResult<B>[];
}

export interface TimeToLive<B extends boolean = false> {
  id: LeaseId;
  /** Remaining whole seconds; -1 if the lease does not exist. */
  ttl: number;
  grantedTtl: number;
  /** With `{ keys: true }`. */
  keys: Data<B>[];
}

export interface WatchOptions<B extends boolean = false> extends Call, Bytes<B> {
  prefix?: boolean;
  fromKey?: boolean;
  rangeEnd?: Key;
  /** Deliver history from this revision on (default: changes after the watch is created). */
  startRevision?: number;
  /** Each event carries the entry before it as `prev`. */
  prevKv?: boolean;
  noPut?: boolean;
  noDelete?: boolean;
}

export interface WatchEvent<B extends boolean = false> {
  type: "put" | "delete";
  key: Data<B>;
  /** Empty for a delete. */
  value: Data<B>;
  /** The revision of the change. */
  modRevision: number;
  /** 0 for a delete. */
  createRevision: number;
  version: number;
  lease: LeaseId | null;
  /** The entry before the change, with `prevKv` (absent if there was none). */
  prev?: Entry<B>;
}

type AsyncDisposeKey = SymbolConstructor extends { readonly asyncDispose: infer S extends symbol } ? S : never;
/** `await using` support where the lib knows Symbol.asyncDispose; nothing otherwise. */
type AsyncDisposableIfKnown = { [K in AsyncDisposeKey]: () => Promise<void> };

/**
 * An async iterator of events. A dropped stream is resumed from the revision
 * after the last one delivered: nothing lost or repeated. Ends with a
 * LeaseError: Compacted (a start below the compaction point), Aborted (the
 * signal), Closed (client.close()). `break` or `return()` ends it.
 */
export interface Watch<B extends boolean = false> extends AsyncIterableIterator<WatchEvent<B>>, AsyncDisposableIfKnown {
  /** The revision the watch was created at (later changes are delivered); rejects if it could not be created. */
  readonly ready: Promise<number>;
  /** The revision a resumed stream would start from. */
  readonly resumeRevision: number;
  return(): Promise<IteratorReturnResult<undefined>>;
}

export interface SessionOptions extends Call {
  /** Seconds (etcd's minimum is 2); default 60. */
  ttl?: number;
  /** Keep an existing lease alive instead of granting one. */
  lease?: LeaseId | bigint;
}

export interface SessionEventMap {
  /** The lease was lost (`reason`: LeaseNotFound with `lease` and `deadline`). */
  lost: Event & { readonly reason: LeaseError };
}

/**
 * A lease kept alive every TTL/3 (etcd's concurrency.Session). `signal`
 * aborts when the session ends: at the deadline as last known once
 * keepalives stop succeeding (reason LeaseNotFound, with a `lost` event), at
 * once when a keepalive finds the lease gone, or on close() (reason Closed).
 * In-process (`connect(lessor)`) the deadline is the lessor's own, and the
 * session ends the moment the lessor expires or revokes the lease.
 *
 * Timers run late: a process frozen past the deadline (SIGSTOP, a paused
 * VM) runs its overdue timers in due order, so its own shorter sleeps end
 * before the deadline timer fires. Reading `signal` or `lost` therefore
 * reads the clock and ends the session first if the deadline has passed:
 * `session.signal.aborted` (and a lock's `signal.aborted`) is current when
 * read. A signal kept from an earlier read (a variable, a fetch it was
 * passed to) aborts only when something reads it through the session again
 * or the deadline timer runs; before acting, check `Mutex.held` (or
 * `assertHeld()`) or `Election.leading`.
 */
export interface Session extends EventTarget, AsyncDisposableIfKnown {
  readonly lease: LeaseId;
  /** The granted TTL in seconds. */
  readonly ttl: number;
  /**
   * The lease's deadline as last known, epoch ms: the last successful
   * keepalive's send time plus the TTL (in-process: the lessor's deadline,
   * as a time on this host's clock).
   */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** The lease was lost (not closed): also true once the deadline has passed by the clock now. */
  readonly lost: boolean;
  /** Go's `%x` of the lease id: what etcd's recipes append to their keys. */
  readonly keySuffix: string;
  mutex(name: Key): Mutex;
  election(name: Key): Election;
  /** Stops keepalives and revokes the lease (its keys go with it). Idempotent. */
  close(): Promise<void>;
  addEventListener<K extends keyof SessionEventMap>(type: K, listener: Listener<SessionEventMap[K]> | null, options?: boolean | ListenerOptions): void;
  addEventListener(type: string, listener: Listener<Event> | null, options?: boolean | ListenerOptions): void;
  removeEventListener<K extends keyof SessionEventMap>(type: K, listener: Listener<SessionEventMap[K]> | null, options?: boolean | ListenerOptions): void;
  removeEventListener(type: string, listener: Listener<Event> | null, options?: boolean | ListenerOptions): void;
}

/**
 * etcd's concurrency.Mutex: key `name/<lease hex>`, FIFO by create revision.
 * Interoperates with `etcdctl lock name` and Go's clients.
 */
export interface Mutex {
  /** The lock's key while held. */
  readonly key: string | undefined;
  /** The key's create revision while held: the fencing token for the protected resource. */
  readonly token: number | undefined;
  readonly session: Session;
  /** The session's signal: aborts when the lock is lost with the session (read it afresh: see Session). */
  readonly signal: AbortSignal;
  /**
   * Whether the lock is held now: locked, not unlocked, the session not
   * closed and its deadline not passed by the clock read at this call (so
   * false at once after a freeze past it, before any timer runs).
   */
  readonly held: boolean;
  /**
   * Throws unless `held`: the session's end reason (LeaseNotFound, with
   * `lease` and `deadline`, when lost; Closed), else NotHeld. Call it right
   * before each write the lock protects (and fence with `token`).
   */
  assertHeld(): void;
  /**
   * A compare that holds while this lock is held (Go's IsOwner()), for
   * `client.txn({ compare: [lock.isOwner()], ... })`; `ifHeld: lock` is the
   * shorthand. Throws NotHeld when not locked.
   */
  isOwner(): Compare;
  /** Waits for the lock; `signal` (or the session's end) gives up and removes the key. */
  lock(options?: Call): Promise<void>;
  /** Takes the lock if free: true if taken; false (no key left behind) if held by another. */
  tryLock(options?: Call): Promise<boolean>;
  unlock(options?: Call): Promise<void>;
}

/** etcd's concurrency.Election. Interoperates with `etcdctl elect`. */
export interface Election {
  /** This candidate's key while campaigning or leading. */
  readonly key: string | undefined;
  /** The key's create revision (a fencing token for the leader). */
  readonly token: number | undefined;
  readonly session: Session;
  /**
   * Whether this candidate leads now: campaign() won, no resign() or failed
   * proclaim() since, the session not closed and its deadline not passed by
   * the clock read at this call.
   */
  readonly leading: boolean;
  /** Throws unless `leading`: the session's end reason (LeaseNotFound when lost; Closed), else NotLeader. */
  assertLeading(): void;
  /** A compare that holds while this candidate leads (see Mutex.isOwner()); throws NotLeader when not leading. */
  isLeader(): Compare;
  /** Waits until elected; `signal` (or the session's end) withdraws. */
  campaign(value: Value, options?: Call): Promise<void>;
  /** A new value from the leader; NotLeader if this candidate no longer leads. */
  proclaim(value: Value, options?: Call): Promise<void>;
  resign(options?: Call): Promise<void>;
  /** The leader's entry (`value`: its proclamation), or undefined when there is none. */
  leader<B extends boolean = false>(options?: Call & Bytes<B>): Promise<Entry<B> | undefined>;
  /** The leader, then each new proclamation or leader (etcd's Observe); return() (a `break`) ends it at once. */
  observe<B extends boolean = false>(options?: Call & Bytes<B>): AsyncIterableIterator<Entry<B>> & AsyncDisposableIfKnown;
}

/** A Mutex as `withLock` hands it over: locked, so its key and token are set. */
export interface HeldMutex extends Mutex {
  readonly key: string;
  readonly token: number;
}

export interface WithLockOptions extends Call {
  /** The session's TTL in seconds; default 60. */
  ttl?: number;
}

export interface ConnectOptions {
  /** Each request's time limit in ms (not watches); default 10000. */
  timeout?: number;
  /** The fetch to use (a workerd service binding's, a test's); default globalThis.fetch. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Sent with every request (e.g. a Worker's `X-Edge-Lease-Token`, or etcd's `Authorization` token). */
  headers?: Record<string, string>;
  /**
   * etcd's auth, as etcd's clients do it: the client authenticates as
   * `user` before its first call, sends the token with every request (in
   * `Authorization`, or `Grpc-Metadata-Token` when `headers` has an
   * `Authorization` of its own), and on "invalid auth token" authenticates
   * again and repeats the call once.
   */
  user?: string;
  /** The user's password. */
  password?: string;
}

export interface Client extends AsyncDisposableIfKnown {
  /** Aborts when close() is called. */
  readonly closed: AbortSignal;

  get<B extends boolean = false>(key: Key, options?: Call & Bytes<B> & { revision?: number }): Promise<Entry<B> | undefined>;
  range<B extends boolean = false>(request: RangeRequest & Call & Bytes<B>): Promise<RangeResult<B>>;
  put<B extends boolean = false>(key: Key, value: Value, options?: PutOptions & Bytes<B>): Promise<PutResult<B>>;
  delete<B extends boolean = false>(key: Key, options?: Call & Guarded & Bytes<B> & { prevKv?: boolean }): Promise<DeleteResult<B>>;
  deleteRange<B extends boolean = false>(request: DeleteRangeRequest & Call & Guarded & Bytes<B>): Promise<DeleteRangeResult<B>>;
  /** With `ifHeld`, the whole txn runs (compares, then a branch) only while the guard holds. */
  txn<B extends boolean = false>(request: TxnRequest & Call & Guarded & Bytes<B>): Promise<TxnResult<B>>;
  /** Drops history before `revision`. */
  compact(revision: number, options?: Call & { physical?: boolean }): Promise<void>;

  /** Whole seconds; `id` to choose the lease id. */
  grant(ttl: number, options?: Call & { id?: LeaseId | bigint }): Promise<{ id: LeaseId; ttl: number }>;
  /** One keepalive: the granted TTL; LeaseNotFound if the lease is gone. */
  keepAliveOnce(id: LeaseId | bigint, options?: Call): Promise<number>;
  /** The lease and its keys are gone in `revision`. */
  revoke(id: LeaseId | bigint, options?: Call): Promise<{ id: LeaseId; revision: number }>;
  timeToLive<B extends boolean = false>(id: LeaseId | bigint, options?: Call & Bytes<B> & { keys?: boolean }): Promise<TimeToLive<B>>;
  leases(options?: Call): Promise<LeaseId[]>;

  watch<B extends boolean = false>(key: Key, options?: WatchOptions<B>): Watch<B>;

  session(options?: SessionOptions): Promise<Session>;
  /**
   * A session, a mutex on `name`, `fn(lock)`, then unlock and close the
   * session, even when fn throws. Rejects with the session's loss reason if
   * the lock was lost while fn ran (guard writes in this store with
   * `ifHeld: lock`; fence other resources with `lock.token`).
   */
  withLock<T>(name: Key, options: WithLockOptions, fn: (lock: HeldMutex) => T | PromiseLike<T>): Promise<Awaited<T>>;
  withLock<T>(name: Key, fn: (lock: HeldMutex) => T | PromiseLike<T>): Promise<Awaited<T>>;

  /** Closes the client's open sessions (revoking their leases), then ends every request and watch (Closed). */
  close(): Promise<void>;
}

/**
 * A client for a server's JSON gateway (`http://127.0.0.1:2379`: a real etcd
 * 3.4/3.5 or edge-lease's server), with fetch and web streams only.
 */
export function connect(url: string | URL, options?: ConnectOptions): Client;
/**
 * The same client over an in-process Lessor: no network, the same results
 * and error codes; writes resolve once the lessor's storage has them; a
 * session's `signal` aborts when the lessor expires or revokes its lease.
 * `close()` leaves the lessor open (it is the caller's).
 */
export function connect(lessor: Lessor): Client;

export declare const Client: { readonly prototype: Client };
export declare const Session: { readonly prototype: Session };
export declare const Mutex: { readonly prototype: Mutex };
export declare const Election: { readonly prototype: Election };
export declare const Watch: { readonly prototype: Watch<boolean> };
