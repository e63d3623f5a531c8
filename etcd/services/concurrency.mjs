// What etcd 3.4's v3lock and v3election servers run: Go's
// clientv3/concurrency recipes (Session, Mutex, Election, waitDeletes),
// step for step, against the engine instead of etcd's in-process client.
// Their observable side effects are etcd's: a request without a lease
// grants a 60 s lease that nobody keeps alive, keys are `name/<lease %x>`,
// and every error comes back as Unknown (2) with etcd's message, because
// the in-process client turns etcd's status errors into plain Go errors.
// Each step is a call of its own to etcd, made with the caller's context:
// checked as that method is, with the caller's token (`steps`).
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { encodedSize } from "../size.mjs";
import { checkBytes, etcdError } from "./common.mjs";
import { policyOf } from "../methods.mjs";
import { watchRefusal } from "../auth/permissions.mjs";
import { leaseInt64 } from "edge-lease/lease-id";

// concurrency.defaultSessionTTL
const SESSION_TTL = 60;

/** An engine call as the concurrency package sees it: errors are Unknown. */
export function recipe(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof GrpcError) throw new GrpcError(Code.Unknown, e.message);
    // etcd's check of an empty key comes before anything else.
    if (e?.code === "InvalidArgument" && /key must not be empty/.test(e.message)) throw new GrpcError(Code.Unknown, Etcd.keyNotProvided().message);
    const mapped = etcdError(e);
    throw new GrpcError(Code.Unknown, mapped.message, { cause: mapped.cause ?? e });
  }
}

const encoder = new TextEncoder();

/**
 * The caller's rights at each step of a recipe, as etcd's in-process
 * client makes each step a call with the caller's context (its token):
 * `as(method, request)` checks a wire request as that method's own call
 * is checked (etcd/methods.mjs); `watch(key, rangeEnd)` a watch. A refusal is
 * Unknown, as every recipe error; a watch's is what the client's canceled
 * watch gives (FailedPrecondition, etcd's cancel reason). `nobody`: the
 * steps the recipes make with the client's own context (their clean-ups),
 * which carries no token.
 */
export function steps(auth, token) {
  return {
    /** The token alone, as etcd reads it for any write it proposes. */
    token: () => recipe(() => auth.authorize("token", null, token)),
    as: (method, req) => recipe(() => auth.authorize(policyOf(method).auth, req, token)),
    watch(key, rangeEnd) {
      const reason = watchRefusal(auth, token, { key, range_end: rangeEnd });
      if (reason) throw new GrpcError(Code.FailedPrecondition, reason);
    },
    get nobody() {
      return steps(auth, null);
    },
  };
}

/** clientv3's GetPrefixRangeEnd: the first key past every key with prefix `pfx` ("\0" if none is). */
export function prefixEnd(pfx) {
  for (let i = pfx.length - 1; i >= 0; i--) {
    if (pfx[i] < 0xff) {
      const end = pfx.slice(0, i + 1);
      end[i]++;
      return end;
    }
  }
  return Uint8Array.of(0);
}

/**
 * Admits, as etcd admits the txn its in-process client sends, a recipe's
 * txn that compares `key`'s create revision with `rev` and puts it with
 * `value` and `lease`; `failure`: its failure branch reads the key
 * (Campaign, Lock); `owner`: both branches also read the oldest key under
 * that prefix (Mutex.Lock): the caller's token, etcd's request limit, then
 * the caller's rights on the txn (`step`: steps()). Unknown, as every
 * recipe error.
 */
export function admitRecipe(maxRequestBytes, step, { key, value, lease, rev = 0, failure = false, owner = null }) {
  const oldest = owner && { request_range: { key: owner, range_end: prefixEnd(owner), limit: "1", sort_order: "ASCEND", sort_target: "CREATE" } };
  const txn = {
    // (The target's value is a oneof member: written even when 0.)
    compare: [{ key, target: "CREATE", result: "EQUAL", create_revision: String(rev) }],
    success: [{ request_put: { key, value, lease: lease.toString() } }, ...(oldest ? [oldest] : [])],
    failure: failure ? [{ request_range: { key } }, ...(oldest ? [oldest] : [])] : [],
  };
  step.token();
  recipe(() => checkBytes(encodedSize("etcdserverpb.TxnRequest", txn), maxRequestBytes));
  step.as("etcdserverpb.KV/Txn", txn);
}

