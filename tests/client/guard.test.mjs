// Guarded writes (`ifHeld`, `isOwner()`, `isLeader()`): applied while the
// lock or leadership holds; once another holds it, refused by the server
// with NotHeld / NotLeader naming the holder's token, and nothing written,
// although the old holder has not noticed yet (its lease was revoked behind
// its back; in-process, expired on the lessor's clock). On every backend.

import assert from "node:assert/strict";
import { eachBackend, useServers } from "./servers.mjs";

useServers();

const RECIPES = { needs: ["txn", "watch", "sort"] };

/** `p` rejects with a LeaseError `code`; returns it. */
async function refused(p, code) {
  const e = await p.then(
    () => assert.fail(`expected ${code}, the write was applied`),
    (e) => e,
  );
  assert.equal(e.code, code, e.stack);
  return e;
}

/** Ends `session`'s lease behind its back: revoked by another client, or expired on the in-process clock. */
async function loseLease(etcd, session, clock) {
  if (clock) await clock.advance((session.ttl + 1) * 1000);
  else await etcd.revoke(session.lease);
}

eachBackend("ifHeld: put, delete, deleteRange and txn run while the lock holds, and are refused with the new holder's token once lost", RECIPES, async (t, { connect, clock }) => {
  const etcd = connect();
  const s1 = await etcd.session({ ttl: 10 });
  const m1 = s1.mutex("guard/job");
  await m1.lock();

  const p = await etcd.put("guard/out", "one", { ifHeld: m1, prevKv: true });
  assert.equal(p.created, true);
  assert.equal((await etcd.get("guard/out")).value, "one");
  const c = await etcd.put("guard/out", "x", { ifHeld: m1, ifAbsent: true });
  assert.equal(c.created, false);
  assert.equal(c.prev.value, "one", "ifAbsent under the guard still reports the existing key");
  const tx = await etcd.txn({
    ifHeld: m1,
    compare: [{ key: "guard/out", target: "value", value: "one" }],
    success: [{ put: { key: "guard/out", value: "two" } }, { range: { key: "guard/out" } }],
    failure: [],
  });
  assert.equal(tx.succeeded, true);
  assert.equal(tx.responses[1].range.kvs[0].value, "two");
  assert.equal(tx.revision, tx.responses[0].put.revision, "the user's txn answers at the write's revision");
  await etcd.put("guard/other/a", "a", { ifHeld: m1 });
  const before = await etcd.range({ key: "guard/", prefix: true });

  await loseLease(etcd, s1, clock);
  const m2 = (await etcd.session({ ttl: 10 })).mutex("guard/job");
  await m2.lock();
  const writes = [
    () => etcd.put("guard/out", "stale", { ifHeld: m1 }),
    () => etcd.put("guard/new", "stale", { ifHeld: m1, ifAbsent: true }),
    () => etcd.delete("guard/out", { ifHeld: m1 }),
    () => etcd.deleteRange({ key: "guard/other/", prefix: true, ifHeld: m1 }),
    () => etcd.txn({ ifHeld: m1, success: [{ put: { key: "guard/out", value: "stale" } }] }),
  ];
  for (const w of writes) {
    const e = await refused(w(), "NotHeld");
    assert.equal(e.holderToken, m2.token, "the refusal names the new holder's token");
    assert.equal(e.holderKey, m2.key);
    assert.ok(e.holderToken > m1.token);
    assert.ok(e.revision >= m2.token);
  }
  const txnIsOwner = await etcd.txn({ compare: [m1.isOwner()], success: [{ put: { key: "guard/out", value: "stale" } }] });
  assert.equal(txnIsOwner.succeeded, false, "isOwner() of the lost lock fails in a txn");
  const after = await etcd.range({ key: "guard/", prefix: true });
  const values = (r) => r.kvs.filter((kv) => !kv.key.startsWith("guard/job/")).map((kv) => [kv.key, kv.value, kv.modRevision]);
  assert.deepEqual(values(after), values(before), "nothing written by the old holder");

  const ok = await etcd.put("guard/out", "three", { ifHeld: m2 });
  assert.ok(ok.revision > m2.token);
  assert.equal((await etcd.txn({ compare: [m2.isOwner()], success: [] })).succeeded, true);
  assert.equal((await etcd.get("guard/out")).value, "three");

  await m2.unlock();
  const local = await refused(etcd.put("guard/out", "late", { ifHeld: m2 }), "NotHeld");
  assert.equal(local.holderToken, undefined, "refused before any request: nothing known of a holder");
  assert.throws(() => m2.isOwner(), { code: "NotHeld" });
  await assert.rejects(etcd.put("guard/out", "x", { ifHeld: { key: "guard/job" } }), { code: "InvalidArgument" });
  assert.equal((await etcd.get("guard/out")).value, "three");
});

eachBackend("ifHeld: an election's leadership guards writes; a candidate that does not lead cannot guard", RECIPES, async (t, { connect, clock }) => {
  const etcd = connect();
  // (s2 outlives the in-process clock's jump past s1's TTL.)
  const [s1, s2] = await Promise.all([etcd.session({ ttl: 10 }), etcd.session({ ttl: 30 })]);
  const e1 = s1.election("guard/leader");
  const e2 = s2.election("guard/leader");
  assert.throws(() => e1.isLeader(), { code: "NotLeader" });
  await e1.campaign("one");
  const waiting = e2.campaign("two");
  await etcd.put("guard/config", "v1", { ifHeld: e1 });
  assert.throws(() => e2.isLeader(), { code: "NotLeader" }, "a candidate still waiting is no leader");

  await loseLease(etcd, s1, clock);
  await waiting;
  const e = await refused(etcd.put("guard/config", "stale", { ifHeld: e1 }), "NotLeader");
  assert.equal(e.holderToken, e2.token);
  assert.equal((await etcd.txn({ compare: [e1.isLeader()], success: [] })).succeeded, false);
  await etcd.put("guard/config", "v2", { ifHeld: e2 });
  assert.equal((await etcd.get("guard/config")).value, "v2");
  await e2.resign();
  await refused(etcd.put("guard/config", "v3", { ifHeld: e2 }), "NotLeader");
});
