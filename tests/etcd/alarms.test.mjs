// etcd's alarms on a real etcd 3.4 and on edge-lease, the same gateway
// calls to both, answers compared (member and cluster ids normalised):
// NOSPACE raised by the write the quota refuses, then every write that
// takes space refused whatever its size while reads, deletes and read-only
// txns go on, listed by Alarm and in Status's errors, cleared by a
// DEACTIVATE and raised again by the next refused write; CORRUPT raised by
// a client, refusing what goes through raft. (The quotas differ in what
// they count, etcd its bolt file, which grows as its backend commits, and
// edge-lease its data: 60 KB versions are put until one is refused, on
// each, and only that refusal is compared.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { restart, startBoth, post, b64 } from "./harness.mjs";
import { connect, grpcClient, norm, until, within } from "./grpc-client.mjs";


// Answers with the member's id named, and without what differs by design
// (ids, raft's indexes and term, and the sizes, which count etcd's bolt file
// and edge-lease's data); alarms sorted (etcd lists those of more than one
// type from a map, in no set order).
const DROP = ["cluster_id", "member_id", "raft_term", "revision", "raftIndex", "raftAppliedIndex", "raftTerm", "dbSize", "dbSizeInUse", "leader"];
const normalizer = (id) => (v) => {
  const out = JSON.parse(JSON.stringify(v).replaceAll(id, "<member>"), (k, x) => (DROP.includes(k) ? undefined : x));
  out?.alarms?.sort((a, b) => (`${a.alarm} ${a.memberID}` < `${b.alarm} ${b.memberID}` ? -1 : 1));
  out?.errors?.sort();
  return out;
};

