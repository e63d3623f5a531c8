// The backend interface of edge-lease/client (js/client/backend.mjs): what
// the client needs from a server. `connect(backend)` takes any object with
// these methods, for a transport of your own (a Durable Object stub, a
// message port, a test double); the client's sessions, mutexes, elections
// and watch resumption are written once against it.

import type { RangeOptions } from "../index.js";
import type { LeaseError } from "./index.js";

/** A key as the backend carries it: bytes, numbers, and the lease as 16 lowercase hex digits or null. */
export interface BackendKv {
  key: Uint8Array;
  value: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  lease: string | null;
}

/**
 * The last argument of every call. `signal` aborts it (reject with the
 * LeaseError Aborted, or the signal's LeaseError reason). A backend may
 * ignore the others: `timeout` (ms) is this call's own limit (a session's
 * keepalives set it); `idempotent` marks a delete the recipes may repeat
 * (unlock, resign, withdrawing a key whose creation failed), which a
 * backend over several members may retry on another.
 */
export interface BackendCall {
  signal?: AbortSignal;
  timeout?: number;
  idempotent?: boolean;
}

/** Which keys: [key, rangeEnd), or `key` alone when rangeEnd is null (etcd's encoding: a zero byte means "from key on"). */
export interface BackendRange {
  key: Uint8Array;
  rangeEnd: Uint8Array | null;
}

export interface BackendRangeRequest extends BackendRange, RangeOptions {}

export interface BackendRangeResult {
  kvs: BackendKv[];
  more: boolean;
  count: number;
  revision: number;
}

export interface BackendPutRequest {
  key: Uint8Array;
  value: Uint8Array;
  /** The lease as a signed 64-bit integer; null: no lease. */
  lease: bigint | null;
  prevKv: boolean;
}

export interface BackendPutResult {
  revision: number;
  prev: BackendKv | null;
}

export interface BackendDeleteRequest extends BackendRange {
  prevKv: boolean;
}

export interface BackendDeleteResult {
  deleted: number;
  revision: number;
  prev: BackendKv[];
}

export interface BackendCompare extends BackendRange {
  target: "version" | "create" | "mod" | "value" | "lease";
  result: "=" | "!=" | "<" | ">";
  /** A number for version, create and mod; bytes for value; a bigint (0n: none) for lease. */
  value: number | bigint | Uint8Array;
}

export type BackendOp =
  | { range: BackendRangeRequest }
  | { put: BackendPutRequest }
  | { deleteRange: BackendDeleteRequest }
  | { txn: BackendTxnRequest };

export interface BackendTxnRequest {
  compare: BackendCompare[];
  success: BackendOp[];
  failure: BackendOp[];
}

/** One answer per op of the branch that ran; nested answers carry the txn's revision. */
export type BackendOpResult =
  | { range: BackendRangeResult }
  | { put: BackendPutResult }
  | { deleteRange: BackendDeleteResult }
  | { txn: BackendTxnResult };

export interface BackendTxnResult {
  succeeded: boolean;
  revision: number;
  responses: BackendOpResult[];
}

export interface BackendWatchRequest extends BackendRange {
  /** 0: from now. */
  startRevision: number;
  prevKv: boolean;
  noPut: boolean;
  noDelete: boolean;
}

/**
 * One message of a watch stream. A compacted start is a message with
 * `canceled` and `compactRevision`; a message without events and without
 * `created` is a progress notification (everything up to `revision` sent).
 */
export interface BackendWatchResponse {
  revision: number;
  created?: boolean;
  canceled?: boolean;
  compactRevision?: number;
  cancelReason?: string;
  events: { type: "put" | "delete"; kv: BackendKv; prev: BackendKv | null }[];
}

/** A member as a client over several endpoints sees it. */
export interface Endpoint {
  /** Its client URL, as given (normalised: no trailing slash). */
  readonly url: string;
  /**
   * Believed to serve: no Unavailable from it since its last success (or
   * since a Status probe found it back with a leader). Unhealthy members
   * are tried only after every healthy one.
   */
  readonly healthy: boolean;
  /** The last Unavailable it gave (kept after it recovers), or null. */
  readonly lastError: LeaseError | null;
}

/**
 * What `connect(backend)` needs. Every method returns a promise (watch: an
 * async iterable) and rejects with LeaseErrors: Unavailable for "not
 * reached or not serving now" (the client resumes watches and retries
 * keepalives on it), Closed after close(), Aborted for the caller's signal,
 * and the server's codes (Compacted, LeaseNotFound...).
 */
export interface Backend {
  range(request: BackendRangeRequest, call?: BackendCall): Promise<BackendRangeResult>;
  put(request: BackendPutRequest, call?: BackendCall): Promise<BackendPutResult>;
  deleteRange(request: BackendDeleteRequest, call?: BackendCall): Promise<BackendDeleteResult>;
  txn(request: BackendTxnRequest, call?: BackendCall): Promise<BackendTxnResult>;
  compact(revision: number, call?: BackendCall & { physical?: boolean }): Promise<{ revision: number }>;
  /** `id` null: the server picks one. The id comes back as 16 hex digits. */
  grant(ttl: number, id: bigint | null, call?: BackendCall): Promise<{ id: string; ttl: number }>;
  /** One keepalive: the TTL granted, 0 if the lease is gone. */
  keepAlive(id: bigint, call?: BackendCall): Promise<number>;
  revoke(id: bigint, call?: BackendCall): Promise<{ revision: number }>;
  /** `ttl` -1: the lease is gone. */
  timeToLive(id: bigint, keys: boolean, call?: BackendCall): Promise<{ ttl: number; grantedTtl: number; keys: Uint8Array[] }>;
  /** Every lease's id (16 hex digits). */
  leases(call?: BackendCall): Promise<string[]>;
  /**
   * One watch stream: its first message answers the creation; it ends (or
   * rejects with Unavailable) when the stream drops, and the client opens
   * another from the revision after the last it delivered.
   */
  watch(request: BackendWatchRequest, call?: BackendCall): AsyncIterable<BackendWatchResponse>;
  /** Stops everything in flight (Closed). */
  close(): void | Promise<void>;
  /** Optional: what `client.endpoints` shows. */
  readonly endpoints?: readonly Endpoint[];
  /**
   * Optional, for a backend that knows a lease's fate exactly (in-process):
   * its time left by the backend's own clock (-1 once gone), and `onGone`
   * when it expires or is revoked. A session then ends at that moment.
   */
  trackLease?(id: bigint, onGone: (why: string) => void): { remainingMs(): number; stop(): void };
}
