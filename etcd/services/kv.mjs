// etcdserverpb.KV over the engine's etcd-shaped calls (range, txn,
// deleteRange, compact): this module checks requests as etcd's v3rpc layer
// does (key.go: which error comes first matters to clients) and translates
// between wire messages and the engine's. Keys are any bytes.
import { Etcd } from "../errors.mjs";
import { bytesOf, engine, etcdError, int, keyOf, kvOut, leaseIn, txnOps } from "./common.mjs";
import { admission } from "../methods.mjs";
import { pagedRange } from "./paged-range.mjs";
import { IntervalTree } from "../interval-tree.mjs";
import { affine } from "../auth/permissions.mjs";


const SORT_ORDER = { NONE: "none", ASCEND: "ascend", DESCEND: "descend" };
const SORT_TARGET = { KEY: "key", VERSION: "version", CREATE: "create", MOD: "mod", VALUE: "value" };
// Compare.target -> the engine's target and the target_union field it reads.
const TARGET = { VERSION: ["version", "version"], CREATE: ["create", "create_revision"], MOD: ["mod", "mod_revision"], VALUE: ["value", "value"], LEASE: ["lease", "lease"] };
const RESULT = { EQUAL: "=", NOT_EQUAL: "!=", GREATER: ">", LESS: "<" };

const rangeEndOf = (b) => {
  const end = bytesOf(b);
  return end.length ? end : undefined;
};

/** A RangeRequest (already checked) -> the engine's range request. */
function rangeIn(req) {
  let sortOrder = SORT_ORDER[req.sort_order ?? "NONE"];
  let sortTarget = SORT_TARGET[req.sort_target ?? "KEY"];
  if (sortTarget === undefined) throw Etcd.invalidSortOption();
  // etcd 3.4 sorts by neither ASCEND nor DESCEND for an unknown order:
  // keys come in key order.
  if (sortOrder === undefined) [sortOrder, sortTarget] = ["none", "key"];
  return {
    key: bytesOf(req.key),
    rangeEnd: rangeEndOf(req.range_end),
    // etcd reads the current revision for any revision <= 0 (the engine
    // does too, and still checks a txn's negative one against the
    // compaction point, as etcd does), and ignores a limit <= 0.
    revision: int(req.revision),
    // (and no range holds 2^31 keys: the engine's limit is cut to 32 bits
    // in wasm, so larger ones would wrap)
    limit: Math.min(Math.max(0, int(req.limit)), 2 ** 31 - 1),
    sortOrder,
    sortTarget,
    keysOnly: Boolean(req.keys_only),
    countOnly: Boolean(req.count_only),
    minModRevision: int(req.min_mod_revision),
    maxModRevision: int(req.max_mod_revision),
    minCreateRevision: int(req.min_create_revision),
    maxCreateRevision: int(req.max_create_revision),
  };
}

const byteOrder = (a, b) => {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};
// etcd's Range rules (equal values keep key order either way; with a target
// but no order, only the first limit + 1 keys are sorted) are the engine's.
const range = (lessor, q) => lessor.range(q);

const putIn = (req) => ({
  key: bytesOf(req.key),
  value: bytesOf(req.value),
  lease: leaseIn(req.lease),
  prevKv: Boolean(req.prev_kv),
  ignoreValue: Boolean(req.ignore_value),
  ignoreLease: Boolean(req.ignore_lease),
});

const deleteIn = (req) => ({ key: bytesOf(req.key), rangeEnd: rangeEndOf(req.range_end), prevKv: Boolean(req.prev_kv) });

// Compares etcd evaluates to the same answer whatever the keys hold.
const NEVER = { target: "version", result: "<", value: 0 }; // versions are >= 0, and 0 for a missing key
const ANY_KEY = { target: "create", result: ">", value: 0 }; // every key of the range exists (non-empty range)

/** A Compare -> the engine's, or null when it always holds (etcd's compareKV). */
function compareIn(c) {
  const key = bytesOf(c.key);
  const rangeEnd = rangeEndOf(c.range_end);
  const target = TARGET[c.target ?? "VERSION"];
  const result = RESULT[c.result ?? "EQUAL"];
  if (!target) {
    // An unknown target compares nothing: result 0 for every key.
    return result === "=" || result === undefined ? null : { key, rangeEnd, ...NEVER };
  }
  if (result === undefined) {
    // An unknown result holds, except that a VALUE compare fails on a
    // range with no keys.
    return target[0] === "value" ? { key, rangeEnd, ...ANY_KEY } : null;
  }
  const raw = c[target[1]];
  let value;
  if (target[0] === "value") value = bytesOf(raw);
  else if (target[0] === "lease") value = BigInt(raw ?? 0);
  else value = int(raw);
  return { key, rangeEnd, target: target[0], result, value };
}

