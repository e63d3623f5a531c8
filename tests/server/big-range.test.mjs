// A Range over a large keyspace is read in pages, other clients' calls
// answered between them: a victim's call made once the big one has started
// is answered before it, where the big one used to hold the event loop until
// it was built (seconds for 100 MB). Counted in the engine's reads and the
// order of the answers, not timed. The answer is the same as one read's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { grpcFrame, rawCall } from "../etcd/grpc-client.mjs";
import { grpcOnLoopback } from "./loopback.mjs";

const root = loadRoot();
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const Req = root.lookupType("etcdserverpb.RangeRequest");
const Res = root.lookupType("etcdserverpb.RangeResponse");
const KEYS = 30_000;
const key = (i) => `k/${String(i).padStart(6, "0")}`;
const rangeOf = (req) => grpcFrame(Req.encode(req).finish());

// The lessor, with every range read logged: "big" or "victim".
function logged(lessor, log) {
  return new Proxy(lessor, {
    get(target, prop) {
      if (prop === "range") {
        return (q) => {
          log.push(new TextDecoder().decode(q.key) === "victim" ? "victim" : "big");
          return target.range(q);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

test("a victim's Range made while a large Range is read is answered before it, between its pages", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  for (let i = 0; i < KEYS; i++) lessor.put(key(i), `value ${i}`);
  lessor.put("victim", "here");
  const log = [];
  const grpc = await grpcOnLoopback(t, createServices({ lessor: logged(lessor, log), member }));
  const [bigClient, victimClient] = [grpc.connect(), grpc.connect()];
  const order = [];

  const big = rawCall(bigClient, "/etcdserverpb.KV/Range", rangeOf({ key: Buffer.from("k/"), range_end: Buffer.from("k0") })).then((r) => (order.push("big"), r));
  // Once the big read has begun (its first engine read), the victim asks.
  let victim;
  await new Promise((ok) => {
    const poll = () => (log.length > 0 ? ok() : setImmediate(poll));
    poll();
  });
  victim = rawCall(victimClient, "/etcdserverpb.KV/Range", rangeOf({ key: Buffer.from("victim") })).then((r) => (order.push("victim"), r));
  const [b, v] = await Promise.all([big, victim]);

  assert.equal(v.status, 0, v.message);
  assert.deepEqual(Res.decode(v.messages[0]).kvs.map((kv) => kv.value.toString()), ["here"]);
  assert.equal(b.status, 0, b.message);
  assert.deepEqual(order, ["victim", "big"]);
  const bigReads = log.filter((x) => x === "big").length;
  const afterVictim = log.slice(log.indexOf("victim")).filter((x) => x === "big").length;
  t.diagnostic(`${bigReads} pages; ${afterVictim} after the victim's read`);
  assert.ok(afterVictim >= 1, `the victim was read between the pages: ${log.join(",")}`);

  // The same answer as one read: every key, in order, the count, no more.
  const r = Res.toObject(Res.decode(b.messages[0]), { longs: Number });
  assert.equal(r.kvs.length, KEYS);
  assert.equal(r.count, KEYS);
  assert.equal(r.more ?? false, false);
  assert.ok(r.kvs.every((kv, i) => kv.key.toString() === key(i) && kv.value.toString() === `value ${i}`));
  assert.equal(r.header.revision, lessor.revision);
});

test("pages at the first one's revision: writes meanwhile are not in it; limits and key order hold", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  for (let i = 0; i < 5000; i++) lessor.put(key(i), `v${i}`);
  const services = createServices({ lessor, member });
  const range = services.get("etcdserverpb.KV/Range");
  const at = lessor.revision;
  const whole = range({ key: Buffer.from("k/"), range_end: Buffer.from("k0") });
  // Between its pages: a key changed, one deleted, one added.
  lessor.put(key(4000), "changed");
  lessor.deleteRange({ key: new TextEncoder().encode(key(4500)) });
  lessor.put("k/999999", "new");
  const r = await whole;
  assert.equal(r.header.revision, at);
  assert.equal(r.count, 5000);
  assert.equal(r.kvs.length, 5000);
  assert.equal(new TextDecoder().decode(r.kvs[4000].value), "v4000");
  assert.equal(new TextDecoder().decode(r.kvs[4500].key), key(4500));
  // A limit past a page: that many, and `more` (5000 keys now: one
  // deleted, one added).
  const limited = await range({ key: Buffer.from("k/"), range_end: Buffer.from("k0"), limit: 2500 });
  assert.deepEqual([limited.kvs.length, limited.count, limited.more], [2500, 5000, true]);
  assert.equal(new TextDecoder().decode(limited.kvs[2499].key), key(2499));
  // Sorted descending: one read, as before (not pageable).
  const sorted = range({ key: Buffer.from("k/"), range_end: Buffer.from("k0"), sort_order: "DESCEND", limit: 3 });
  assert.deepEqual(sorted.kvs.map((kv) => new TextDecoder().decode(kv.key)), ["k/999999", key(4999), key(4998)]);
});
