// The client's KV and lease operations, against a real etcd 3.4,
// edge-lease's server and an in-process Lessor (servers.mjs): the engine's
// result shapes, strings by default and bytes on request, etcd's txn
// semantics, errors as LeaseErrors.

import assert from "node:assert/strict";
import { LeaseError } from "../../js/client/index.mjs";
import { Lessor } from "../../js/entries/node.mjs";
import { eachBackend, useServers } from "./servers.mjs";

useServers();

const entry = (key, value, createRevision, modRevision, version, lease = null) => ({
  key,
  value,
  lease,
  createRevision,
  modRevision,
  version,
});

eachBackend("put, get, delete: the engine's shapes, strings in and out", {}, async (t, { connect }) => {
  const etcd = connect();
  const p1 = await etcd.put("kv1/a", "1");
  assert.deepEqual(Object.keys(p1), ["revision"]);
  const p2 = await etcd.put("kv1/a", "2", { prevKv: true });
  assert.equal(p2.revision, p1.revision + 1);
  assert.equal(p2.created, false);
  assert.deepEqual(p2.prev, entry("kv1/a", "1", p1.revision, p1.revision, 1));
  const p3 = await etcd.put("kv1/b", "x", { prevKv: true });
  assert.equal(p3.created, true);
  assert.equal(p3.prev, undefined);
  assert.deepEqual(await etcd.get("kv1/a"), entry("kv1/a", "2", p1.revision, p2.revision, 2));
  assert.equal(await etcd.get("kv1/none"), undefined);
  const d = await etcd.delete("kv1/a", { prevKv: true });
  assert.deepEqual(d, { deleted: true, revision: p3.revision + 1, prev: entry("kv1/a", "2", p1.revision, p2.revision, 2) });
  // Deleting nothing changes no revision.
  assert.deepEqual(await etcd.delete("kv1/a"), { deleted: false, revision: d.revision });
});

eachBackend("bytes: keys and values as Uint8Array on request, any bytes through", {}, async (t, { connect }) => {
  const etcd = connect();
  const value = Uint8Array.from([0, 1, 2, 0xff, 0xfe, 10, 13]);
  await etcd.put("kv2/bin", value);
  const e = await etcd.get("kv2/bin", { bytes: true });
  assert.deepEqual(e.key, new TextEncoder().encode("kv2/bin"));
  assert.deepEqual(e.value, value);
  // As a string, invalid UTF-8 becomes U+FFFD (documented).
  assert.equal((await etcd.get("kv2/bin")).value, "\0\u0001\u0002\ufffd\ufffd\n\r");
  await etcd.put(new TextEncoder().encode("kv2/é"), "ünïcode ✓");
  assert.equal((await etcd.get("kv2/é")).value, "ünïcode ✓");
  // Sizes the base64 padding cases cover.
  for (const n of [0, 1, 2, 3, 4, 5, 1000]) {
    const v = Uint8Array.from({ length: n }, (_, i) => (i * 37) & 0xff);
    await etcd.put(`kv2/n${n}`, v);
    assert.deepEqual((await etcd.get(`kv2/n${n}`, { bytes: true })).value, v, `length ${n}`);
  }
});

eachBackend("range: prefix, limit, more, count, keysOnly, countOnly", {}, async (t, { connect }) => {
  const etcd = connect();
  for (const k of ["c", "a", "b"]) await etcd.put(`kv3/${k}`, k.toUpperCase());
  await etcd.put("kv3x", "outside");
  const all = await etcd.range({ key: "kv3/", prefix: true });
  assert.deepEqual(all.kvs.map((e) => [e.key, e.value]), [["kv3/a", "A"], ["kv3/b", "B"], ["kv3/c", "C"]]);
  assert.equal(all.count, 3);
  assert.equal(all.more, false);
  const two = await etcd.range({ key: "kv3/", prefix: true, limit: 2 });
  assert.deepEqual([two.kvs.length, two.more, two.count], [2, true, 3]);
  const keys = await etcd.range({ key: "kv3/", prefix: true, keysOnly: true });
  assert.deepEqual(keys.kvs.map((e) => e.value), ["", "", ""]);
  const count = await etcd.range({ key: "kv3/", prefix: true, countOnly: true });
  assert.deepEqual([count.kvs, count.count], [[], 3]);
  const everything = await etcd.range({ key: "", prefix: true, keysOnly: true });
  assert.ok(everything.kvs.some((e) => e.key === "kv3x"));
});

