// Watch over gRPC against a real etcd 3.4 and edge-lease: the same streams
// and writes on both, every response compared in order (created, events
// with prev kvs, cancels, compaction cancels, progress), once each side has
// settled (etcd hands history to a new watcher within 100 ms). Only
// cluster/member ids and raft terms are dropped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth } from "./harness.mjs";
import { byWatcher, connect, norm, settle, until } from "./grpc-client.mjs";

const B = (s) => Buffer.from(s);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Both servers, each with two watch streams, driven in lockstep: `both(what,
 * fn)` runs `fn(side)` on each, lets them settle, then compares the results
 * and every stream's messages so far.
 */
async function lockstep(t) {
  const { etcd, edge } = await startBoth(t);
  const sides = [etcd, edge].map((s) => {
    const c = connect(t, s.url);
    // etcdctl's watch sends hasleader; the etcd3 client does not.
    return { c, streams: [c.watch({ hasleader: "true" }), c.watch()] };
  });
  const all = () => sides.flatMap((s) => s.streams);
  let step = 0;
  // One action on both sides, then both settle and every stream so far matches.
  async function both(what, fn) {
    const results = [];
    for (const s of sides) results.push(await fn(s));
    await settle(all());
    step++;
    assert.deepEqual(norm(results[1] ?? null), norm(results[0] ?? null), `step ${step} ${what}: results`);
    for (let i = 0; i < sides[0].streams.length; i++) {
      const [want, got] = sides.map((s) => byWatcher(s.streams[i].messages));
      assert.deepEqual(got, want, `step ${step} ${what}: stream ${i}`);
    }
  }
  const put = (key, value, extra = {}) => both(`put ${key}`, (s) => s.c.kv("Put", { key: B(key), value: B(value), ...extra }));
  const create = (i, req) => both(`create ${JSON.stringify(req)}`, (s) => s.streams[i].write({ create_request: req }) && null);
  const cancel = (i, id) => both(`cancel ${id}`, (s) => s.streams[i].write({ cancel_request: { watch_id: id } }) && null);
  return { sides, all, both, put, create, cancel };
}


