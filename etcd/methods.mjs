// Each etcd method's policy, stated once, as etcd 3.4 applies it (its route
// is the proto's google.api.http annotation: proto/schema.mjs's `routes`):
// - `raft(req)`: the request goes through raft, so --max-request-bytes
//   applies to it (the handler checks where etcd does: after its own
//   validation), and CORRUPT refuses it unless `corrupt` says otherwise;
// - `noSpace(req)`: refused under NOSPACE (etcd's applierV3Capped: what its
//   quota charges, top-level puts);
// - `corrupt(req)`: refused under CORRUPT (what is not served without raft);
// - `deadline(req)`: etcd's answer when the call's deadline (grpc-timeout)
//   passes while it waits, or null when the call goes on and is answered;
// - `auth`: what etcd asks of the caller (etcd/auth/auth.mjs's authorize):
//   absent, nothing, its token is not even read; "token", the token is
//   read (one that names nobody is refused) and nothing more; "admin", the
//   root role; "token-unmapped" and "admin-unmapped", the same with the
//   auth store's errors as etcd's maintenance server hands them on
//   (Unknown, "auth: ..."); or a
//   check of the request's keys (etcd/auth/permissions.mjs). Applied
//   before the handler runs (services/index.mjs), except where `admitted`:
//   there the handler's admission step (below) applies it after the
//   request's own checks, where etcd does. Watch checks each create
//   (services/watch.mjs), and v3lock and v3election each step of their
//   recipes as the method it is (services/concurrency.mjs).
// Predicates take the request. A method not listed here takes none of
// these rules; its deadline answer is the default below.
import { Code, GrpcError } from "./errors.mjs";
import { checkSize, txnOps, txnReadOnly } from "./services/common.mjs";
import { deletePerms, putPerms, rangePerms, revokePerms, roleGetPerms, timeToLivePerms, txnPerms, userGetPerms } from "./auth/permissions.mjs";

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

// Every write through raft reads the token as etcd proposes it.
const write = { raft: always, corrupt: always, deadline: timedOut, auth: "token" };
// v3lock and v3election call etcd through its client: the context's error.
const recipe = { corrupt: always, deadline: context };
// etcd's auth applier: the user's keys, checked after the request's own checks.
const keys = (check) => ({ auth: check, admitted: true });
// Raft requests that only root may make (etcd's needAdminPermission).
const admin = { auth: "admin" };

export const METHODS = {
  "etcdserverpb.KV/Range": { deadline: (req) => (req.serializable ? null : context()), ...keys(rangePerms) },
  "etcdserverpb.KV/Put": { ...write, noSpace: always, ...keys(putPerms) },
  "etcdserverpb.KV/DeleteRange": { ...write, ...keys(deletePerms) },
  "etcdserverpb.KV/Txn": {
    raft: txnWrites,
    noSpace: (req) => txnOps(req).some((op) => op.request_put),
    corrupt: txnWrites,
    deadline: (req) => (txnWrites(req) ? timedOut() : serializable(req) ? null : context()),
    ...keys(txnPerms),
  },
  // (Anyone may compact, and grant a lease, as on etcd 3.4.)
  "etcdserverpb.KV/Compact": { ...write, admitted: true },
  "etcdserverpb.Lease/LeaseGrant": { ...write, noSpace: always, admitted: true },
  "etcdserverpb.Lease/LeaseRevoke": { ...write, ...keys(revokePerms) },
  "etcdserverpb.Lease/LeaseTimeToLive": { deadline: answered, auth: timeToLivePerms },
  "etcdserverpb.Lease/LeaseLeases": { deadline: answered },
  "etcdserverpb.Cluster/MemberList": { deadline: answered },
  "etcdserverpb.Cluster/MemberAdd": admin,
  "etcdserverpb.Cluster/MemberRemove": admin,
  "etcdserverpb.Cluster/MemberUpdate": admin,
  "etcdserverpb.Cluster/MemberPromote": admin,
  "etcdserverpb.Maintenance/Status": { deadline: answered },
  "etcdserverpb.Maintenance/HashKV": { deadline: answered, auth: "admin-unmapped" },
  "etcdserverpb.Maintenance/Defragment": { deadline: answered, auth: "admin-unmapped" },
  "etcdserverpb.Maintenance/Snapshot": { auth: "admin-unmapped" },
  "etcdserverpb.Maintenance/Alarm": { deadline: () => new GrpcError(Code.Unknown, "etcdserver: request timed out"), auth: "token-unmapped" },
  // Authenticate reads the token itself, once the password is checked.
  "etcdserverpb.Auth/Authenticate": { deadline: context },
  "etcdserverpb.Auth/AuthEnable": admin,
  "etcdserverpb.Auth/AuthDisable": admin,
  "etcdserverpb.Auth/UserAdd": admin,
  "etcdserverpb.Auth/UserDelete": admin,
  "etcdserverpb.Auth/UserChangePassword": admin,
  "etcdserverpb.Auth/UserGrantRole": admin,
  "etcdserverpb.Auth/UserRevokeRole": admin,
  "etcdserverpb.Auth/UserList": admin,
  "etcdserverpb.Auth/RoleAdd": admin,
  "etcdserverpb.Auth/RoleGrantPermission": admin,
  "etcdserverpb.Auth/RoleRevokePermission": admin,
  "etcdserverpb.Auth/RoleDelete": admin,
  "etcdserverpb.Auth/RoleList": admin,
  "etcdserverpb.Auth/UserGet": { auth: userGetPerms },
  "etcdserverpb.Auth/RoleGet": { auth: roleGetPerms },
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
 * Method `name`'s admission, for the handler to run once the request's own
 * checks pass: `(request, call)`, which reads the caller's token (`call.token`)
 * as etcd does when it proposes a write, throws etcd's "request is too
 * large" for a request through raft over `max` bytes, then applies the
 * method's `auth` if `admitted` (with `auth`, etcd/auth/auth.mjs).
 */
export function admission(name, max, auth = null) {
  const { raft, auth: check, admitted } = policyOf(name);
  const limit = raft ? (req, call) => raft(req) && checkSize(call, max) : () => {};
  if (!admitted || !auth) return limit;
  return (req, call) => {
    const token = call?.token;
    if (!auth.enabled && (token === undefined || token === null)) return limit(req, call);
    auth.identify(token);
    limit(req, call);
    auth.authorize(check, req, token);
  };
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
