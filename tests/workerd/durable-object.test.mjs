// The Durable Objects adapter under Miniflare (workerd): state persisted in
// the object's storage across restarts of the runtime, expiry through the
// alarm, and rule 2 across a restart loop. The object's clock is injected
// per request; alarm handling is triggered directly (op "alarm"), and the
// clock starts ten years ahead so that no real alarm fires during the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { workerOptions } from "./worker-options.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const T0 = Math.floor(Date.now() / 1000) * 1000 + 10 * 365 * 86_400_000;
const SLACK = (ttl) => ttl * 500;

function start(persist) {
  return new Miniflare({
    ...workerOptions(join(ROOT, "tests/workerd/do-worker.mjs"), ROOT),
    durableObjects: { LEASES: "Leases" },
    durableObjectsPersist: persist,
  });
}

// A handle on the object that survives runtime restarts.
function harness(t) {
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-do-"));
  const h = {
    mf: start(persist),
    now: T0,
    async call(op, ...args) {
      const res = await h.mf.dispatchFetch("http://do/", {
        method: "POST",
        body: JSON.stringify({ now: h.now, op, args }),
      });
      const body = await res.json();
      if (body.error) throw Object.assign(new Error(body.message), { code: body.error });
      return body.result;
    },
    async restart() {
      await h.mf.dispose();
      h.mf = start(persist);
    },
  };
  t.after(async () => {
    await h.mf.dispose();
    rmSync(persist, { recursive: true, force: true });
  });
  return h;
}

test("state survives a restart of the runtime: ids, TTLs, text and bytes, revisions, alarm", async (t) => {
  const h = harness(t);
  await h.call("grant", 30, { id: "ffffffffffffffff" });
  await h.call("grant", 10, { id: "8000000000000000" });
  await h.call("grant", 20, { id: "7fffffffffffffff" });
  await h.call("grant", 5, { id: "0000000000000005" });
  await h.call("put", "svc/a", "h\u00e9llo", { lease: "ffffffffffffffff" });
  await h.call("putBytes", "bin", [0, 10, 255], { lease: "8000000000000000" });
  await h.call("put", "plain", "1");
  await h.call("put", "plain", "2");
  await h.call("put", "gone", "x", { lease: "0000000000000005" });
  await h.call("revoke", "0000000000000005");
  await h.call("delete", "plain");
  await h.call("put", "plain", "3");
  const before = await h.call("state");
  assert.equal(before.revision, 9);
  // One alarm, never later than the next deadline. Revoking lease 5 left it
  // at lease 5's deadline: alarms only move earlier, an early one reschedules.
  assert.equal(before.nextDeadline, T0 + 10_000);
  assert.equal(await h.call("getAlarm"), T0 + 5_000);

  await h.restart();
  const after = await h.call("state");
  assert.equal(after.revision, before.revision);
  assert.deepEqual(after.keys, before.keys);
  assert.deepEqual(Object.keys(after.leases).sort(), Object.keys(before.leases).sort());
  for (const [id, ttl] of Object.entries(before.leases)) {
    const got = after.leases[id];
    assert.equal(got.grantedTtl, ttl.grantedTtl);
    assert.deepEqual(got.keys, ttl.keys);
    // Never earlier; at most TTL/2 later (the restore slack).
    assert.ok(got.ttlMs >= ttl.ttlMs && got.ttlMs <= ttl.ttlMs + SLACK(ttl.grantedTtl), `${id}: ${got.ttlMs}`);
  }
  assert.equal(await h.call("getAlarm"), T0 + 5_000, "the alarm is stored with the object");
  // Revisions go on from where they were: fencing tokens stay monotonic.
  const put = await h.call("put", "lock", "me", { lease: "ffffffffffffffff", ifAbsent: true });
  assert.equal(put.revision, before.revision + 1);
});