test("alarms: NOSPACE and CORRUPT raised, listed, obeyed and cleared as on etcd 3.4", async (t) => {
  const { etcd, edge } = await startBoth(t, { args: ["--quota-backend-bytes", "100000"] });
  const logs = [];
  for (const side of [etcd, edge]) {
    const log = [];
    const members = (await post(side.url, "/v3/cluster/member/list", {})).body.members;
    const id = members[0].ID;
    const norm = normalizer(id);
    const step = async (what, path, body) => {
      const r = await post(side.url, path, body);
      log.push([what, r.status, norm(r.body)]);
      return r.body;
    };
    const big = { key: b64("a"), value: Buffer.alloc(60_000, 7).toString("base64") };
    const fill = async (what) => {
      let r;
      for (let i = 0; i < 8; i++) {
        r = await post(side.url, "/v3/kv/put", big);
        if (r.status !== 200) break;
        await new Promise((ok) => setTimeout(ok, 150)); // (etcd's backend commits every 100 ms)
      }
      log.push([what, r.status, norm(r.body)]);
    };
    await step("grant before", "/v3/lease/grant", { ID: 77, TTL: 60 });
    await fill("put 60 KB until over the quota");
    await step("alarm list", "/v3/maintenance/alarm", { action: "GET" });
    await step("alarm list, NOSPACE only", "/v3/maintenance/alarm", { action: "GET", alarm: "NOSPACE" });
    await step("a small put", "/v3/kv/put", { key: b64("b"), value: b64("x") });
    await step("a grant", "/v3/lease/grant", { TTL: 60 });
    await step("a read-only txn", "/v3/kv/txn", { success: [{ request_range: { key: b64("b") } }] });
    await step("a txn with a put in its failure branch", "/v3/kv/txn", { success: [{ request_range: { key: b64("b") } }], failure: [{ request_put: { key: b64("c"), value: b64("x") } }] });
    await step("a txn that deletes", "/v3/kv/txn", { success: [{ request_delete_range: { key: b64("zz") } }] });
    await step("a lock", "/v3/lock/lock", { name: b64("job"), lease: 77 });
    await step("a campaign", "/v3/election/campaign", { name: b64("vote"), lease: 77, value: b64("v") });
    await step("status errors", "/v3/maintenance/status", {});
    await step("a delete", "/v3/kv/deleterange", { key: b64("a") });
    await step("a revoke", "/v3/lease/revoke", { ID: 77 });
    await step("disarm, another member", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "1", alarm: "NOSPACE" });
    await step("disarm", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: id, alarm: "NOSPACE" });
    await step("alarm list after", "/v3/maintenance/alarm", { action: "GET" });
    await fill("put 60 KB: over the quota again");
    await step("raised again", "/v3/maintenance/alarm", {});
    await step("disarm again", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: id, alarm: "NOSPACE" });
    // Space back under the quota on both (etcd's file shrinks on defrag;
    // edge-lease gives up history before it refuses a write, so what it
    // holds by now may differ: not compared).
    const { header } = (await post(side.url, "/v3/kv/deleterange", { key: b64("\0"), range_end: b64("\0") })).body;
    await post(side.url, "/v3/kv/compaction", { revision: header.revision, physical: true });
    // (etcd 3.4's answer: no header.)
    const defrag = await post(side.url, "/v3/maintenance/defragment", {});
    assert.deepEqual([defrag.status, defrag.body], [200, {}]);
    // CORRUPT, raised by a client for a member that does not exist.
    await step("raise CORRUPT", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("raise it again", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("range", "/v3/kv/range", { key: b64("b") });
    await step("put", "/v3/kv/put", { key: b64("b"), value: b64("x") });
    await step("delete", "/v3/kv/deleterange", { key: b64("b") });
    await step("txn that writes", "/v3/kv/txn", { success: [{ request_delete_range: { key: b64("b") } }] });
    await step("compact under CORRUPT", "/v3/kv/compaction", { revision: 1 });
    await step("grant", "/v3/lease/grant", { TTL: 60 });
    await step("status errors, CORRUPT", "/v3/maintenance/status", {});
    await step("clear CORRUPT", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("put after", "/v3/kv/put", { key: b64("b"), value: b64("x") });
    await step("alarm list at the end", "/v3/maintenance/alarm", { action: "GET" });
    // One rule set at a time, the last raised (etcd's applier): NOSPACE
    // (raised by a client here), then CORRUPT over it; clearing CORRUPT
    // lifts both though NOSPACE is still listed.
    await step("a lease for later", "/v3/lease/grant", { ID: 78, TTL: 60 });
    await step("raise NOSPACE", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "1", alarm: "NOSPACE" });
    const nested = (op) => ({ success: [{ request_txn: { success: [op] } }] });
    await step("a put in a nested txn (not counted)", "/v3/kv/txn", nested({ request_put: { key: b64("n"), value: b64("x") } }));
    await step("raise CORRUPT over it", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("put under both", "/v3/kv/put", { key: b64("b"), value: b64("x") });
    await step("a nested read-only txn (not read-only at the top)", "/v3/kv/txn", nested({ request_range: { key: b64("n") } }));
    await step("a lock", "/v3/lock/lock", { name: b64("job"), lease: 78 });
    await step("an unlock", "/v3/lock/unlock", { key: b64("job/x") });
    await step("a campaign", "/v3/election/campaign", { name: b64("vote"), lease: 78, value: b64("v") });
    await step("a resign", "/v3/election/resign", { leader: { name: b64("vote"), key: b64("vote/x"), rev: 1, lease: 78 } });
    await step("clear CORRUPT", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("NOSPACE still listed", "/v3/maintenance/alarm", {});
    await step("a put now", "/v3/kv/put", { key: b64("b"), value: b64("y") });
    await step("clear NOSPACE", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "1", alarm: "NOSPACE" });
    // Status's text for entries with zero fields, and an alarm etcd has no name for.
    await step("raise NONE for member 5", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "5" });
    await step("raise 7 for no member", "/v3/maintenance/alarm", { action: "ACTIVATE", alarm: 7 });
    await step("list 7", "/v3/maintenance/alarm", { action: "GET", alarm: 7 });
    await step("status errors, odd entries", "/v3/maintenance/status", {});
    await step("clear them", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "5" });
    await step("clear 7", "/v3/maintenance/alarm", { action: "DEACTIVATE", alarm: 7 });
    logs.push(log);
  }
  for (let i = 0; i < logs[0].length; i++) assert.deepEqual(logs[1][i], logs[0][i], `step ${i}: ${logs[0][i][0]}`);
  // What the sequence is about happened on etcd.
  const at = Object.fromEntries(logs[0].map(([what, status, body]) => [what, { status, body }]));
  assert.equal(at["put 60 KB until over the quota"].body.error, "etcdserver: mvcc: database space exceeded");
  assert.deepEqual(at["alarm list"].body.alarms, [{ memberID: "<member>", alarm: "NOSPACE" }]);
  assert.equal(at["a small put"].status, 429);
  assert.deepEqual(at["status errors"].body.errors, ["memberID:<member> alarm:NOSPACE "]);
  assert.deepEqual(at["alarm list after"].body, {});
  assert.equal(at["put"].body.error, "etcdserver: corrupt cluster");
  assert.equal(at["put after"].status, 200);
});

