// edge-lease's server with etcd's KV flags (--quota-backend-bytes,
// --max-txn-ops, --auto-compaction-mode/-retention), and a watch stream
// whose client stops reading: its watchers stop and resume from history
// with nothing lost (etcd's slow watchers), within a bounded buffer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startEdge } from "../etcd/harness.mjs";
import { connect, until } from "../etcd/grpc-client.mjs";

const B = (s) => Buffer.from(s);

test("--quota-backend-bytes and --max-txn-ops: etcd's errors", async (t) => {
  const edge = await startEdge(t, { args: ["--quota-backend-bytes", String(4 * 1024 * 1024), "--max-txn-ops", "3"] });
  const c = connect(t, edge.url);
  let r;
  for (let i = 0; i < 100; i++) {
    r = await c.kv("Put", { key: B(`k${i}`), value: Buffer.alloc(100 * 1024, 1) });
    if (r.code) break;
  }
  assert.deepEqual(r, { code: 8, details: "etcdserver: mvcc: database space exceeded" });
  // Reads and deletes go on.
  assert.equal((await c.kv("Range", { key: B("k0") })).kvs.length, 1);
  assert.equal((await c.kv("DeleteRange", { key: B("k"), range_end: B("l") })).code, undefined);
  const ops = (n) => Array.from({ length: n }, (_, i) => ({ request_range: { key: B(`k${i}`) } }));
  assert.equal((await c.kv("Txn", { success: ops(3) })).succeeded, true);
  assert.deepEqual(await c.kv("Txn", { success: ops(4) }), { code: 3, details: "etcdserver: too many operations in txn request" });
});

test("auto-compaction: revision mode keeps the last N revisions, periodic mode compacts on a timer", async (t) => {
  const [rev, periodic] = await Promise.all([
    startEdge(t, { args: ["--auto-compaction-mode", "revision", "--auto-compaction-retention", "5"] }),
    startEdge(t, { args: ["--auto-compaction-retention", "1s"] }),
  ]);
  for (const side of [rev, periodic]) {
    const c = connect(t, side.url);
    for (let i = 0; i < 10; i++) await c.kv("Put", { key: B("k"), value: B(String(i)) });
    side.c = c;
  }
  const compacted = { code: 11, details: "etcdserver: mvcc: required revision has been compacted" };
  assert.deepEqual(await rev.c.kv("Range", { key: B("k"), revision: 3 }), compacted);
  assert.equal((await rev.c.kv("Range", { key: B("k"), revision: 7 })).kvs[0].value, B("5").toString("base64"));
  // Periodic, 1 s: the revision of a second ago is compacted within ~1.2 s.
  assert.equal((await periodic.c.kv("Range", { key: B("k"), revision: 3 })).kvs.length, 1);
  assert.ok(await until(async () => (await periodic.c.kv("Range", { key: B("k"), revision: 3 })).code === 11, 5000), "periodic compaction");
});

test("Watch: a client that stops reading loses nothing; its watchers resume from history", async (t) => {
  const edge = await startEdge(t);
  const c = connect(t, edge.url);
  const w = c.watch();
  w.write({ create_request: { key: B("s/"), range_end: B("s0") } });
  await until(() => w.messages.length === 1);
  w.stream.pause();
  const N = 400;
  const value = Buffer.alloc(20 * 1024, 7); // 8 MB of events: past every buffer
  for (let i = 0; i < N; i++) await c.kv("Put", { key: B(`s/${i % 10}`), value });
  w.stream.resume();
  assert.ok(await until(() => w.messages.reduce((n, m) => n + (m.events?.length ?? 0), 0) >= N, 20_000), "all events");
  const revs = w.messages.flatMap((m) => m.events ?? []).map((e) => Number(e.kv.mod_revision));
  assert.deepEqual(revs, Array.from({ length: N }, (_, i) => i + 2));
});
