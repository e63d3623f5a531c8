// etcd's auth over gRPC, raw calls with the token in the metadata `token`
// (as etcd's clients send it) or `authorization`, to a real etcd 3.4 and to
// edge-lease, answers compared (ids, terms and tokens masked): each Auth
// RPC's answers and errors, each error code auth gives (Unauthenticated,
// InvalidArgument, FailedPrecondition, PermissionDenied, and Unknown where
// etcd hands the auth store's error on unmapped), the checks of Range,
// Put, DeleteRange, Txn, LeaseRevoke, Compact, Watch creation, Lock,
// Election and the maintenance calls, and simple tokens' TTL (refreshed on
// use) with --auth-token-ttl.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth } from "./harness.mjs";
import { authCaller as caller, norm, b64, until } from "./grpc-client.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Masks what differs by member, and each side's tokens.
const OWN = ["dbSize", "dbSizeInUse", "raftIndex", "raftAppliedIndex", "hash"];
// (A lock's key ends in its lease's id.)
const keyOf = (x) => Buffer.from(x, "base64").toString().replace(/\/[0-9a-f]{1,16}$/, "/<lease>");
const masked = (v) =>
  JSON.parse(JSON.stringify(norm(v)), (k, x) =>
    k === "token" ? "<token>" : ["leader", "lease", "ID"].includes(k) ? "<id>" : OWN.includes(k) ? "<n>" : k === "key" && typeof x === "string" ? keyOf(x) : x,
  );

async function setup(t, args) {
  const { etcd, edge } = await startBoth(t, { args });
  const sides = [etcd, edge].map((s) => ({ ...s, c: caller(t, s.url), tokens: { bogus: "bogus", forged: "abcdefghijklmnop.1" } }));
  const both = async (svc, method, req, as, key) => {
    const out = await Promise.all(sides.map((s) => s.c.unary(svc, method, typeof req === "function" ? req(s) : req, as === undefined ? undefined : s.tokens[as], key)));
    assert.deepEqual(masked(out[1]), masked(out[0]), `${method} ${JSON.stringify(typeof req === "function" ? "(per side)" : req)} as ${as}`);
    return out;
  };
  const login = async (alias, name, password) => {
    const out = await both("etcdserverpb.Auth", "Authenticate", { name, password });
    sides.forEach((s, i) => (s.tokens[alias] = out[i].token));
  };
  return { sides, both, login };
}

const A = "etcdserverpb.Auth";
const KV = "etcdserverpb.KV";

