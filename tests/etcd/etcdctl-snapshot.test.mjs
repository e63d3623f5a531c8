// `etcdctl snapshot save` from edge-lease, and what etcd's own tools make of
// the file: `snapshot status` reads it (bbolt's consistency check included),
// and `snapshot restore` turns it into the data directory of a real etcd
// 3.4, which then answers as edge-lease does: the same keys with their
// revisions, versions and leases, the same history back to the compaction
// point (and the compacted error before it), the same HashKV, the same
// leases with their keys. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { etcdctl, clusterFlags, post, startBoth, startEdge, startEtcd, tempDir } from "./harness.mjs";
import { connect, grpcClient } from "./grpc-client.mjs";

// etcdctl's JSON with what differs by member left out (ids, raft).
const norm = (json) =>
  JSON.parse(json, (k, v) => (["cluster_id", "member_id", "raft_term", "ID", "header"].includes(k) && typeof v !== "object" ? undefined : v));

/** A real etcd started on the data directory `etcdctl snapshot restore` makes of `file` (in `dir`). */
async function restored(t, file, dir) {
  const f = await clusterFlags("restored", join(dir, "restored"));
  const restore = await etcdctl("", ["snapshot", "restore", file, "--name", "restored", "--data-dir", join(dir, "restored"), "--initial-cluster", `restored=${f.peer}`, "--initial-advertise-peer-urls", f.peer, "--initial-cluster-token", "etcd-cluster-1"]);
  assert.equal(restore.code, 0, restore.stderr);
  return startEtcd(t, { flags: f });
}

/** Runs etcdctl `args` on both: the same exit code and output (JSON normalised), or the same error. */
const comparer = (etcd, edge) => async (args) => {
  const [a, b] = await Promise.all([etcdctl(etcd.url, args), etcdctl(edge.url, args)]);
  assert.equal(b.code, a.code, `${args.join(" ")}: ${b.stderr} / ${a.stderr}`);
  if (a.code === 0) assert.deepEqual(args.includes("json") ? norm(b.stdout) : b.stdout, args.includes("json") ? norm(a.stdout) : a.stdout, args.join(" "));
  else assert.equal(b.stderr.trim().split("\n").pop(), a.stderr.trim().split("\n").pop(), args.join(" ")); // (after client logs)
  return a;
};

