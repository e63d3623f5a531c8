// The client's errors are the package's LeaseError (one class for everything
// edge-lease throws), with the engine's codes plus the ones a network adds:
// Unavailable (could not reach the server, or it is not serving; retrying
// may help), Aborted (the caller's signal), Unimplemented (the server does
// not have the feature), NotLeader (an election's proclaim after losing),
// NotHeld (a mutex's assertHeld() when it is not locked), Unauthenticated
// (etcd's "invalid auth token", a Worker's token missing), PermissionDenied
// (etcd's "permission denied").
// Errors from a server carry `grpcCode` and, over HTTP, `status`.

import { LeaseError } from "../errors.js"; // the package's one error class (no wasm in the client's module graph)

export { LeaseError };

export function invalid(message) {
  return new LeaseError("InvalidArgument", message);
}

export function aborted(signal) {
  const reason = signal?.reason;
  if (reason instanceof LeaseError) return reason;
  return new LeaseError("Aborted", reason?.message ? `aborted: ${reason.message}` : "aborted", { cause: reason });
}

export function closed() {
  return new LeaseError("Closed", "the client is closed");
}

export function unavailable(message, cause) {
  return new LeaseError("Unavailable", message, cause === undefined ? undefined : { cause });
}

export function compacted(compactRevision) {
  return new LeaseError(
    "Compacted",
    `required revision has been compacted (compacted at ${compactRevision})`,
    { compactRevision },
  );
}

// etcd's messages (rpctypes/error.go), which clients must match exactly:
// the code alone is not enough (OutOfRange is both a too large TTL and a
// compacted revision).
const BY_MESSAGE = [
  ["requested lease not found", "LeaseNotFound"],
  ["lease already exists", "LeaseExists"],
  ["too large lease TTL", "LeaseTtlTooLarge"],
  ["required revision has been compacted", "Compacted"],
  ["required revision is a future revision", "FutureRevision"],
  ["duplicate key given in txn request", "DuplicateKey"],
  ["too many operations in txn request", "TooManyOps"],
  ["database space exceeded", "NoSpace"],
  ["etcdserver: key not found", "KeyNotFound"],
  ["election: not leader", "NotLeader"],
];

// gRPC codes that mean "not now" rather than "never".
const UNAVAILABLE = new Set([1, 4, 10, 14]); // Canceled, DeadlineExceeded, Aborted, Unavailable
// etcd's transient server-side errors, whatever code they come with.
const TRANSIENT = ["no leader", "request timed out", "leader changed", "not capable", "too many requests", "server stopped", "unhealthy cluster", "raft proposal dropped"];

/** An error answer of etcd's gateway (`{error, message, code}`) as a LeaseError. */
export function serverError(body, status) {
  const inner = body && typeof body.error === "object" && body.error !== null ? body.error : body; // streaming errors nest
  const message = String(inner?.message ?? inner?.error ?? `HTTP ${status}`);
  const grpcCode = Number(inner?.code ?? inner?.grpc_code ?? -1);
  const extra = { grpcCode, status };
  for (const [text, code] of BY_MESSAGE) {
    if (message.includes(text)) return new LeaseError(code, message, extra);
  }
  if (UNAVAILABLE.has(grpcCode) || TRANSIENT.some((t) => message.includes(t)) || status === 503) {
    return new LeaseError("Unavailable", message, extra);
  }
  if (grpcCode === 12 || status === 501) return new LeaseError("Unimplemented", message, extra);
  // etcd's auth: a token that names nobody (or a Worker's token missing), a user without the right.
  if (grpcCode === 16 || status === 401) return new LeaseError("Unauthenticated", message, extra);
  if (grpcCode === 7 || status === 403) return new LeaseError("PermissionDenied", message, extra);
  if (grpcCode === 3 || grpcCode === 11) return new LeaseError("InvalidArgument", message, extra);
  return new LeaseError("Internal", message, extra);
}

/** Wraps anything an engine or a fetch threw as a LeaseError. */
export function asLeaseError(e) {
  if (e instanceof LeaseError) return e;
  if (e && typeof e.code === "string") return new LeaseError(e.code, e.message, { cause: e });
  return new LeaseError("Internal", `edge-lease client: ${e?.message ?? e}`, { cause: e });
}
