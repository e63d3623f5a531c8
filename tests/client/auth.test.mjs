// edge-lease/client with etcd's auth: connect(url, { user, password })
// authenticates, sends the token, and on "invalid auth token" (here: the
// user's password changed, which ends its tokens) authenticates again and
// repeats the call once, as etcd's Go client does; a wrong password and a
// missing right are clear errors (InvalidArgument, PermissionDenied). The
// same against a real etcd 3.4, edge-lease's server, and the Worker behind
// its own token (X-Edge-Lease-Token, or a Bearer Authorization: etcd's
// token then goes in Grpc-Metadata-Token).
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "../../js/client/index.mjs";
import { startEtcd, startEdge, b64 } from "../etcd/harness.mjs";


async function setUp(url, headers = {}) {
  const post = async (path, body) => {
    const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body), headers });
    assert.equal(r.status, 200, `${path}: ${await r.text()}`);
  };
  await post("/v3/auth/user/add", { name: "root", password: "rootpw" });
  await post("/v3/auth/user/grant", { user: "root", role: "root" });
  await post("/v3/auth/user/add", { name: "app", password: "apppw" });
  await post("/v3/auth/role/add", { name: "app" });
  await post("/v3/auth/role/grant", { name: "app", perm: { permType: "READWRITE", key: b64("app/"), range_end: b64("app0") } });
  await post("/v3/auth/user/grant", { user: "app", role: "app" });
  await post("/v3/auth/enable", {});
}

async function scenario(t, url, headers = {}) {
  const c = connect(url, { user: "app", password: "apppw", headers });
  t.after(() => c.close());
  const root = connect(url, { user: "root", password: "rootpw", headers });
  t.after(() => root.close());
  await c.put("app/a", "1");
  assert.equal((await c.get("app/a")).value, "1");
  // A missing right, and nobody's call.
  await assert.rejects(c.put("other", "x"), { code: "PermissionDenied", message: "etcdserver: permission denied" });
  const anon = connect(url, { headers });
  t.after(() => anon.close());
  await assert.rejects(anon.get("app/a"), { code: "InvalidArgument", message: "etcdserver: user name is empty" });
  // The password changed to the same: app's token is refused, and the client authenticates again.
  await root.put("app/b", "2");
  const r = await fetch(url + "/v3/auth/authenticate", { method: "POST", body: JSON.stringify({ name: "root", password: "rootpw" }), headers });
  const { token } = await r.json();
  const auth = Object.keys(headers).some((h) => h.toLowerCase() === "authorization") ? "grpc-metadata-token" : "authorization";
  const passwd = await fetch(url + "/v3/auth/user/changepw", { method: "POST", body: JSON.stringify({ name: "app", password: "apppw" }), headers: { ...headers, [auth]: token } });
  assert.equal(passwd.status, 200, await passwd.text());
  assert.equal((await c.get("app/b")).value, "2");
  // A lease and its keepalive, a watch, a lock: each with the token.
  assert.equal(await c.withLock("app/lock", { ttl: 10 }, (lock) => lock.key.startsWith("app/lock/")), true);
  const watch = c.watch("app/w");
  const seen = (async () => {
    for await (const e of watch) return e;
  })();
  await watch.ready; // created (with the token) before the put
  await c.put("app/w", "w");
  assert.equal((await seen).value, "w");
  // A wrong password.
  const wrong = connect(url, { user: "app", password: "nope", headers });
  t.after(() => wrong.close());
  await assert.rejects(wrong.get("app/a"), { code: "InvalidArgument", message: "etcdserver: authentication failed, invalid user ID or password" });
}

for (const [name, start] of [["etcd", startEtcd], ["edge-lease", startEdge]]) {
  test(`client: user and password, a new token when refused, clear errors [${name}]`, { timeout: 60_000 }, async (t) => {
    const server = await start(t);
    await setUp(server.url);
    await scenario(t, server.url);
  });
}

test("client: the same through the Worker behind its own token, sent either way [worker]", { timeout: 60_000 }, async (t) => {
  const { startWorker } = await import("../workerd/harness.mjs");
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: "outer", EDGE_LEASE_BCRYPT_COST: "4" } });
  await setUp(w.url("auth"), { "x-edge-lease-token": "outer" });
  await scenario(t, w.url("auth"), { "x-edge-lease-token": "outer" });
  await setUp(w.url("bearer"), { authorization: "Bearer outer" });
  await scenario(t, w.url("bearer"), { authorization: "Bearer outer" });
  // Without the Worker's token: Unauthenticated, not Internal.
  const c = connect(w.url("auth"), { user: "app", password: "apppw" });
  t.after(() => c.close());
  await assert.rejects(c.get("app/a"), { code: "Unauthenticated" });
});
