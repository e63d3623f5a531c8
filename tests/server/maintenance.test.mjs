// The service layer's bounds on Snapshot and its alarms' store, driven
// directly (no transport): a snapshot over the data it is built from is
// refused with a clear error, one at a time; a stored alarm list that is not
// one is refused at start with a clear message; a refused write whose
// NOSPACE alarm cannot be kept is refused all the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { createAlarms } from "../../etcd/services/alarms.mjs";
import { Code } from "../../etcd/errors.mjs";
import { createMetrics, createServiceStats } from "../../etcd/services/metrics.mjs";

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

test("Snapshot from a host's source: pieces of exactly 32 KiB whatever the source's, the bytes left on each, its SHA-256 last; a failed source ends the call with its error", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const file = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) % 251);
  const sha256 = new Uint8Array(32).fill(9);
  const cuts = [0, 1, 12_288, 12_289, 45_056, 45_057 + 32_768, 150_000, 200_000]; // odd sizes, one exactly 32 KiB
  let fail = false;
  const services = createServices({
    lessor,
    member,
    maxSnapshotBytes: 1, // (not in play: the host builds the file)
    async *snapshot(alarms) {
      assert.deepEqual(alarms, []);
      yield { size: file.length };
      for (let i = 1; i < cuts.length; i++) {
        if (fail && i === 3) throw new Error("the disk went away");
        yield file.slice(cuts[i - 1], cuts[i]);
      }
      yield { sha256 };
    },
  });
  const snapshot = services.get("etcdserverpb.Maintenance/Snapshot");
  const got = [];
  for await (const m of snapshot.stream({}, call())) got.push(m);
  const blobs = got.slice(0, -1).map((m) => m.blob);
  assert.deepEqual(blobs.map((b) => b.length), [32768, 32768, 32768, 32768, 32768, 32768, 3392]);
  let left = file.length;
  for (const m of got.slice(0, -1)) assert.equal(m.remaining_bytes, String((left -= m.blob.length)));
  assert.deepEqual(Buffer.concat(blobs), Buffer.from(file));
  assert.deepEqual(got.at(-1), { remaining_bytes: "0", blob: sha256 });
  fail = true;
  await assert.rejects(
    (async () => {
      for await (const m of snapshot.stream({}, call())) void m;
    })(),
    /the disk went away/,
  );
  fail = false;
  let again = 0;
  for await (const m of snapshot.stream({}, call())) again += m.blob.length;
  assert.equal(again, file.length + 32, "the next one goes through");
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

test("Defragment answers once the store's compaction is done, with its error if it fails; /metrics shows it in flight meanwhile", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  let finish;
  let fail = false;
  const store = {
    sizes: { journal: 0, snapshot: 0, header: 0 },
    compactFrom: () => new Promise((ok, no) => (finish = () => (fail ? no(new Error("disk full")) : ok(true)))),
  };
  const stats = createServiceStats();
  const services = createServices({ lessor, store, member, stats });
  const metrics = createMetrics({ lessor, store, member, stats });
  const gauge = () => /^etcd_disk_defrag_inflight (\d)$/m.exec(metrics())[1];
  const defrag = services.get("etcdserverpb.Maintenance/Defragment");
  let answered = false;
  const first = Promise.resolve(defrag({}, call())).then((r) => ((answered = true), r));
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, false, "not before the compaction is done");
  assert.equal(gauge(), "1");
  finish();
  assert.deepEqual(await first, {}, "etcd 3.4's empty answer");
  assert.equal(gauge(), "0");
  assert.equal(stats.defrag.count, 1);
  fail = true;
  const second = defrag({}, call());
  finish();
  await assert.rejects(Promise.resolve(second), /disk full/);
  assert.equal(gauge(), "0");
  assert.equal(stats.defrag.count, 1, "a failed one is not timed");
});

test("Alarm: raising NONE for member 0 (every field zero, on which etcd 3.4 exits) is refused and raises nothing; for another member it is kept, as on etcd", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const services = createServices({ lessor, member });
  const alarm = async (req) => services.get("etcdserverpb.Maintenance/Alarm")(req, call());
  await assert.rejects(alarm({ action: "ACTIVATE" }), { code: 3, message: /NONE for member 0/ });
  assert.deepEqual(await alarm({}), {});
  assert.deepEqual(await alarm({ action: "ACTIVATE", memberID: "5" }), { alarms: [{ memberID: "5", alarm: "NONE" }] });
});
