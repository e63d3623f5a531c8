// A watcher catching up on a long history gets it a turn of the event loop
// at a time: timers run in between, every event still comes once and in
// order, and changes made meanwhile come after the history.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../js/entries/node.mjs";

test("a long catch-up is handed over a turn at a time, every event once and in order", async (t) => {
  const lessor = new Lessor({ history: Infinity });
  t.after(() => lessor.close());
  const writes = 30_000;
  for (let i = 0; i < writes; i++) lessor.put(`k/${i % 100}`, `v${i}`);
  const got = [];
  const live = [];
  lessor.watch({ key: "k/", rangeEnd: "k0", startRevision: 2 }, (b) => got.push(...b.events.map((e) => e.kv.modRevision)));
  // A watcher that is caught up gets each new change at once meanwhile.
  lessor.watch({ key: "k/5" }, (b) => live.push(...b.events.map((e) => e.kv.modRevision)));
  await Promise.resolve();
  const first = got.length;
  assert.ok(first > 0 && first < writes / 2, `${first} events in the first turn`);
  // A change made while it catches up: at once for the live watcher, after
  // the history for the other.
  let turns = 0;
  const wrote = new Promise((ok) =>
    setTimeout(() => {
      const { revision } = lessor.put("k/5", "meanwhile");
      assert.deepEqual(live, [revision]);
      ok(revision);
    }, 0),
  );
  for (const end = Date.now() + 10_000; got.length < writes + 1 && Date.now() < end; turns++) await new Promise((ok) => setTimeout(ok, 0));
  const meanwhile = await wrote;
  assert.ok(turns >= 3, `${turns} turns`);
  assert.deepEqual(got, [...Array.from({ length: writes }, (_, i) => i + 2), meanwhile]);
});

test("a watcher that wants little of a long history does not hold the loop either, and gets etcd's batch", async (t) => {
  const lessor = new Lessor({ history: Infinity });
  t.after(() => lessor.close());
  for (let i = 0; i < 300_000; i++) lessor.put(`k/${i % 300}`, "v");
  const batches = [];
  lessor.watch({ key: "k/7", startRevision: 2 }, (b) => batches.push(b.events.length));
  await Promise.resolve();
  // The engine reads a bounded part of the log per poll, and the loop
  // polls a bounded number of times per turn: not all 300k changes at once.
  assert.deepEqual(batches, [], "nothing in the first turn");
  for (const end = Date.now() + 10_000; batches.length === 0 && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 0));
  // Its 1000 changes, 300 revisions apart, in one batch, as etcd sends
  // them (1000 revisions that have changes for the watcher).
  assert.deepEqual(batches, [1000]);
});

test("pause() holds a watcher where it is, and the history it needs; resume() goes on from there; caughtUp says when it has had everything", async (t) => {
  const lessor = new Lessor({ history: 1000 });
  t.after(() => lessor.close());
  const got = [];
  const w = lessor.watch({ key: "k" }, (b) => got.push(...b.events.map((e) => new TextDecoder().decode(e.kv.value))));
  assert.equal(w.caughtUp, true);
  w.pause();
  lessor.put("k", "first");
  assert.equal(w.caughtUp, false);
  // Far more than the history kept: compaction stops short of what the
  // paused watcher still needs.
  for (let i = 0; i < 20_000; i++) lessor.put(`other/${i % 50}`, "x");
  lessor.put("k", "second");
  for (let i = 0; i < 5; i++) await new Promise((ok) => setTimeout(ok, 0));
  assert.deepEqual(got, [], "nothing while paused");
  w.resume();
  for (const end = Date.now() + 10_000; !w.caughtUp && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 0));
  assert.equal(w.caughtUp, true);
  assert.deepEqual(got, ["first", "second"]);
  w.cancel();
  assert.equal(w.caughtUp, false);
});

const text = (k) => (typeof k === "string" ? k : new TextDecoder().decode(k));