eachBackend("range: sorting, from-key, explicit ends, past revisions", { needs: ["sort", "fromKey", "pastRevision"] }, async (t, { connect }) => {
  const etcd = connect();
  const revs = [];
  for (const k of ["b", "c", "a"]) revs.push((await etcd.put(`kv4/${k}`, k)).revision);
  const byCreate = await etcd.range({ key: "kv4/", prefix: true, sortTarget: "create", sortOrder: "descend" });
  assert.deepEqual(byCreate.kvs.map((e) => e.key), ["kv4/a", "kv4/c", "kv4/b"]);
  const from = await etcd.range({ key: "kv4/b", fromKey: true, keysOnly: true });
  assert.deepEqual(from.kvs.map((e) => e.key).filter((k) => k.startsWith("kv4/")), ["kv4/b", "kv4/c"]);
  const span = await etcd.range({ key: "kv4/a", rangeEnd: "kv4/c" });
  assert.deepEqual(span.kvs.map((e) => e.key), ["kv4/a", "kv4/b"]);
  const old = await etcd.range({ key: "kv4/", prefix: true, revision: revs[1] });
  assert.deepEqual(old.kvs.map((e) => e.key), ["kv4/b", "kv4/c"]);
  assert.equal((await etcd.get("kv4/a", { revision: revs[1] })), undefined);
  await assert.rejects(etcd.get("kv4/a", { revision: revs[2] + 1000 }), { code: "FutureRevision" });
});

eachBackend("deleteRange: a prefix in one revision", { needs: ["deleteMany"] }, async (t, { connect }) => {
  const etcd = connect();
  for (const k of ["a", "b"]) await etcd.put(`kv5/${k}`, k);
  const d = await etcd.deleteRange({ key: "kv5/", prefix: true, prevKv: true });
  assert.equal(d.deleted, 2);
  assert.deepEqual(d.prev.map((e) => e.key), ["kv5/a", "kv5/b"]);
  assert.equal((await etcd.range({ key: "kv5/", prefix: true })).count, 0);
});

eachBackend("txn: compares, both branches, nested txn, one revision", { needs: ["txn"] }, async (t, { connect }) => {
  const etcd = connect();
  const p = await etcd.put("kv6/a", "1");
  const ok = await etcd.txn({
    compare: [
      { key: "kv6/a", target: "value", result: "=", value: "1" },
      { key: "kv6/a", target: "version", result: "=", value: 1 },
      { key: "kv6/a", target: "mod", result: "<", value: p.revision + 1 },
      { key: "kv6/a", target: "create", result: ">", value: 0 },
      { key: "kv6/a", target: "lease", result: "=", value: null },
      { key: "kv6/none", target: "create", result: "=", value: 0 },
    ],
    success: [
      { put: { key: "kv6/b", value: "B" } },
      { put: { key: "kv6/c", value: "C", prevKv: true } },
      { range: { key: "kv6/", prefix: true } },
      { deleteRange: { key: "kv6/a", prevKv: true } },
      { txn: { compare: [], success: [{ range: { key: "kv6/b" } }], failure: [] } },
    ],
    failure: [{ put: { key: "kv6/wrong", value: "!" } }],
  });
  assert.equal(ok.succeeded, true);
  assert.equal(ok.revision, p.revision + 1, "one revision for every write of the txn");
  const [b, c, r, d, nested] = ok.responses;
  assert.deepEqual(b, { put: { revision: ok.revision } });
  assert.deepEqual(c, { put: { revision: ok.revision } });
  assert.deepEqual(r.range.kvs.map((e) => [e.key, e.value]), [["kv6/a", "1"], ["kv6/b", "B"], ["kv6/c", "C"]]);
  assert.equal(d.deleteRange.deleted, 1);
  assert.equal(d.deleteRange.prev[0].value, "1");
  assert.equal(nested.txn.succeeded, true);
  assert.equal(nested.txn.responses[0].range.kvs[0].value, "B");

  const no = await etcd.txn({
    compare: [{ key: "kv6/b", target: "value", result: "!=", value: "B" }],
    success: [{ put: { key: "kv6/wrong", value: "!" } }],
    failure: [{ range: { key: "kv6/b" } }],
  });
  assert.equal(no.succeeded, false);
  assert.equal(no.revision, ok.revision, "a read-only branch changes nothing");
  assert.equal(no.responses[0].range.kvs[0].value, "B");

  await assert.rejects(
    etcd.txn({ success: [{ put: { key: "kv6/x", value: "1" } }, { put: { key: "kv6/x", value: "2" } }] }),
    { code: "DuplicateKey" },
  );
  // put with ifAbsent: a create-only put; a refused one returns the holder.
  const first = await etcd.put("kv6/lock", "me", { ifAbsent: true });
  assert.equal(first.created, true);
  const second = await etcd.put("kv6/lock", "other", { ifAbsent: true });
  assert.equal(second.created, false);
  assert.equal(second.prev.value, "me");
  assert.equal(second.prev.createRevision, first.revision);
});

