// Each etcd method's policy, stated once, as etcd 3.4 applies it (its route
// is the proto's google.api.http annotation: proto/schema.mjs's `routes`):
// - `raft(req)`: the request goes through raft, so --max-request-bytes
//   applies to it (the handler checks where etcd does: after its own
//   validation), and CORRUPT refuses it unless `corrupt` says otherwise;
// - `noSpace(req)`: refused under NOSPACE (etcd's applierV3Capped: what its
//   quota charges, top-level puts);
// - `corrupt(req)`: refused under CORRUPT (what is not served without raft);
// - `deadline(req)`: etcd's answer when the call's deadline (grpc-timeout)
//   passes while it waits, or null when the call goes on and is answered.
// Predicates take the request. A method not listed here takes none of
// these rules; its deadline answer is the default below.
import { Code, GrpcError } from "./errors.mjs";
import { checkSize, txnOps, txnReadOnly } from "./services/common.mjs";

// Measured on etcd 3.4.23 with its fsync slowed: a write proposed to raft
// gives "etcdserver: request timed out" (Unavailable; Alarm's the same text
// as Unknown), a read waiting for its read index, Authenticate, v3lock,
// v3election and every stream the context's own error, which grpc-go makes
// Unknown; what etcd answers without waiting for raft is answered when
// ready, whatever the deadline, and so is a serializable read (no read
// index).
const context = () => new GrpcError(Code.Unknown, "context deadline exceeded");
const timedOut = () => new GrpcError(Code.Unavailable, "etcdserver: request timed out");
const answered = () => null;

const always = () => true;
// etcd's isTxnSerializable: serializable ranges only, at the top level.
const serializable = (txn) => txnOps(txn).every((op) => op.request_range?.serializable);
// A txn of ranges only is served without raft on etcd: no entry, so no
// request limit, and CORRUPT lets it through.
const txnWrites = (txn) => !txnReadOnly(txn);

const write = { raft: always, corrupt: always, deadline: timedOut };
// v3lock and v3election call etcd through its client: the context's error.
const recipe = { corrupt: always, deadline: context };

export const METHODS = {
  "etcdserverpb.KV/Range": { deadline: (req) => (req.serializable ? null : context()) },
  "etcdserverpb.KV/Put": { ...write, noSpace: always },
  "etcdserverpb.KV/DeleteRange": write,
  "etcdserverpb.KV/Txn": {
    raft: txnWrites,
    noSpace: (req) => txnOps(req).some((op) => op.request_put),
    corrupt: txnWrites,
    deadline: (req) => (txnWrites(req) ? timedOut() : serializable(req) ? null : context()),
  },
  "etcdserverpb.KV/Compact": write,
  "etcdserverpb.Lease/LeaseGrant": { ...write, noSpace: always },
  "etcdserverpb.Lease/LeaseRevoke": write,
  "etcdserverpb.Lease/LeaseTimeToLive": { deadline: answered },
  "etcdserverpb.Lease/LeaseLeases": { deadline: answered },
  "etcdserverpb.Cluster/MemberList": { deadline: answered },
  "etcdserverpb.Maintenance/Status": { deadline: answered },
  "etcdserverpb.Maintenance/HashKV": { deadline: answered },
  "etcdserverpb.Maintenance/Defragment": { deadline: answered },
  "etcdserverpb.Maintenance/Alarm": { deadline: () => new GrpcError(Code.Unknown, "etcdserver: request timed out") },
  "etcdserverpb.Auth/Authenticate": { deadline: context },
  "v3lockpb.Lock/Lock": { ...recipe, noSpace: always },
  "v3lockpb.Lock/Unlock": recipe,
  "v3electionpb.Election/Campaign": { ...recipe, noSpace: always },
  "v3electionpb.Election/Proclaim": { ...recipe, noSpace: always },
  "v3electionpb.Election/Resign": recipe,
  // grpc-go's health server ends a Watch whose context is done so.
  "grpc.health.v1.Health/Watch": { deadline: () => new GrpcError(Code.Canceled, "Stream has ended.") },
};

const none = {};
/** The policy of method `name` ("package.Service/Method"). */
export const policyOf = (name) => METHODS[name] ?? none;

/**
 * Method `name`'s request limit: `(request, call)`, which throws etcd's
 * "request is too large" for a request through raft over `max` bytes.
 */
export function requestLimit(name, max) {
  const raft = policyOf(name).raft;
  return raft ? (req, call) => raft(req) && checkSize(call, max) : () => {};
}

/**
 * For method `name`: `(request) => GrpcError`, or null when the call goes
 * on past its deadline; `request` is undefined if none came. The gRPC
 * transport ends the call with it.
 */
export function deadlineAnswer(name, streaming) {
  const answer = deadlineOf(name, streaming);
  // A call whose request never came gets grpc-go's own DeadlineExceeded.
  // (A server stream reads its one request first too; a bidirectional
  // one's handler runs without, and its answer races grpc-go's: this gives
  // the context's.)
  return (req) => (req === undefined && streaming !== "cs" ? new GrpcError(Code.DeadlineExceeded, "context deadline exceeded") : answer(req));
}

function deadlineOf(name, streaming) {
  const listed = METHODS[name]?.deadline;
  if (name === "grpc.health.v1.Health/Watch") return listed;
  if (streaming || !name.startsWith("etcdserverpb.")) return context;
  return listed ?? timedOut;
}