/**
 * etcd's checkTxnRequest: op counts (compares, and ops per branch, nested
 * transactions sharing what is left), then keys and put flags, then an op
 * with nothing in it ("key not found"), in etcd's order.
 */
function checkTxn(req, maxOps) {
  const compare = req.compare ?? [];
  const success = req.success ?? [];
  const failure = req.failure ?? [];
  const opc = Math.max(compare.length, success.length, failure.length);
  if (opc > maxOps) throw Etcd.tooManyOps();
  for (const c of compare) keyOf(c.key);
  for (const op of txnOps(req)) {
    if (op.request_range) keyOf(op.request_range.key);
    else if (op.request_put) checkPut(op.request_put);
    else if (op.request_delete_range) keyOf(op.request_delete_range.key);
    else if (op.request_txn) checkTxn(op.request_txn, maxOps - opc);
    else throw Etcd.keyNotFound();
  }
}

// etcd's checkIntervals, on one branch of a Txn (and its nested txns):
// no key put twice, nor put and deleted, where both could run (a nested
// txn's two branches exclude each other). Its puts and deletes, for the
// branch above.
const affinePoint = (k) => {
  const end = new Uint8Array(k.length + 1);
  end.set(k);
  return { begin: k, end };
};
const EVERY_KEY = { begin: Uint8Array.of(0), end: new Uint8Array(0) };
// (windows-1252 as WHATWG decodes it gives each byte its own character.)
const LATIN1 = new TextDecoder("latin1");
const keyString = (k) => LATIN1.decode(k);
function checkIntervals(ops) {
  const dels = new IntervalTree(affine);
  for (const op of ops) {
    const d = op.request_delete_range;
    if (!d) continue;
    const key = bytesOf(d.key);
    const end = bytesOf(d.range_end);
    const ivl = end.length ? { begin: key, end } : affinePoint(key);
    dels.insert(ivl.begin, ivl.end);
  }
  // (Keys by their bytes as a string.)
  const puts = new Map();
  const put = (s, key) => {
    if (puts.has(s) || dels.intersects(affinePoint(key))) throw Etcd.duplicateKey();
    puts.set(s, key);
  };
  for (const op of ops) {
    if (!op.request_txn) continue;
    const then = checkIntervals(op.request_txn.success ?? []);
    const other = checkIntervals(op.request_txn.failure ?? []);
    for (const [s, key] of then.puts) put(s, key);
    for (const [s, key] of other.puts) {
      if (!then.puts.has(s)) put(s, key);
      else if (dels.intersects(affinePoint(key))) throw Etcd.duplicateKey();
    }
    for (const d of [then.dels, other.dels]) for (const ivl of d.stab(EVERY_KEY)) dels.insert(ivl.begin, ivl.end);
  }
  for (const op of ops) {
    if (!op.request_put) continue;
    const key = bytesOf(op.request_put.key);
    put(keyString(key), key);
  }
  return { puts, dels };
}

function checkPut(req) {
  keyOf(req.key);
  if (req.ignore_value && bytesOf(req.value).length) throw Etcd.valueProvided();
  if (req.ignore_lease && leaseIn(req.lease) !== null) throw Etcd.leaseProvided();
}

/** A checked TxnRequest -> the engine's txn request. */
function txnIn(req) {
  const op = (o) => {
    if (o.request_range) return { range: rangeIn(o.request_range) };
    if (o.request_put) return { put: putIn(o.request_put) };
    if (o.request_delete_range) return { deleteRange: deleteIn(o.request_delete_range) };
    return { txn: txnIn(o.request_txn) };
  };
  return {
    compare: (req.compare ?? []).map(compareIn).filter(Boolean),
    success: (req.success ?? []).map(op),
    failure: (req.failure ?? []).map(op),
  };
}