eachBackend("leases: grant, keepAliveOnce, timeToLive with keys, leases, revoke", {}, async (t, { connect }) => {
  const etcd = connect();
  const g = await etcd.grant(30);
  assert.match(g.id, /^[0-9a-f]{16}$/);
  assert.equal(g.ttl, 30);
  assert.equal(await etcd.keepAliveOnce(g.id), 30);
  await etcd.put("kv7/a", "1", { lease: g.id });
  await etcd.put("kv7/b", "2", { lease: g.id });
  assert.equal((await etcd.get("kv7/a")).lease, g.id);
  const ttl = await etcd.timeToLive(g.id, { keys: true });
  // etcd lists a lease's keys in its map's (random) order.
  assert.deepEqual({ ...ttl, ttl: 0, keys: [...ttl.keys].sort() }, { id: g.id, ttl: 0, grantedTtl: 30, keys: ["kv7/a", "kv7/b"] });
  assert.ok(ttl.ttl > 25 && ttl.ttl <= 30);
  assert.ok((await etcd.leases()).includes(g.id));
  const r = await etcd.revoke(g.id);
  assert.equal(r.id, g.id);
  assert.equal(await etcd.get("kv7/a"), undefined);
  assert.equal((await etcd.timeToLive(g.id)).ttl, -1);
  assert.ok(!(await etcd.leases()).includes(g.id));
  // Chosen ids, bigints, and etcd's minimum TTL.
  const mine = await etcd.grant(1, { id: "00000000000a11ce" });
  assert.deepEqual(mine, { id: "00000000000a11ce", ttl: 2 });
  assert.equal(await etcd.keepAliveOnce(0xa11cen), 2);
  await etcd.revoke(0xa11cen);
});

eachBackend("errors are LeaseErrors with the engine's codes", {}, async (t, { connect, url }) => {
  const etcd = connect();
  const gone = "0000000000000bad";
  // All three in flight at once, each one's rejection handled.
  await Promise.all(
    [etcd.keepAliveOnce(gone), etcd.revoke(gone), etcd.put("kv8/a", "1", { lease: gone })].map((p) =>
      assert.rejects(p, (e) => e instanceof LeaseError && e.code === "LeaseNotFound"),
    ),
  );
  const g = await etcd.grant(10);
  await assert.rejects(etcd.grant(10, { id: g.id }), { code: "LeaseExists" });
  await assert.rejects(etcd.grant(9_000_000_001), { code: "LeaseTtlTooLarge" });
  await assert.rejects(etcd.put("", "x"), { code: "InvalidArgument" });
  await assert.rejects(etcd.get("kv8/a", { revision: -1 }), { code: "InvalidArgument" });
  await assert.rejects(etcd.grant(10, { id: "NOT-HEX" }), { code: "InvalidArgument" });
  // The same class as the engine's: one instanceof for the whole package.
  const lessor = new Lessor({ autoTick: false });
  assert.throws(() => lessor.grant(1, { id: "x" }), LeaseError);
  lessor.close();
  await etcd.revoke(g.id);

  if (url) {
    // Nobody listening: Unavailable, quickly.
    const { connect: connectTo } = await import("../../js/client/index.mjs");
    const dead = connectTo("http://127.0.0.1:9", { timeout: 2000 });
    await assert.rejects(dead.get("x"), { code: "Unavailable" });
  }
  // An aborted signal: Aborted.
  await assert.rejects(etcd.get("kv8/a", { signal: AbortSignal.abort() }), { code: "Aborted" });
  // A closed client: Closed.
  const c = connect();
  await c.close();
  await assert.rejects(c.get("x"), { code: "Closed" });
});

