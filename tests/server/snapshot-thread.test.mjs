// The server's snapshot source (server/snapshot-thread.mjs), driven
// directly: the file the worker builds from the store's files is the one
// the engine would give, with its SHA-256; the worker lets the files go as
// soon as it has read them; a caller that goes away before the first piece
// ends the worker at once; a failure in the worker reaches the caller; and
// nothing is left open after any of these. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor } from "../../server/engine.mjs";
import { FileStore } from "../../js/stores/file.mjs";
import { storeHashKv, storeSnapshot } from "../../server/snapshot-thread.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { boltFile, etcdSnapshot, wholeFile } from "../../etcd/services/snapshot.mjs";

const ENGINE = { quotaBytes: 1 << 30, maxValueBytes: 1 << 21 };

// A store of `mib` values of 1 MiB and some history, with its lessor.
async function filled(t, mib) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-snap-"));
  const store = FileStore.open(dir, { groupCommit: true });
  const lessor = new Lessor({ ...ENGINE, storage: store, restore: store.entries(), autoTick: false });
  t.after(async () => {
    lessor.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // (libuv's thread pool started now, so that its threads are counted
  // before as after.)
  await stat(dir);
  for (let i = 0; i < mib; i++) lessor.put(`big/${i}`, new Uint8Array(1 << 20).fill(i));
  const lease = lessor.grant(600);
  lessor.put("leased", "x", { lease: lease.id });
  lessor.put("big/0", "again");
  lessor.delete("big/1");
  return { dir, store, lessor };
}

// What this process holds open under `dir`, and its threads.
const held = (dir) => ({
  files: readdirSync("/proc/self/fd")
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return "";
      }
    })
    .filter((p) => p.startsWith(dir))
    .sort(),
  threads: readdirSync("/proc/self/task").length,
});

async function settles(dir, want) {
  for (const end = Date.now() + 5000; Date.now() < end; await new Promise((ok) => setTimeout(ok, 20))) {
    const now = held(dir);
    if (now.files.join() === want.files.join() && now.threads === want.threads) return;
  }
  assert.deepEqual(held(dir), want);
}

test("the worker's file is the engine's, SHA-256 last; the store's files are let go once read", async (t) => {
  const { dir, store, lessor } = await filled(t, 24);
  await lessor.flush();
  const before = held(dir);
  const want = wholeFile(etcdSnapshot(lessor, [{ memberID: "1", alarm: "NOSPACE" }]));
  const it = storeSnapshot(store, ENGINE)([{ memberID: "1", alarm: "NOSPACE" }])[Symbol.asyncIterator]();
  const first = await it.next();
  assert.deepEqual(first.value, { size: want.length });
  // Read before the size was sent: only the store's own journal is open.
  assert.deepEqual(held(dir).files, before.files);
  const pieces = [];
  let last;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    if (r.value instanceof Uint8Array) pieces.push(r.value);
    else last = r.value;
  }
  const file = Buffer.concat(pieces);
  assert.equal(file.length, want.length);
  assert.ok(file.equals(want), "the same bytes");
  assert.deepEqual(Buffer.from(last.sha256), createHash("sha256").update(file).digest());
  await settles(dir, before);
});

test("a caller that goes away before the first piece ends the worker at once; a failure in the worker reaches the caller", async (t) => {
  const { dir, store, lessor } = await filled(t, 48);
  await lessor.flush();
  const before = held(dir);
  const ac = new AbortController();
  const it = storeSnapshot(store, ENGINE)([], ac.signal)[Symbol.asyncIterator]();
  const pending = it.next();
  setTimeout(() => ac.abort(), 10);
  assert.deepEqual(await pending, { value: undefined, done: true });
  await settles(dir, before);
  // An engine the worker cannot make: its error, and nothing left open.
  const bad = storeSnapshot(store, { ...ENGINE, quotaBytes: -1 })([]);
  await assert.rejects(
    (async () => {
      for await (const m of bad) void m;
    })(),
    /edge-lease: the snapshot could not be built: .*quotaBytes/,
  );
  await settles(dir, before);
});