const rangeOut = (r, header) => {
  const resp = { header, kvs: r.kvs.map((e) => kvOut(e)), count: r.count };
  if (r.more) resp.more = true;
  return resp;
};
const deleteOut = (r, header, prevKv) => {
  const resp = { header, deleted: r.deleted };
  if (prevKv) resp.prev_kvs = r.prevKvs.map((e) => kvOut(e));
  return resp;
};
const putOut = (r, header) => (r.prevKv ? { header, prev_kv: kvOut(r.prevKv) } : { header });

// Sub-responses carry only their revision (etcd fills the rest of the
// header for the top-level response alone).
function txnOut(r, header, req) {
  const ops = r.succeeded ? (req.success ?? []) : (req.failure ?? []);
  return {
    header,
    succeeded: r.succeeded,
    responses: r.responses.map((x, i) => {
      const h = { revision: x.range?.revision ?? x.put?.revision ?? x.deleteRange?.revision ?? x.txn?.revision ?? 0 };
      if (x.range) return { response_range: rangeOut(x.range, h) };
      if (x.put) return { response_put: putOut(x.put, h) };
      if (x.deleteRange) return { response_delete_range: deleteOut(x.deleteRange, h, ops[i].request_delete_range.prev_kv) };
      return { response_txn: txnOut(x.txn, h, ops[i].request_txn) };
    }),
  };
}

/**
 * `lessor.compact(revision)`, timed for /metrics (`stats`: metrics.mjs's
 * createServiceStats) as etcd times its compactions: moving the point (its
 * index compaction), and until the versions it left unreadable are swept
 * and that is on disk (its whole compaction; each sweep step is a pause,
 * observed from the lessor's "compaction" events, services/index.mjs).
 * Returns a promise of that end. The Compact call and the periodic
 * compactor's.
 */
export function compact(lessor, stats, revision) {
  const t0 = performance.now();
  lessor.compact(revision);
  stats.compaction.observe(performance.now() - t0);
  const done = lessor.whenCompacted().then(() => lessor.flush());
  done.then(
    () => stats.compactionDurable.observe(performance.now() - t0),
    () => {}, // (the store failed: the server stops on it)
  );
  return done;
}

export function kvService({ lessor, header, stats, auth, maxTxnOps = 128, maxRequestBytes }) {
  const top = (revision) => ({ ...header(), revision });
  // Each call's request limit and the caller's rights (etcd/methods.mjs).
  const admit = (rpc) => admission(`etcdserverpb.KV/${rpc}`, maxRequestBytes, auth);
  const limits = { Range: admit("Range"), Put: admit("Put"), DeleteRange: admit("DeleteRange"), Txn: admit("Txn"), Compact: admit("Compact") };
  return {
    Range(req, call) {
      keyOf(req.key);
      const q = rangeIn(req);
      limits.Range(req, call);
      // (A large one in steps, other calls answered between them.)
      const r = engine(() => pagedRange((q) => range(lessor, q), q, () => lessor.nextDeadline()));
      if (typeof r.then !== "function") return rangeOut(r, top(r.revision));
      return r.then(
        (r) => rangeOut(r, top(r.revision)),
        (e) => {
          throw etcdError(e);
        },
      );
    },

    Put(req, call) {
      checkPut(req);
      limits.Put(req, call);
      // (The engine's Put looks the lease up before the key ignore_value
      // needs, as etcd's apply.go does; inside a Txn the key comes first.)
      const r = engine(() => lessor.put(putIn(req)));
      return putOut(r, top(r.revision));
    },

    DeleteRange(req, call) {
      keyOf(req.key);
      limits.DeleteRange(req, call);
      const r = engine(() => lessor.deleteRange(deleteIn(req)));
      return deleteOut(r, top(r.revision), req.prev_kv);
    },

    Txn(req, call) {
      checkTxn(req, maxTxnOps);
      // (Before the caller's rights are checked, as etcd's gRPC layer does.)
      checkIntervals(req.success ?? []);
      checkIntervals(req.failure ?? []);
      limits.Txn(req, call);
      const r = engine(() => lessor.txn(txnIn(req)));
      return txnOut(r, top(r.revision), req);
    },

    Compact(req, call) {
      limits.Compact(req, call);
      const swept = engine(() => compact(lessor, stats, int(req.revision)));
      // `physical`: answered once the compaction is swept, as etcd's waits
      // for its backend's deletes.
      if (req.physical) {
        return swept.then(
          () => ({ header: header() }),
          (e) => {
            throw etcdError(e);
          },
        );
      }
      return { header: header() };
    },
  };
}
