// A watch stream catching up on a long history hands over at most about
// TURN_EVENTS events per turn of the event loop, so other clients are
// answered in between; every event still comes once and in order, and
// watchers created or cancelled while the stream pauses behave as at any
// other time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { TURN_EVENTS } from "../../etcd/services/watch.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const key = (s) => new TextEncoder().encode(s);
const turn = () => new Promise((ok) => setImmediate(ok));

/**
 * A lessor with `writes` puts over keys k/0..k/99 (history kept) and a watch
 * session with one watcher on k/ from revision 2: { lessor, sent, session,
 * events() }, everything closed after `t`.
 */
function catchingUp(t, writes) {
  const lessor = new Lessor({ autoTick: false, history: Infinity });
  t.after(() => lessor.close());
  for (let i = 0; i < writes; i++) lessor.put(`k/${i % 100}`, `v${i}`);
  const sent = [];
  const session = createServices({ lessor, member }).get("etcdserverpb.Watch/Watch").open((m) => (sent.push(m), true));
  t.after(() => session.close());
  session.request({ create_request: { key: key("k/"), range_end: key("k0"), start_revision: 2 } });
  return { lessor, sent, session, events: () => sent.reduce((n, m) => n + (m.events?.length ?? 0), 0) };
}

test("a long catch-up is handed over a turn at a time, every event once and in order", async (t) => {
  const writes = 10 * TURN_EVENTS;
  const { lessor, sent, session, events } = catchingUp(t, writes);
  // Within the turn of the create (its microtasks included): one turn's worth.
  await Promise.resolve();
  await new Promise((ok) => queueMicrotask(ok));
  const first = events();
  assert.ok(first > 0 && first < 2 * TURN_EVENTS, `${first} events in the first turn`);
  // A second watcher created while the first is paused, and one cancelled.
  session.request({ create_request: { key: key("k/1"), start_revision: 2, watch_id: 7 } });
  session.request({ create_request: { key: key("k/2"), start_revision: 2, watch_id: 8 } });
  session.request({ cancel_request: { watch_id: 8 } });
  let turns = 0;
  for (const end = Date.now() + 10_000; events() < writes + writes / 100 && Date.now() < end; turns++) await turn();
  assert.ok(turns >= 5, `${turns} turns`);
  const revs = (id) => sent.filter((m) => Number(m.watch_id ?? 0) === id).flatMap((m) => (m.events ?? []).map((e) => Number(e.kv.mod_revision)));
  assert.deepEqual(revs(0), Array.from({ length: writes }, (_, i) => i + 2), "watcher 0: each revision once, in order");
  assert.deepEqual(revs(7), Array.from({ length: writes / 100 }, (_, i) => 2 + 1 + i * 100), "watcher 7: its key's");
  assert.ok(sent.some((m) => Number(m.watch_id) === 8 && m.canceled), "watcher 8 cancelled");
  assert.deepEqual(revs(8), [], "watcher 8: cancelled before it started");
  // Caught up (and past the turn the last batch may have paused it for): a
  // new write comes at once.
  await turn();
  lessor.put("k/5", "live");
  await Promise.resolve();
  assert.equal(revs(0).at(-1), writes + 2);
});

test("a watch stream whose client stops reading holds neither the history bound nor the quota's compaction; its watchers end as etcd's slow ones", async (t) => {
  for (const opts of [{ history: 10 }, { quotaBytes: 200_000, maxValueBytes: 10_000 }]) {
    const lessor = new Lessor({ autoTick: false, ...opts });
    t.after(() => lessor.close());
    let full = false;
    const sent = [];
    const session = createServices({ lessor, member }).get("etcdserverpb.Watch/Watch").open((m) => (sent.push(m), !full));
    t.after(() => session.close());
    session.request({ create_request: { key: key("k") } });
    await turn();
    full = true;
    lessor.put("k", "a"); // sent; the transport is full from now on
    await turn();
    for (let i = 0; i < 500; i++) lessor.put("other", "x".repeat(opts.quotaBytes ? 5000 : 1));
    assert.ok(lessor.compactRevision > 400, `compaction point ${lessor.compactRevision}`);
    lessor.put("k", "b");
    full = false;
    session.drain();
    for (let i = 0; i < 5; i++) await turn();
    assert.ok(sent.some((m) => m.canceled && Number(m.compact_revision) > 0), "ended by the compaction, as etcd's slow watcher");
  }
});

test("without setImmediate (workerd without nodejs_compat) the turns still pause and resume, and nothing fails", async (t) => {
  const saved = globalThis.setImmediate;
  delete globalThis.setImmediate;
  t.after(() => (globalThis.setImmediate = saved));
  const writes = 4 * TURN_EVENTS;
  const { lessor, events } = catchingUp(t, writes);
  const errors = [];
  lessor.addEventListener("error", (e) => errors.push(String(e.error)));
  await new Promise((ok) => queueMicrotask(ok));
  assert.ok(events() < 2 * TURN_EVENTS, `${events()} events in the first turn`);
  for (const end = Date.now() + 10_000; events() < writes && Date.now() < end; ) await new Promise((ok) => setTimeout(ok, 0));
  assert.equal(events(), writes);
  lessor.put("k/5", "live");
  await new Promise((ok) => setTimeout(ok, 0));
  assert.equal(events(), writes + 1);
  assert.deepEqual(errors, []);
});