test("alarms: kept through a crash and restart, and /health counts them, as on etcd 3.4", async (t) => {
  const both = await startBoth(t);
  const logs = [];
  for (let side of [both.etcd, both.edge]) {
    const log = [];
    const id = (await post(side.url, "/v3/cluster/member/list", {})).body.members[0].ID;
    const norm = normalizer(id);
    const step = async (what, path, body) => {
      const r = await post(side.url, path, body);
      log.push([what, r.status, norm(r.body)]);
    };
    const health = async (what, query = "") => {
      const r = await fetch(side.url + "/health" + query);
      log.push([what, r.status, r.headers.get("content-type"), await r.text()]);
    };
    await step("a key", "/v3/kv/put", { key: b64("k"), value: b64("v") });
    await step("raise NOSPACE", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: id, alarm: "NOSPACE" });
    await step("raise CORRUPT for member 1", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
    await step("raise NOSPACE for member 2", "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "2", alarm: "NOSPACE" });
    await health("health with alarms");
    await health("health excluding NOSPACE (one entry of it)", "?exclude=NOSPACE");
    await step("clear NOSPACE for member 2", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "2", alarm: "NOSPACE" });
    await health("health excluding NOSPACE", "?exclude=NOSPACE");
    await health("health excluding both", "?exclude=NOSPACE&exclude=CORRUPT");
    side = await restart(t, side);
    await step("alarm list after the restart", "/v3/maintenance/alarm", { action: "GET" });
    await step("status errors", "/v3/maintenance/status", {});
    await health("health after the restart");
    await health("health excluding both, after", "?exclude=CORRUPT&exclude=NOSPACE");
    // Restored, CORRUPT's rules apply over NOSPACE's (etcd's restoreAlarms).
    await step("range", "/v3/kv/range", { key: b64("k") });
    await step("put", "/v3/kv/put", { key: b64("k"), value: b64("w") });
    await step("grant", "/v3/lease/grant", { TTL: 60 });
    await step("delete", "/v3/kv/deleterange", { key: b64("k") });
    await step("clear CORRUPT", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "1", alarm: "CORRUPT" });
    // (Clearing the last of a type goes back to no rules at all.)
    await step("put with NOSPACE still listed", "/v3/kv/put", { key: b64("k"), value: b64("x") });
    await step("clear NOSPACE", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: id, alarm: "NOSPACE" });
    side = await restart(t, side);
    await step("alarm list after another restart", "/v3/maintenance/alarm", { action: "GET" });
    await health("health at the end");
    await step("the key", "/v3/kv/range", { key: b64("k") });
    logs.push(log);
  }
  for (let i = 0; i < logs[0].length; i++) assert.deepEqual(logs[1][i], logs[0][i], `step ${i}: ${logs[0][i][0]}`);
  const at = Object.fromEntries(logs[0].map(([what, ...rest]) => [what, rest]));
  assert.equal(at["alarm list after the restart"][1].alarms.length, 2);
  assert.equal(at["health after the restart"][0], 503);
  assert.equal(at["health excluding both, after"][0], 200);
  assert.equal(at["put"][1].error, "etcdserver: corrupt cluster");
  assert.equal(at["put with NOSPACE still listed"][0], 200);
  assert.deepEqual(at["alarm list after another restart"][1], {});
});

