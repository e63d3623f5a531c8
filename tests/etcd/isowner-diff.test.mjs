// The guarded write, differential: etcd's Go client (Mutex.IsOwner() in a
// Txn) and edge-lease/client (lock.isOwner() in client.txn, and the same
// through `ifHeld`) run one story against a real etcd 3.4 and edge-lease's
// server: a holder's guarded put, its lease revoked behind its back, the
// next holder takes the lock, the old holder's guarded put (refused, the
// failure branch naming the new holder) and the new holder's (applied).
// The four transcripts must be identical.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "../../js/client/index.mjs";
import { runGo } from "./go-client.mjs";
import { startEdge, startEtcd } from "./harness.mjs";

/** The story with edge-lease/client, in the Go program's transcript form. */
async function clientStory(url, pfx) {
  const etcd = connect(url);
  try {
    const base = (await etcd.range({ key: pfx + "probe" })).revision;
    const leases = new Map();
    const rel = (r) => (r === 0 ? 0 : r - base);
    const name = (s) => [...leases].reduce((acc, [hex, l]) => acc.replaceAll(hex, l), s);
    const kvOut = (kv) => ({
      key: name(kv.key),
      value: kv.value,
      createRevision: rel(kv.createRevision),
      modRevision: rel(kv.modRevision),
      version: kv.version,
      lease: kv.lease === null ? "" : leases.get(BigInt("0x" + kv.lease).toString(16)),
    });
    const owner = { range: { key: pfx + "lock/", prefix: true, sortTarget: "create", sortOrder: "ascend", limit: 1 } };
    const record = (step, r) => ({
      step,
      succeeded: r.succeeded,
      revision: rel(r.revision),
      responses: r.responses.map((x) =>
        x.put ? { kind: "put" } : { kind: "range", count: x.range.count, more: x.range.more, kvs: x.range.kvs.map(kvOut) },
      ),
    });
    const guarded = async (step, m, value) =>
      record(step, await etcd.txn({ compare: [m.isOwner()], success: [{ put: { key: pfx + "out", value } }], failure: [owner] }));
    const lock = async (l) => {
      const s = await etcd.session({ ttl: 30 });
      leases.set(s.keySuffix, l);
      const m = s.mutex(pfx + "lock");
      await m.lock();
      return { s, m };
    };
    const txns = [];
    const { s: s1, m: m1 } = await lock("L1");
    txns.push(await guarded("holder", m1, "one"));
    await etcd.revoke(s1.lease);
    const { m: m2 } = await lock("L2");
    txns.push(await guarded("stale holder", m1, "stale"));
    // ifHeld is the same compare: refused alike, naming the holder.
    const e = await etcd.put(pfx + "out", "stale", { ifHeld: m1 }).catch((e) => e);
    const via = { code: e.code, holderKey: name(e.holderKey), holderToken: rel(e.holderToken) };
    txns.push(await guarded("new holder", m2, "two"));
    const out = (await etcd.range({ key: pfx + "out" })).kvs.map(kvOut);
    return { transcript: { txns, out }, ifHeld: via };
  } finally {
    await etcd.close();
  }
}

// A transcript with its run's key prefix (/go/ or /js/) as /p/, and without
// what edge-lease/client does not expose (nested headers' revisions).
const common = (x) =>
  JSON.parse(JSON.stringify(x, (k, v) => (k === "nestedRevision" ? undefined : k === "key" ? v.replace(/^\/(go|js)\//, "/p/") : v)));

test("IsOwner() of etcd's Go client and edge-lease/client's isOwner()/ifHeld: identical Txn results on etcd 3.4 and edge-lease", { timeout: 360_000 }, async (t) => {
  const [etcd, edge] = await Promise.all([startEtcd(t), startEdge(t)]);
  const goEtcd = await runGo("isowner", [etcd.url, "/go/"]);
  const goEdge = await runGo("isowner", [edge.url, "/go/"]);
  const jsEtcd = await clientStory(etcd.url, "/js/");
  const jsEdge = await clientStory(edge.url, "/js/");

  assert.deepEqual(goEdge, goEtcd, "Go's client: the same answers from both servers, nested headers included");
  assert.deepEqual(jsEdge, jsEtcd, "edge-lease/client: the same answers from both servers");
  assert.deepEqual(common(jsEtcd.transcript), common(goEtcd), "both clients saw the same Txn results");

  // And what they saw is the guard working.
  const [holder, stale, next] = goEtcd.txns;
  assert.equal(holder.succeeded, true);
  assert.equal(stale.succeeded, false);
  assert.equal(stale.responses[0].kvs[0].key, "/go/lock/L2", "the failure branch names the new holder");
  assert.equal(next.succeeded, true);
  assert.deepEqual(goEtcd.out.map((kv) => kv.value), ["two"], "the stale holder wrote nothing");
  assert.deepEqual(jsEtcd.ifHeld, { code: "NotHeld", holderKey: "/js/lock/L2", holderToken: stale.responses[0].kvs[0].createRevision });
});