test("Watch over gRPC: creates, history, filters, ids, cancels, progress and compaction as etcd 3.4 sequences them", async (t) => {
  const { sides, all, both, put, create, cancel } = await lockstep(t);
  await put("a", "1");
  await put("b", "1");
  await put("a", "2");
  await put("c/1", "x");
  // History from the start, with prev kvs; a prefix; from-key; everything.
  await create(0, { key: B("a"), start_revision: 1, prev_kv: true });
  await create(0, { key: B("c/"), range_end: B("c0"), start_revision: 2 });
  await create(1, { key: B("b"), range_end: B([0]), start_revision: 3 });
  await create(1, { key: B([0]), range_end: B([0]) });
  await create(1, { key: B(""), range_end: B([0]), start_revision: 4, prev_kv: true });
  // Filters, a future start, client-chosen ids (3.4), a duplicate, an empty range.
  await create(0, { key: B("a"), filters: ["NOPUT"], prev_kv: true });
  await create(0, { key: B("a"), filters: ["NODELETE"], watch_id: 100 });
  await create(0, { key: B("a"), watch_id: 100 });
  await create(0, { key: B("b"), range_end: B("a") });
  await create(0, { key: B("b"), range_end: B("b") });
  await create(1, { key: B("a"), start_revision: 8 });
  await create(1, { key: B("z"), watch_id: 3 });
  await create(1, { key: B("z") });
  await create(0, { key: B("a"), filters: [7] });
  await put("a", "3");
  await put("c/2", "y");
  await both("delete a", (s) => s.c.kv("DeleteRange", { key: B("a"), prev_kv: true }));
  await both("txn", (s) =>
    s.c.kv("Txn", {
      success: [
        { request_put: { key: B("a"), value: B("4") } },
        { request_put: { key: B("b"), value: B("2") } },
        { request_delete_range: { key: B("c/"), range_end: B("c0") } },
      ],
    }),
  );
  await put("a", "5");
  await both("delete everything", (s) => s.c.kv("DeleteRange", { key: B([0]), range_end: B([0]) }));
  await put("d", "6");
  // Progress requests, cancels (unknown ids get no answer).
  await both("progress", (s) => s.streams[0].write({ progress_request: {} }) && null);
  await both("empty request", (s) => s.streams[1].write({}) && null);
  await cancel(0, 100);
  await cancel(0, 100);
  await cancel(1, 42);
  await cancel(1, 0);
  await put("a", "7");
  // Leases: a revoke deletes its keys in one revision, watchers see it.
  await both("grant", (s) => s.c.lease("LeaseGrant", { ID: 500, TTL: 600 }));
  await put("l/1", "x", { lease: 500 });
  await put("l/2", "y", { lease: 500 });
  await create(1, { key: B("l/"), range_end: B("l0"), prev_kv: true });
  await both("revoke", (s) => s.c.lease("LeaseRevoke", { ID: 500 }));
  // Compaction: a start before it is created, then canceled with the compact revision.
  await both("compact", (s) => s.c.kv("Compact", { revision: 10 }));
  await create(0, { key: B("a"), start_revision: 5 });
  await create(0, { key: B("a"), start_revision: 9 });
  await create(0, { key: B("a"), start_revision: 10 });
  await create(1, { key: B("a"), start_revision: -3 });
  // The compacted watcher's id stays taken until canceled.
  const compactedId = Number(sides[0].streams[0].messages.at(-2).watch_id);
  await create(0, { key: B("a"), watch_id: compactedId });
  await cancel(0, compactedId);
  await create(0, { key: B("a"), watch_id: compactedId });
  await put("a", "8");
  // Many watchers on one key: each gets the event.
  for (let i = 0; i < 5; i++) await create(1, { key: B("m"), prev_kv: i % 2 === 0 });
  await put("m", "1");
  await put("m", "2");
  // A txn may delete from a key on and put a key there: the key changes
  // twice (or three times) in one revision. Watched live, then replayed
  // from history.
  const fromKey = { key: B("t/"), range_end: B("\0") };
  await create(0, { ...fromKey, prev_kv: true });
  await both("put t/0", async (s) => {
    const r = await s.c.kv("Put", { key: B("t/0"), value: B("0") });
    s.mark = Number(r.header.revision);
    return r;
  });
  await put("t/1", "1");
  const txn = (what, success) => both(what, (s) => s.c.kv("Txn", { success }));
  await txn("delete, put", [{ request_delete_range: { ...fromKey, prev_kv: true } }, { request_put: { key: B("t/0"), value: B("new"), prev_kv: true } }]);
  await txn("put, delete", [{ request_put: { key: B("t/0"), value: B("v2"), prev_kv: true } }, { request_delete_range: { ...fromKey, prev_kv: true } }]);
  await put("t/0", "old");
  await txn("delete, put, delete", [{ request_delete_range: fromKey }, { request_put: { key: B("t/0"), value: B("n") } }, { request_delete_range: { ...fromKey, prev_kv: true } }]);
  await both("history", (s) => s.streams[1].write({ create_request: { ...fromKey, start_revision: s.mark, prev_kv: true } }) && null);
  // Compacted at that revision, a revision keeps only each key's last
  // change and no deletion (etcd's keyIndex.compact): a watch from the
  // compaction point sees the put of t/0, not the deletes.
  await put("t/0", "p");
  await put("t/1", "q");
  await both("delete, put", async (s) => {
    const r = await s.c.kv("Txn", { success: [{ request_delete_range: fromKey }, { request_put: { key: B("t/0"), value: B("r") } }] });
    s.mark = Number(r.header.revision);
    return r;
  });
  await both("compact there", (s) => s.c.kv("Compact", { revision: s.mark }));
  await both("watch from it", (s) => s.streams[0].write({ create_request: { ...fromKey, start_revision: s.mark, prev_kv: true } }) && null);
  await put("t/1", "s");
  assert.ok(sides[1].streams[0].messages.length > 30);
  for (const s of all()) assert.equal(s.error, null);
});

