// KV over gRPC (etcd/proto's definitions) against a real etcd 3.4 and
// edge-lease: the same calls to both, every response compared (revisions,
// kvs, prev kvs, counts, more, sub-responses of txns, errors with codes and
// messages); only cluster/member ids and raft terms are dropped. Keys
// include bytes that are not UTF-8.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth } from "./harness.mjs";
import { connect, norm } from "./grpc-client.mjs";

const ZERO = Buffer.from([0]);
const B = (...parts) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : Buffer.from(p))));

/** Every call below, run on both; returns how many were compared. */
export async function scripted(call) {
  const calls = [];
  const kv = (method, req) => calls.push(["kv", method, req]);
  const lease = (method, req) => calls.push(["lease", method, req]);

  // Puts: bytes keys (non-UTF-8 too), values, leases, prev_kv, ignore_*.
  lease("LeaseGrant", { ID: 1000, TTL: 600 });
  lease("LeaseGrant", { ID: 2000, TTL: 600 });
  for (const k of ["a", "b", "b/1", "b/2", "b/3", "c", "d"]) kv("Put", { key: B(k), value: B(k.toUpperCase()) });
  kv("Put", { key: B([0xff, 0xfe]), value: B([0, 1, 2]) });
  kv("Put", { key: B([0xff]), value: B("ff") });
  kv("Put", { key: B([0]), value: B("zero") });
  kv("Put", { key: B("a", [0x80]), value: B("bad utf-8") });
  kv("Put", { key: B("a"), value: B("A2"), prev_kv: true });
  kv("Put", { key: B("a"), value: B("A3"), lease: 1000, prev_kv: true });
  kv("Put", { key: B("c"), value: B("C2"), lease: 2000 });
  kv("Put", { key: B("a"), ignore_value: true, prev_kv: true });
  kv("Put", { key: B("a"), value: B("A4"), ignore_lease: true, prev_kv: true });
  kv("Put", { key: B("a"), ignore_value: true, ignore_lease: true });
  kv("Put", { key: B("nope"), ignore_value: true });
  kv("Put", { key: B("nope"), ignore_lease: true });
  kv("Put", { key: B("a"), value: B("x"), ignore_value: true });
  kv("Put", { key: B("a"), lease: 1000, ignore_lease: true });
  kv("Put", { key: B("a"), value: B("x"), lease: 777 });
  kv("Put", { key: B("nope"), ignore_value: true, lease: 777 }); // the lease is looked up first
  kv("Txn", { success: [{ request_put: { key: B("nope"), ignore_value: true, lease: 777 } }] }); // the key first
  kv("Put", { key: B(""), value: B("x") });
  kv("Put", { key: B("e"), value: B("") });
  kv("Put", { key: B("e"), value: B("E"), prev_kv: true });

  // Ranges: keys, prefixes, from-key, arbitrary ends, everything.
  const ranges = [
    { key: B("a") },
    { key: B("missing") },
    { key: B("b"), range_end: B("c") },
    { key: B("b/"), range_end: B("b0") },
    { key: B("b"), range_end: B([0]) },
    { key: B([0]), range_end: B([0]) },
    { key: B("a"), range_end: B("a") },
    { key: B("c"), range_end: B("a") },
    { key: B([0xff]), range_end: B([0]) },
    { key: B("a"), range_end: B([0xff, 0xff]) },
  ];
  for (const r of ranges) kv("Range", r);
  const all = { key: B([0]), range_end: B([0]) };
  for (const limit of [1, 2, 5, 100, -1]) kv("Range", { ...all, limit });
  for (const sort_order of ["NONE", "ASCEND", "DESCEND"]) {
    for (const sort_target of ["KEY", "VERSION", "CREATE", "MOD", "VALUE"]) {
      kv("Range", { ...all, sort_order, sort_target });
      kv("Range", { ...all, sort_order, sort_target, limit: 3 });
    }
  }
  kv("Range", { ...all, sort_order: 7, sort_target: "MOD", limit: 2 }); // an unknown order: key order
  kv("Range", { ...all, keys_only: true });
  kv("Range", { ...all, count_only: true });
  kv("Range", { ...all, count_only: true, limit: 1 });
  kv("Range", { ...all, keys_only: true, limit: 2, sort_order: "DESCEND" });
  kv("Range", { ...all, min_mod_revision: 8 });
  kv("Range", { ...all, max_mod_revision: 8, limit: 3 });
  kv("Range", { ...all, min_create_revision: 5, max_create_revision: 9 });
  kv("Range", { ...all, max_create_revision: 4, sort_order: "DESCEND", sort_target: "CREATE" });
  kv("Range", { key: B("") });
  kv("Range", { key: B(""), range_end: B("z") });
  kv("Range", { key: B("a"), serializable: true });

  // History: reads at past revisions, compaction, the errors.
  for (const revision of [1, 2, 5, 10, 14, 15, 16, 1000, -1]) kv("Range", { ...all, revision });
  kv("Range", { key: B("a"), revision: 12 });
  kv("Range", { ...all, revision: 10, limit: 2, sort_order: "DESCEND", sort_target: "VALUE" });
  kv("Compact", { revision: 1000 });
  kv("Compact", { revision: 5 });
  kv("Compact", { revision: 5 });
  kv("Compact", { revision: 4 });
  kv("Compact", { revision: 0 });
  kv("Compact", { revision: -3 });
  kv("Range", { ...all, revision: 4 });
  kv("Range", { ...all, revision: 5 });
  kv("Range", { key: B("a"), revision: 6 });
  kv("Compact", { revision: 8, physical: true });
  kv("Range", { ...all, revision: 7 });
  kv("Range", { ...all, revision: 8, keys_only: true });

  // Deletes: one key, ranges, nothing (no revision), prev kvs, from-key.
  kv("DeleteRange", { key: B("b/1"), prev_kv: true });
  kv("DeleteRange", { key: B("b/1") });
  kv("DeleteRange", { key: B("b/"), range_end: B("b0"), prev_kv: true });
  kv("DeleteRange", { key: B("zz"), range_end: B("zzz") });
  kv("DeleteRange", { key: B("") });
  kv("DeleteRange", { key: B([0xff]), range_end: B([0]), prev_kv: true });
  kv("Range", all);

  // Txns: compares of every target and result, both branches, nested.
  const cmp = (target, result, field, value, extra = {}) => ({ key: B("a"), target, result, [field]: value, ...extra });
  const compares = [
    cmp("VALUE", "EQUAL", "value", B("A4")),
    cmp("VALUE", "NOT_EQUAL", "value", B("A4")),
    cmp("VALUE", "GREATER", "value", B("A")),
    cmp("VALUE", "LESS", "value", B("B")),
    cmp("VERSION", "EQUAL", "version", 4),
    cmp("VERSION", "GREATER", "version", 1),
    cmp("CREATE", "EQUAL", "create_revision", 0),
    cmp("CREATE", "LESS", "create_revision", 100),
    cmp("MOD", "GREATER", "mod_revision", 3),
    cmp("MOD", "NOT_EQUAL", "mod_revision", 3),
    cmp("LEASE", "EQUAL", "lease", 1000),
    cmp("LEASE", "EQUAL", "lease", 0),
    { key: B("missing"), target: "VALUE", result: "EQUAL", value: B("") },
    { key: B("missing"), target: "VALUE", result: "NOT_EQUAL", value: B("x") },
    { key: B("missing"), target: "CREATE", result: "EQUAL", create_revision: 0 },
    { key: B("missing"), target: "VERSION", result: "LESS", version: 1 },
    { key: B("a"), range_end: B("d"), target: "VERSION", result: "GREATER", version: 0 },
    { key: B("a"), range_end: B("d"), target: "MOD", result: "LESS", mod_revision: 12 },
    { key: B([0]), range_end: B([0]), target: "CREATE", result: "GREATER", create_revision: 0 },
    // A target that does not match the value given: compared with zero.
    { key: B("a"), target: "VERSION", result: "GREATER", mod_revision: 100 },
    { key: B("a"), target: "VALUE", result: "GREATER", version: 3 },
    // Unknown targets and results.
    { key: B("a"), target: 9, result: "EQUAL", version: 1 },
    { key: B("a"), target: 9, result: "NOT_EQUAL", version: 1 },
    { key: B("a"), target: "VERSION", result: 9, version: 1 },
    { key: B("missing"), target: "VALUE", result: 9, value: B("x") },
    { key: B("a"), target: "VALUE", result: 9, value: B("x") },
  ];
  for (const c of compares) {
    kv("Txn", { compare: [c], success: [{ request_range: { key: B("a") } }], failure: [{ request_range: { key: B("c") } }] });
  }
  kv("Txn", {
    compare: [cmp("VALUE", "EQUAL", "value", B("A4"))],
    success: [
      { request_range: { key: B("a"), range_end: B("z") } },
      { request_put: { key: B("t1"), value: B("1"), prev_kv: true } },
      { request_put: { key: B("a"), value: B("A5"), prev_kv: true, lease: 2000 } },
      { request_range: { key: B("a"), range_end: B("z"), keys_only: true, limit: 2 } },
      { request_delete_range: { key: B("c"), prev_kv: true } },
      { request_delete_range: { key: B("nothing") } },
      { request_txn: { success: [{ request_put: { key: B("t2"), value: B("2") } }], failure: [] } },
      { request_txn: { compare: [cmp("VALUE", "EQUAL", "value", B("nope"))], failure: [{ request_range: { key: B("t2") } }] } },
      { request_txn: {} },
    ],
    failure: [{ request_put: { key: B("f"), value: B("f") } }],
  });
  kv("Txn", { compare: [cmp("VALUE", "EQUAL", "value", B("no"))], failure: [{ request_put: { key: B("f"), value: B("f") } }, { request_range: { key: B("f") } }] });
  kv("Txn", {});
  kv("Txn", { compare: [cmp("VERSION", "GREATER", "version", 0)] });
  kv("Txn", { success: [{ request_delete_range: { key: B("zz") } }] });
  kv("Txn", { success: [{ request_range: { key: B("a") } }] });
  // Errors, in etcd's order.
  kv("Txn", { success: [{}] });
  kv("Txn", { success: [{ request_range: { key: B("a") } }, {}], failure: [{ request_put: { key: B("") } }] });
  kv("Txn", { compare: [{ key: B(""), target: "VALUE" }], success: [{}] });
  kv("Txn", { success: [{ request_put: { key: B("") } }] });
  kv("Txn", { success: [{ request_range: { key: B("") } }] });
  kv("Txn", { success: [{ request_delete_range: { key: B("") } }] });
  kv("Txn", { success: [{ request_put: { key: B("x"), value: B("v"), ignore_value: true } }] });
  kv("Txn", { success: [{ request_put: { key: B("x"), lease: 5, ignore_lease: true } }] });
  kv("Txn", { success: [{ request_put: { key: B("x"), ignore_value: true } }] });
  kv("Txn", { success: [{ request_put: { key: B("x"), value: B("v"), lease: 5 } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }, { request_put: { key: B("x") } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }], failure: [{ request_put: { key: B("x") } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }, { request_delete_range: { key: B("w"), range_end: B("y") } }] });
  kv("Txn", { success: [{ request_delete_range: { key: B("x") } }, { request_delete_range: { key: B("x") } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }, { request_range: { key: B("x") } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }, { request_txn: { success: [{ request_put: { key: B("x") } }] } }] });
  kv("Txn", { success: [{ request_txn: { success: [{ request_put: { key: B("x") } }], failure: [{ request_put: { key: B("x") } }] } }] });
  kv("Txn", { success: [{ request_txn: { success: [{ request_put: { key: B("x") } }] } }, { request_txn: { failure: [{ request_put: { key: B("x") } }] } }] });
  kv("Txn", { success: [{ request_delete_range: { key: B("w"), range_end: B("y") } }, { request_txn: { success: [{ request_put: { key: B("x") } }] } }] });
  // etcd's duplicate check sees a from-key delete ("\0" end) as an empty
  // interval: a txn may delete from a key on and put keys there, in order,
  // in one revision (a key then changes twice, or three times, in it).
  kv("Put", { key: B("f"), value: B("old") });
  kv("Put", { key: B("g"), value: B("G") });
  kv("Txn", { success: [{ request_delete_range: { key: B("f"), range_end: ZERO, prev_kv: true } }, { request_put: { key: B("f"), value: B("new"), prev_kv: true } }] });
  kv("Range", { key: B("f"), range_end: ZERO });
  kv("Txn", { success: [{ request_put: { key: B("f"), value: B("v2"), prev_kv: true } }, { request_delete_range: { key: B("f"), range_end: ZERO, prev_kv: true } }] });
  kv("Put", { key: B("f"), value: B("old") });
  kv("Txn", { success: [{ request_delete_range: { key: B("f"), range_end: ZERO } }, { request_put: { key: B("f"), value: B("new") } }, { request_delete_range: { key: B("f"), range_end: ZERO, prev_kv: true } }, { request_range: { key: B("f") } }] });
  kv("Txn", { success: [{ request_delete_range: { key: B("f"), range_end: ZERO } }, { request_txn: { success: [{ request_put: { key: B("f"), value: B("n"), prev_kv: true } }, { request_range: { key: B("e"), range_end: ZERO } }] } }] });
  kv("Range", { key: B("e"), range_end: ZERO });
  kv("Txn", { success: [{ request_range: { key: B("a"), revision: 2 } }] });
  kv("Txn", { success: [{ request_range: { key: B("a"), revision: 1000 } }] });
  kv("Txn", { success: [{ request_put: { key: B("x") } }, { request_range: { key: B("a"), revision: 1000 } }] });
  kv("Txn", { compare: [cmp("VALUE", "EQUAL", "value", B("no"))], success: [{ request_range: { key: B("a"), revision: 2 } }] });
  const many = (n, op) => Array.from({ length: n }, (_, i) => op(i));
  kv("Txn", { success: many(128, (i) => ({ request_put: { key: B(`m/${i}`), value: B("v") } })) });
  kv("Txn", { success: many(129, (i) => ({ request_range: { key: B(`m/${i}`) } })) });
  kv("Txn", { compare: many(129, () => cmp("VERSION", "GREATER", "version", 0)) });
  kv("Txn", { failure: many(129, () => ({})) });
  kv("Txn", { compare: many(100, () => cmp("VERSION", "GREATER", "version", 0)), success: [{ request_txn: { success: many(28, (i) => ({ request_range: { key: B(`m/${i}`) } })) } }] });
  kv("Txn", { compare: many(100, () => cmp("VERSION", "GREATER", "version", 0)), success: [{ request_txn: { success: many(29, (i) => ({ request_range: { key: B(`m/${i}`) } })) } }] });
  kv("Range", { key: B("m/"), range_end: B("m0"), count_only: true });
  kv("DeleteRange", { key: B("m/"), range_end: B("m0") });

  // int64s past -2^52 keep their sign on the way into the engine.
  const huge = "-1152921504606846977"; // -(2^60) - 1
  kv("Range", { key: B("a"), revision: huge });
  kv("Range", { ...all, min_mod_revision: huge, max_create_revision: huge });
  kv("Range", { ...all, max_mod_revision: huge });
  kv("Txn", { compare: [cmp("VERSION", "GREATER", "version", huge), cmp("MOD", "LESS", "mod_revision", huge)] });
  kv("Txn", { compare: [cmp("CREATE", "GREATER", "create_revision", huge)], success: [{ request_range: { key: B("a"), revision: huge } }] });
  // Keys and values a read only compares: etcd serves reads (a txn of
  // ranges too) without raft, so past its request limit, and finds nothing
  // for a key longer than any. A write that long is too large.
  const long = Buffer.alloc(1_600_000, 0x61);
  kv("Range", { key: long });
  kv("Range", { key: B("a"), range_end: long, count_only: true });
  kv("Txn", { compare: [cmp("VALUE", "EQUAL", "value", long)], success: [{ request_range: { key: long } }], failure: [{ request_range: { key: B("a"), range_end: long } }] });
  kv("Txn", { compare: [{ key: long, target: "VERSION", result: "EQUAL", version: 0 }] });
  kv("Txn", { success: [{ request_range: { key: B("a") } }, { request_delete_range: { key: long } }] });
  kv("DeleteRange", { key: long });

  // Revoking a lease deletes its keys in one revision.
  lease("LeaseRevoke", { ID: 2000 });
  kv("Range", all);

  let n = 0;
  for (const [service, method, req] of calls) {
    await call(service, method, req, n++);
  }
  return n;
}

test("KV over gRPC: Range, Put, DeleteRange, Txn and Compact answer as etcd 3.4 does", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [connect(t, etcd.url), connect(t, edge.url)];
  const n = await scripted(async (service, method, req, i) => {
    const [want, got] = await Promise.all(sides.map((s) => s[service](method, req)));
    assert.deepEqual(norm(got), norm(want), `call ${i}: ${method} ${JSON.stringify(req, (k, v) => (v?.type === "Buffer" ? Buffer.from(v.data).toString() : v))}`);
  });
  assert.ok(n > 150, `${n} calls`);
});
