// The service layer's bounds on Snapshot and its alarms' store, driven
// directly (no transport): a snapshot over the data it is built from is
// refused with a clear error, one at a time; a stored alarm list that is not
// one is refused at start with a clear message; a refused write whose
// NOSPACE alarm cannot be kept is refused all the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../js/node.mjs";
import { createServices } from "../../server/services/index.mjs";
import { createAlarms } from "../../server/services/alarms.mjs";
import { Code } from "../../server/errors.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };

const call = () => ({ size: 0, signal: new AbortController().signal });

test("Snapshot: refused past maxSnapshotBytes (ResourceExhausted), and one at a time (Unavailable)", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const services = createServices({ lessor, member, maxSnapshotBytes: 4000 });
  const snapshot = services.get("etcdserverpb.Maintenance/Snapshot");
  lessor.put("k", "v".repeat(100));
  const first = snapshot.stream({}, call())[Symbol.asyncIterator]();
  const piece = await first.next();
  assert.ok(piece.value.blob.length > 0);
  await assert.rejects(snapshot.stream({}, call()).next(), (e) => e.code === Code.Unavailable && /another snapshot/.test(e.message));
  await first.return(); // (a client that goes away)
  let pieces = 0;
  for await (const m of snapshot.stream({}, call())) pieces++;
  assert.ok(pieces >= 2, "the file, then its SHA-256");
  lessor.put("big", "v".repeat(5000));
  await assert.rejects(snapshot.stream({}, call()).next(), (e) => e.code === Code.ResourceExhausted && /make-mirror/.test(e.message));
});

test("alarms: a stored list that is not one is refused at start with a clear message", (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  for (const bad of ["[null]", '[["1"]]', '[[1, "NOSPACE"]]', '{"a":1}', "not json"]) {
    lessor.setHostEntry("alarms", new TextEncoder().encode(bad));
    assert.throws(() => createAlarms(member, lessor), /the stored alarms are unreadable/, bad);
  }
  lessor.setHostEntry("alarms", new TextEncoder().encode('[["1","NOSPACE"],["2",7]]'));
  assert.deepEqual(createAlarms(member, lessor).get("NONE"), [{ memberID: "1", alarm: "NOSPACE" }, { memberID: "2", alarm: 7 }]);
});

test("a write the quota refuses is refused with its error even when the NOSPACE alarm cannot be kept", async (t) => {
  const lessor = new Lessor({ autoTick: false, quotaBytes: 8000, maxKeyBytes: 100, maxValueBytes: 8000 });
  t.after(() => lessor.close());
  const services = createServices({ lessor, member });
  // Host entries full: the alarm cannot be stored.
  for (let i = 0; i < 64; i++) lessor.setHostEntry(`full-${i}`, new Uint8Array(0));
  const put = services.get("etcdserverpb.KV/Put");
  await put({ key: Buffer.from("a"), value: Buffer.alloc(5000) }, call());
  const r = await Promise.resolve(put({ key: Buffer.from("b"), value: Buffer.alloc(5000) }, call())).catch((e) => e);
  assert.equal(r.code, Code.ResourceExhausted);
  assert.equal(r.message, "etcdserver: mvcc: database space exceeded");
});

test("a call that finds the engine failed (a wasm trap) tells the host once; every error still reaches its caller", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const failures = [];
  const services = createServices({ lessor, member, onFatal: (e) => failures.push(e) });
  const range = services.get("etcdserverpb.KV/Range");
  const keepAlive = services.get("etcdserverpb.Lease/LeaseKeepAlive");
  // An error of the request's own is not the engine's.
  await assert.rejects(Promise.resolve().then(() => range({ key: Buffer.alloc(0) }, call())), /key is not provided/);
  assert.equal(failures.length, 0);
  const trap = new WebAssembly.RuntimeError("unreachable");
  lessor.range = () => {
    throw trap;
  };
  await assert.rejects(Promise.resolve().then(() => range({ key: Buffer.from("k") }, call())), (e) => e.code === Code.Unknown && e.cause === trap);
  assert.equal(failures.length, 1);
  assert.equal(failures[0].cause, trap);
  // After a trap wasm-bindgen refuses to enter the object again: the same
  // failure, heard once.
  lessor.renew = () => {
    throw new Error("recursive use of an object detected which would lead to unsafe aliasing in rust");
  };
  assert.throws(() => keepAlive.each({ ID: "7" }), /recursive use/);
  assert.equal(failures.length, 1);
});
