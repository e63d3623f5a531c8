// connect([url, ...]): several endpoints, spread and failed over as etcd's
// clientv3 does. The "members" here are proxies in front of one server
// (etcd or edge-lease): each can die (block: connections dropped), or lose
// the answer of a request it passed on (swallow), while the store behind
// them stays one, so what was written can be counted.

import assert from "node:assert/strict";
import { test } from "node:test";
import { connect } from "../../js/client/index.mjs";
import { freePort } from "../etcd/harness.mjs";
import { SERVERS, eachBackend, proxy, until, useServers, within } from "./servers.mjs";

useServers();

const members = async (t, url, n) => Promise.all(Array.from({ length: n }, () => proxy(t, url)));
const open = (t, target, o = { timeout: 1000 }) => {
  const c = connect(target, o);
  t.after(() => c.close());
  return c;
};

test("connect() takes a list, etcdctl's comma-separated --endpoints, or one URL as before", async (t) => {
  const a = open(t, "http://127.0.0.1:1, http://127.0.0.1:2/,http://127.0.0.1:1");
  assert.deepEqual(
    a.endpoints.map((e) => [e.url, e.healthy, e.lastError]),
    [["http://127.0.0.1:1", true, null], ["http://127.0.0.1:2", true, null]],
    "trimmed, normalised, duplicates dropped",
  );
  assert.equal(open(t, ["http://127.0.0.1:3", new URL("http://127.0.0.1:4")]).endpoints.length, 2);
  assert.deepEqual(open(t, "http://127.0.0.1:5").endpoints.map((e) => e.url), ["http://127.0.0.1:5"]);
  assert.throws(() => connect([]), { code: "InvalidArgument" });
  assert.throws(() => connect(" , "), { code: "InvalidArgument" });
  assert.throws(() => connect(["http://127.0.0.1:1", 5]), { code: "InvalidArgument" });
});

eachBackend("reads fail over to the next member; health is learnt, and a probe finds the member back", { needs: ["server"], backends: SERVERS }, async (t, { url }) => {
  const [p1, p2, p3] = await members(t, url, 3);
  const c = open(t, [p1.url, p2.url, p3.url]);
  await c.put("fo/r", "v");
  p1.block();
  p2.block();
  for (let i = 0; i < 6; i++) assert.equal((await c.get("fo/r"))?.value, "v", `read ${i} answered by the member left`);
  const [e1, e2, e3] = c.endpoints;
  assert.deepEqual([e1.healthy, e2.healthy, e3.healthy], [false, false, true]);
  assert.equal(e1.lastError?.code, "Unavailable");
  assert.equal(e2.lastError?.code, "Unavailable");
  // Back: the Status probe says so, with no call of the user's needed.
  p1.unblock();
  await until(() => c.endpoints[0].healthy, 5000);
  assert.equal(c.endpoints[1].healthy, false, "p2 is still away");
  // A single URL is not retried: its error surfaces as it always did.
  const one = open(t, p2.url);
  await assert.rejects(one.get("fo/r"), { code: "Unavailable" });
  assert.equal(one.endpoints[0].healthy, false);
});

eachBackend("a put whose answer is lost surfaces Unavailable with its cause and is not retried", { needs: ["server"], backends: SERVERS }, async (t, { url }) => {
  const [p1, p2] = await members(t, url, 2);
  const c = open(t, [p1.url, p2.url]);
  const direct = open(t, url);
  await c.get("fo/warm"); // both members are connected and healthy
  p1.swallow("/v3/kv/put");
  p2.swallow("/v3/kv/put");
  const err = await c.put("fo/once", "v").then(
    () => assert.fail("the put resolved"),
    (e) => e,
  );
  assert.equal(err.code, "Unavailable");
  assert.ok(err.cause, `the transport's error is its cause: ${err.message}`);
  assert.ok([p1.url, p2.url].includes(err.endpoint), `it names the member: ${err.endpoint}`);
  assert.equal(p1.swallowed + p2.swallowed, 1, "one attempt only");
  assert.equal(p1.requests("/v3/kv/put") + p2.requests("/v3/kv/put"), 1, "no second put went out");
  const kv = await direct.get("fo/once");
  assert.equal(kv?.version, 1, "written exactly once (the server applied the lost one)");
  // A txn (a lock's acquisition is one) the same.
  p1.swallow("/v3/kv/txn");
  p2.swallow("/v3/kv/txn");
  await assert.rejects(c.txn({ success: [{ put: { key: "fo/once", value: "w" } }] }), { code: "Unavailable" });
  assert.equal((await direct.get("fo/once"))?.version, 2, "the txn ran once");
});

