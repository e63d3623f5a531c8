// What etcd 3.4 answers when a call's deadline (grpc-timeout) passes while
// it waits, per method; the gRPC transport ends the call with it. Measured
// on etcd 3.4.23 with its fsync slowed: a write proposed to raft gives
// "etcdserver: request timed out" (Unavailable; Alarm's the same text as
// Unknown), a read waiting for its read index, Authenticate, v3lock,
// v3election and every stream the context's own error, which grpc-go makes
// Unknown; what etcd answers without waiting for raft (Status, MemberList,
// LeaseLeases, LeaseTimeToLive, HashKV, Defragment) is answered when ready,
// whatever the deadline. (For a stream etcd's answer is a race between
// that and grpc-go's DeadlineExceeded; this gives the first.)
import { Code, GrpcError } from "../errors.mjs";

const context = new GrpcError(Code.Unknown, "context deadline exceeded");
const timedOut = new GrpcError(Code.Unavailable, "etcdserver: request timed out");
const alarmTimedOut = new GrpcError(Code.Unknown, "etcdserver: request timed out");

const ANSWERED = new Set([
  "etcdserverpb.Maintenance/Status",
  "etcdserverpb.Maintenance/HashKV",
  "etcdserverpb.Maintenance/Defragment",
  "etcdserverpb.Cluster/MemberList",
  "etcdserverpb.Lease/LeaseLeases",
  "etcdserverpb.Lease/LeaseTimeToLive",
]);

/** A Txn with no put or delete, at any depth, is a read (etcd's isTxnReadonly). */
function readOnly(txn) {
  const ops = [...(txn?.success ?? []), ...(txn?.failure ?? [])];
  return ops.every((op) => op.request_range || (op.request_txn && readOnly(op.request_txn)));
}

/**
 * For method `name` ("package.Service/Method"): `(request) => GrpcError`,
 * or null when the call goes on past its deadline. `request` is undefined
 * if none came.
 */
export function deadlineAnswer(name, streaming) {
  if (streaming || !name.startsWith("etcdserverpb.")) return () => context;
  if (ANSWERED.has(name)) return () => null;
  switch (name) {
    case "etcdserverpb.KV/Range":
    case "etcdserverpb.Auth/Authenticate":
      return () => context;
    case "etcdserverpb.KV/Txn":
      return (req) => (req && readOnly(req) ? context : timedOut);
    case "etcdserverpb.Maintenance/Alarm":
      return () => alarmTimedOut;
    default:
      return () => timedOut;
  }
}
