// The same operations against a real etcd (Debian's 3.4, started here on
// loopback with a temp data dir) and against edge-lease, comparing what each
// reports: revisions, create/mod revisions, versions, granted TTLs, attached
// keys, create-only (lock) outcomes and errors. Only behaviour that does not
// depend on waiting is compared: expiry is covered with injected clocks
// elsewhere, and this suite never sleeps for time to pass.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor } from "edge-lease";
import { freePort, b64 } from "./harness.mjs";

let etcd;
let dir;
let base;



async function call(path, body) {
  const res = await fetch(base + path, { method: "POST", body: JSON.stringify(body) });
  const json = await res.json();
  if (json.error || json.code) return { error: json.error ?? json.message };
  return json;
}

before(async () => {
  try {
    execFileSync("etcd", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Error("etcd is not installed: run `bash scripts/setup.sh --etcd` (npm test does)");
  }
  dir = mkdtempSync(join(tmpdir(), "edge-lease-etcd-"));
  const client = await freePort();
  const peer = await freePort();
  base = `http://127.0.0.1:${client}`;
  etcd = spawn(
    "etcd",
    [
      "--data-dir", join(dir, "data"),
      "--name", "compare",
      "--listen-client-urls", base,
      "--advertise-client-urls", base,
      "--listen-peer-urls", `http://127.0.0.1:${peer}`,
      "--initial-advertise-peer-urls", `http://127.0.0.1:${peer}`,
      "--initial-cluster", `compare=http://127.0.0.1:${peer}`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  etcd.stderr.on("data", (d) => (log += d));
  // Wait (bounded) until it answers.
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(base + "/health");
      if (r.ok && (await r.json()).health === "true") return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`etcd did not start:\n${log.slice(-2000)}`);
});

after(() => {
  etcd?.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Both systems behind one small interface; lease ids are mapped to the
// order they were granted in, since each side picks its own.
function etcdSide() {
  const ids = [];
  const alias = (id) => ids.indexOf(id);
  return {
    name: "etcd",
    async grant(ttl) {
      const r = await call("/v3/lease/grant", { TTL: ttl });
      ids.push(r.ID);
      return { lease: alias(r.ID), ttl: Number(r.TTL) };
    },
    async put(key, value, lease) {
      const r = await call("/v3/kv/put", { key: b64(key), value: b64(value), lease: lease === undefined ? undefined : ids[lease] });
      return r.error ? { error: "LeaseNotFound" } : { revision: Number(r.header.revision) };
    },
    async create(key, value, lease) {
      const r = await call("/v3/kv/txn", {
        compare: [{ key: b64(key), target: "CREATE", result: "EQUAL", create_revision: 0 }],
        success: [{ request_put: { key: b64(key), value: b64(value), lease: ids[lease] } }],
      });
      return { created: Boolean(r.succeeded), revision: Number(r.header.revision) };
    },
    async get(key) {
      const r = await call("/v3/kv/range", { key: b64(key) });
      const kv = r.kvs?.[0];
      if (!kv) return null;
      return {
        value: Buffer.from(kv.value ?? "", "base64").toString(),
        createRevision: Number(kv.create_revision),
        modRevision: Number(kv.mod_revision),
        version: Number(kv.version),
        lease: kv.lease ? alias(kv.lease) : null,
      };
    },
    async del(key) {
      const r = await call("/v3/kv/deleterange", { key: b64(key) });
      return { deleted: Number(r.deleted ?? 0) === 1, revision: Number(r.header.revision) };
    },
    async revoke(lease) {
      const r = await call("/v3/lease/revoke", { ID: ids[lease] });
      return r.error ? { error: "LeaseNotFound" } : { revision: Number(r.header.revision) };
    },
    async keys(lease) {
      const r = await call("/v3/lease/timetolive", { ID: ids[lease], keys: true });
      if (Number(r.TTL) === -1) return { ttl: -1 };
      // etcd lists a lease's keys in Go map order (unspecified); edge-lease sorts them.
      const keys = (r.keys ?? []).map((k) => Buffer.from(k, "base64").toString()).sort();
      return { granted: Number(r.grantedTTL), keys };
    },
    async revision() {
      const r = await call("/v3/kv/range", { key: b64("\0") });
      return Number(r.header.revision);
    },
  };
}

function edgeSide() {
  // etcd's minimum TTL is 1.5 election timeouts, rounded up: 2 s by default.
  const lessor = new Lessor({ minTtl: 2, autoTick: false });
  const ids = [];
  const alias = (id) => ids.indexOf(id);
  const err = (fn) => {
    try {
      return fn();
    } catch (e) {
      return { error: e.code };
    }
  };
  return {
    name: "edge-lease",
    async grant(ttl) {
      const g = lessor.grant(ttl);
      ids.push(g.id);
      return { lease: alias(g.id), ttl: g.ttl };
    },
    async put(key, value, lease) {
      return err(() => ({ revision: lessor.put(key, value, { lease: lease === undefined ? undefined : ids[lease] }).revision }));
    },
    async create(key, value, lease) {
      const r = lessor.put(key, value, { lease: ids[lease], ifAbsent: true });
      return { created: r.created, revision: r.revision };
    },
    async get(key) {
      const e = lessor.get(key);
      if (!e) return null;
      return { value: e.value, createRevision: e.createRevision, modRevision: e.modRevision, version: e.version, lease: e.lease ? alias(e.lease) : null };
    },
    async del(key) {
      const r = lessor.delete(key);
      return { deleted: r.deleted, revision: r.revision };
    },
    async revoke(lease) {
      return err(() => {
        lessor.revoke(ids[lease]);
        return { revision: lessor.revision };
      });
    },
    async keys(lease) {
      const t = lessor.timeToLive(ids[lease], { keys: true });
      if (t.ttl === -1) return { ttl: -1 };
      return { granted: t.grantedTtl, keys: t.keys };
    },
    async revision() {
      return lessor.revision;
    },
  };
}

// The script both run. Every observation goes into the transcript.
async function script(s) {
  const out = [];
  const see = async (what, p) => out.push([what, await p]);
  await see("fresh revision", s.revision());
  await see("put a", s.put("a", "1"));
  await see("put a again", s.put("a", "2"));
  await see("get a", s.get("a"));
  const { lease: l0 } = await s.grant(60);
  await see("grant 1 (raised to min)", s.grant(1));
  await see("grant 0 (raised to min)", s.grant(0));
  await see("revision unchanged by grants", s.revision());
  await see("put svc/b with lease", s.put("svc/b", "x", l0));
  await see("put svc/a with lease", s.put("svc/a", "y", l0));
  await see("lease keys sorted", s.keys(l0));
  await see("lease switch: put svc/b without lease", s.put("svc/b", "z"));
  await see("keys after switch", s.keys(l0));
  await see("get svc/b detached", s.get("svc/b"));
  await see("lock: create-only takes it", s.create("locks/job", "server-3", l0));
  await see("lock: create-only refused", s.create("locks/job", "server-7", l0));
  await see("lock holder", s.get("locks/job"));
  await see("delete svc/a", s.del("svc/a"));
  await see("delete missing", s.del("svc/a"));
  await see("keys after delete", s.keys(l0));
  const { lease: l3 } = await s.grant(60);
  await see("revoke a lease with no keys: revision unchanged", s.revoke(l3));
  await see("revoke l0: one revision for all its keys", s.revoke(l0));
  await see("lock gone with the lease", s.get("locks/job"));
  await see("revoked lease unknown", s.keys(l0));
  await see("revoke again", s.revoke(l0));
  await see("put with revoked lease fails, nothing changes", s.put("c", "1", l0));
  await see("revision after failed put", s.revision());
  await see("recreate a: new create revision, version 1", s.del("a").then(() => s.put("a", "3")).then(() => s.get("a")));
  return out;
}

test("edge-lease reports what etcd reports for the same operations", async () => {
  const want = await script(etcdSide());
  const got = await script(edgeSide());
  for (let i = 0; i < want.length; i++) {
    assert.deepEqual(got[i], want[i], `step ${i}: ${want[i][0]}`);
  }
  assert.equal(got.length, want.length);
});