test("etcdctl snapshot save from edge-lease: status reads the file, and restore makes a real etcd 3.4 that answers the same", async (t) => {
  const edge = await startEdge(t);
  const ok = async (args, url = edge.url) => {
    const r = await etcdctl(url, args);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const lease = (await ok(["lease", "grant", "600"])).match(/lease ([0-9a-f]+) granted/)[1];
  const other = (await ok(["lease", "grant", "90"])).match(/lease ([0-9a-f]+) granted/)[1];
  await ok(["put", "app/a", "1"]);
  await ok(["put", "app/b", "2", `--lease=${lease}`]);
  await ok(["put", "app/a", "3"]);
  await ok(["put", "gone", "x"]);
  await ok(["del", "gone"]);
  await ok(["put", "app/c", "4", `--lease=${other}`]);
  await ok(["put", "\u00e9t\u00e9", "\u00fcnicode"]);
  const compactAt = JSON.parse(await ok(["get", "app/a", "-w", "json"])).header.revision;
  await ok(["compaction", String(compactAt)]);
  await ok(["put", "app/a", "5"]);
  await ok(["del", "app/c"]);
  await ok(["put", "big", "v".repeat(9000)]); // a record over a page: overflow pages
  for (let i = 0; i < 300; i++) await ok(["put", `many/${String(i).padStart(3, "0")}`, `value ${i}`]); // leaves under branch pages
  await ok(["put", "app/b", "6", `--lease=${lease}`]);
  const revision = JSON.parse(await ok(["get", "app/b", "-w", "json"])).header.revision;

  const dir = tempDir(t);
  const file = join(dir, "edge.db");
  const saved = await ok(["snapshot", "save", file]);
  assert.equal(saved, `Snapshot saved at ${file}\n`);
  const status = JSON.parse(await ok(["snapshot", "status", file, "-w", "json"]));
  assert.equal(status.revision, revision, "the last revision in the key bucket");
  assert.ok(status.totalKey > 300 && status.totalSize % 4096 === 0, JSON.stringify(status));

  const etcd = await restored(t, file, dir);
  const same = comparer(etcd, edge);
  await same(["get", "", "--from-key", "-w", "json"]);
  for (let rev = compactAt; rev <= Math.min(revision, compactAt + 8); rev++) await same(["get", "app/", "--prefix", `--rev=${rev}`, "-w", "json"]);
  assert.notEqual((await same(["get", "app/a", `--rev=${compactAt - 1}`])).code, 0, "compacted before the point");
  await same(["get", "big", "--print-value-only"]);
  const hash = (out) => JSON.parse(out)[0].HashKV.hash;
  const [h1, h2] = await Promise.all([etcdctl(etcd.url, ["endpoint", "hashkv", "-w", "json"]), etcdctl(edge.url, ["endpoint", "hashkv", "-w", "json"])]);
  assert.equal(hash(h2.stdout), hash(h1.stdout), "HashKV of the same history");
  const leases = (r) => r.stdout.split("\n").filter((l) => /^[0-9a-f]+$/.test(l)).sort();
  assert.deepEqual(leases(await etcdctl(etcd.url, ["lease", "list"])), leases(await etcdctl(edge.url, ["lease", "list"])));
  for (const id of [lease, other]) {
    const [a, b] = await Promise.all([etcdctl(etcd.url, ["lease", "timetolive", id, "--keys", "-w", "json"]), etcdctl(edge.url, ["lease", "timetolive", id, "--keys", "-w", "json"])]);
    const view = (out) => {
      const j = JSON.parse(out);
      return { id: j.id, granted: j["granted-ttl"], keys: (j.keys ?? []).map((k) => Buffer.from(k, "base64").toString()).sort() };
    };
    assert.deepEqual(view(b.stdout), view(a.stdout), `lease ${id}`);
  }
});

// More than the 64 MiB a snapshot may be built from in memory: the server
// builds it in a worker thread from its store's files and answers meanwhile.
test("a 72 MiB snapshot: built off the event loop while the server answers, saved by etcdctl, restored by etcd with the same data", async (t) => {
  const edge = await startEdge(t);
  const { kv, lease: leases } = connect(t, edge.url);
  for (let i = 0; i < 72; i++) {
    const r = await kv("Put", { key: Buffer.from(`big/${String(i).padStart(2, "0")}`), value: Buffer.alloc(1 << 20, i) });
    assert.ok(r.header, `put ${i}: ${r.details}`);
  }
  const lease = await leases("LeaseGrant", { TTL: 600 });
  assert.ok((await kv("Put", { key: Buffer.from("small"), value: Buffer.from("v"), lease: lease.ID })).header);
  assert.ok((await kv("DeleteRange", { key: Buffer.from("big/00") })).header);
  // A client that goes away after the first piece: the worker and the
  // files it read are let go (the process's open files and the worker's
  // event loop handles, sockets aside, back to what they were), and the
  // next snapshot is not refused.
  const fds = () =>
    readdirSync(`/proc/${edge.child.pid}/fd`)
      .map((fd) => {
        try {
          return readlinkSync(`/proc/${edge.child.pid}/fd/${fd}`);
        } catch {
          return "(closed meanwhile)";
        }
      })
      .filter((l) => !l.startsWith("socket:") && l !== "(closed meanwhile)")
      .sort()
      .join("\n");
  const c = grpcClient(edge.url, "etcdserverpb.Maintenance", { bytes: Buffer });
  t.after(() => c.close());
  // (The writes above may have started a store compaction, whose files
  // come and go: the count once two readings 200 ms apart agree.)
  let before = fds();
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    await new Promise((ok) => setTimeout(ok, 200));
    const now = fds();
    if (now === before) break;
    before = now;
  }
  await new Promise((ok, fail) => {
    const s = c.Snapshot({}, { deadline: Date.now() + 30_000 });
    s.once("data", () => {
      s.cancel();
      ok();
    });
    s.on("error", (e) => e.code !== 1 && fail(e)); // (1: the cancel)
  });
  const start = Date.now();
  while (fds() !== before && Date.now() - start < 10_000) await new Promise((ok) => setTimeout(ok, 50));
  assert.equal(fds(), before, "open files after a snapshot was given up");
  const dir = tempDir(t);
  const file = join(dir, "edge.db");
  let done = false;
  const save = etcdctl(edge.url, ["snapshot", "save", file], { timeout: 60_000 }).finally(() => (done = true));
  let answered = 0;
  let slowest = 0;
  while (!done) {
    const start = Date.now();
    const r = await kv("Range", { key: Buffer.from("small") });
    assert.equal(r.kvs?.length, 1, JSON.stringify(r));
    answered++;
    slowest = Math.max(slowest, Date.now() - start);
    await new Promise((ok) => setTimeout(ok, 5));
  }
  const saved = await save;
  assert.equal(saved.code, 0, saved.stderr);
  assert.ok(answered > 0);
  t.diagnostic(`${answered} ranges answered while the snapshot was built and sent; the slowest took ${slowest} ms`);
  const status = JSON.parse((await etcdctl("", ["snapshot", "status", file, "-w", "json"])).stdout);
  assert.ok(status.totalSize > 72 << 20 && status.totalKey >= 74, JSON.stringify(status));
  const etcd = await restored(t, file, dir);
  const same = comparer(etcd, edge);
  await same(["get", "", "--from-key", "--keys-only", "-w", "json"]);
  await same(["get", "big/00", "--rev=2", "-w", "json"]); // history: the deleted key's first version
  const hash = (out) => JSON.parse(out)[0].HashKV.hash;
  const [h1, h2] = await Promise.all([etcdctl(etcd.url, ["endpoint", "hashkv", "-w", "json"]), etcdctl(edge.url, ["endpoint", "hashkv", "-w", "json"])]);
  assert.equal(hash(h2.stdout), hash(h1.stdout), "HashKV of the same history, values included");
});