test("gRPC: each Auth RPC, each auth error code, and every key check give etcd's answers", async (t) => {
  const { sides, both, login } = await setup(t);
  // Auth off: the Auth RPCs' refusals, and any token refused.
  await both(A, "Authenticate", { name: "root", password: "x" });
  await both(A, "AuthEnable", {});
  await both(A, "UserAdd", { name: "", password: "x" });
  await both(A, "UserAdd", { name: "root", password: "rootpw" });
  await both(A, "AuthEnable", {});
  await both(A, "UserAdd", { name: "root", password: "x" });
  await both(A, "RoleAdd", { name: "" });
  await both(A, "RoleAdd", { name: "r" });
  await both(A, "RoleAdd", { name: "r" });
  await both(A, "UserGrantRole", { user: "root", role: "root" }); // (no role root needed)
  await both(A, "RoleGet", { role: "root" });
  await both(A, "UserAdd", { name: "u", password: "upw" });
  await both(A, "UserAdd", { name: "np", options: { no_password: true } });
  await both(A, "UserGrantRole", { user: "u", role: "r" });
  await both(A, "UserGrantRole", { user: "u", role: "zz" });
  await both(A, "UserRevokeRole", { name: "u", role: "zz" });
  for (const perm of [
    { permType: "READWRITE", key: b64("k"), range_end: b64("l") },
    { permType: "READ", key: b64("r/"), range_end: b64("r0") },
    { permType: "WRITE", key: b64("w") },
    { permType: "READ", key: b64("w") },
    { permType: "READ", key: b64("w"), range_end: b64("\0") },
    { permType: "READWRITE", key: b64("lock/"), range_end: b64("lock0") },
  ]) await both(A, "RoleGrantPermission", { name: "r", perm });
  await both(A, "RoleGet", { role: "r" });
  await both(A, "RoleRevokePermission", { role: "r", key: b64("w"), range_end: b64("\0") });
  await both(A, "RoleRevokePermission", { role: "r", key: b64("w"), range_end: b64("\0") });
  await both(A, "RoleRevokePermission", { role: "nope", key: b64("w") });
  await both(A, "UserList", {});
  await both(A, "RoleList", {});
  await both(A, "UserChangePassword", { name: "nope", password: "x" });
  await both(KV, "Range", { key: b64("k") }, "bogus");
  await both(A, "AuthDisable", {});
  await both(A, "AuthEnable", {});

  // Auth on.
  await login("root", "root", "rootpw");
  await login("u", "u", "upw");
  await both(A, "Authenticate", { name: "u", password: "wrong" });
  await both(A, "Authenticate", { name: "ghost", password: "x" });
  await both(A, "Authenticate", { name: "np", password: "" });
  await both(A, "Authenticate", { name: "u", password: "upw" }, "bogus"); // (the caller's own token is read too)
  await both(A, "AuthEnable", {}, "root");
  for (const as of [undefined, "bogus", "forged", "u"]) {
    await both(A, "UserList", {}, as);
    await both(A, "UserGet", { name: "u" }, as);
    await both(A, "UserGet", { name: "" }, as);
    await both(A, "RoleGet", { role: "r" }, as);
    await both(A, "AuthDisable", {}, as);
  }
  await both(A, "UserDelete", { name: "root" }, "root");
  await both(A, "RoleDelete", { role: "root" }, "root");
  await both(A, "UserRevokeRole", { name: "root", role: "root" }, "root");
  await both(KV, "Range", { key: b64("k") }, "u", "authorization");

  // Keys, as u (rw [k, l), read [r/, r0), write w, rw [lock/, lock0)), nobody and root.
  for (const [k, v] of [["k", "1"], ["r/1", "2"], ["w", "3"], ["x", "4"]]) await both(KV, "Put", { key: b64(k), value: b64(v) }, "root");
  for (const as of [undefined, "bogus", "u", "root"]) {
    await both(KV, "Range", { key: b64("k") }, as);
    await both(KV, "Range", { key: b64("k"), range_end: b64("kz") }, as);
    await both(KV, "Range", { key: b64("k"), range_end: b64("m") }, as);
    await both(KV, "Range", { key: b64("r/"), range_end: b64("r0") }, as);
    await both(KV, "Range", { key: b64("w") }, as);
    await both(KV, "Range", { key: b64("\0"), range_end: b64("\0") }, as);
    await both(KV, "Put", { key: b64("w"), value: b64("5") }, as);
    await both(KV, "Put", { key: b64("w"), value: b64("5"), prev_kv: true }, as);
    await both(KV, "Put", { key: b64("x"), value: b64("5") }, as);
    await both(KV, "Put", { key: b64("") }, as); // (the request's own check first)
    await both(KV, "DeleteRange", { key: b64("k"), range_end: b64("kz"), prev_kv: true }, as);
    await both(KV, "DeleteRange", { key: b64("r/1") }, as);
    await both(KV, "Txn", { compare: [{ key: b64("k"), target: "VERSION", version: "0" }], success: [{ request_range: { key: b64("k") } }] }, as);
    await both(KV, "Txn", { compare: [{ key: b64("x"), target: "VERSION", version: "0" }] }, as);
    await both(KV, "Txn", { success: [{ request_put: { key: b64("k"), value: b64("t") } }], failure: [{ request_range: { key: b64("x") } }] }, as);
    await both(KV, "Compact", { revision: "1" }, as);
  }

  // Leases: u may revoke a lease of its keys, not one with a key it cannot write.
  const grant = async (as) => (await both("etcdserverpb.Lease", "LeaseGrant", { TTL: "600" }, as)).map((r) => r.ID);
  const mine = await grant("u");
  const theirs = await grant("root");
  await both(KV, "Put", (s) => ({ key: b64("k"), lease: mine[sides.indexOf(s)] }), "u");
  await both(KV, "Put", (s) => ({ key: b64("x"), lease: theirs[sides.indexOf(s)] }), "root");
  await both(KV, "Put", (s) => ({ key: b64("k"), lease: theirs[sides.indexOf(s)] }), "u");
  await both("etcdserverpb.Lease", "LeaseRevoke", (s) => ({ ID: theirs[sides.indexOf(s)] }), "u");
  await both("etcdserverpb.Lease", "LeaseRevoke", (s) => ({ ID: theirs[sides.indexOf(s)] }));
  await both("etcdserverpb.Lease", "LeaseTimeToLive", (s) => ({ ID: mine[sides.indexOf(s)], keys: true }), "u");
  await both("etcdserverpb.Lease", "LeaseTimeToLive", (s) => ({ ID: theirs[sides.indexOf(s)] }), "bogus");
  await both("etcdserverpb.Lease", "LeaseRevoke", (s) => ({ ID: mine[sides.indexOf(s)] }), "u");

  // Maintenance (etcd hands the auth store's error on as Unknown) and cluster.
  for (const as of [undefined, "bogus", "u", "root"]) {
    await both("etcdserverpb.Maintenance", "Status", {}, as);
    await both("etcdserverpb.Maintenance", "Alarm", { action: "GET" }, as);
    await both("etcdserverpb.Maintenance", "HashKV", { revision: "0" }, as);
    const members = await Promise.all(sides.map((s) => s.c.unary("etcdserverpb.Cluster", "MemberList", {}, s.tokens[as])));
    assert.deepEqual(members.map((m) => m.members?.length ?? m), [1, 1], `MemberList as ${as}`);
    const snap = await Promise.all(sides.map((s) => s.c.first("etcdserverpb.Maintenance", "Snapshot", {}, s.tokens[as])));
    assert.deepEqual(snap[1], snap[0], `Snapshot as ${as}`);
  }
  await both("etcdserverpb.Maintenance", "Defragment", {}, "u");

  // Lock: u under lock/, not elsewhere; nobody not at all.
  await both("v3lockpb.Lock", "Lock", { name: b64("lock/a"), lease: "0" }, "u");
  await both("v3lockpb.Lock", "Lock", { name: b64("other"), lease: "0" }, "u");
  await both("v3lockpb.Lock", "Lock", { name: b64("lock/a"), lease: "0" });
  await both("v3lockpb.Lock", "Unlock", { key: b64("x") }, "u");
  await both("v3electionpb.Election", "Leader", { name: b64("lock/a") }, "u");
  await both("v3electionpb.Election", "Leader", { name: b64("x") }, "u");
  await both("v3electionpb.Election", "Campaign", { name: b64("x"), value: b64("v") }, "u");

  // Watch: created and canceled at once with etcd's reason, or events.
  const watches = sides.map((s) => [undefined, "bogus", "u"].map((as) => s.c.watch(s.tokens[as])));
  for (const ws of watches) {
    for (const w of ws) for (const key of ["x", "k"]) w.write({ create_request: { key: b64(key) } });
    ws[2].write({ create_request: { key: b64("k"), range_end: b64("\0") } }); // (checked as the key alone)
    ws[2].write({ create_request: { key: b64("k"), range_end: b64("m") } });
  }
  // Every create answered on both sides (2, 2 and 4 per stream) before the
  // put, so its events come after them on both.
  assert.ok(await until(() => watches.every((ws) => ws[0].messages.length >= 2 && ws[1].messages.length >= 2 && ws[2].messages.length >= 4), 5000));
  await both(KV, "Put", { key: b64("k"), value: b64("seen") }, "root");
  assert.ok(await until(() => watches.every((ws) => ws[2].messages.length >= 6), 5000));
  // (The put reaches a stream's two watchers of k in two messages, which
  // etcd sends in Go map order: events compared by watcher, after the creates.)
  const shape = (ws) =>
    ws.map((w) => {
      const ms = w.messages.map((m) => ({ ...masked(m), header: undefined }));
      const byId = (a, b) => String(a.watch_id ?? "0").localeCompare(String(b.watch_id ?? "0"));
      return [...ms.filter((m) => !m.events), ...ms.filter((m) => m.events).sort(byId)];
    });
  assert.deepEqual(shape(watches[1]), shape(watches[0]));
  assert.equal(watches[0][0].messages[0].cancel_reason, "rpc error: code = InvalidArgument desc = etcdserver: user name is empty");
  assert.equal(watches[0][1].messages[0].cancel_reason, "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token");
  assert.equal(watches[0][2].messages[0].cancel_reason, "rpc error: code = PermissionDenied desc = etcdserver: permission denied");

  // A password change and a user's deletion end their tokens.
  await both(A, "UserChangePassword", { name: "u", password: "new" }, "root");
  await both(KV, "Range", { key: b64("k") }, "u");
  await login("u", "u", "new");
  await both(A, "UserDelete", { name: "u" }, "root");
  await both(KV, "Range", { key: b64("k") }, "u");
  await both(A, "RoleDelete", { role: "r" }, "root");
  await both(A, "AuthDisable", {}, "root");
  await both(KV, "Range", { key: b64("k") }, "root");
  await both(KV, "Range", { key: b64("k") });
});