test("Watch: a negative start is held against the compaction point, which is -1 until the first compaction, as on etcd", async (t) => {
  const { sides, all, both, put, create } = await lockstep(t);
  await put("a", "1");
  // -1, never compacted: no history, then what comes; -2: compacted at -1.
  await create(0, { key: B("a"), start_revision: -1 });
  await create(0, { key: B("a"), start_revision: -2 });
  await put("a", "2");
  // Compacted at 0: -1 gets compact_revision 0, which etcd does not mark
  // canceled, and nothing after it.
  await both("compact 0", (s) => s.c.kv("Compact", { revision: 0 }));
  await create(1, { key: B("a"), start_revision: -1 });
  await put("a", "3");
  await both("compact 3", (s) => s.c.kv("Compact", { revision: 3 }));
  await create(1, { key: B("a"), start_revision: -1 });
  await put("a", "4");
  const got = sides[1].streams.map((w) => w.messages.map((m) => [Boolean(m.created), Boolean(m.canceled), String(m.compact_revision ?? 0), m.events?.length ?? 0]));
  assert.deepEqual(got, [
    [[true, false, "0", 0], [true, false, "0", 0], [false, true, "-1", 0], [false, false, "0", 1], [false, false, "0", 1], [false, false, "0", 1]],
    [[true, false, "0", 0], [false, false, "0", 0], [true, false, "0", 0], [false, true, "3", 0]],
  ]);
  for (const s of all()) assert.equal(s.error, null);
});

test("Watch: expiry deletes a lease's keys in one revision and watchers see them, on both", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const w = c.watch();
    w.write({ create_request: { key: B("svc/"), range_end: B("svc0"), prev_kv: true } });
    await c.lease("LeaseGrant", { ID: 77, TTL: 2 });
    await c.kv("Put", { key: B("svc/a"), value: B("1"), lease: 77 });
    await c.kv("Put", { key: B("svc/b"), value: B("2"), lease: 77 });
    await c.kv("Put", { key: B("svc/c"), value: B("3") });
    // etcd checks expiry every 500 ms: bounded wait for the deletes.
    assert.ok(await until(() => w.messages.some((m) => m.events?.some((e) => e.type === "DELETE")), 10_000), `${side.name}: expiry`);
    await settle([w]);
    out.push(norm(w.messages));
  }
  assert.deepEqual(out[1], out[0]);
  const deletes = out[1].filter((m) => m.events?.[0]?.type === "DELETE");
  assert.equal(deletes.length, 1);
  assert.equal(deletes[0].events.length, 2);
});

test("Watch: progress notifications at etcd's interval, skipped after events", async (t) => {
  const { etcd, edge } = await startBoth(t, { args: ["--experimental-watch-progress-notify-interval", "400ms"] });
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const w = c.watch();
    w.write({ create_request: { key: B("p"), progress_notify: true } });
    w.write({ create_request: { key: B("q") } });
    await until(() => w.messages.length === 2);
    // First tick after 400-440 ms: a notification for watcher 0 only.
    assert.ok(await until(() => w.messages.length >= 3, 2000), `${side.name}: progress`);
    await c.kv("Put", { key: B("p"), value: B("1") });
    await until(() => w.messages.length >= 4, 2000);
    // The tick after an event sends nothing; the one after that does.
    const before = w.messages.length;
    await sleep(600);
    const afterEvent = w.messages.slice(before);
    assert.ok(await until(() => w.messages.length > before, 2000), `${side.name}: progress again`);
    out.push({ first: norm(w.messages.slice(0, 4)), silentTicks: afterEvent.length <= 1 });
  }
  assert.deepEqual(out[1], out[0]);
  // Watcher 0's notification: watch id 0 and no events, all left off the wire.
  assert.deepEqual(out[1].first[2], { header: { revision: "1" } });
  assert.equal(out[1].silentTicks, true);
});