// The file is one revision's state, whatever is written while it is taken:
// the restored etcd, at its revision R, holds what edge-lease held at R
// (its history at R, and its HashKV up to R).
test("a snapshot taken under writes is the state at one revision: the restored etcd at R equals edge-lease read at R", async (t) => {
  const edge = await startEdge(t);
  const b64 = (s) => Buffer.from(s).toString("base64");
  const lease = (await post(edge.url, "/v3/lease/grant", { TTL: 600 })).body.ID;
  for (let i = 0; i < 12; i++) assert.equal((await post(edge.url, "/v3/kv/put", { key: b64(`big/${i}`), value: Buffer.alloc(1 << 20, i).toString("base64") })).status, 200);
  const first = Number((await post(edge.url, "/v3/kv/range", { key: b64("big/0") })).body.header.revision);
  const dir = tempDir(t);
  const file = join(dir, "edge.db");
  let done = false;
  const save = etcdctl(edge.url, ["snapshot", "save", file], { timeout: 60_000 }).finally(() => (done = true));
  let writes = 0;
  for (let i = 0; !done && i < 20_000; i++) {
    const k = b64(`k/${i % 40}`);
    const r =
      i % 5 === 3
        ? await post(edge.url, "/v3/kv/deleterange", { key: k })
        : i % 5 === 4
          ? await post(edge.url, "/v3/kv/txn", { success: [{ request_put: { key: k, value: b64(`t${i}`) } }, { request_put: { key: b64(`k/x${i % 7}`), value: b64(`u${i}`), lease } }] })
          : await post(edge.url, "/v3/kv/put", { key: k, value: b64(`v${i}`), lease: i % 2 ? lease : undefined });
    assert.equal(r.status, 200);
    writes++;
  }
  const saved = await save;
  assert.equal(saved.code, 0, saved.stderr);
  const last = Number((await post(edge.url, "/v3/kv/range", { key: b64("big/0") })).body.header.revision);
  const etcd = await restored(t, file, dir);
  const at = JSON.parse((await etcdctl(etcd.url, ["get", "big/0", "-w", "json"])).stdout).header.revision;
  t.diagnostic(`${writes} writes during the snapshot (revisions ${first + 1}-${last}); the file is revision ${at}`);
  assert.ok(at >= first && at <= last, `revision ${at} in [${first}, ${last}]`);
  const kvs = async (url, rev) => JSON.parse((await etcdctl(url, ["get", "", "--from-key", "--keys-only", "-w", "json", ...(rev ? [`--rev=${rev}`] : [])])).stdout).kvs;
  assert.deepEqual(await kvs(edge.url, at), await kvs(etcd.url));
  const hash = async (url, rev) => JSON.parse((await etcdctl(url, ["endpoint", "hashkv", "-w", "json", ...(rev ? [`--rev=${rev}`] : [])])).stdout)[0].HashKV.hash;
  assert.equal(await hash(edge.url, at), await hash(etcd.url), "HashKV up to the file's revision");
});

