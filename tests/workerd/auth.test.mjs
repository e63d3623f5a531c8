// etcd's auth in edge-lease/worker (Miniflare): each namespace has its own
// users, roles and tokens; the Worker's token (EDGE_LEASE_TOKEN) is an outer
// gate, refused with Unauthenticated (401, code 16) whichever way it is
// sent, and never confused with etcd's token (X-Edge-Lease-Token leaves
// Authorization to etcd's; a Bearer Authorization is the Worker's, etcd's
// then goes in Grpc-Metadata-Token); auth, users and live tokens outlive a
// restart of the runtime; a WebSocket watch checks its creates with the
// token of its upgrade.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { b64 } from "../etcd/harness.mjs";

const OUTER = { "x-edge-lease-token": "s3cret" };

async function post(url, path, body, headers = OUTER) {
  const res = await fetch(url + path, { method: "POST", body: JSON.stringify(body ?? {}), headers, signal: AbortSignal.timeout(20_000) });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed };
}
const ok = async (url, path, body, headers) => {
  const r = await post(url, path, body, headers);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
};
const refusal = (r) => [r.status, r.body.code, r.body.message];

test("Worker: auth per namespace behind the Worker's own token, kept through a restart", { timeout: 120_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: "s3cret", EDGE_LEASE_BCRYPT_COST: "4" } });
  const [a, b] = [w.url("team-a"), w.url("team-b")];
  const range = { key: b64("k") };

  // The outer gate: missing, wrong (either way): 401, Unauthenticated, not Internal.
  for (const headers of [{}, { "x-edge-lease-token": "s3crex" }, { authorization: "Bearer s3crex" }, { authorization: "s3cret" }]) {
    const r = await post(a, "/v3/kv/range", range, headers);
    assert.deepEqual(refusal(r).slice(0, 2), [401, 16], JSON.stringify(headers));
  }
  // Either form passes it; a Bearer is not taken for etcd's token.
  await ok(a, "/v3/kv/range", range, { authorization: "Bearer s3cret" });

  // team-a turns auth on; team-b does not.
  await ok(a, "/v3/auth/user/add", { name: "root", password: "rootpw" });
  await ok(a, "/v3/auth/user/grant", { user: "root", role: "root" });
  await ok(a, "/v3/auth/user/add", { name: "u", password: "upw" });
  await ok(a, "/v3/auth/role/add", { name: "r" });
  await ok(a, "/v3/auth/role/grant", { name: "r", perm: { permType: "READWRITE", key: b64("k") } });
  await ok(a, "/v3/auth/user/grant", { user: "u", role: "r" });
  await ok(a, "/v3/auth/enable", {});
  const login = async (name, password) => (await ok(a, "/v3/auth/authenticate", { name, password })).token;
  const [root, u] = [await login("root", "rootpw"), await login("u", "upw")];
  assert.match(u, /^[A-Za-z]{16}\.\d+$/);

  assert.deepEqual(refusal(await post(a, "/v3/kv/range", range)), [400, 3, "etcdserver: user name is empty"]);
  assert.deepEqual(refusal(await post(a, "/v3/kv/range", range, { authorization: "Bearer s3cret" })), [400, 3, "etcdserver: user name is empty"]);
  await ok(a, "/v3/kv/put", { key: b64("k"), value: b64("v") }, { ...OUTER, authorization: u });
  await ok(a, "/v3/kv/range", range, { authorization: "Bearer s3cret", "grpc-metadata-token": u });
  assert.deepEqual(refusal(await post(a, "/v3/kv/put", { key: b64("x") }, { ...OUTER, authorization: u })), [403, 7, "etcdserver: permission denied"]);
  assert.deepEqual(refusal(await post(a, "/v3/auth/user/list", {}, { ...OUTER, authorization: u })), [403, 7, "etcdserver: permission denied"]);
  assert.deepEqual(refusal(await post(a, "/v3/kv/range", range, { ...OUTER, authorization: "nope" })), [401, 16, "etcdserver: invalid auth token"]);

  // team-b: auth off, its own users (none); team-a's token names nobody there.
  await ok(b, "/v3/kv/range", range);
  assert.deepEqual((await ok(b, "/v3/auth/user/list", {})).users, undefined);
  assert.deepEqual(refusal(await post(b, "/v3/kv/range", range, { ...OUTER, authorization: root })), [401, 16, "etcdserver: invalid auth token"]);
  assert.deepEqual(refusal(await post(b, "/v3/auth/authenticate", { name: "root", password: "rootpw" })), [412, 9, "etcdserver: authentication is not enabled"]);

  // A WebSocket watch takes etcd's token from its upgrade request.
  const socket = async (headers) => {
    const res = await w.mf.dispatchFetch(a + "/v3/watch", { headers: { upgrade: "websocket", ...headers } });
    return res;
  };
  assert.equal((await socket({})).status, 401);
  const res = await socket({ ...OUTER, authorization: u });
  assert.equal(res.status, 101);
  const ws = res.webSocket;
  const inbox = [];
  ws.addEventListener("message", (e) => inbox.push(JSON.parse(e.data).result));
  ws.accept();
  ws.send(JSON.stringify({ create_request: { key: b64("k") } }));
  ws.send(JSON.stringify({ create_request: { key: b64("x") } }));
  for (let i = 0; i < 50 && inbox.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(inbox[0].created, true);
  assert.equal(inbox[0].canceled, undefined);
  assert.deepEqual([inbox[1].canceled, inbox[1].cancel_reason], [true, "rpc error: code = PermissionDenied desc = etcdserver: permission denied"]);
  ws.close(1000);

  // A restart of the runtime: auth still on, users and live tokens kept.
  await w.restart();
  assert.deepEqual(refusal(await post(a, "/v3/kv/range", range)), [400, 3, "etcdserver: user name is empty"]);
  assert.equal((await ok(a, "/v3/kv/range", range, { ...OUTER, authorization: u })).kvs.length, 1);
  assert.deepEqual((await ok(a, "/v3/auth/user/list", {}, { ...OUTER, authorization: root })).users, ["root", "u"]);
  await ok(b, "/v3/kv/range", range);
});
