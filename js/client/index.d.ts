// Types for edge-lease/client. They need only fetch's and AbortSignal's
// types from the host, so they check with the DOM lib and with @types/node.

import type { ErrorCode, LeaseId, Lessor, Listener, ListenerOptions, RangeOptions } from "../index.js";
import type { Backend, Endpoint } from "./backend.js";
import type { AsyncDisposableIfKnown, Bytes, Call } from "./call.js";
import type { Election, HeldMutex, Mutex, Session, SessionOptions, WithLockOptions } from "./recipes.js";

export type { LeaseId };
export type * from "./backend.js";
export * from "./recipes.js";

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
  /** With several endpoints: the member's URL an Unavailable came from. */
  readonly endpoint?: string;
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

/** Which keys: one key; every key starting with it (`prefix`, `""` for all); from it on (`fromKey`); or [key, rangeEnd). */
export interface KeyRange {
  key: Key;
  prefix?: boolean;
  fromKey?: boolean;
  rangeEnd?: Key;
}

export type SortOrder = NonNullable<RangeOptions["sortOrder"]>;
export type SortTarget = NonNullable<RangeOptions["sortTarget"]>;

/** A Range: the keys, and etcd's options (`RangeOptions`). */
export interface RangeRequest extends KeyRange, RangeOptions {}

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

/** PEM contents (a string or a Buffer, or a list of them), as node:tls takes them: read files with readFileSync. */
export type Pem = string | Uint8Array | readonly (string | Uint8Array)[];

/**
 * TLS for an https:// server in Node (and Deno, Bun), as node:tls's
 * options: the CA that signed the server's certificate (default: Node's
 * trusted CAs), and the client certificate and key a server with
 * `--client-cert-auth` (or `--trusted-ca-file`) requires. A failed handshake
 * rejects with Unauthenticated. In a browser or a Worker, TLS is the
 * platform's: `tls` throws InvalidArgument there.
 */
export interface ClientTlsOptions {
  ca?: Pem;
  cert?: Pem;
  key?: Pem;
  /** The name the server's certificate must carry, when it is not the URL's host. */
  servername?: string;
  /** Default true; false accepts any certificate (tests only: etcdctl's --insecure-skip-tls-verify). */
  rejectUnauthorized?: boolean;
}

/** `fetch` or `tls`, not both: a fetch of your own makes its own connections. */
export type ConnectOptions = GatewayOptions & (
  | { /** The fetch to use (a workerd service binding's, a test's); default globalThis.fetch. */ fetch?: (input: string, init: RequestInit) => Promise<Response>; tls?: undefined }
  | { /** TLS options for https:// URLs (Node, Deno, Bun); watches then go over HTTP streams unless `webSocket` can carry them. */ tls: ClientTlsOptions; fetch?: undefined }
);

export interface GatewayOptions {
  /**
   * Each request's time limit in ms on one member (not watches); default
   * 10000. With several endpoints, a call that may be retried goes on to
   * the next member when one fails or times out, until every member was
   * tried twice and at least this long has passed; so during a leader
   * election it waits out the election plus at most about one timeout.
   * With every member refusing connections it fails after about one
   * timeout; members that do not answer at all cost a timeout per attempt.
   */
  timeout?: number;
  /** Sent with every request (e.g. a Worker's `X-Edge-Lease-Token`, or etcd's `Authorization` token). */
  headers?: Record<string, string>;
  /**
   * Watches (and so lock and election waits) go over a WebSocket where the
   * server upgrades `/v3/watch` (the Worker, on hibernatable sockets that
   * hold no request open; etcd's gateway), else over an HTTP stream, which
   * one attempt per member tells. The runtime's `WebSocket` by default
   * (browsers, workerd, Deno, Bun, Node 22+); on Node 20 pass undici's; or
   * `false` for HTTP streams only. `headers` go with the upgrade only where
   * the constructor takes them (Node's); a browser cannot send them.
   */
  webSocket?: (new (url: string, ...rest: any[]) => unknown) | false;
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
  /**
   * A URL client's members as last learnt (`connect(url)`: one), each with
   * its URL, whether it is believed healthy and the last error it gave;
   * empty for an in-process Lessor or a backend without `endpoints`.
   */
  readonly endpoints: readonly Endpoint[];

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
 *
 * Several endpoints (the members of one etcd cluster): an array, or one
 * string with commas as etcdctl's `--endpoints`. The client then works as
 * etcd's Go clientv3 3.4 does. Calls go round-robin to the members it
 * believes healthy (`client.endpoints`). A call that fails with Unavailable
 * (refused, reset, timed out, "no leader") marks its member unhealthy and
 * is tried on the next member when that is safe: reads, lease grants,
 * keepalives, revokes and time-to-live queries always; a write (put,
 * delete, txn, compact) only if its request never left (connection
 * refused), because a write whose answer was lost may have been applied:
 * that one rejects with Unavailable, its `cause` (the transport's error)
 * and `endpoint`, and whether it happened is yours to find out (read the
 * key, or make the write a txn that can tell). A lock's unlock and an
 * election's resign are the exception: deleting the key twice is harmless,
 * so they move to another member. Watches move to another member and
 * resume after the last revision they delivered (nothing lost or
 * repeated); sessions keep their lease while any member answers their
 * keepalives within the TTL. An unhealthy member is probed with
 * Maintenance/Status until it answers with a leader. etcd's leader
 * election (about 1-2 s with its default flags) is the one pause left.
 *
 * Only list members of one cluster: separate servers (several edge-lease
 * servers) are separate stores, and spreading calls over them loses locks.
 * One URL works as before: no retry, no probe.
 */
export function connect(endpoints: string | URL | readonly (string | URL)[], options?: ConnectOptions): Client;
/**
 * The same client over an in-process Lessor: no network, the same results
 * and error codes; writes resolve once the lessor's storage has them; a
 * session's `signal` aborts when the lessor expires or revokes its lease.
 * `close()` leaves the lessor open (it is the caller's).
 */
export function connect(lessor: Lessor): Client;
/**
 * The same client over a backend of your own (see `Backend`): a transport
 * that is not etcd's JSON gateway, or a test double. The client calls only
 * the interface's methods; `close()` closes the backend.
 */
export function connect(backend: Backend): Client;

export declare const Client: { readonly prototype: Client };
export declare const Watch: { readonly prototype: Watch<boolean> };
