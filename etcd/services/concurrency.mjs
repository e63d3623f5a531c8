// What etcd 3.4's v3lock and v3election servers run: Go's
// clientv3/concurrency recipes (Session, Mutex, Election, waitDeletes),
// step for step, against the engine instead of etcd's in-process client.
// Their observable side effects are etcd's: a request without a lease
// grants a 60 s lease that nobody keeps alive, keys are `name/<lease %x>`,
// and every error comes back as Unknown (2) with etcd's message, because
// the in-process client turns etcd's status errors into plain Go errors.
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { encodedSize } from "../size.mjs";
import { checkBytes, etcdError } from "./common.mjs";
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
 * Refuses, as etcd's request limit refuses the txn its in-process client
 * sends, a recipe's txn that compares `key`'s create revision with `rev`
 * and puts it with `value` and `lease`; `failure`: its failure branch reads
 * the key (Campaign, Lock); `owner`: both branches also read the oldest key
 * under that prefix (Mutex.Lock). Unknown, as every recipe error.
 */
export function checkRecipe(maxRequestBytes, { key, value, lease, rev = 0, failure = false, owner = null }) {
  const oldest = owner && { request_range: { key: owner, range_end: owner, limit: "1", sort_order: "ASCEND", sort_target: "CREATE" } };
  const txn = {
    // (The target's value is a oneof member: written even when 0.)
    compare: [{ key, target: "CREATE", result: "EQUAL", create_revision: String(rev) }],
    success: [{ request_put: { key, value, lease: lease.toString() } }, ...(oldest ? [oldest] : [])],
    failure: failure ? [{ request_range: { key } }, ...(oldest ? [oldest] : [])] : [],
  };
  recipe(() => checkBytes(encodedSize("etcdserverpb.TxnRequest", txn), maxRequestBytes));
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
 * lease of 60 s that is never kept alive; any other id is taken as it is.
 */
export function session(lessor, lease) {
  const id = int64(lease);
  if (id !== 0n) return id;
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
async function waitDelete(lessor, key, rev, signal) {
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
export async function waitDeletes(lessor, pfx, maxCreateRev, signal) {
  for (;;) {
    if (signal?.aborted) throw canceled();
    const r = recipe(() => lessor.range(lastCreate(pfx, maxCreateRev)));
    if (r.kvs.length === 0) return r.revision;
    await waitDelete(lessor, r.kvs[0].key, r.revision, signal);
  }
}

/** A key's create-revision compare (Go's v3.Compare(v3.CreateRevision(k), "=", rev)). */
export const created = (key, rev) => ({ key, target: "create", result: "=", value: rev });
