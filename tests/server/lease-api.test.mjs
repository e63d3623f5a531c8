// The lease server of `npm start` (scripts/serve.mjs + scripts/lease-api.mjs),
// run as a child process on port 0 with a temporary data directory: every
// endpoint, its errors, the lock pattern, and durability across SIGKILL.
// Expiry itself is not waited for here: the core and wrapper tests cover it
// with injected clocks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const TTL = 600; // long enough that nothing expires while a test runs

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-server-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts the server on `dataDir`; resolves to { origin, child, exited, stop }. */
function start(t, dataDir) {
  const child = spawn(process.execPath, ["scripts/serve.mjs", "--port", "0", "--data-dir", dataDir], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, out, err })));
  t.after(() => child.kill("SIGKILL"));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.stderr.on("data", (c) => (err += c));
    exited.then(({ code, signal }) => reject(new Error(`serve.mjs exited (${code}, ${signal}): ${out}${err}`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /lease API: (http:\/\/127\.0\.0\.1:\d+)\/v1\//.exec(out);
      if (m) resolve({ origin: m[1], child, exited });
    });
  });
}

function client(origin) {
  return async (path, body, init = {}) => {
    const res = await fetch(origin + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body ?? {}),
      ...init,
    });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), headers: res.headers };
  };
}

