// A compaction moves its point at once and sweeps what it left unreadable
// afterwards, in steps with timers between them: other calls run in
// between, reads are the same before and after the sweep, the store ends up
// without the dropped versions, and a sweep cut short by a restart goes on
// after it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../js/entries/node.mjs";
// HashKV is in the etcd server's build of the engine.
import { Lessor as EtcdLessor } from "../../server/engine.mjs";
import { SWEEP_STEP } from "../../js/sweep.js";

// A synchronous store: a map of what the lessor wrote, in batches.
function memoryStore() {
  const map = new Map();
  const store = {
    map,
    batches: 0,
    write(batch) {
      store.batches++;
      for (const k of batch.delete) map.delete(k);
      for (const [k, v] of batch.put) map.set(k, v);
    },
  };
  return store;
}

const old = (store) => [...store.map.keys()].filter((k) => k.startsWith("v1/old/")).length;

// `versions` puts over `keys` keys, then the revision to compact at.
function history(lessor, versions, keys) {
  for (let i = 0; i < versions; i++) lessor.put(`k/${i % keys}`, `v${i}`);
  return lessor.revision - 5;
}

test("compact moves the point at once and sweeps in steps, other calls served in between", async (t) => {
  const storage = memoryStore();
  const lessor = new Lessor({ history: Infinity, storage });
  t.after(() => lessor.close());
  const point = history(lessor, 3 * SWEEP_STEP, 1000);
  const before = lessor.range({ key: "k/", rangeEnd: "k0", revision: point });
  const size = lessor.sizeBytes;
  const steps = [];
  lessor.addEventListener("compaction", (e) => steps.push({ revision: e.revision, pending: e.pending, ms: e.ms }));

  assert.deepEqual(lessor.compact(point), { revision: lessor.revision });
  // The point moved: reads before it are refused, at it they are unchanged.
  assert.equal(lessor.compactRevision, point);
  assert.throws(() => lessor.range({ key: "k/1", revision: point - 1 }), { code: "Compacted" });
  assert.deepEqual(lessor.range({ key: "k/", rangeEnd: "k0", revision: point }), before);
  // Nothing swept yet: that is for the timers.
  assert.ok(lessor.compactionPending > 0);
  assert.equal(steps.length, 0);
  assert.equal(lessor.sizeBytes, size);

  // A timer set now runs before the sweep has finished.
  let pendingThen = null;
  setTimeout(() => (pendingThen = lessor.compactionPending), 0);
  await lessor.whenCompacted();
  assert.ok(pendingThen > 0, `a timer ran while ${pendingThen} changes were left`);
  assert.equal(lessor.compactionPending, 0);
  assert.ok(steps.length >= 3, `${steps.length} steps`);
  assert.ok(steps.every((s) => s.revision === point && s.ms >= 0));
  assert.equal(steps.at(-1).pending, 0);
  assert.ok(steps.every((s, i) => i === 0 || s.pending <= steps[i - 1].pending));
  // Swept: the same reads, less memory, and the store holds only the 1000
  // keys' states at the point and the versions after it.
  assert.deepEqual(lessor.range({ key: "k/", rangeEnd: "k0", revision: point }), before);
  assert.ok(lessor.sizeBytes < size / 10, `${lessor.sizeBytes} of ${size} bytes`);
  assert.equal(old(storage), 5);
  assert.equal(await lessor.whenCompacted(), undefined);
});

test("with autoTick: false the sweep runs before compact returns", () => {
  const storage = memoryStore();
  const lessor = new Lessor({ autoTick: false, history: Infinity, storage });
  const point = history(lessor, 2 * SWEEP_STEP + 10, 10);
  lessor.compact(point);
  assert.equal(lessor.compactionPending, 0);
  assert.equal(old(storage), 5);
  lessor.close();
});

test("a sweep cut short by a restart goes on after it, and reads are the same throughout", async () => {
  const storage = memoryStore();
  const first = new EtcdLessor({ history: Infinity, storage });
  const point = history(first, SWEEP_STEP + 500, 50);
  const want = (l) => [point, point + 2, l.revision].map((revision) => l.range({ key: "k/", rangeEnd: "k0", revision }));
  const before = want(first);
  first.compact(point);
  // Stopped before any timer ran: the store still holds every version.
  first.close();
  assert.equal(old(storage), SWEEP_STEP + 500 - 50);

  const entries = [...storage.map];
  const second = new EtcdLessor({ history: Infinity, storage, restore: entries });
  assert.equal(second.compactRevision, point);
  assert.ok(second.compactionPending > 0);
  assert.deepEqual(want(second), before);
  // The etcd views a sweep has not reached yet are those of the sweep done.
  const hash = second.hashKv();
  await second.whenCompacted();
  assert.equal(second.hashKv(), hash);
  assert.deepEqual(want(second), before);
  assert.equal(old(storage), 5);
  second.close();
});

test("writes sweep a few versions each, so an engine's history bound needs no timers", () => {
  const storage = memoryStore();
  const lessor = new Lessor({ autoTick: false, history: 100, storage });
  for (let i = 0; i < 5000; i++) lessor.put("hot", `v${i}`);
  // History is kept for ~100-125 revisions; what is older is gone from the
  // store too, but for the few versions the last writes have yet to sweep.
  assert.ok(old(storage) <= 125 + 16, `${old(storage)} old versions stored`);
  assert.ok(lessor.compactionPending <= 125, `${lessor.compactionPending} left`);
  lessor.close();
});

test("whenCompacted fails once the lessor is closed", async () => {
  const lessor = new Lessor({ history: Infinity });
  lessor.compact(history(lessor, 2 * SWEEP_STEP, 10));
  const done = lessor.whenCompacted();
  lessor.close();
  await assert.rejects(done, { code: "Closed" });
  await assert.rejects(lessor.whenCompacted(), { code: "Closed" });
});

test("a store that refuses a step: the step is tried again later, the compaction stands", async (t) => {
  const storage = memoryStore();
  let refuse = false;
  const write = storage.write;
  storage.write = (batch) => {
    if (refuse) throw new Error("disk full");
    write(batch);
  };
  const lessor = new Lessor({ history: Infinity, storage });
  t.after(() => lessor.close());
  const errors = [];
  lessor.addEventListener("error", (e) => errors.push(e.error));
  const point = history(lessor, SWEEP_STEP + 100, 10);
  lessor.compact(point);
  refuse = true; // (the point is stored; its sweep is not)
  const done = lessor.whenCompacted();
  await new Promise((ok) => setTimeout(ok, 20));
  assert.ok(errors.length >= 1 && errors[0].code === "StorageFailed", String(errors[0]));
  assert.equal(lessor.compactRevision, point);
  assert.ok(lessor.compactionPending > 0);
  refuse = false;
  await done; // (retried a second later)
  assert.equal(old(storage), 5);
});

test("a step's listener that asks for more sweeping arms no second timer chain", async () => {
  const lessor = new Lessor({ history: Infinity });
  const point = history(lessor, 3 * SWEEP_STEP, 10);
  lessor.addEventListener("compaction", () => lessor.whenCompacted().catch(() => {}));
  const errors = [];
  lessor.addEventListener("error", (e) => errors.push(e.error));
  lessor.compact(point);
  await new Promise((ok) => setTimeout(ok, 0));
  await new Promise((ok) => setTimeout(ok, 0));
  assert.ok(lessor.compactionPending > 0);
  lessor.close();
  // A chain the close did not stop would step into the closed lessor.
  await new Promise((ok) => setTimeout(ok, 50));
  assert.deepEqual(errors, []);
});
