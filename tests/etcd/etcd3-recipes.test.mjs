// The etcd3 npm client's own recipes (1.1.2) against a real etcd and
// edge-lease: its Lock (a create-only txn on a 30 s lease; it does not
// wait: a taken lock throws and its lease is revoked) and its Election
// (campaign through a txn, the predecessor watched with NOPUT, proclaim,
// resign, an observer on the leader key). The same steps on both; the
// observed sequences must be equal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Etcd3 } from "etcd3";
import { within } from "./grpc-client.mjs";
import { startBoth } from "./harness.mjs";


// Waits (bounded) until `pred()` holds, polling every 20 ms.
async function until(pred, ms, what) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("etcd3 client: lock, and an election with campaign, observe, proclaim and resign, on both", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const results = [];
  for (const side of [etcd, edge]) {
    const a = new Etcd3({ hosts: side.url });
    const b = new Etcd3({ hosts: side.url });
    t.after(() => {
      a.close();
      b.close();
    });
    const r = [];

    // Lock: the second acquire fails at once; after release it succeeds.
    const first = a.lock("jobs/lock");
    await within(first.acquire(), 5000, "first acquire");
    r.push(["key while held", await a.get("jobs/lock").exists()]);
    const second = b.lock("jobs/lock");
    const refused = await within(second.acquire().then(() => "acquired", (e) => e.constructor.name), 5000, "second acquire");
    r.push(["b while a holds", refused]);
    await within(first.release(), 5000, "release");
    await within(second.acquire(), 5000, "acquire after release");
    r.push(["b after release", "acquired"]);
    await within(second.release(), 5000, "second release");

    // Election: a leads, b waits; an observer sees each leader value.
    const seen = [];
    const observer = await within(a.election("leader").observe(), 5000, "observe");
    observer.on("change", (v) => seen.push(v ?? null));
    const ca = a.election("leader").campaign("a-1");
    await within(ca.wait(), 5000, "a elected");
    const cb = b.election("leader").campaign("b-1");
    let bElected = false;
    cb.on("elected", () => (bElected = true));
    await new Promise((res) => setTimeout(res, 300));
    r.push(["b elected while a leads", bElected]);
    await within(ca.proclaim("a-2"), 5000, "proclaim");
    r.push(["leader after proclaim", await within(a.election("leader").leader(), 5000, "leader")]);
    await within(ca.resign(), 5000, "resign");
    await within(cb.wait(), 5000, "b elected");
    r.push(["leader after resign", await within(b.election("leader").leader(), 5000, "leader")]);
    await until(() => seen.includes("b-1"), 5000, "observer sees b-1");
    // (Which earlier values an observer sees depends on when its watch
    // starts: etcd itself differs from run to run; the last one is fixed.)
    r.push(["observer's last", seen.at(-1)]);
    await within(cb.resign(), 5000, "b resign");
    await within(observer.cancel(), 5000, "observer cancel");
    results.push(r);
  }
  assert.deepEqual(results[1], results[0]);
  // And what etcd does, so that equal is also right.
  assert.deepEqual(results[0].slice(0, 4), [
    ["key while held", true],
    ["b while a holds", "EtcdLockFailedError"],
    ["b after release", "acquired"],
    ["b elected while a leads", false],
  ]);
});
