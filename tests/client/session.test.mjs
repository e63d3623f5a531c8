// Sessions against a real etcd 3.4 and edge-lease's server: keepalives every
// TTL/3 keep the lease past its TTL; when they stop succeeding, `signal`
// aborts at the deadline the client last knew (not later) with a `lost`
// event; a revoked lease ends the session at the next keepalive; close()
// revokes.

import assert from "node:assert/strict";
import { connect } from "../../js/client/index.mjs";
import { eachBackend, proxy, sleep, until, useServers, within } from "./servers.mjs";

useServers();

eachBackend("a session outlives its TTL while kept alive; close() revokes", { timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 2 });
  assert.match(s.lease, /^[0-9a-f]{16}$/);
  assert.equal(s.ttl, 2);
  await etcd.put("s1/key", "v", { lease: s.lease });
  await sleep(4500); // more than two TTLs
  assert.equal(s.signal.aborted, false);
  assert.equal((await etcd.get("s1/key")).value, "v");
  const ttl = await etcd.timeToLive(s.lease);
  assert.ok(ttl.ttl >= 1, `remaining ${ttl.ttl}`);
  assert.ok(s.deadline > Date.now() + 1000 && s.deadline <= Date.now() + 2000, "the deadline moves with each keepalive");
  await s.close();
  assert.equal(s.signal.aborted, true);
  assert.equal(s.signal.reason.code, "Closed");
  assert.equal(s.lost, false);
  assert.equal((await etcd.timeToLive(s.lease)).ttl, -1);
  assert.equal(await etcd.get("s1/key"), undefined);
  await s.close(); // idempotent
});

eachBackend("keepalives failing: signal aborts at the last known deadline, with a lost event", { timeout: 20_000 }, async (t, { url }) => {
  const p = await proxy(t, url);
  const etcd = connect(p.url, { timeout: 1000 });
  t.after(() => etcd.close());
  const s = await etcd.session({ ttl: 3 });
  await sleep(1200); // at least one keepalive through
  const lost = new Promise((resolve) => s.addEventListener("lost", (e) => resolve({ at: Date.now(), reason: e.reason })));
  p.block();
  const deadline = s.deadline;
  assert.ok(deadline > Date.now());
  const { at, reason } = await within(lost, 5000, "the lost event");
  assert.ok(at >= deadline - 5, `aborted ${deadline - at} ms before the deadline`);
  assert.ok(at <= deadline + 150, `aborted ${at - deadline} ms after the deadline`);
  assert.equal(s.signal.aborted, true);
  assert.equal(s.signal.reason, reason);
  assert.equal(reason.code, "LeaseNotFound");
  assert.equal(reason.lease, s.lease);
  assert.equal(s.lost, true);
  p.unblock();
  await s.close();
});

eachBackend("a lease revoked behind the session's back ends it at the next keepalive", { timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 3 });
  const lost = new Promise((resolve) => s.addEventListener("lost", (e) => resolve(e.reason)));
  const revokedAt = Date.now();
  await connect().revoke(s.lease);
  const reason = await within(lost, 2500, "the lost event");
  assert.equal(reason.code, "LeaseNotFound");
  assert.match(reason.message, /TTL 0/);
  assert.ok(Date.now() - revokedAt < 1000 + 300, "within one keepalive interval (TTL/3)");
});

eachBackend("session({ lease }) adopts a lease; Symbol.asyncDispose closes", {}, async (t, { connect }) => {
  const etcd = connect();
  const g = await etcd.grant(10);
  const s = await etcd.session({ lease: g.id });
  assert.equal(s.lease, g.id);
  assert.equal(s.ttl, 10);
  await s[Symbol.asyncDispose]();
  assert.equal((await etcd.timeToLive(g.id)).ttl, -1);
  await assert.rejects(etcd.session({ lease: g.id }), { code: "LeaseNotFound" });
});

eachBackend("client.close() closes its sessions (their leases revoked)", {}, async (t, { url, connect }) => {
  const other = connect();
  const etcd = (await import("../../js/client/index.mjs")).connect(url);
  const [a, b] = [await etcd.session({ ttl: 30 }), await etcd.session({ ttl: 30 })];
  await etcd.close();
  assert.ok(a.signal.aborted && b.signal.aborted);
  for (const s of [a, b]) assert.equal((await other.timeToLive(s.lease)).ttl, -1);
  await until(async () => !(await other.leases()).includes(a.lease), 1000);
});
