// Sessions against a real etcd 3.4, edge-lease's server and an in-process
// Lessor: keepalives every TTL/3 keep the lease past its TTL; when they stop
// succeeding, `signal` aborts at the deadline the client last knew (not
// later) with a `lost` event; a revoked lease ends the session at the next
// keepalive (in-process: at once); close() revokes. In-process the Lessor's
// clock is moved instead of sleeping for TTLs.

import assert from "node:assert/strict";
import { test } from "node:test";
import { connect } from "../../js/client/index.mjs";
import { eachBackend, proxy, sleep, until, useServers, within } from "./servers.mjs";

useServers();

eachBackend("a session outlives its TTL while kept alive; close() revokes", { timeout: 20_000 }, async (t, { connect, lessor, clock }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 2 });
  assert.match(s.lease, /^[0-9a-f]{16}$/);
  assert.equal(s.ttl, 2);
  await etcd.put("s1/key", "v", { lease: s.lease });
  if (clock) {
    // 5 s of the lessor's time, in steps the keepalives (every TTL/3 of
    // real time) keep up with: half a TTL ahead, then wait for a renewal.
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await until(() => lessor.timeToLive(s.lease).ttlMs > 1500, 2000);
    }
  } else {
    await sleep(4500); // more than two TTLs
  }
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

eachBackend("keepalives failing: signal aborts at the last known deadline, with a lost event", { needs: ["url"], timeout: 20_000 }, async (t, { url }) => {
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

eachBackend("keepalives stop: the server expires the lease by its own clock (the Worker: its alarm), the lock passes on", { needs: ["url", "txn", "watch", "sort"], timeout: 20_000 }, async (t, { url, connect: direct }) => {
  // The holder reaches the server through a proxy that goes dark; nobody
  // revokes its lease: the server's expiry (etcd's lessor, the Node
  // server's timer, the Durable Object's alarm) has to end it.
  const p = await proxy(t, url);
  const held = connect(p.url, { timeout: 1000 });
  t.after(() => held.close());
  const etcd = direct();
  const s = await held.session({ ttl: 2 }); // etcd's (and edge-lease's) minimum TTL
  const m1 = s.mutex("s6");
  await m1.lock();
  const token1 = m1.token;
  await held.put("s6-data", "x", { lease: s.lease });
  const w = etcd.watch("s6-data");
  await w.ready;
  const waiter = await etcd.session({ ttl: 10 });
  const m2 = waiter.mutex("s6");
  let lockedAt = 0;
  const locking = m2.lock().then(() => (lockedAt = Date.now()));
  const lost = new Promise((resolve) => s.addEventListener("lost", (e) => resolve(e.reason)));
  await sleep(800); // at least one keepalive through (every TTL/3)
  p.block();
  const deadline = s.deadline;
  const reason = await within(lost, 3000, "the lost event");
  assert.equal(reason.code, "LeaseNotFound");
  assert.equal(s.signal.aborted, true);
  assert.equal(m1.signal.aborted, true);
  await within(locking, 4000, "the waiter's lock (the holder's lease expired on the server)");
  assert.ok(lockedAt >= deadline, `the lock passed ${deadline - lockedAt} ms before the holder's deadline`);
  assert.ok(m2.token > token1, `${m2.token} > ${token1}`);
  const next = await within(w.next(), 2000, "the expiry's delete event");
  assert.deepEqual([next.value.type, next.value.key], ["delete", "s6-data"]);
  await w.return();
  assert.equal((await etcd.timeToLive(s.lease)).ttl, -1);
  assert.equal(await etcd.get("s6-data"), undefined);
  await m2.unlock();
});

eachBackend("a lease revoked behind the session's back ends it at the next keepalive (in-process: at once)", { timeout: 20_000 }, async (t, { connect, name }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 3 });
  const lost = new Promise((resolve) => s.addEventListener("lost", (e) => resolve(e.reason)));
  const revokedAt = Date.now();
  await connect().revoke(s.lease);
  const reason = await within(lost, 2500, "the lost event");
  assert.equal(reason.code, "LeaseNotFound");
  if (name === "lessor") {
    assert.match(reason.message, /revoked/);
    assert.ok(Date.now() - revokedAt < 100, "the lessor says so at once");
  } else {
    assert.match(reason.message, /TTL 0/);
    assert.ok(Date.now() - revokedAt < 1000 + 300, "within one keepalive interval (TTL/3)");
  }
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

eachBackend("client.close() closes its sessions (their leases revoked)", {}, async (t, { connect }) => {
  const other = connect();
  const etcd = connect();
  const [a, b] = [await etcd.session({ ttl: 30 }), await etcd.session({ ttl: 30 })];
  await etcd.close();
  assert.ok(a.signal.aborted && b.signal.aborted);
  for (const s of [a, b]) assert.equal((await other.timeToLive(s.lease)).ttl, -1);
  await until(async () => !(await other.leases()).includes(a.lease), 1000);
});

eachBackend("in-process: the session's deadline is the lessor's, to the millisecond", { backends: ["lessor"] }, async (t, { connect, lessor, clock }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 10 });
  const exact = () => Date.now() + lessor.timeToLive(s.lease).ttlMs;
  assert.ok(Math.abs(s.deadline - exact()) <= 2, `${s.deadline} vs ${exact()}`);
  // Someone else renews the lease: the session follows the engine.
  clock.advance(4000);
  await etcd.keepAliveOnce(s.lease);
  await until(() => Math.abs(s.deadline - exact()) <= 2 || s.signal.aborted, 5000);
  assert.equal(s.signal.aborted, false);
  await s.close();
});

