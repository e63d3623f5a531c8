// A lease with many keys, revoked by a client or expired by the lessor:
// one revision, all its keys gone at once for every reader, every watcher
// given every delete at that revision, the answer after its fdatasync.
// These are the guarantees any cut of the revoke into steps must keep
// (issue 31 item 6: the core's revoke still runs in one go; its store
// write and the hand-out of its deletes are in steps). Answers are
// compared with a real etcd on a smaller lease.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { FileStore } from "edge-lease/stores/file";
import { createServices } from "../../etcd/services/index.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { connect, grpcFrame, norm, rawCall, settle, until } from "../etcd/grpc-client.mjs";
import { startBoth, tempDir } from "../etcd/harness.mjs";
import { grpcOnLoopback } from "./loopback.mjs";

const root = loadRoot();
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const RangeReq = root.lookupType("etcdserverpb.RangeRequest");
const RangeRes = root.lookupType("etcdserverpb.RangeResponse");
const RevokeReq = root.lookupType("etcdserverpb.LeaseRevokeRequest");
const WatchReq = root.lookupType("etcdserverpb.WatchRequest");
const WatchRes = root.lookupType("etcdserverpb.WatchResponse");
const KEYS = 30_000;
const key = (i) => `k/${String(i).padStart(6, "0")}`;
const b = (s) => Buffer.from(s);
const frame = (T, m) => grpcFrame(T.encode(m).finish());
const leaseNumber = (hex) => BigInt(`0x${hex}`).toString();

// A server as main.mjs makes it (the file store with group commit, etcd's
// unbounded keys per lease), on loopback; `now`: its clock (no auto tick).
async function server(t, { now } = {}) {
  const store = FileStore.open(tempDir(t), { groupCommit: true });
  const lessor = new Lessor({ storage: store, restore: store.entries(), autoTick: now === undefined, now, maxKeysPerLease: 2 ** 31, history: Infinity });
  t.after(async () => {
    lessor.close();
    await store.close();
  });
  const grpc = await grpcOnLoopback(t, createServices({ lessor, store, member }));
  return { lessor, store, grpc };
}

// A raw Watch stream on k/..k0 over its own connection: its responses, decoded, as they come.
async function watchPrefix(grpc, onAll = () => {}) {
  const s = grpc.connect().request({ ":method": "POST", ":path": "/etcdserverpb.Watch/Watch", "content-type": "application/grpc", te: "trailers" });
  const w = { responses: [], events: 0 };
  let pending = Buffer.alloc(0);
  s.on("data", (d) => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const m = WatchRes.toObject(WatchRes.decode(pending.subarray(5, 5 + pending.readUInt32BE(1))), { longs: Number, enums: String });
      pending = pending.subarray(5 + pending.readUInt32BE(1));
      w.responses.push(m);
      w.events += m.events?.length ?? 0;
      if (m.events?.length && w.events >= KEYS) onAll();
    }
  });
  s.write(frame(WatchReq, { create_request: { key: b("k/"), range_end: b("k0") } }));
  assert.ok(await until(() => w.responses.some((r) => r.created), 5000), "the watch was created");
  return w;
}

// Every delete of a lease's keys, at one revision, in one response (no
// fragment was asked for), each key once.
function assertOneRevision(w, revision, n) {
  const deletes = w.responses.filter((r) => r.events?.length);
  assert.equal(deletes.length, 1, `one response carries the deletes: ${deletes.map((r) => r.events.length)}`);
  const [r] = deletes;
  assert.equal(r.header.revision, revision);
  assert.equal(r.events.length, n);
  assert.ok(r.events.every((e) => e.type === "DELETE" && e.kv.mod_revision === revision));
  assert.equal(new Set(r.events.map((e) => e.kv.key.toString())).size, n);
}

test("a client's revoke of a lease with many keys: readers see all or none, watchers every delete at one revision, the answer once durable", async (t) => {
  const { lessor, grpc } = await server(t);
  const g = lessor.grant(3600);
  for (let i = 0; i < KEYS; i++) lessor.put(key(i), `value ${i}`, { lease: g.id });
  await lessor.flush();
  const before = lessor.revision;
  const watchers = [await watchPrefix(grpc), await watchPrefix(grpc)];

  // A reader counting the keys, again and again, over its own connection,
  // until the revoke is answered (bounded: 2,000 reads).
  const reader = grpc.connect();
  const seen = [];
  let revoked = false;
  const reading = (async () => {
    for (let i = 0; i < 2000 && !revoked; i++) {
      const r = await rawCall(reader, "/etcdserverpb.KV/Range", frame(RangeReq, { key: b("k/"), range_end: b("k0"), count_only: true }));
      const m = RangeRes.toObject(RangeRes.decode(r.messages[0]), { longs: Number });
      seen.push([m.header.revision, m.count ?? 0]);
    }
  })();
  // When its answer comes, no write of the lessor waits for an fsync.
  const r = await rawCall(grpc.connect(), "/etcdserverpb.Lease/LeaseRevoke", frame(RevokeReq, { ID: leaseNumber(g.id) })).then((x) => ({ ...x, pending: lessor.pendingWrites }));
  revoked = true;
  await reading;
  assert.equal(r.status, 0, r.message);
  assert.equal(r.pending, 0);

  // One revision for the whole revoke.
  assert.equal(lessor.revision, before + 1);
  // Each read saw every key at a revision before the revoke, or none after.
  for (const [rev, count] of seen) assert.ok((rev === before && count === KEYS) || (rev === before + 1 && count === 0), `read at ${rev} counted ${count}`);
  for (const w of watchers) assert.ok(await until(() => w.events >= KEYS, 10_000), `a watcher got ${w.events} of ${KEYS} deletes`);
  for (const w of watchers) assertOneRevision(w, before + 1, KEYS);
  t.diagnostic(`${seen.length} reads during the revoke`);
});