test("alarm: expires what is due, is idempotent, and moves to the next deadline", async (t) => {
  const h = harness(t);
  await h.call("grant", 5, { id: "0000000000000001" });
  await h.call("grant", 20, { id: "0000000000000002" });
  await h.call("put", "a", "1", { lease: "0000000000000001" });
  assert.equal(await h.call("getAlarm"), T0 + 5_000);
  // Renewing the earliest lease does not rewrite the alarm: an early alarm
  // is cheaper than a storage write per renew.
  h.now += 1_000;
  await h.call("renew", "0000000000000001");
  assert.equal(await h.call("getAlarm"), T0 + 5_000);
  // That early alarm: nothing expires, the alarm moves to the real deadline.
  h.now = T0 + 5_000;
  await h.call("alarm");
  let s = await h.call("state");
  assert.deepEqual(Object.keys(s.leases).sort(), ["0000000000000001", "0000000000000002"]);
  assert.equal(await h.call("getAlarm"), T0 + 6_000);

  h.now = T0 + 6_000;
  await h.call("alarm");
  s = await h.call("state");
  assert.deepEqual(Object.keys(s.leases), ["0000000000000002"]);
  assert.deepEqual(s.keys, []);
  assert.equal(s.revision, 3, "the expiry deleted the key in one revision");
  assert.equal(await h.call("getAlarm"), T0 + 20_000);
  // At-least-once delivery: the same alarm again changes nothing.
  await h.call("alarm");
  assert.deepEqual(await h.call("state"), s);
  // The expiry is durable.
  await h.restart();
  assert.deepEqual((await h.call("state")).keys, []);
});

test("1100 keys: restored through paged list(); their revoke is one transaction in chunks of 128", async (t) => {
  const h = harness(t);
  await h.call("grant", 600, { id: "0000000000000009" });
  await h.call("putMany", "k", 1100, "0000000000000009");
  await h.call("put", "keep", "1");
  await h.restart();
  assert.equal((await h.call("state")).keys.length, 1101, "every page was read");
  await h.call("txns");
  const r = await h.call("revoke", "0000000000000009");
  assert.equal(r.keys.length, 1100);
  // One transaction: 1101 deletes (keys + lease) in calls of at most 128,
  // then 2201 puts: each key's last version and its deletion mark (the
  // history reads at past revisions need), and the revision.
  assert.deepEqual(await h.call("txns"), [[...Array(8).fill(128), 77, ...Array(17).fill(128), 25]]);
  await h.restart();
  const s = await h.call("state");
  assert.deepEqual(s.keys.map((e) => e.key), ["keep"]);
  assert.equal(s.revision, r.revision);
});

test("a failed storage write fails the lessor until it is reopened from storage", async (t) => {
  const h = harness(t);
  await h.call("grant", 60, { id: "0000000000000001" });
  await h.call("put", "a", "1");
  await h.call("fail", true);
  await assert.rejects(h.call("put", "a", "2"), { code: "StorageFailed" });
  await assert.rejects(h.call("put", "b", "1"), { code: "StorageFailed" });
  await h.call("fail", false);
  await assert.rejects(h.call("put", "b", "1"), { code: "StorageFailed" }, "still failed");
  await h.call("reopen");
  const s = await h.call("state");
  assert.deepEqual(
    s.keys.map((e) => [e.key, e.value]),
    [["a", "1"]],
    "the refused write is not there",
  );
  assert.equal((await h.call("put", "b", "1")).revision, 3);
});

test("on a KV-backed object a key past 640 bytes (a stored key of 2 KiB) is refused by the engine; the lessor goes on", async (t) => {
  const h = harness(t);
  await h.call("put", "k".repeat(640), "at the limit");
  await assert.rejects(h.call("put", "k".repeat(641), "past it"), { code: "InvalidArgument" });
  assert.equal((await h.call("put", "after", "1")).revision, 3);
});

