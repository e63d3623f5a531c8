// The etcd3 npm client (1.1.2) against a real etcd and edge-lease: kv, and a
// lease with keepalives that is `lost` once revoked from outside. Then
// gRPC calls with etcd/proto's own definitions against both, so a wrong
// field number shows up as a difference (a real etcd decodes and encodes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Etcd3 } from "etcd3";
import * as grpc from "@grpc/grpc-js";
import { startBoth, post } from "./harness.mjs";
import { grpcClient, within } from "./grpc-client.mjs";


test("etcd3 client: kv and a lease lost after a server-side revoke, on both", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const results = [];
  for (const side of [etcd, edge]) {
    const client = new Etcd3({ hosts: side.url });
    t.after(() => client.close());
    const r = {};
    await client.put("k/1").value("one");
    await client.put("k/2").value("two");
    r.get = await client.get("k/1").string();
    r.prefix = await client.getAll().prefix("k/").strings();
    r.count = await client.getAll().prefix("k/").count();
    r.missing = await client.get("nope").string();
    await client.delete().key("k/2");
    r.after = await client.getAll().prefix("k/").keys();

    const lease = client.lease(5);
    const id = await lease.grant();
    await lease.put("leased").value("v");
    r.leased = await client.get("leased").string();
    const keptAlive = new Promise((ok) => lease.once("keepaliveSucceeded", (res) => ok(res.TTL)));
    r.keepalive = await within(lease.keepaliveOnce().then((res) => res.TTL), 5000, "keepaliveOnce");
    const lost = new Promise((ok) => lease.once("lost", (e) => ok(e.message)));
    // etcd3 hands out the id as a decimal string.
    const revoked = await post(side.url, "/v3/lease/revoke", { ID: id });
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    // etcd3 keeps alive every ttl/3 s: the next keepalive answers TTL 0.
    r.lost = (await within(lost, 8000, `lost (${side.name})`)).replace(id, "<id>");
    r.keptAliveTtl = await Promise.race([keptAlive, Promise.resolve("none")]);
    r.leasedAfter = await client.get("leased").string();
    const err = await client.lease(5, { autoKeepAlive: false }).grant().then(() => null);
    r.granted = err === null;
    results.push(r);
  }
  results[0].keptAliveTtl = results[1].keptAliveTtl = "<timing>";
  assert.deepEqual(results[1], results[0]);
  assert.equal(results[1].leased, "v");
  assert.equal(results[1].leasedAfter, null);
});

test("gRPC with etcd/proto's definitions: etcd and edge-lease decode the same", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const client = (url, service) => {
    const c = grpcClient(url, service);
    t.after(() => c.close());
    return c;
  };
  const unary = (c, method, req) =>
    new Promise((ok) => c[method](req, (err, res) => ok(err ? { code: err.code, details: err.details } : res)));
  const norm = (o) =>
    JSON.parse(JSON.stringify(o), (k, v) => (["cluster_id", "member_id", "raft_term", "leader", "raftTerm", "raftIndex", "raftAppliedIndex", "dbSize", "dbSizeInUse", "ID"].includes(k) || (k === "lease" && v !== "0") ? "<n>" : v));

  const outs = [];
  for (const side of [etcd, edge]) {
    const kv = client(side.url, "etcdserverpb.KV");
    const lease = client(side.url, "etcdserverpb.Lease");
    const cluster = client(side.url, "etcdserverpb.Cluster");
    const maint = client(side.url, "etcdserverpb.Maintenance");
    const o = [];
    const g = await unary(lease, "LeaseGrant", { TTL: 60 });
    o.push(g);
    o.push(await unary(kv, "Put", { key: Buffer.from("a"), value: Buffer.from("1"), lease: g.ID }));
    o.push(await unary(kv, "Put", { key: Buffer.from("a"), value: Buffer.from("2"), prev_kv: true }));
    o.push(await unary(kv, "Range", { key: Buffer.from("a"), range_end: Buffer.from("b"), limit: 5 }));
    o.push(await unary(kv, "DeleteRange", { key: Buffer.from("a"), prev_kv: true }));
    o.push(await unary(lease, "LeaseTimeToLive", { ID: g.ID, keys: true }));
    o.push(await unary(lease, "LeaseLeases", {}));
    o.push(await unary(lease, "LeaseRevoke", { ID: "77" }));
    o.push(await unary(kv, "Put", { key: Buffer.alloc(0) }));
    const m = await unary(cluster, "MemberList", {});
    o.push({ members: m.members.length, clientURLs: m.members[0].clientURLs[0] === side.url, peer: m.members[0].peerURLs[0] === side.peer, header: m.header });
    const st = await unary(maint, "Status", {});
    o.push({ ...st, leaderIsSelf: st.leader === st.header.member_id });
    // A bidi stream: the keepalive of the granted and of an unknown lease.
    const ka = lease.LeaseKeepAlive();
    const got = [];
    ka.on("data", (d) => got.push(d));
    const ended = new Promise((ok) => ka.on("end", ok));
    ka.on("error", () => {});
    ka.write({ ID: g.ID });
    ka.write({ ID: "5" });
    ka.end();
    await within(ended, 5000, "keepalive stream end");
    o.push(got);
    outs.push(norm(o));
  }
  assert.deepEqual(outs[1], outs[0]);
});