eachBackend("in-process: the lessor expires the lease; the session ends then, and the lock goes to the next with a higher token", { backends: ["lessor"], timeout: 10_000 }, async (t, { connect, lessor, clock }) => {
  const etcd = connect();
  const holder = await etcd.session({ ttl: 5 });
  const waiter = await connect().session({ ttl: 60 });
  const m1 = holder.mutex("s5");
  await m1.lock();
  const token1 = m1.token;
  const m2 = waiter.mutex("s5");
  let holderAbortedFirst = null;
  const locking = m2.lock().then(() => (holderAbortedFirst = m1.signal.aborted));
  const lost = new Promise((resolve) => holder.addEventListener("lost", (e) => resolve(e.reason)));
  await sleep(50);
  // Past the holder's TTL by the lessor's clock: no keepalive can come in between.
  const expired = clock.advance(5000);
  assert.deepEqual(expired.map((e) => e.id), [holder.lease]);
  assert.deepEqual(expired[0].keys, [m1.key]);
  const reason = await within(lost, 1000, "the lost event");
  assert.equal(reason.code, "LeaseNotFound");
  assert.match(reason.message, /expired/);
  assert.equal(reason.lease, holder.lease);
  assert.equal(holder.lost, true);
  assert.equal(m1.signal.reason, reason);
  await within(locking, 2000, "the waiter's lock");
  assert.equal(holderAbortedFirst, true, "the old holder's signal aborted before the new one got the lock");
  assert.ok(m2.token > token1, `${m2.token} > ${token1}`);
  assert.equal(waiter.signal.aborted, false);
  await m2.unlock();
});

eachBackend("a TTL past setTimeout's range (100 days): no timer storm, no keepalive storm", { needs: ["url"], timeout: 20_000 }, async (t, { connect }) => {
  let keepalives = 0;
  const counting = (url, init) => {
    if (String(url).endsWith("/lease/keepalive")) keepalives++;
    return fetch(url, init);
  };
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on("warning", onWarning);
  t.after(() => process.off("warning", onWarning));
  const c = connect({ fetch: counting });
  const s = await c.session({ ttl: 100 * 24 * 3600 });
  assert.equal(s.ttl, 100 * 24 * 3600);
  await sleep(500);
  assert.equal(keepalives, 0, "no keepalive is due for 33 days");
  assert.deepEqual(warnings.filter((n) => n === "TimeoutOverflowWarning"), []);
  assert.equal(s.signal.aborted, false);
  await s.close();
});

eachBackend("session() racing close(): the session is closed with the client (its lease revoked) and session() rejects Closed", {}, async (t, { connect, lessor }) => {
  const c = connect();
  const direct = connect();
  const pending = c.session({ ttl: 30 });
  const closing = c.close();
  await assert.rejects(within(pending, 10_000, "session()"), { code: "Closed" });
  await within(closing, 10_000, "close()");
  const leases = lessor ? lessor.leases() : await direct.leases();
  assert.deepEqual(leases, [], "no lease left behind");
});

test("close() does not wait long for a session() whose server never answers: it stops the request after a second, session() rejects Closed", async (t) => {
  const { createServer } = await import("node:net");
  const held = [];
  const server = createServer((socket) => held.push(socket)); // accepts, never answers
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  t.after(() => (held.forEach((s) => s.destroy()), server.close()));
  const c = connect(`http://127.0.0.1:${server.address().port}`, { timeout: 5000 });
  const pending = c.session({ ttl: 10 });
  await sleep(100);
  const t0 = Date.now();
  await within(c.close(), 3000, "close()");
  assert.ok(Date.now() - t0 < 1800, `close() took ${Date.now() - t0} ms (a second of grace, then the request is stopped)`);
  await assert.rejects(pending, { code: "Closed" });
});

eachBackend("close() with timeout: Infinity ends when the server stops answering the revoke (the lease then ends with its TTL)", { needs: ["url"], backends: ["edge-lease"], timeout: 20_000 }, async (t, { url }) => {
  let hang = false;
  const silent = (u, init = {}) =>
    hang ? new Promise((_, no) => init.signal?.addEventListener("abort", () => no(init.signal.reason), { once: true })) : fetch(u, init);
  const c = connect(url, { timeout: Infinity, fetch: silent });
  await c.session({ ttl: 5 });
  hang = true;
  const t0 = Date.now();
  await within(c.close(), 10_000, "close()");
  assert.ok(Date.now() - t0 < 8000, `close() took ${Date.now() - t0} ms`);
});

test("in-process: reading a session's signal inside the lessor's own storage write does not end the session", async () => {
  const { Lessor } = await import("../../js/entries/node.mjs");
  let session = null;
  const seen = [];
  const lessor = new Lessor({
    autoTick: false,
    storage: {
      write() {
        // The engine is inside a change here: it cannot be asked for the lease's time left.
        if (session) seen.push(session.signal.aborted, session.lost);
      },
    },
  });
  const client = connect(lessor);
  session = await client.session({ ttl: 10 });
  lessor.put("k", "v");
  assert.deepEqual(seen, [false, false]);
  assert.equal(session.signal.aborted, false);
  await session.close();
  client.close();
  lessor.close();
});