eachBackend("in-process errors: the engine's codes through the client, a standby is Unavailable", { backends: ["lessor"] }, async (t, { connect, lessor }) => {
  const etcd = connect();
  const p = await etcd.put("kv9/a", "1");
  await etcd.put("kv9/a", "2");
  await assert.rejects(etcd.get("kv9/a", { revision: p.revision + 100 }), { code: "FutureRevision" });
  await etcd.compact(p.revision + 1);
  await assert.rejects(etcd.get("kv9/a", { revision: p.revision }), (e) => e instanceof LeaseError && e.code === "Compacted" && e.compactRevision === p.revision + 1);
  await assert.rejects(etcd.compact(p.revision), { code: "Compacted" });
  // `physical`: answered once the sweep is done.
  for (let i = 0; i < 30_000; i++) lessor.put(`kv9/b${i % 10}`, "x");
  await etcd.compact(lessor.revision - 1, { physical: true });
  assert.equal(lessor.compactionPending, 0);
  const small = new Lessor({ maxTxnOps: 2, quotaBytes: 64 * 1024, maxValueBytes: 16 * 1024 });
  t.after(() => small.close());
  const c = (await import("../../js/client/index.mjs")).connect(small);
  t.after(() => c.close());
  await assert.rejects(c.txn({ success: [1, 2, 3].map((i) => ({ range: { key: `r${i}` } })) }), { code: "TooManyOps" });
  await assert.rejects(c.txn({ success: [{ put: { key: "d", value: "1" } }, { deleteRange: { key: "d" } }] }), { code: "DuplicateKey" });
  let n = 0;
  await assert.rejects(async () => {
    for (; n < 100; n++) await c.put(`big${n}`, new Uint8Array(10 * 1024));
  }, { code: "NoSpace" });
  assert.ok(n > 0 && n < 10, `${n} puts before NoSpace`);
  // A standby renews nothing: Unavailable, as a server without a leader.
  const g = await etcd.grant(10);
  lessor.demote();
  await assert.rejects(etcd.keepAliveOnce(g.id), (e) => e.code === "Unavailable" && e.cause?.code === "NotPrimary");
  lessor.promote();
  assert.equal(await etcd.keepAliveOnce(g.id), 10);
  // A closed lessor: Closed.
  small.close();
  await assert.rejects(c.get("x"), { code: "Closed" });
});

eachBackend("in-process writes resolve once the lessor's storage has them (an async store)", { backends: ["lessor"] }, async (t) => {
  const pending = [];
  const storage = { write: () => new Promise((resolve) => pending.push(resolve)) };
  const lessor = new Lessor({ storage });
  t.after(() => lessor.close());
  const etcd = (await import("../../js/client/index.mjs")).connect(lessor);
  t.after(() => etcd.close());
  let done = false;
  const put = etcd.put("kv10/a", "1").then((r) => ((done = true), r));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(done, false, "not before the store has it");
  assert.equal((await etcd.get("kv10/a")).value, "1", "visible at once, as the engine's own put is");
  for (const resolve of pending.splice(0)) resolve();
  assert.equal((await put).revision, lessor.revision);
  assert.equal(done, true);
});

eachBackend("timeToLive({ keys, bytes }): keys of any bytes come back as they are", {}, async (t, { connect }) => {
  const etcd = connect();
  const g = await etcd.grant(30);
  const key = new Uint8Array([0x6b, 0xff, 0xfe, 0x00, 0x80]);
  await etcd.put(key, "v", { lease: g.id });
  const r = await etcd.timeToLive(g.id, { keys: true, bytes: true });
  assert.deepEqual(r.keys.map((k) => Buffer.from(k).toString("hex")), ["6bfffe0080"]);
  await etcd.revoke(g.id);
});