eachBackend("a write that never left (connection refused) is sent to the next member", { needs: ["server"], backends: SERVERS }, async (t, { url }) => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const c = open(t, [dead, url]);
  const direct = open(t, url);
  for (let i = 0; i < 4; i++) await c.put("fo/refused", String(i));
  assert.equal((await direct.get("fo/refused"))?.version, 4, "each put applied once");
  const [e0, e1] = c.endpoints;
  assert.equal(e0.healthy, false);
  assert.match(e0.lastError.message, /ECONNREFUSED|fetch failed/);
  assert.equal(e1.healthy, true);
});

eachBackend("an unlock or resign whose member lost the answer is retried on another (deleting twice is harmless)", { needs: ["server"], backends: SERVERS }, async (t, { url }) => {
  const [p1, p2] = await members(t, url, 2);
  const c = open(t, [p1.url, p2.url]);
  const direct = open(t, url);
  const s = await c.session({ ttl: 10 });
  const m = s.mutex("fo/lock");
  await m.lock();
  const key = m.key;
  // Both members lose the first delete's answer: the first attempt and the
  // one on the other member fail, the third (the first member again) works.
  p1.swallow("/v3/kv/deleterange");
  p2.swallow("/v3/kv/deleterange");
  await within(m.unlock(), 5000, "unlock");
  assert.equal(p1.swallowed + p2.swallowed, 2, "two answers were lost, and the unlock still resolved");
  assert.equal(m.held, false);
  assert.equal(await direct.get(key), undefined, "the lock key is gone");
  // A plain delete is a write like any other: not retried.
  await c.put("fo/plain", "v");
  p1.swallow("/v3/kv/deleterange");
  p2.swallow("/v3/kv/deleterange");
  await assert.rejects(c.delete("fo/plain"), { code: "Unavailable" });
  // resign(): a txn that deletes the candidate's key if it is still the one it created.
  const el = s.election("fo/el");
  await el.campaign("me");
  const elKey = el.key;
  p1.swallow("/v3/kv/txn");
  p2.swallow("/v3/kv/txn");
  await within(el.resign(), 5000, "resign");
  assert.equal(p1.swallowed + p2.swallowed, 5);
  assert.equal(await direct.get(elKey), undefined, "the candidate's key is gone");
  await s.close();
});

eachBackend("watches move to another member and resume: nothing lost or repeated", { needs: ["server"], backends: SERVERS }, async (t, { url }) => {
  const ps = await members(t, url, 3);
  const c = open(t, ps.map((p) => p.url));
  const direct = open(t, url);
  const w = c.watch("fo/w/", { prefix: true });
  await w.ready;
  const written = [];
  const write = async (n) => {
    for (let i = 0; i < n; i++) {
      const k = `fo/w/${written.length}`;
      written.push([k, (await direct.put(k, "v")).revision]);
    }
  };
  const got = [];
  const reading = (async () => {
    for await (const ev of w) {
      got.push([ev.key, ev.modRevision]);
      if (got.length === 40) break;
    }
  })();
  await write(10);
  // Two members die: wherever the watch was, it is on the third now.
  ps[0].block();
  ps[1].block();
  await write(10);
  ps[0].unblock();
  ps[1].unblock();
  await until(() => c.endpoints.every((e) => e.healthy), 5000);
  // The third dies: the watch must move back.
  ps[2].block();
  await write(10);
  ps[2].unblock();
  // And every connection dropped at once.
  for (const p of ps) p.cut();
  await write(10);
  await within(reading, 10_000, "the watch's 40 events");
  assert.deepEqual(got, written, "every event once, in order");
  assert.ok(c.endpoints[2].lastError, "the third member's failure was seen");
});

eachBackend("a session keeps its lease and its lock while a member is away", { needs: ["server"], backends: SERVERS, timeout: 30_000 }, async (t, { url }) => {
  const [p1, p2, p3] = await members(t, url, 3);
  const c = open(t, [p1.url, p2.url, p3.url]);
  const direct = open(t, url);
  const s = await c.session({ ttl: 2 });
  const m = s.mutex("fo/s");
  await m.lock();
  const token = m.token;
  p1.block();
  // Three TTLs with one member of three gone: keepalives sent to it are
  // retried on the others.
  const until3Ttl = Date.now() + 6000;
  while (Date.now() < until3Ttl) {
    assert.equal(m.held, true, "still held");
    await new Promise((r) => setTimeout(r, 200));
  }
  p2.block(); // and then a second one
  const until2Ttl = Date.now() + 4000;
  while (Date.now() < until2Ttl) {
    assert.equal(m.held, true, "still held with one member of three");
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(s.lost, false);
  assert.equal((await direct.get(m.key))?.createRevision, token, "the key is there with its token");
  assert.ok((await direct.timeToLive(s.lease)).ttl > 0, "the lease is alive on the server");
  assert.deepEqual(c.endpoints.map((e) => e.healthy), [false, false, true]);
  await m.unlock();
  await s.close();
  assert.equal((await direct.timeToLive(s.lease)).ttl, -1, "closed: revoked through the member left");
});