// Under CORRUPT etcd refuses the revoke that expiry makes: a lease past its
// deadline keeps its key, is listed, gives a TTL below zero with its keys,
// and a keepalive for it waits; once the alarm is cleared the lease ends
// (its key with it) and that keepalive is answered TTL 0.
test("alarms: under CORRUPT leases outlive their deadline, and end once it is cleared, as on etcd 3.4", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const B = (s) => Buffer.from(s);
  const sides = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const lease = grpcClient(side.url, "etcdserverpb.Lease");
    t.after(() => lease.close());
    const { ID } = await c.lease("LeaseGrant", { ID: 4242, TTL: 2 });
    await c.kv("Put", { key: B("held"), value: B("v"), lease: ID });
    await c.maintenance("Alarm", { action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
    sides.push({ c, lease, ID });
  }
  // Past the deadline by a second and a half on both.
  await new Promise((ok) => setTimeout(ok, 3500));
  const looks = [];
  for (const { c, ID } of sides) {
    const ttl = await c.lease("LeaseTimeToLive", { ID, keys: true });
    looks.push({
      key: (await c.kv("Range", { key: B("held") })).kvs.map((kv) => String(kv.value)),
      leases: (await c.lease("LeaseLeases", {})).leases.map((l) => l.ID),
      ttl: { ...ttl, header: undefined, TTL: Number(ttl.TTL) < 0 ? "below zero" : ttl.TTL },
      revoke: await c.lease("LeaseRevoke", { ID }),
    });
  }
  assert.deepEqual(norm(looks[1]), norm(looks[0]));
  assert.deepEqual(looks[0].key, [b64("v")]);
  assert.equal(looks[0].ttl.TTL, "below zero");
  // A keepalive for it: no answer while the alarm stands.
  const streams = sides.map(({ lease, ID }) => {
    const s = lease.LeaseKeepAlive();
    const got = [];
    s.on("data", (d) => got.push(d));
    s.on("error", () => {});
    t.after(() => s.cancel());
    s.write({ ID });
    return got;
  });
  // And on the JSON gateway: no answer either, headers included (etcd's
  // gateway sends them with the first message).
  const gateway = [etcd, edge].map((side, i) => {
    const ac = new AbortController();
    t.after(() => ac.abort());
    const g = { ac, status: null };
    g.answer = fetch(side.url + "/v3/lease/keepalive", { method: "POST", body: JSON.stringify({ ID: sides[i].ID }), signal: ac.signal }).then(async (r) => {
      g.status = r.status;
      const reader = r.body.getReader();
      const first = await reader.read();
      return JSON.parse(new TextDecoder().decode(first.value).split("\n")[0]).result;
    });
    g.answer.catch(() => {});
    return g;
  });
  await new Promise((ok) => setTimeout(ok, 700));
  assert.deepEqual(streams, [[], []]);
  assert.deepEqual(
    gateway.map((g) => g.status),
    [null, null],
  );
  for (const { c } of sides) await c.maintenance("Alarm", { action: "DEACTIVATE", memberID: "1", alarm: "CORRUPT" });
  // Cleared: the keepalive is answered TTL 0 and the key is gone (etcd
  // revokes within a few seconds).
  assert.ok(await until(async () => streams.every((g) => g.length > 0), 10_000), "keepalives answered");
  assert.deepEqual(streams.map((g) => g.map((r) => Number(r.TTL ?? 0))), [[0], [0]]);
  const answers = await within(Promise.all(gateway.map((g) => g.answer)), 10_000, "gateway keepalives answered");
  assert.deepEqual(
    answers.map((a) => [a.ID, a.TTL ?? "0"]),
    sides.map(({ ID }) => [String(ID), "0"]),
  );
  assert.deepEqual(
    gateway.map((g) => g.status),
    [200, 200],
  );
  for (const g of gateway) g.ac.abort();
  for (const { c, ID } of sides) {
    assert.ok(await until(async () => ((await c.kv("Range", { key: B("held") })).kvs ?? []).length === 0, 10_000), "key gone");
    assert.deepEqual((await c.lease("LeaseLeases", {})).leases ?? [], []);
    assert.equal(Number((await c.lease("LeaseTimeToLive", { ID })).TTL ?? 0), -1);
  }
});