test("the key bucket streamed from the engine across its 1 MiB pieces lays out the same file as the whole bucket, and its reader is let go", () => {
  const lessor = new Lessor({ ...ENGINE, history: Infinity, autoTick: false });
  // ~2.6 MiB of small records (pieces end inside leaf pages), with
  // deletions ("t" keys) and a record of 5 KB (an overflow page).
  for (let i = 0; i < 20_000; i++) lessor.put(`k/${i % 7000}`, "v".repeat(90));
  for (let i = 0; i < 500; i++) lessor.delete(`k/${i * 3}`);
  lessor.put("big", "b".repeat(5000));
  const whole = lessor.etcdKeyBucket().next(1 << 30);
  const pairs = [];
  const v = new DataView(whole.buffer, whole.byteOffset, whole.byteLength);
  for (let at = 0; at < whole.length; ) {
    const k = v.getUint32(at, true);
    const n = v.getUint32(at + 4 + k, true);
    pairs.push([whole.subarray(at + 4, at + 4 + k), whole.subarray(at + 8 + k, at + 8 + k + n)]);
    at += 8 + k + n;
  }
  assert.ok(whole.length > 2 * (1 << 20) && pairs.length > 20_000, `${whole.length} bytes, ${pairs.length} records`);
  const reader = lessor.etcdKeyBucket();
  let closed = 0;
  const close = reader.close;
  reader.close = () => (closed++, close());
  const streamed = wholeFile(boltFile({ key: reader, other: [[Uint8Array.of(1), Uint8Array.of(2)]] }));
  const packed = wholeFile(boltFile({ key: pairs, other: [[Uint8Array.of(1), Uint8Array.of(2)]] }));
  assert.equal(streamed.length, packed.length);
  assert.ok(Buffer.from(streamed).equals(Buffer.from(packed)), "the same bytes");
  assert.equal(closed, 1, "closed once its last record was read");
  // An empty history: closed at once.
  const empty = new Lessor({ ...ENGINE, autoTick: false });
  const r = empty.etcdKeyBucket();
  let emptyClosed = 0;
  const c = r.close;
  r.close = () => (emptyClosed++, c());
  wholeFile(boltFile({ key: r }));
  assert.equal(emptyClosed, 1);
  lessor.close();
  empty.close();
});

test("HashKV in the worker: the engine's hash at every revision asked for, etcd's errors, one at a time; a caller that goes away ends it", async (t) => {
  const { dir, store, lessor } = await filled(t, 12);
  for (let i = 0; i < 2000; i++) lessor.put(`k/${i % 300}`, `v${i}`);
  await lessor.flush();
  const before = held(dir);
  const hashKv = storeHashKv(store, ENGINE);
  const mid = lessor.revision - 500;
  const compacted = lessor.compactRevision; // (the engine keeps the last 1000 revisions)
  // Two at once: each its own revision's hash, the second after the first.
  const [now, past] = await Promise.all([hashKv(lessor.revision), hashKv(mid)]);
  assert.deepEqual(now, { hash: lessor.hashKv(), compactRevision: compacted });
  assert.deepEqual(past, { hash: lessor.hashKv(mid), compactRevision: compacted });
  lessor.compact(mid);
  await lessor.flush();
  await assert.rejects(hashKv(mid - 1), (e) => e.code === "Compacted");
  assert.deepEqual(await hashKv(lessor.revision), { hash: lessor.hashKv(), compactRevision: mid });
  await settles(dir, before);
  const ac = new AbortController();
  const going = hashKv(lessor.revision, ac.signal);
  setTimeout(() => ac.abort(), 5);
  await assert.rejects(going);
  await settles(dir, before);

  // Through the service, past its inline bound: the answer the engine gives
  // inline, the header naming the revision hashed; refusals as etcd's.
  const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
  const call = { size: 0, signal: new AbortController().signal };
  const inline = createServices({ lessor, member }).get("etcdserverpb.Maintenance/HashKV");
  const worker = createServices({ lessor, member, hashKv, hashKvInlineBytes: 0 }).get("etcdserverpb.Maintenance/HashKV");
  for (const revision of [0, lessor.revision, mid + 1, -1]) {
    const want = inline({ revision }, call);
    const got = await worker({ revision }, call);
    assert.deepEqual(got, want, `revision ${revision}`);
  }
  await assert.rejects(Promise.resolve().then(() => worker({ revision: mid - 1 }, call)), /required revision has been compacted/);
  await assert.rejects(Promise.resolve().then(() => worker({ revision: lessor.revision + 1 }, call)), /required revision is a future revision/);
  await settles(dir, before);
});

test("under a hold on expiry (CORRUPT) the file keeps the leases held past their deadline, from the worker as from the engine", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-snap-"));
  const store = FileStore.open(dir, { groupCommit: true });
  const engine = { ...ENGINE, minTtl: 1 };
  const lessor = new Lessor({ ...engine, storage: store, restore: store.entries(), autoTick: false });
  t.after(async () => {
    lessor.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const lease = lessor.grant(1);
  lessor.put("held", "x", { lease: lease.id });
  await lessor.flush();
  lessor.holdExpiry(true);
  // Past its deadline, and past what a restore in the worker gives it.
  await new Promise((ok) => setTimeout(ok, 2100));
  assert.ok(lessor.timeToLive(lease.id).ttl < 0);
  const alarms = [{ memberID: "1", alarm: "CORRUPT" }];
  const want = Buffer.from(wholeFile(etcdSnapshot(lessor, alarms)));
  // Without the hold the lease is gone from the file (its key is history).
  const unheld = new Lessor({ ...engine, restore: store.entries(), autoTick: false });
  t.after(() => unheld.close());
  assert.ok(!Buffer.from(wholeFile(etcdSnapshot(unheld, alarms))).equals(want), "the held lease is in the file");
  const pieces = [];
  for await (const m of storeSnapshot(store, engine)(alarms, undefined, lessor.expiryHeldSince)) if (m instanceof Uint8Array) pieces.push(m);
  assert.ok(Buffer.concat(pieces).equals(want), "the worker's file is the engine's");
});