test("a revoke of a lease with many keys returns before its deletes are handed out; they come over turns, in one call, before later writes", async (t) => {
  const n = 20_000;
  const lessor = new Lessor({ maxKeysPerLease: n });
  t.after(() => lessor.close());
  const g = lessor.grant(60);
  for (let i = 0; i < n; i++) lessor.put(`k/${String(i).padStart(5, "0")}`, "v", { lease: g.id });
  const calls = [];
  lessor.watch({ key: "k/", rangeEnd: "k0" }, (b) => calls.push(b.events.map((e) => [e.type, text(e.kv.key), e.kv.modRevision])));
  await Promise.resolve();
  const { revision } = lessor.revoke(g.id);
  assert.equal(calls.length, 0, "handed out inside revoke()");
  // Timers set now run while the deletes are still being gathered.
  let timersBefore = 0;
  for (let i = 0; i < 3; i++) setTimeout(() => calls.length === 0 && timersBefore++, 0);
  for (const end = Date.now() + 10_000; calls.length === 0 && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 0));
  assert.ok(timersBefore > 0, "no timer ran before the deletes were handed out");
  const after = lessor.put("k/after", "v").revision;
  assert.deepEqual(calls, [
    Array.from({ length: n }, (_, i) => ["delete", `k/${String(i).padStart(5, "0")}`, revision]),
    [["put", "k/after", after]],
  ]);
});

test("a catch-up over large values comes out of the engine a chunk at a time: its memory grows by a fraction of the history, and every value arrives whole", async (t) => {
  const lessor = new Lessor({ history: Infinity });
  t.after(() => lessor.close());
  // 96 values of 256 KiB, each a different byte: 24 MiB of history, one
  // batch (under 1000 revisions) for a watcher from revision 2. Before the
  // engine handed its events out in chunks it held them twice over (the
  // events, then their encoding grown by doubling): ~70 MiB more.
  const SIZE = 256 * 1024;
  for (let i = 0; i < 96; i++) lessor.put(`big/${i % 8}`, new Uint8Array(SIZE).fill(i));
  const before = lessor.memoryBytes();
  const batches = [];
  lessor.watch({ key: "big/", rangeEnd: "big0", startRevision: 2, prevKv: true }, (b) => batches.push(b));
  for (const end = Date.now() + 10_000; batches.flatMap((b) => b.events).length < 96 && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 0));
  const grew = lessor.memoryBytes() - before;
  const events = batches.flatMap((b) => b.events);
  assert.equal(batches.length, 1, "one batch, as etcd sends a catch-up under 1000 revisions");
  assert.deepEqual(events.map((e) => e.kv.modRevision), Array.from({ length: 96 }, (_, i) => i + 2));
  for (const [i, e] of events.entries()) {
    assert.equal(e.kv.value.length, SIZE);
    assert.ok(e.kv.value.every((b) => b === i), `value ${i}`);
    if (i >= 8) assert.ok(e.prevKv.value.every((b) => b === i - 8), `previous value ${i}`);
  }
  assert.ok(grew <= 8 * 2 ** 20, `the engine's memory grew ${(grew / 2 ** 20).toFixed(1)} MiB for 24 MiB of history`);
});

test("watchers that pause and resume within a turn share its hand-out: a catch-up over large values still takes many turns", async (t) => {
  const lessor = new Lessor({ history: Infinity });
  t.after(() => lessor.close());
  // 3,000 revisions of 4 KiB (12 MiB): three of etcd's batches per watcher.
  const value = "x".repeat(4096);
  for (let i = 0; i < 3_000; i++) lessor.put(`k/${i % 100}`, value);
  // As the server's watch service does when a stream's room runs out and
  // comes back: each batch pauses its watcher, which resumes at once.
  const got = [0, 0, 0, 0];
  for (let w = 0; w < got.length; w++) {
    const h = lessor.watch({ key: "k/", rangeEnd: "k0", startRevision: 2 }, (b) => {
      got[w] += b.events.length;
      h.pause();
      queueMicrotask(() => h.resume());
    });
  }
  let turns = 0;
  for (const end = Date.now() + 10_000; got.some((n) => n < 3_000) && Date.now() < end; turns++) await new Promise((ok) => setTimeout(ok, 0));
  assert.deepEqual(got, [3_000, 3_000, 3_000, 3_000]);
  // About 2 MiB a turn: each resume started a turn's worth of its own before.
  assert.ok(turns >= 5, `${turns} turns`);
});