// Calls that must succeed return their body.
function ok(call) {
  return async (path, body) => {
    const r = await call(path, body);
    assert.equal(r.status, 200, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
}

async function expectError(call, path, body, status, code, init) {
  const r = await call(path, body, init);
  assert.equal(r.status, status, `${path}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, code);
  assert.equal(typeof r.body.error.message, "string");
  return r;
}

test("every endpoint, its errors, and the lock pattern with a fencing token", async (t) => {
  const { origin } = await start(t, tempDir(t));
  const call = client(origin);
  const api = ok(call);

  const status0 = await (await fetch(`${origin}/v1/status`)).json();
  assert.deepEqual(status0, { revision: 1, leases: 0, primary: true });

  // Leases.
  const a = await api("/v1/lease/grant", { ttl: TTL });
  assert.match(a.id, /^[0-9a-f]{16}$/);
  assert.equal(a.ttl, TTL);
  assert.deepEqual(await api("/v1/lease/grant", { ttl: 0, id: "00000000000000aa" }), { id: "00000000000000aa", ttl: 1 });
  await expectError(call, "/v1/lease/grant", { ttl: TTL, id: "00000000000000aa" }, 409, "LeaseExists");
  await expectError(call, "/v1/lease/grant", { ttl: 1e12 }, 400, "LeaseTtlTooLarge");
  await expectError(call, "/v1/lease/grant", { ttl: "30" }, 400, "InvalidArgument");
  await expectError(call, "/v1/lease/grant", { ttl: 30, id: "ABC" }, 400, "InvalidArgument");
  await expectError(call, "/v1/lease/grant", {}, 400, "InvalidArgument");
  assert.deepEqual(await api("/v1/lease/renew", { id: a.id }), { id: a.id, ttl: TTL });
  await expectError(call, "/v1/lease/renew", { id: "0000000000000bad" }, 404, "LeaseNotFound");
  assert.deepEqual((await api("/v1/lease/list", {})).leases.sort(), [a.id, "00000000000000aa"].sort());

  // Keys.
  assert.deepEqual(await api("/v1/kv/put", { key: "svc/one", value: "alive", lease: a.id }), {
    revision: 2,
    created: true,
  });
  const put2 = await api("/v1/kv/put", { key: "svc/one", value: "still", lease: a.id, prevKv: true });
  assert.equal(put2.revision, 3);
  assert.equal(put2.created, false);
  assert.equal(put2.prev.value, "alive");
  await api("/v1/kv/put", { key: "svc/two", value: "ünïcödé ✓" });
  await api("/v1/kv/put", { key: "other", value: "" });
  await expectError(call, "/v1/kv/put", { key: "k", value: "v", lease: "0000000000000bad" }, 404, "LeaseNotFound");
  await expectError(call, "/v1/kv/put", { key: "k", value: 5 }, 400, "InvalidArgument");
  await expectError(call, "/v1/kv/put", { key: "k", value: "v", ifAbsent: "false" }, 400, "InvalidArgument");
  // A misspelled option must not turn a create-only put into an overwrite.
  await expectError(call, "/v1/kv/put", { key: "svc/one", value: "x", ifabsent: true }, 400, "InvalidArgument");

  assert.deepEqual(await api("/v1/kv/get", { key: "svc/one" }), {
    key: "svc/one",
    value: "still",
    lease: a.id,
    createRevision: 2,
    modRevision: 3,
    version: 2,
  });
  assert.deepEqual(await api("/v1/kv/get", { key: "nope" }), {});
  await expectError(call, "/v1/kv/get", {}, 400, "InvalidArgument");
  const range = await api("/v1/kv/range", { prefix: "svc/" });
  assert.deepEqual(range.entries.map((e) => [e.key, e.value, e.lease]), [
    ["svc/one", "still", a.id],
    ["svc/two", "ünïcödé ✓", null],
  ]);
  assert.equal((await api("/v1/kv/range", {})).entries.length, 3);

  const ttl = await api("/v1/lease/ttl", { id: a.id, keys: true });
  assert.equal(ttl.id, a.id);
  assert.equal(ttl.grantedTtl, TTL);
  assert.ok(ttl.ttl > TTL - 10 && ttl.ttl <= TTL, `ttl ${ttl.ttl}`);
  assert.ok(ttl.ttlMs > (TTL - 10) * 1000 && ttl.ttlMs <= TTL * 1000, `ttlMs ${ttl.ttlMs}`);
  assert.deepEqual(ttl.keys, ["svc/one"]);
  assert.deepEqual((await api("/v1/lease/ttl", { id: a.id })).keys, []);
  // As in etcd, a lease that does not exist is a TTL of -1, not an error.
  assert.equal((await api("/v1/lease/ttl", { id: "0000000000000bad" })).ttl, -1);

  const del = await api("/v1/kv/delete", { key: "other", prevKv: true });
  assert.equal(del.deleted, true);
  assert.equal(del.prev.value, "");
  assert.equal((await api("/v1/kv/delete", { key: "other" })).deleted, false);

  const revoked = await api("/v1/lease/revoke", { id: a.id });
  assert.deepEqual(revoked, { id: a.id, keys: ["svc/one"], revision: del.revision + 1 });
  await expectError(call, "/v1/lease/revoke", { id: a.id }, 404, "LeaseNotFound");
  assert.deepEqual(await api("/v1/kv/get", { key: "svc/one" }), {});

  // The lock: server-3 takes it, server-7 is refused and sees the holder;
  // once server-3's lease is gone server-7 gets it with a higher token.
  const l3 = (await api("/v1/lease/grant", { ttl: TTL })).id;
  const l7 = (await api("/v1/lease/grant", { ttl: TTL })).id;
  const take3 = await api("/v1/kv/put", { key: "/locks/job", value: "server-3", lease: l3, ifAbsent: true });
  assert.equal(take3.created, true);
  const token3 = (await api("/v1/kv/get", { key: "/locks/job" })).createRevision;
  assert.equal(token3, take3.revision);
  const take7 = await api("/v1/kv/put", { key: "/locks/job", value: "server-7", lease: l7, ifAbsent: true });
  assert.equal(take7.created, false);
  assert.equal(take7.prev.value, "server-3");
  assert.equal(take7.prev.lease, l3);
  assert.equal(take7.revision, token3, "a refused put changes no revision");
  await api("/v1/lease/revoke", { id: l3 });
  const again7 = await api("/v1/kv/put", { key: "/locks/job", value: "server-7", lease: l7, ifAbsent: true });
  assert.equal(again7.created, true);
  const token7 = (await api("/v1/kv/get", { key: "/locks/job" })).createRevision;
  assert.ok(token7 > token3, `fencing token ${token7} > ${token3}`);

  const status = await (await fetch(`${origin}/v1/status`)).json();
  assert.deepEqual(status, { revision: token7, leases: 2, primary: true });

  // Requests that never reach the lessor.
  await expectError(call, "/v1/kv/put", '{"key": "k", "value": ', 400, "InvalidArgument");
  await expectError(call, "/v1/kv/put", "[1, 2]", 400, "InvalidArgument");
  await expectError(call, "/v1/kv/put", "null", 400, "InvalidArgument");
  const big = JSON.stringify({ key: "big", value: "x".repeat(3 << 20) });
  await expectError(call, "/v1/kv/put", big, 413, "PayloadTooLarge");
  assert.deepEqual(await api("/v1/kv/get", { key: "big" }), {});
  await expectError(call, "/v1/kv/put", { key: "k", value: "v" }, 415, "UnsupportedMediaType", {
    headers: { "content-type": "text/plain" },
  });
  const r405 = await expectError(call, "/v1/kv/get", undefined, 405, "MethodNotAllowed", {
    method: "GET",
    body: undefined,
  });
  assert.equal(r405.headers.get("allow"), "POST");
  const s405 = await expectError(call, "/v1/status", {}, 405, "MethodNotAllowed");
  assert.equal(s405.headers.get("allow"), "GET");
  await expectError(call, "/v1/lease/nope", {}, 404, "NotFound");
  // The server is still consistent after all the refusals.
  assert.equal((await (await fetch(`${origin}/v1/status`)).json()).revision, token7);

  // The demo page is still served next to the API.
  const page = await fetch(`${origin}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /text\/html/);
});

test("acknowledged changes survive SIGKILL; SIGTERM shuts down cleanly", async (t) => {
  const dir = tempDir(t);
  let server = await start(t, dir);
  let api = ok(client(server.origin));

  // The model: what the acknowledgements say the server holds.
  const keys = new Map(); // key -> { value, lease, modRevision }
  const leases = new Set();
  let revision = 1;
  const put = async (key, value, lease = null) => {
    const r = await api("/v1/kv/put", lease ? { key, value, lease } : { key, value });
    keys.set(key, { value, lease, modRevision: r.revision });
    revision = r.revision;
  };
  const grant = async (id) => {
    const r = await api("/v1/lease/grant", id ? { ttl: TTL, id } : { ttl: TTL });
    leases.add(r.id);
    return r.id;
  };

  const l1 = await grant();
  const l2 = await grant("7fffffffffffffff");
  const l3 = await grant();
  for (let i = 0; i < 40; i++) await put(`k/${String(i).padStart(2, "0")}`, `v${i}`, [null, l1, l2][i % 3]);
  // Past 1 MiB of journal: the server compacts it into a snapshot.
  for (let i = 0; i < 3; i++) await put(`big/${i}`, String(i).repeat(600_000), l3);
  // The snapshot is written in the background after the answer: wait for it.
  const compacted = () => readdirSync(dir).some((n) => /^snapshot-\d+$/.test(n));
  for (let i = 0; i < 500 && !compacted(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(compacted(), "the journal was compacted");
  // Changes after the compaction live only in the journal.
  const del = await api("/v1/kv/delete", { key: "k/03" });
  keys.delete("k/03");
  revision = del.revision;
  const rv = await api("/v1/lease/revoke", { id: l1 });
  leases.delete(l1);
  for (const k of rv.keys) keys.delete(k);
  revision = rv.revision;
  await put("k/00", "rewritten", l2);
  await put("last", "acknowledged just before the kill", l3);

  const before = await api("/v1/kv/range", {});
  server.child.kill("SIGKILL");
  assert.equal((await server.exited).signal, "SIGKILL");

  server = await start(t, dir);
  api = ok(client(server.origin));
  const check = async () => {
    const status = await (await fetch(`${server.origin}/v1/status`)).json();
    assert.deepEqual(status, { revision, leases: leases.size, primary: true });
    assert.deepEqual((await api("/v1/lease/list", {})).leases.sort(), [...leases].sort());
    const after = await api("/v1/kv/range", {});
    assert.deepEqual(after, before);
    assert.deepEqual(
      after.entries.map((e) => [e.key, e.value, e.lease, e.modRevision]),
      [...keys].sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, e]) => [k, e.value, e.lease, e.modRevision]),
    );
    // A restored lease never gets more than its TTL back.
    const ttl = await api("/v1/lease/ttl", { id: l2 });
    assert.ok(ttl.ttl > TTL - 30 && ttl.ttl <= TTL, `ttl ${ttl.ttl}`);
  };
  await check();

  // SIGTERM: the server closes the lessor and the store and exits 0.
  server.child.kill("SIGTERM");
  const exit = await server.exited;
  assert.equal(exit.code, 0, exit.err);
  server = await start(t, dir);
  api = ok(client(server.origin));
  await check();
  // And it keeps working on the restored state: revisions continue.
  const next = await api("/v1/kv/put", { key: "after", value: "restart" });
  assert.equal(next.revision, revision + 1);
});