/**
 * The key `name/suffix` as bytes: names, like etcd's, may be any bytes,
 * not only UTF-8 (the recipes join them with strings: Go's string(bytes)).
 */
export function keyUnder(name, suffix = "") {
  const tail = encoder.encode("/" + suffix);
  const out = new Uint8Array(name.length + tail.length);
  out.set(name);
  out.set(tail, name.length);
  return out;
}


/** The wire's int64 (a decimal string) as a BigInt. */
export const int64 = (v) => BigInt(v ?? 0);

/**
 * concurrency.NewSession(WithLease(lease)) then Orphan(): lease 0 grants a
 * lease of 60 s that is never kept alive (a LeaseGrant of the caller's:
 * `step`); any other id is taken as it is.
 */
export function session(lessor, lease, step) {
  const id = int64(lease);
  if (id !== 0n) return id;
  step?.as("etcdserverpb.Lease/LeaseGrant", { TTL: String(SESSION_TTL) });
  const g = recipe(() => lessor.grant(SESSION_TTL));
  return leaseInt64(g.id);
}

/** What a canceled context gives (the client has gone; nobody reads it). */
export function canceled() {
  return new GrpcError(Code.Canceled, "context canceled");
}

/** Go's v3.WithFirstCreate / WithLastCreate on `pfx`: the oldest or newest key. */
export const firstCreate = (pfx) => ({ key: pfx, prefix: true, sortTarget: "create", sortOrder: "ascend", limit: 1 });
const lastCreate = (pfx, maxCreateRevision) => ({
  key: pfx,
  prefix: true,
  sortTarget: "create",
  sortOrder: "descend",
  limit: 1,
  maxCreateRevision,
});

/**
 * A watch whose batches queue until read: `next()` resolves with the next
 * batch, rejects once `signal` aborts; `cancel()` ends it. A start that was
 * compacted rejects with etcd's error (Go's `wr.Err()`).
 */
export function watchQueue(lessor, request, signal) {
  const queue = [];
  let waiting = null;
  let failed = null;
  let cancelled = false;
  const fail = (e) => {
    failed ??= e;
    if (waiting) {
      waiting.reject(failed);
      waiting = null;
    }
  };
  const onAbort = () => fail(canceled());
  if (signal?.aborted) failed = canceled();
  else signal?.addEventListener("abort", onAbort, { once: true });
  const w = failed
    ? null
    : lessor.watch(request, (batch) => {
        if (cancelled) return;
        if (batch.compactRevision) {
          fail(new GrpcError(Code.Unknown, "etcdserver: mvcc: required revision has been compacted"));
          return;
        }
        if (waiting) {
          waiting.resolve(batch);
          waiting = null;
        } else queue.push(batch);
      });
  return {
    next() {
      if (queue.length) return Promise.resolve(queue.shift());
      if (failed) return Promise.reject(failed);
      return new Promise((resolve, reject) => (waiting = { resolve, reject }));
    },
    cancel() {
      if (cancelled) return;
      cancelled = true;
      signal?.removeEventListener("abort", onAbort);
      w?.cancel();
    },
  };
}

/** concurrency.waitDelete: until `key` is deleted after `rev`. */
async function waitDelete(lessor, key, rev, signal, step) {
  step.watch(key);
  const q = watchQueue(lessor, { key, startRevision: rev }, signal);
  try {
    for (;;) {
      const batch = await q.next();
      if (batch.events.some((e) => e.type === "delete")) return;
    }
  } finally {
    q.cancel();
  }
}

/**
 * concurrency.waitDeletes: until no key under `pfx` was created at or
 * before `maxCreateRev`, waiting on the newest such key each time (not all
 * of them: only the one just before is watched). Returns the last Range's
 * revision (the header etcd's Lock answers with).
 */
export async function waitDeletes(lessor, pfx, maxCreateRev, signal, step) {
  for (;;) {
    if (signal?.aborted) throw canceled();
    step.as("etcdserverpb.KV/Range", { key: pfx, range_end: prefixEnd(pfx) });
    const r = recipe(() => lessor.range(lastCreate(pfx, maxCreateRev)));
    if (r.kvs.length === 0) return r.revision;
    await waitDelete(lessor, r.kvs[0].key, r.revision, signal, step);
  }
}

/** A key's create-revision compare (Go's v3.Compare(v3.CreateRevision(k), "=", rev)). */
export const created = (key, rev) => ({ key, target: "create", result: "=", value: rev });