test("with the transport's room: a batch goes in whole revisions as far as the room reaches, the rest from history once drained; a compaction meanwhile ends the watcher", async (t) => {
  const lessor = new Lessor({ autoTick: false, history: Infinity });
  t.after(() => lessor.close());
  // Revisions 2-11 of k/ (1 kB each), and one revision (a txn) with two of them.
  for (let i = 0; i < 10; i++) lessor.put(`k/${i}`, "x".repeat(1000));
  lessor.txn({ success: [{ put: { key: "k/a", value: "y".repeat(1000) } }, { put: { key: "k/b", value: "y".repeat(1000) } }] });
  // A transport that takes 3.5 kB, then has no room until drained.
  let room = 3500;
  const sent = [];
  const take = (m) => {
    sent.push(m);
    room -= (m.events ?? []).reduce((n, e) => n + 1000 + e.kv.key.length, 0);
    return room > 0;
  };
  const session = createServices({ lessor, member }).get("etcdserverpb.Watch/Watch").open(take, { room: () => Math.max(0, room) });
  t.after(() => session.close());
  session.request({ create_request: { key: key("k/"), range_end: key("k0"), start_revision: 2 } });
  for (let i = 0; i < 5; i++) await turn();
  const revs = () => sent.flatMap((m) => (m.events ?? []).map((e) => Number(e.kv.mod_revision)));
  const early = revs();
  // Whole revisions, about as many as the room holds, in responses of their own.
  assert.ok(early.length >= 2 && early.length <= 4, `before the drain: ${early}`);
  assert.deepEqual(early, Array.from({ length: early.length }, (_, i) => i + 2));
  room = 1e9;
  session.drain();
  for (let i = 0; i < 5; i++) await turn();
  assert.deepEqual(revs(), [...Array.from({ length: 10 }, (_, i) => i + 2), 12, 12], "every revision once, in order; the txn's two events together");
  assert.equal(sent.filter((m) => m.events?.some((e) => Number(e.kv.mod_revision) === 12)).length, 1, "the txn's revision in one response");

  // Full again; writes go on and are compacted past the watcher's place:
  // once drained it ends with the compaction point, as etcd's slow watcher.
  room = 0;
  lessor.put("k/late", "z");
  await turn();
  for (let i = 0; i < 20; i++) lessor.put("other", "x");
  lessor.compact(lessor.revision);
  room = 1e9;
  session.drain();
  for (let i = 0; i < 5; i++) await turn();
  const end = sent.at(-1);
  assert.ok(end.canceled && Number(end.compact_revision) === lessor.compactRevision, JSON.stringify(end));
});

test("a revision of many events waiting for the store's fsync is made ready a turn's worth at a time, the transport's prepare given each part, then sent as one response once durable", async (t) => {
  // A store whose writes are durable when the test says so.
  const held = [];
  const storage = { pipelined: true, write: () => new Promise((ok) => held.push(ok)) };
  const lessor = new Lessor({ autoTick: false, storage, maxKeysPerLease: 10_000 });
  t.after(() => lessor.close());
  const g = lessor.grant(60);
  const n = 5 * TURN_EVENTS;
  for (let i = 0; i < n; i++) lessor.put(`k/${String(i).padStart(5, "0")}`, "v", { lease: g.id });
  for (const ok of held.splice(0)) ok();
  await lessor.flush();
  const sent = [];
  const parts = [];
  const session = createServices({ lessor, member })
    .get("etcdserverpb.Watch/Watch")
    .open((m) => (sent.push(m), true), { prepare: (events) => parts.push(events) });
  t.after(() => session.close());
  session.request({ create_request: { key: key("k/"), range_end: key("k0") } });
  await turn();
  const { revision } = lessor.revoke(g.id);
  for (const end = Date.now() + 10_000; parts.reduce((s, p) => s + p.length, 0) < n && Date.now() < end; ) await turn();
  // In parts of a turn's worth, nothing sent before the revoke is durable.
  assert.ok(parts.length >= 5 && parts.every((p) => p.length <= TURN_EVENTS), `parts of ${parts.map((p) => p.length)}`);
  assert.equal(sent.filter((m) => m.events?.length).length, 0);
  for (const ok of held.splice(0)) ok();
  for (const end = Date.now() + 10_000; !sent.some((m) => m.events?.length) && Date.now() < end; ) await turn();
  const withEvents = sent.filter((m) => m.events?.length);
  assert.equal(withEvents.length, 1);
  assert.equal(Number(withEvents[0].header.revision), revision);
  assert.deepEqual(
    withEvents[0].events.map((e) => [e.type, new TextDecoder().decode(e.kv.key), Number(e.kv.mod_revision)]),
    Array.from({ length: n }, (_, i) => ["DELETE", `k/${String(i).padStart(5, "0")}`, revision]),
  );
  // The parts are the response's own event objects (so the transport's work on them is reused).
  assert.deepEqual(new Set(parts.flat()), new Set(withEvents[0].events));
});
