// The backend interface: what the client needs from a server, in one place.
// Three implementations: gateway.mjs (etcd's JSON gateway over fetch, for
// one real etcd member or edge-lease's server), endpoints.mjs (several
// members, each a gateway.mjs, with failover) and local.mjs (an in-process
// Lessor). index.d.ts types the interface as `Backend` (backend.d.ts).
// Everything above it (client.mjs, watch.mjs, session.mjs, mutex.mjs,
// election.mjs) is written once against this interface.
//
// Keys and values are Uint8Array here; revisions, versions, counts and TTLs
// are numbers; lease ids go in as signed 64-bit bigints and come out as 16
// lowercase hex digits (null for "no lease"). Every method returns a promise
// and takes `{ signal }` last; errors are LeaseErrors (errors.mjs), with
// Unavailable for "not reached or not serving now". The last argument may
// also carry `timeout` (ms: this call's limit; the session's keepalives set
// it) and `idempotent: true` (a delete the recipes may repeat: unlock,
// resign, withdrawal; endpoints.mjs retries it on another member), which a
// backend may ignore.
//
// @typedef {{ key: Uint8Array, value: Uint8Array, createRevision: number,
//   modRevision: number, version: number, lease: string | null }} Kv
//
// @typedef {{ key: Uint8Array, rangeEnd: Uint8Array | null, revision?: number,
//   limit?: number, sortOrder?: "none" | "ascend" | "descend",
//   sortTarget?: "key" | "version" | "create" | "mod" | "value",
//   keysOnly?: boolean, countOnly?: boolean, minModRevision?: number,
//   maxModRevision?: number, minCreateRevision?: number,
//   maxCreateRevision?: number }} RangeRequest
//
// range(RangeRequest) → { kvs: Kv[], more: boolean, count: number, revision: number }
// put({ key, value, lease: bigint | null, prevKv }) → { revision, prev: Kv | null }
// deleteRange({ key, rangeEnd, prevKv }) → { deleted: number, revision, prev: Kv[] }
// txn({ compare, success, failure }) → { succeeded, revision, responses }
//   compare: { key, rangeEnd, target: "version"|"create"|"mod"|"value"|"lease",
//              result: "="|"!="|"<"|">", value: number | bigint | Uint8Array }
//   op: { range: RangeRequest } | { put: PutRequest } | { deleteRange: DeleteRequest } | { txn: TxnRequest }
//   response: { range: … } | { put: … } | { deleteRange: … } | { txn: … } (the results above)
// compact(revision, { physical }) → { revision }
// grant(ttl, id: bigint | null) → { id: hex, ttl }
// keepAlive(id: bigint) → the granted TTL, 0 if the lease is gone
// revoke(id: bigint) → { revision }
// timeToLive(id: bigint, keys: boolean) → { ttl (-1: gone), grantedTtl, keys: Uint8Array[] }
// leases() → hex[]
// watch({ key, rangeEnd, startRevision, prevKv, noPut, noDelete }, { signal })
//   → an async iterable of { revision, created?, canceled?, compactRevision?,
//     events: { type: "put" | "delete", kv: Kv, prev: Kv | null }[] }: one
//     attempt, which ends (or throws Unavailable) when the stream drops; the
//     client resumes it (watch.mjs). A compacted start is a response with
//     `canceled` and `compactRevision`.
// close() → stops everything in flight (Closed)
//
// Optional:
// endpoints → { url, healthy, lastError }[]: what `client.endpoints` shows.
// status() → { member, leader ("0": none), raftTerm }: Maintenance/Status.
// trackLease(id: bigint, onGone(why)) → { remainingMs(), stop() }: for a
//   backend that knows a lease's fate exactly (local.mjs): its time left by
//   the backend's own clock (-1 once gone), and a call when it expires or is
//   revoked. A session then ends at that moment instead of at the deadline
//   it estimates from its keepalives.

export const BACKEND_METHODS = [
  "range",
  "put",
  "deleteRange",
  "txn",
  "compact",
  "grant",
  "keepAlive",
  "revoke",
  "timeToLive",
  "leases",
  "watch",
  "close",
];

/** Whether `x` implements the interface (for `connect(backend)`). */
export function isBackend(x) {
  return x !== null && typeof x === "object" && BACKEND_METHODS.every((m) => typeof x[m] === "function");
}
