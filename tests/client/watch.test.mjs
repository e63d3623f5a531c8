// watch(): events as the engine names them, prevKv, prefixes, history from
// a start revision; a dropped stream (connections cut, or the server killed
// and restarted) resumes after the last revision delivered, so no event is
// lost or repeated; a compacted start is a Compacted error; signals end it.
// Against etcd, edge-lease's server and an in-process Lessor.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { connect } from "../../js/client/index.mjs";
import { Lessor } from "../../js/entries/node.mjs";
import { eachBackend, proxy, restartable, sleep, useServers, within } from "./servers.mjs";

useServers();

/** The next `n` events of `w`, bounded by `ms` (next(), not for-await: a break would end the watch). */
async function take(w, n, ms = 5000) {
  const out = [];
  await within(
    (async () => {
      while (out.length < n) {
        const r = await w.next();
        if (r.done) throw new Error(`the watch ended after ${out.length} events`);
        out.push(r.value);
      }
    })(),
    ms,
    `${n} events`,
  );
  return out;
}

eachBackend("events: put and delete, prevKv, prefix, from a start revision", { needs: ["watch"] }, async (t, { connect }) => {
  const etcd = connect();
  const w = etcd.watch("w1/", { prefix: true, prevKv: true });
  const at = await w.ready;
  const p1 = await etcd.put("w1/a", "1");
  await etcd.put("w1x", "outside the prefix");
  const p2 = await etcd.put("w1/a", "2", { lease: (await etcd.grant(30)).id });
  const d = await etcd.delete("w1/a");
  const events = await take(w, 3);
  assert.ok(p1.revision > at);
  assert.deepEqual(events[0], { type: "put", key: "w1/a", value: "1", modRevision: p1.revision, createRevision: p1.revision, version: 1, lease: null });
  assert.equal(events[1].type, "put");
  assert.equal(events[1].value, "2");
  assert.match(events[1].lease, /^[0-9a-f]{16}$/);
  assert.equal(events[1].prev.value, "1");
  assert.equal(events[1].modRevision, p2.revision);
  assert.deepEqual({ ...events[2], prev: undefined }, { type: "delete", key: "w1/a", value: "", modRevision: d.revision, createRevision: 0, version: 0, lease: null, prev: undefined });
  assert.equal(events[2].prev.value, "2");

  // History: a watch from p1's revision replays the same events.
  const again = etcd.watch("w1/a", { startRevision: p1.revision, bytes: true });
  const replay = await take(again, 3);
  await again.return();
  assert.deepEqual(replay.map((e) => [e.type, e.modRevision]), events.map((e) => [e.type, e.modRevision]));
  assert.deepEqual(replay[0].value, new TextEncoder().encode("1"));
});

eachBackend("a revoke's deletes arrive together, in its one revision", { needs: ["watch"] }, async (t, { connect }) => {
  const etcd = connect();
  const w = etcd.watch("w2/", { prefix: true, noPut: true });
  await w.ready;
  const g = await etcd.grant(30);
  for (const k of ["a", "b", "c"]) await etcd.put(`w2/${k}`, k, { lease: g.id });
  const r = await etcd.revoke(g.id);
  const events = await take(w, 3);
  assert.deepEqual(events.map((e) => [e.type, e.key, e.modRevision]), ["a", "b", "c"].map((k) => ["delete", `w2/${k}`, r.revision]));
});

eachBackend("dropped streams resume after the last revision seen: nothing lost, nothing repeated", { needs: ["watch", "url"], timeout: 30_000 }, async (t, { url, connect }) => {
  const p = await proxy(t, url);
  const watcher = (await import("../../js/client/index.mjs")).connect(p.url);
  t.after(() => watcher.close());
  const etcd = connect();
  const w = watcher.watch("w3/", { prefix: true });
  await w.ready;
  const N = 200;
  const writes = (async () => {
    for (let i = 0; i < N; i++) {
      await etcd.put(`w3/${i % 7}`, String(i));
      if (i % 40 === 20) p.cut(); // drop the watch stream mid-flight, 5 times
    }
  })();
  const events = await take(w, N, 20_000);
  await writes;
  assert.deepEqual(events.map((e) => e.value), Array.from({ length: N }, (_, i) => String(i)));
  const revs = events.map((e) => e.modRevision);
  assert.ok(revs.every((r, i) => i === 0 || r === revs[i - 1] + 1), "consecutive revisions");
  await w.return();
});