test("a big lease's expiry by the lessor takes the same path: one revision, every delete, all or none", async (t) => {
  let now = Date.now();
  const { lessor, grpc } = await server(t, { now: () => now });
  const g = lessor.grant(10);
  for (let i = 0; i < KEYS; i++) lessor.put(key(i), `value ${i}`, { lease: g.id });
  await lessor.flush();
  const before = lessor.revision;
  const w = await watchPrefix(grpc);
  now += 11_000;
  // Past its deadline the lease is gone for readers before any tick.
  const read = await rawCall(grpc.connect(), "/etcdserverpb.KV/Range", frame(RangeReq, { key: b("k/"), range_end: b("k0"), count_only: true }));
  assert.equal(RangeRes.toObject(RangeRes.decode(read.messages[0]), { longs: Number }).count ?? 0, 0);
  const expired = lessor.tick();
  assert.deepEqual(expired.map((e) => [e.id, e.keys.length, e.revision]), [[g.id, KEYS, before + 1]]);
  assert.ok(await until(() => w.events >= KEYS, 10_000), `the watcher got ${w.events} of ${KEYS} deletes`);
  assertOneRevision(w, before + 1, KEYS);
});

test("a revoke's answers, its watch events and what remains are etcd's (a smaller lease, on both)", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const N = 300;
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    await c.kv("Put", { key: b("k/keep"), value: b("no lease") });
    const g = await c.lease("LeaseGrant", { TTL: 600 });
    for (let i = 0; i < N; i++) await c.kv("Put", { key: b(key(i)), value: b(`value ${i}`), lease: g.ID });
    const w = c.watch();
    w.write({ create_request: { key: b("k/"), range_end: b("k0"), prev_kv: true } });
    assert.ok(await until(() => w.messages.some((m) => m.created), 5000));
    const revoked = await c.lease("LeaseRevoke", { ID: g.ID });
    assert.ok(await until(() => w.messages.reduce((n, m) => n + (m.events?.length ?? 0), 0) >= N, 10_000));
    await settle([w]);
    const after = await c.kv("Range", { key: b("k/"), range_end: b("k0") });
    const ttl = await c.lease("LeaseTimeToLive", { ID: g.ID, keys: true });
    const again = await c.lease("LeaseRevoke", { ID: g.ID });
    // Lease ids are each server's own.
    const masked = JSON.stringify({ revoked, events: w.messages.filter((m) => !m.created), after, ttl: { ...ttl, ID: "<id>" }, again }).replaceAll(String(g.ID), "<id>");
    out.push(norm(JSON.parse(masked)));
  }
  assert.deepEqual(out[1], out[0]);
});

test("while a big lease is revoked, other clients' calls are served between its engine call and the hand-out of its deletes", async (t) => {
  // Every unary answer waits for the fsync of the writes before it (the
  // revoke's too), so what shows the loop free is that other clients'
  // requests reach the engine while the revoke's work is still going on:
  // here, after its engine call and before its watchers get its deletes.
  const { lessor, grpc } = await server(t);
  const g = lessor.grant(3600);
  for (let i = 0; i < KEYS; i++) lessor.put(key(i), `value ${i}`, { lease: g.id });
  lessor.put("other", "kept");
  await lessor.flush();
  let ranges = 0;
  let revoked = null;
  let between = null;
  const range = lessor.range.bind(lessor);
  lessor.range = (...a) => (ranges++, range(...a));
  const revoke = lessor.revoke.bind(lessor);
  lessor.revoke = (...a) => {
    const r = revoke(...a);
    revoked = ranges;
    return r;
  };
  const watch = lessor.watch.bind(lessor);
  lessor.watch = (req, listener) =>
    watch(req, (b) => {
      // (0 if they come inside the revoke's own call.)
      if (between === null && b.events.length > 0) between = revoked === null ? 0 : ranges - revoked;
      listener(b);
    });
  // A watcher of the keys that only counts what it is sent (decoding 30k
  // events here would hold this process's loop, which the server shares).
  const ws = grpc.connect().request({ ":method": "POST", ":path": "/etcdserverpb.Watch/Watch", "content-type": "application/grpc", te: "trailers" });
  let watched = 0;
  ws.on("data", (d) => (watched += d.length));
  ws.write(frame(WatchReq, { create_request: { key: b("k/"), range_end: b("k0") } }));
  assert.ok(await until(() => watched > 0, 5000), "the watch was created");

  // A victim on its own connection: a Range of another key sent at every
  // turn of the event loop, not waiting for answers (at most 300).
  const victim = grpc.connect();
  const answers = [];
  let sending = true;
  let sent = 0;
  const send = () => {
    if (!sending || sent >= 300) return;
    sent++;
    answers.push(rawCall(victim, "/etcdserverpb.KV/Range", frame(RangeReq, { key: b("other") })));
    setImmediate(send);
  };
  const r = rawCall(grpc.connect(), "/etcdserverpb.Lease/LeaseRevoke", frame(RevokeReq, { ID: leaseNumber(g.id) }));
  send();
  assert.equal((await r).status, 0);
  sending = false;
  for (const a of await Promise.all(answers)) assert.equal(a.status, 0, a.message);
  assert.ok(await until(() => watched >= KEYS * 20, 10_000), `the watcher got ${watched} bytes`);
  t.diagnostic(`victim calls served between the revoke's engine call and the hand-out of its deletes: ${between}; sent ${sent}`);
  assert.ok(between > 0, `${between} victim calls were served between the revoke and the hand-out of its deletes`);
});