test("restarts cannot keep an abandoned lease alive (rule 2)", async (t) => {
  const ttl = 10;
  const h = harness(t);
  await h.call("grant", ttl, { id: "00000000000000ab" });
  await h.call("grant", ttl, { id: "00000000000000cd" });
  await h.call("put", "svc/abandoned", "up", { lease: "00000000000000ab" });
  h.now += 6_000;
  await h.call("renew", "00000000000000ab"); // last renew: persisted (moved > TTL/2)
  const lastRenew = h.now;
  let goneAt = null;
  // Restart every 2.5 s of clock; each incarnation runs its alarm and keeps
  // the other lease alive, so the store keeps being written.
  while (h.now < lastRenew + ttl * 1000 + SLACK(ttl) + 5_000) {
    h.now += 2_500;
    await h.restart();
    await h.call("alarm");
    await h.call("renew", "00000000000000cd");
    const s = await h.call("state");
    const alive = "00000000000000ab" in s.leases;
    if (h.now < lastRenew + ttl * 1000) assert.ok(alive, `expired early at +${h.now - lastRenew} ms`);
    if (!alive && goneAt === null) {
      goneAt = h.now;
      assert.ok(!s.keys.some((e) => e.key === "svc/abandoned"));
    }
  }
  assert.ok(goneAt !== null && goneAt <= lastRenew + ttl * 1000 + SLACK(ttl), `gone at +${goneAt - lastRenew} ms`);
  await h.restart();
  const s = await h.call("state");
  assert.ok(!("00000000000000ab" in s.leases));
  assert.ok(!s.keys.some((e) => e.key === "svc/abandoned"), "the expiry was stored");
});

test("SQLite-backed, output-gate mode: a batch the storage refuses part of writes none of it; the operation fails and the lessor goes on", async (t) => {
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-do-"));
  const make = () =>
    new Miniflare({
      ...workerOptions(join(ROOT, "tests/workerd/sqlite-batch-worker.mjs"), ROOT),
      durableObjects: { BATCHES: { className: "Batches", useSQLite: true } },
      durableObjectsPersist: persist,
    });
  let mf = make();
  t.after(async () => {
    await mf.dispose();
    rmSync(persist, { recursive: true, force: true });
  });
  const call = async (op, ...args) => (await (await mf.dispatchFetch("http://do/", { method: "POST", body: JSON.stringify({ op, args }) })).json());
  assert.equal((await call("txn", [["small", 10]])).result, 2);
  const stored = (await call("stored")).result;
  // One value past SQLite's 2 MB beside a small one, in one revision.
  const refused = await call("txn", [["a", 10], ["big", 2.5 * 1024 * 1024]]);
  assert.ok(refused.error, JSON.stringify(refused));
  assert.deepEqual((await call("keys")).result, [["small", 10]]);
  assert.equal((await call("stored")).result, stored, "nothing of the refused batch is stored");
  assert.equal((await call("txn", [["after", 1]])).result, 3, "the lessor goes on");
  await mf.dispose();
  mf = make();
  assert.deepEqual((await call("keys")).result, [["after", 1], ["small", 10]], "a restart finds exactly what was acknowledged");
});

test("an object evicted and woken again in the same isolate closes the lessor of its instance before (its engine memory is used again)", async (t) => {
  const h = harness(t);
  const { id } = await h.call("grant", 60);
  await h.call("putMany", "k/", 100, id);
  for (let i = 0; i < 3; i++) {
    await h.mf.unsafeEvictDurableObject("", "Leases", { name: "test" });
    assert.equal((await h.call("range", "k/")).length, 100);
  }
  // (Closed just after the new one opens: bounded wait.)
  let opened;
  for (const until = Date.now() + 3000; Date.now() < until; ) {
    opened = await h.call("opened");
    if (opened.slice(0, -1).every((s) => s === "Closed")) break;
  }
  assert.deepEqual(opened, ["Closed", "Closed", "Closed", "open"]);
});