test("gRPC: a nested txn is checked as the top one (etcd 3.4.23 lets its ops through)", async (t) => {
  const { sides, both, login } = await setup(t);
  await both(A, "UserAdd", { name: "root", password: "rootpw" });
  await both(A, "UserGrantRole", { user: "root", role: "root" });
  await both(A, "UserAdd", { name: "u", password: "upw" });
  await both(A, "RoleAdd", { name: "r" });
  await both(A, "RoleGrantPermission", { name: "r", perm: { permType: "READWRITE", key: b64("mine") } });
  await both(A, "UserGrantRole", { user: "u", role: "r" });
  await both(A, "AuthEnable", {});
  await login("root", "root", "rootpw");
  await login("u", "u", "upw");
  await both(KV, "Put", { key: b64("secret"), value: b64("s") }, "root");
  const nested = { success: [{ request_txn: { success: [{ request_range: { key: b64("secret") } }, { request_put: { key: b64("secret"), value: b64("x") } }] } }] };
  const [etcd, edge] = await Promise.all(sides.map((s) => s.c.unary(KV, "Txn", nested, s.tokens.u)));
  assert.equal(etcd.succeeded, true); // etcd 3.4.23 reads and writes the secret
  assert.deepEqual(edge, { code: 7, details: "etcdserver: permission denied" });
});

test("gRPC: simple tokens expire after --auth-token-ttl unused, and each use renews them, as etcd's", async (t) => {
  const { sides, both, login } = await setup(t, ["--auth-token-ttl", "2"]);
  await both(A, "UserAdd", { name: "root", password: "rootpw" });
  await both(A, "UserGrantRole", { user: "root", role: "root" });
  await both(A, "AuthEnable", {});
  await login("kept", "root", "rootpw");
  await login("idle", "root", "rootpw");
  for (let i = 0; i < 4; i++) {
    await sleep(1000);
    await both(KV, "Range", { key: b64("a") }, "kept");
  }
  // etcd drops an expired token on a 1 s tick: past 2 s + 1 s, both refuse it.
  await sleep(200);
  await both(KV, "Range", { key: b64("a") }, "idle");
  await both(KV, "Range", { key: b64("a") }, "kept");
});
