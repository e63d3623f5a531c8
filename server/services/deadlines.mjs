// What etcd 3.4 answers when a call's deadline (grpc-timeout) passes while
// it waits, per method; the gRPC transport ends the call with it. Measured
// on etcd 3.4.23 with its fsync slowed: a write proposed to raft gives
// "etcdserver: request timed out" (Unavailable; Alarm's the same text as
// Unknown), a read waiting for its read index, Authenticate, v3lock,
// v3election and every stream the context's own error, which grpc-go makes
// Unknown; what etcd answers without waiting for raft (Status, MemberList,
// LeaseLeases, LeaseTimeToLive, HashKV, Defragment) is answered when ready,
// whatever the deadline, and so is a serializable read (no read index). A
// call whose request never came gets grpc-go's own DeadlineExceeded. (For
// a stream etcd's answer is a race between the context's error and
// grpc-go's; this gives the first.)
import { Code, GrpcError } from "../errors.mjs";
import { txnOps, txnReadOnly } from "./common.mjs";

const context = new GrpcError(Code.Unknown, "context deadline exceeded");
const noRequest = new GrpcError(Code.DeadlineExceeded, "context deadline exceeded");
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

// etcd's isTxnSerializable: serializable ranges only, at the top level.
const serializable = (txn) => txnOps(txn).every((op) => op.request_range?.serializable);

/**
 * For method `name` ("package.Service/Method"): `(request) => GrpcError`,
 * or null when the call goes on past its deadline; `request` is undefined
 * if none came.
 */
export function deadlineAnswer(name, streaming) {
  const answer = forRequest(name, streaming);
  // (A server stream reads its one request first too; a bidirectional
  // one's handler runs without, and its answer races grpc-go's.)
  return (req) => (req === undefined && streaming !== "cs" ? noRequest : answer(req));
}

// grpc-go's health server ends a Watch whose context is done so.
const streamEnded = new GrpcError(Code.Canceled, "Stream has ended.");

function forRequest(name, streaming) {
  if (name === "grpc.health.v1.Health/Watch") return () => streamEnded;
  if (streaming || !name.startsWith("etcdserverpb.")) return () => context;
  if (ANSWERED.has(name)) return () => null;
  switch (name) {
    case "etcdserverpb.KV/Range":
      return (req) => (req.serializable ? null : context);
    case "etcdserverpb.Auth/Authenticate":
      return () => context;
    case "etcdserverpb.KV/Txn":
      return (req) => (!txnReadOnly(req) ? timedOut : serializable(req) ? null : context);
    case "etcdserverpb.Maintenance/Alarm":
      return () => alarmTimedOut;
    default:
      return () => timedOut;
  }
}