test("a compaction at revision 0 goes through a snapshot: the restored etcd refuses 0 again", async (t) => {
  const edge = await startEdge(t);
  assert.equal((await etcdctl(edge.url, ["put", "a", "1"])).code, 0);
  assert.equal((await post(edge.url, "/v3/kv/compaction", { revision: 0 })).status, 200);
  const dir = tempDir(t);
  const file = join(dir, "edge.db");
  assert.equal((await etcdctl(edge.url, ["snapshot", "save", file])).code, 0);
  const etcd = await restored(t, file, dir);
  await comparer(etcd, edge)(["get", "a", "-w", "json"]);
  const again = await Promise.all([etcd, edge].map(async (side) => (await post(side.url, "/v3/kv/compaction", { revision: 0 })).body.error));
  assert.deepEqual(again, ["etcdserver: mvcc: required revision has been compacted", "etcdserver: mvcc: required revision has been compacted"]);
});

// The stream itself, over gRPC and the gateway, on both: the file in pieces
// of at most 32 KiB, each with the bytes still to come, then its SHA-256 in
// a message of its own; no header. (The files differ: etcd's has its own
// buckets and free pages.)
test("Maintenance/Snapshot streams as etcd 3.4's does, over gRPC and the gateway", async (t) => {
  const both = await startBoth(t);
  const shapes = [];
  for (const side of [both.etcd, both.edge]) {
    for (let i = 0; i < 40; i++) assert.equal((await post(side.url, "/v3/kv/put", { key: Buffer.from(`k${i}`).toString("base64"), value: Buffer.alloc(2000, i).toString("base64") })).status, 200);
    const c = grpcClient(side.url, "etcdserverpb.Maintenance", { bytes: Buffer });
    t.after(() => c.close());
    const messages = await new Promise((ok, fail) => {
      const got = [];
      const s = c.Snapshot({}, { deadline: Date.now() + 10_000 });
      s.on("data", (m) => got.push(m));
      s.on("end", () => ok(got));
      s.on("error", fail);
    });
    const file = Buffer.concat(messages.slice(0, -1).map((m) => m.blob));
    let left = file.length;
    const pieces = messages.slice(0, -1).map((m) => {
      left -= m.blob.length;
      return m.blob.length <= 32 * 1024 && Number(m.remaining_bytes ?? 0) === left && !m.header;
    });
    const last = messages.at(-1);
    const sha = createHash("sha256").update(file).digest();
    const gateway = await fetch(side.url + "/v3/maintenance/snapshot", { method: "POST", body: "{}" });
    const lines = (await gateway.text()).trim().split("\n").map((l) => JSON.parse(l));
    const gatewayFile = Buffer.concat(lines.slice(0, -1).map((l) => Buffer.from(l.result.blob, "base64")));
    shapes.push({
      pieces: pieces.every(Boolean) && pieces.length === Math.ceil(file.length / (32 * 1024)),
      fileIsPages: file.length % 4096 === 0,
      lastIsSha: last.blob.equals(sha) && !last.header && Number(last.remaining_bytes ?? 0) === 0,
      gateway: [gateway.status, gateway.headers.get("content-type"), Object.keys(lines.at(-1)), Object.keys(lines.at(-1).result)],
      gatewayLastIsSha: Buffer.from(lines.at(-1).result.blob, "base64").equals(createHash("sha256").update(gatewayFile).digest()),
    });
  }
  assert.deepEqual(shapes[1], shapes[0]);
  assert.deepEqual(shapes[0], { pieces: true, fileIsPages: true, lastIsSha: true, gateway: shapes[0].gateway, gatewayLastIsSha: true });
});
