// Who may touch which keys, as etcd 3.4's auth store answers it
// (auth/range_perm_cache.go, store.go's isOpPermitted and
// IsAdminPermitted), and each method's key checks (etcdserver/
// apply_auth.go, v3_server.go, v3rpc/watch.go), which etcd/methods.mjs
// names per method.
//
// A user's permissions are intervals of keys, one tree to read and one to
// write (etcd/interval-tree.mjs), merged from its roles. Keys compare as bytes,
// except that an empty key stands for "past every key" (etcd's
// BytesAffineComparable): a
// permission whose range_end is "\0" reaches every key from its key on. A
// single key is the interval [key, key + "\0"). A point check asks whether
// any interval meets the point; a range check whether the intervals that
// meet the range cover it without a gap (etcd's interval tree's Intersects
// and Contains, whose answers for an empty or inverted range depend on the
// tree's shape).
import { Etcd } from "../errors.mjs";
import { IntervalTree } from "../interval-tree.mjs";

const EMPTY = new Uint8Array(0);
const ZERO = Uint8Array.of(0);

function bytesCompare(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** etcd's affine order: the empty key is past every other. */
export function affine(a, b) {
  if (a.length === 0) return b.length === 0 ? 0 : 1;
  if (b.length === 0) return -1;
  return bytesCompare(a, b);
}

const point = (key) => {
  const end = new Uint8Array(key.length + 1);
  end.set(key);
  return { begin: key, end };
};

/**
 * A user's merged permissions (etcd's getMergedPerms): `roles` in the
 * user's order, each role's permissions in its order, inserted in that
 * order into two interval trees, { read, write }, as etcd inserts them.
 */
export function mergedPerms(roleNames, roleOf) {
  const read = new IntervalTree(affine);
  const write = new IntervalTree(affine);
  for (const name of roleNames) {
    const role = roleOf(name);
    if (!role) continue;
    for (const p of role.perms) {
      const end = p.rangeEnd.length === 1 && p.rangeEnd[0] === 0 ? EMPTY : p.rangeEnd;
      const ivl = p.rangeEnd.length ? { begin: p.key, end } : point(p.key);
      // (authpb's READ 0, WRITE 1, READWRITE 2; any other grants nothing.)
      if (p.type === 0 || p.type === 2) read.insert(ivl.begin, ivl.end);
      if (p.type === 1 || p.type === 2) write.insert(ivl.begin, ivl.end);
    }
  }
  return { read, write };
}

/** etcd's isRangeOpPermitted on merged `perms`: a point when `rangeEnd` is empty, else a range ("\0": to the end). */
export function permitted(perms, key, rangeEnd, type) {
  const tree = type === "READ" ? perms.read : perms.write;
  if (!rangeEnd || rangeEnd.length === 0) return tree.intersects(point(key));
  const end = rangeEnd.length === 1 && rangeEnd[0] === 0 ? EMPTY : rangeEnd;
  return tree.contains({ begin: key, end });
}

const bytes = (b) => (b instanceof Uint8Array ? b : EMPTY);

// ---- each method's key checks (etcd/methods.mjs names them) -----------
// Each takes `auth` (auth.mjs: read, write, leaseKeys, ... each throwing
// etcd's error), `caller()` (who the call's token names, read when the
// check needs it) and the request.

/** Range (and a read-only Txn's ranges): read on the range. */
export function rangePerms(auth, caller, req) {
  auth.read(caller(), bytes(req.key), bytes(req.range_end));
}

/**
 * Put: write on the key; write on every key already on the lease (who
 * cannot write them could not revoke it); read on the key for prev_kv.
 */
export function putPerms(auth, caller, req) {
  const who = caller();
  auth.write(who, bytes(req.key));
  auth.leaseKeys(who, req.lease, "write");
  if (req.prev_kv) auth.read(who, bytes(req.key));
}

/** DeleteRange: write on the range; read on it for prev_kv. */
export function deletePerms(auth, caller, req) {
  const who = caller();
  auth.write(who, bytes(req.key), bytes(req.range_end));
  if (req.prev_kv) auth.read(who, bytes(req.key), bytes(req.range_end));
}

/**
 * Txn: read on each compare, then each op of both branches (etcd's
 * checkTxnAuth). Two checks more than etcd 3.4.23 makes, each closing a
 * way to read or write what the user may not: a nested txn is checked as
 * the top one is (3.4.23 lets its ops through unchecked), and a put's
 * prev_kv needs read on its key, as a Put's does.
 */
export function txnPerms(auth, caller, txn) {
  const who = caller();
  const walk = (t) => {
    for (const c of t.compare ?? []) auth.read(who, bytes(c.key), bytes(c.range_end));
    for (const op of [...(t.success ?? []), ...(t.failure ?? [])]) {
      if (op.request_range) auth.read(who, bytes(op.request_range.key), bytes(op.request_range.range_end));
      else if (op.request_put) {
        auth.write(who, bytes(op.request_put.key));
        if (op.request_put.prev_kv) auth.read(who, bytes(op.request_put.key));
      } else if (op.request_delete_range) {
        const d = op.request_delete_range;
        if (d.prev_kv) auth.read(who, bytes(d.key), bytes(d.range_end));
        auth.write(who, bytes(d.key), bytes(d.range_end));
      } else if (op.request_txn) walk(op.request_txn);
    }
  };
  walk(txn);
}

/** LeaseRevoke: write on every key on the lease. */
export function revokePerms(auth, caller, req) {
  auth.leaseKeys(caller(), req.ID, "write");
}

/**
 * LeaseTimeToLive with keys: root, or read on every key on the lease.
 * etcd 3.4.23 checks nothing here and so tells anyone the names of keys
 * they may not read; this is the check etcd 3.4.26 and 3.5.9 added
 * (CVE-2023-32082).
 */
export function timeToLivePerms(auth, caller, req) {
  if (!req.keys || !auth.enabled) return;
  const who = caller();
  if (who === null) throw Etcd.userEmpty();
  if (auth.isAdmin(who)) return;
  auth.leaseKeys(who, req.ID, "read");
}

/**
 * etcd's UserGet: root, or the user itself (a call with no token asks for
 * the user "").
 */
export function userGetPerms(auth, caller, req) {
  const who = caller();
  try {
    auth.admin(who);
  } catch (e) {
    if ((req.name ?? "") !== (who?.name ?? "")) throw e;
  }
}

/** etcd's RoleGet: root, or a user with that role. */
export function roleGetPerms(auth, caller, req) {
  const who = caller();
  try {
    auth.admin(who);
  } catch (e) {
    if (!(who && auth.store.user(who.name)?.roles.includes(req.role ?? ""))) throw e;
  }
}

/**
 * A watch's create request: read, with etcd's own reading of the range (a
 * range_end of "\0", every key from `key` on, is checked as the key alone).
 * The cancel reason etcd gives for a refusal, or null.
 */
export function watchRefusal(auth, token, creq) {
  if (!auth.enabled && (token === undefined || token === null)) return null;
  let key = bytes(creq.key);
  if (key.length === 0) key = ZERO;
  const end = bytes(creq.range_end);
  try {
    auth.read(auth.identify(token), key, end.length === 1 && end[0] === 0 ? EMPTY : end);
    return null;
  } catch (e) {
    // (The status error as grpc-go prints it; etcd names three, any other
    // refusal is "permission denied".)
    const code = WATCH_CODES[e.message];
    return code ? `rpc error: code = ${code} desc = ${e.message}` : `rpc error: code = PermissionDenied desc = ${Etcd.permissionDenied().message}`;
  }
}
const WATCH_CODES = {
  [Etcd.invalidAuthToken().message]: "Unauthenticated",
  [Etcd.userEmpty().message]: "InvalidArgument",
  [Etcd.authOldRevision().message]: "InvalidArgument",
};
