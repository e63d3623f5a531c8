// The service layer's durability rule (services/index.mjs): an answer goes
// out only once every write so far is on disk (a write's own, and those a
// read may have seen), answers with nothing to wait for come at once, and a
// store that fails turns every answer that waited on it into an error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const B = (s) => Buffer.from(s);

// A store whose writes stay pending until the test settles them.
function heldStore() {
  const held = [];
  return {
    held,
    pipelined: true,
    write() {
      return new Promise((resolve, reject) => held.push({ resolve, reject }));
    },
  };
}

const state = async (p) => {
  let s = "pending";
  p.then(
    () => (s = "done"),
    () => (s = "failed"),
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return s;
};

test("answers wait for the writes before them to be durable; a failed store fails them with etcd's Unknown", async () => {
  const store = heldStore();
  const lessor = new Lessor({ storage: store, autoTick: false });
  const services = createServices({ lessor, member });
  const put = services.get("etcdserverpb.KV/Put");
  const range = services.get("etcdserverpb.KV/Range");
  const call = { size: 10 };

  // Nothing pending: a read is answered as a plain value, not a promise.
  const first = range({ key: B("a") }, call);
  assert.equal(typeof first.then, "undefined");
  assert.equal(Number(first.count ?? 0), 0);

  // A put is applied at once but answered only once its write is on disk;
  // a read that may have seen it waits too, and so does an error answer.
  const p = put({ key: B("a"), value: B("1") }, call);
  const r = range({ key: B("a") }, call);
  const bad = range({ key: B("a"), revision: "99" }, call);
  assert.equal(typeof r.then, "function");
  assert.deepEqual(await Promise.all([state(p), state(r), state(bad)]), ["pending", "pending", "pending"]);
  store.held.shift().resolve();
  const [pr, rr] = await Promise.all([p, r]);
  assert.equal(pr.header.revision, 2);
  assert.equal(Buffer.from(rr.kvs[0].value).toString(), "1");
  await assert.rejects(bad, (e) => e.code === 11 && e.message === "etcdserver: mvcc: required revision is a future revision");

  // The store fails: the write it held, and answers that waited for it,
  // are errors; the engine takes no more writes.
  const lost = put({ key: B("b"), value: B("2") }, call);
  const waiting = range({ key: B("b") }, call);
  store.held.shift().reject(new Error("EIO: i/o error"));
  for (const a of [lost, waiting]) {
    await assert.rejects(a, (e) => e.code === 2 && /EIO: i\/o error/.test(e.message));
  }
  await assert.rejects(
    Promise.resolve().then(() => put({ key: B("c"), value: B("3") }, call)),
    (e) => e.code === 2,
  );
  lessor.close();
});