test("Watch: fragment splits one revision's events across responses as etcd 3.4 does; without it one response", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const out = [];
  // What each response carries, without the values' bytes (their sizes stay).
  const shape = (messages) =>
    norm(messages).map((m) => ({
      watch_id: m.watch_id,
      created: m.created,
      fragment: m.fragment,
      revision: m.header?.revision,
      events: (m.events ?? []).map((e) => [e.type ?? "PUT", Buffer.from(e.kv.key, "base64").toString(), Buffer.from(e.kv.value ?? "", "base64").length, Buffer.from(e.prev_kv?.value ?? "", "base64").length]),
    }));
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const w = c.watch();
    w.write({ create_request: { key: B("big/"), range_end: B("big0"), prev_kv: true, fragment: true, watch_id: 1 } });
    w.write({ create_request: { key: B("big/"), range_end: B("big0"), prev_kv: true, watch_id: 2 } });
    assert.ok(await until(() => w.messages.filter((m) => m.created).length === 2, 10_000), `${side.name}: created`);
    // 24 values of 200 kB: the delete of the range is one revision whose
    // events carry 4.8 MB of previous values, past etcd's 2 MiB fragment size.
    for (let i = 0; i < 24; i++) {
      const r = await c.kv("Put", { key: B(`big/${String(i).padStart(2, "0")}`), value: Buffer.alloc(200_000, 97 + i) });
      assert.ok(r.header, `${side.name}: put ${i}: ${JSON.stringify(r)}`);
    }
    const d = await c.kv("DeleteRange", { key: B("big/"), range_end: B("big0") });
    assert.equal(String(d.deleted), "24", side.name);
    const deletes = () => w.messages.flatMap((m) => m.events ?? []).filter((e) => e.type === "DELETE").length;
    assert.ok(await until(() => deletes() === 48, 20_000), `${side.name}: ${deletes()} of 48 delete events`);
    await settle([w]);
    // Per watcher: etcd orders the watchers of one stream as its maps do.
    const mine = {};
    for (const m of shape(w.messages)) (mine[m.watch_id] ??= []).push(m);
    out.push(mine);
  }
  assert.deepEqual(out[1], out[0]);
  // The fragmented watcher got the delete revision in several responses,
  // all but the last marked `fragment`; the other got it whole.
  const del = (id) => out[1][id].filter((m) => m.events[0]?.[0] === "DELETE");
  assert.ok(del("1").length > 1, `fragments: ${del("1").length}`);
  assert.deepEqual(del("1").map((m) => Boolean(m.fragment)), [...del("1").slice(1).map(() => true), false]);
  assert.equal(del("2").length, 1);
  t.diagnostic(`the delete revision came in ${del("1").length} fragments on both`);
});

test("Watch: history comes in batches of 1000 revisions that have changes for the watcher, however far apart, as etcd's", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    // 2100 puts, 32 at a time: "a" on 1043 of them, "c" on 7, "b" on the rest.
    const keyOf = (i) => (i % 300 === 0 ? "c" : i % 2 === 0 ? "a" : "b");
    for (let i = 0; i < 2100; i += 32) {
      const puts = [];
      for (let j = i; j < Math.min(i + 32, 2100); j++) puts.push(c.kv("Put", { key: B(keyOf(j)), value: B(String(j)) }));
      for (const r of await Promise.all(puts)) assert.ok(r.header, `${side.name}: ${JSON.stringify(r)}`);
    }
    const w = c.watch();
    w.write({ create_request: { key: B("a"), start_revision: 1, watch_id: 1 } });
    w.write({ create_request: { key: B("c"), start_revision: 1, watch_id: 2 } });
    w.write({ create_request: { key: B("a"), start_revision: 1, watch_id: 3, filters: ["NOPUT"] } });
    const events = () => w.messages.reduce((n, m) => n + (m.events?.length ?? 0), 0);
    assert.ok(await until(() => events() === 1050, 10_000), `${side.name}: ${events()} of 1050 events`);
    await settle([w]);
    const sizes = {};
    for (const m of norm(w.messages)) if (!m.created) (sizes[m.watch_id] ??= []).push(m.events?.length ?? 0);
    out.push(sizes);
  }
  assert.deepEqual(out[1], out[0]);
  assert.deepEqual(out[0], { 1: [1000, 43], 2: [7] });
});