for (const kind of ["etcd", "edge-lease"]) {
  eachBackend(`watch resumes across a server restart (${kind} killed with SIGKILL)`, { needs: ["watch", "server"], timeout: 40_000, backends: [kind] }, async (t) => {
    const server = await restartable(t, kind);
    const etcd = connect(server.url, { timeout: 2000 });
    t.after(() => etcd.close());
    const w = etcd.watch("w4/", { prefix: true });
    await w.ready;
    for (let i = 0; i < 5; i++) await etcd.put(`w4/${i}`, String(i));
    const before = await take(w, 3); // 2 more left unread in the stream
    await server.restart();
    for (let i = 5; i < 10; i++) await etcd.put(`w4/${i}`, String(i));
    const after = await take(w, 7, 15_000);
    assert.deepEqual([...before, ...after].map((e) => e.value), Array.from({ length: 10 }, (_, i) => String(i)));
    await w.return();
  });
}

eachBackend("a compacted start throws Compacted with the compact revision", { needs: ["watch", "compact"] }, async (t, { connect }) => {
  const etcd = connect();
  const p1 = await etcd.put("w5/a", "1");
  const p2 = await etcd.put("w5/a", "2");
  await etcd.compact(p2.revision);
  const w = etcd.watch("w5/a", { startRevision: p1.revision });
  // etcd answers `created`, then cancels with the compact revision: ready
  // may resolve; the iteration throws.
  await w.ready.catch(() => {});
  await assert.rejects(take(w, 1), (e) => e.code === "Compacted" && e.compactRevision === p2.revision);
  // From the compaction point on it works.
  const ok = etcd.watch("w5/a", { startRevision: p2.revision });
  assert.equal((await take(ok, 1))[0].value, "2");
  await ok.return();
  await assert.rejects(etcd.get("w5/a", { revision: p1.revision }), { code: "Compacted" });
});

eachBackend("signal and close end a watch; break releases it", { needs: ["watch"] }, async (t, { connect }) => {
  const etcd = connect();
  const ctl = new AbortController();
  const w = etcd.watch("w6/", { prefix: true, signal: ctl.signal });
  await w.ready;
  const pending = take(w, 1);
  setTimeout(() => ctl.abort(), 50);
  await assert.rejects(pending, { code: "Aborted" });
  const c = connect();
  const w2 = c.watch("w6/", { prefix: true });
  await w2.ready;
  const p2 = take(w2, 1);
  setTimeout(() => c.close(), 50);
  await assert.rejects(p2, { code: "Closed" });
  // break: the for-await calls return(); the iterator is done.
  const w3 = etcd.watch("w6/", { prefix: true });
  await w3.ready;
  await etcd.put("w6/x", "1");
  for await (const e of w3) {
    assert.equal(e.key, "w6/x");
    break;
  }
  assert.deepEqual(await w3.next(), { value: undefined, done: true });
});

test("watch against a server without it: Unimplemented, not retried forever", async (t) => {
  // A gateway that answers /v3/watch as etcd's gateway answers a method it
  // lacks (edge-lease and etcd both have watch now).
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    req.resume();
    res.writeHead(501, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: "not implemented", message: "not implemented", code: 12 }));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const client = connect(`http://127.0.0.1:${server.address().port}`);
  const w = client.watch("w7/");
  await assert.rejects(within(w.ready, 3000), { code: "Unimplemented" });
  await client.close();
  assert.equal(calls, 1, "no retry");
});

eachBackend("in-process: an expired lease's deletes, history then live events, the history option's compaction", { backends: ["lessor"] }, async (t, { connect, lessor, clock }) => {
  const etcd = connect();
  const g = await etcd.grant(5);
  const p = await etcd.put("w8/a", "1", { lease: g.id });
  await etcd.put("w8/b", "2", { lease: g.id });
  const w = etcd.watch("w8/", { prefix: true, startRevision: p.revision, prevKv: true });
  assert.equal(await w.ready, p.revision + 1);
  const history = await take(w, 2);
  assert.deepEqual(history.map((e) => [e.type, e.key, e.value]), [["put", "w8/a", "1"], ["put", "w8/b", "2"]]);
  const [expired] = clock.advance(5000);
  const deletes = await take(w, 2);
  assert.deepEqual(deletes.map((e) => [e.type, e.key, e.modRevision, e.prev.value]), [["delete", "w8/a", expired.revision, "1"], ["delete", "w8/b", expired.revision, "2"]]);
  await w.return();
  // The lessor keeps at least `history` revisions (1000 by default) and
  // compacts older ones in steps: starts before that are Compacted.
  for (let i = 0; i < 5000 && lessor.compactRevision <= p.revision; i++) lessor.put("w8/c", String(i));
  assert.ok(lessor.compactRevision > p.revision);
  const old = etcd.watch("w8/", { prefix: true, startRevision: p.revision });
  await old.ready; // created first, as etcd answers
  await assert.rejects(take(old, 1), (e) => e.code === "Compacted" && e.compactRevision === lessor.compactRevision);
});

eachBackend("after an abort no further event is handed out, even those already received", { needs: ["watch", "txn"] }, async (t, { connect }) => {
  const etcd = connect();
  const ctl = new AbortController();
  const w = etcd.watch("w11/", { prefix: true, signal: ctl.signal });
  await w.ready;
  // Ten events in one revision: one response, all received at once.
  await etcd.txn({ compare: [], success: Array.from({ length: 10 }, (_, i) => ({ put: { key: `w11/${i}`, value: "v" } })), failure: [] });
  const [first] = await take(w, 1);
  assert.equal(first.key, "w11/0");
  ctl.abort();
  await assert.rejects(w.next(), { code: "Aborted" });
  assert.deepEqual(await w.next(), { value: undefined, done: true });
});

eachBackend("return() with a next() waiting: that next() resolves done, the client stays open", { needs: ["watch"] }, async (t, { connect }) => {
  const etcd = connect();
  const w = etcd.watch("w9/", { prefix: true });
  await w.ready;
  const waiting = w.next();
  await sleep(20);
  assert.deepEqual(await within(w.return(), 5000, "return()"), { value: undefined, done: true });
  assert.deepEqual(await within(waiting, 5000, "the waiting next()"), { value: undefined, done: true });
  assert.equal(etcd.closed.aborted, false);
  assert.equal((await etcd.put("w9/a", "1")).revision > 0, true, "the client still works");
});

eachBackend("a compacted start: ready resolves (etcd answers created first), the iteration throws Compacted", { needs: ["watch", "compact"] }, async (t, { connect }) => {
  const etcd = connect();
  const p1 = await etcd.put("w10/a", "1");
  const p2 = await etcd.put("w10/a", "2");
  await etcd.compact(p2.revision);
  const w = etcd.watch("w10/a", { startRevision: p1.revision });
  assert.equal(typeof (await within(w.ready, 5000, "ready")), "number");
  await assert.rejects(take(w, 1), (e) => e.code === "Compacted" && e.compactRevision === p2.revision);
});

test("in-process: a watch ended before it was read, or aborted, lets the engine's watcher go", async (t) => {
  const lessor = new Lessor();
  t.after(() => lessor.close());
  let live = 0;
  const watch = lessor.watch.bind(lessor);
  lessor.watch = (req, listener) => {
    const w = watch(req, listener);
    live++;
    let cancelled = false;
    return { ...w, cancel: () => (cancelled ? undefined : ((cancelled = true), live--, w.cancel())) };
  };
  const c = connect(lessor);
  t.after(() => c.close());
  for (let i = 0; i < 20; i++) await c.watch("k").return();
  for (let i = 0; i < 20; i++) {
    const w = c.watch("k");
    await w.ready;
    await w.return();
  }
  for (let i = 0; i < 20; i++) {
    const ctl = new AbortController();
    const w = c.watch("k", { signal: ctl.signal });
    await w.ready;
    ctl.abort();
  }
  await sleep(20);
  assert.equal(live, 0, "engine watchers still registered");
  const w = c.watch("k");
  await w.ready;
  assert.equal(live, 1);
  await c.close();
  assert.equal(live, 0, "close() lets the last one go");
});

// Servers of their own: progress notifications every 100 ms.
for (const kind of ["etcd", "edge-lease"]) {
  test(`a quiet watch resumes past a compaction of history it did not need, from its last progress notification [${kind}]`, { timeout: 30_000 }, async (t) => {
    const { startEdge, startEtcd } = await import("../etcd/harness.mjs");
    const args = ["--experimental-watch-progress-notify-interval", "100ms"];
    const server = kind === "etcd" ? await startEtcd(t, { args }) : await startEdge(t, { args });
    const p = await proxy(t, server.url);
    const c = connect(p.url);
    const direct = connect(server.url);
    t.after(() => Promise.all([c.close(), direct.close()]));
    const w = c.watch("quiet");
    await w.ready;
    let rev;
    for (let i = 0; i < 20; i++) rev = (await direct.put("busy", String(i))).revision;
    await direct.compact(rev);
    // A progress notification reports the revision past the compaction.
    await sleep(400);
    p.cut();
    const next = w.next();
    await sleep(300);
    const later = await direct.put("quiet", "at last");
    const [e] = await within(next.then((r) => [r.value]), 10_000, "the event after the blip");
    assert.deepEqual([e.key, e.value, e.modRevision], ["quiet", "at last", later.revision]);
    assert.ok(w.resumeRevision > rev, `resumes after ${w.resumeRevision}`);
    await w.return();
  });
}
