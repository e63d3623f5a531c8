// Hostile callers of etcd's auth, to a real etcd 3.4 and edge-lease, answers
// compared: forged tokens (random strings, another user's with one
// character changed, etcd's shape `<16 letters>.<index>` with a guessed
// index, empty, overlong), wrong passwords and expired tokens, over gRPC
// and the JSON gateway; and a user trying to learn a key it may not read
// through Range, Watch (on the key, its prefix, a range across it, every
// key), Txn compares, LeaseTimeToLive's keys and error messages. Where
// edge-lease is stricter than etcd 3.4.23 by design (docs/server.md, Auth)
// its answer is asserted, and etcd's leak shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { startBoth, b64 } from "./harness.mjs";
import { authCaller, norm, until } from "./grpc-client.mjs";

const KV = "etcdserverpb.KV";
const AUTH = "etcdserverpb.Auth";
const LEASE = "etcdserverpb.Lease";
const INVALID_TOKEN = { code: 16, details: "etcdserver: invalid auth token" };
const DENIED = { code: 7, details: "etcdserver: permission denied" };
const SECRET_KEY = "secret/plan";
const SECRET_VALUE = "launch-at-dawn";

const masked = (v) => JSON.parse(JSON.stringify(norm(v)), (k, x) => (k === "token" ? "<token>" : x));

async function setup(t, args = []) {
  const { etcd, edge } = await startBoth(t, { args: ["--bcrypt-cost", "4", ...args] });
  const sides = [etcd, edge].map((s) => ({ url: s.url, c: authCaller(t, s.url), tokens: {} }));
  // Every error text either side gives, to search for what must not leak.
  const texts = [];
  const tokenOf = (s, as) => (typeof as === "function" ? as(s) : as === undefined ? undefined : (s.tokens[as] ?? as));
  const each = (svc, method, req, as) =>
    Promise.all(sides.map((s) => s.c.unary(svc, method, typeof req === "function" ? req(s) : req, tokenOf(s, as)))).then((out) => {
      for (const o of out) if (o.details) texts.push(o.details);
      return out;
    });
  const both = async (svc, method, req, as, what = "") => {
    const out = await each(svc, method, req, as);
    assert.deepEqual(masked(out[1]), masked(out[0]), `${method} ${JSON.stringify(typeof req === "function" ? "(per side)" : req)} ${what}`);
    return out;
  };
  const login = async (name, password) => {
    const out = await both(AUTH, "Authenticate", { name, password });
    sides.forEach((s, i) => (s.tokens[name] = out[i].token));
  };
  await both(AUTH, "UserAdd", { name: "root", password: "rootpw" });
  await both(AUTH, "UserGrantRole", { user: "root", role: "root" });
  await both(AUTH, "UserAdd", { name: "u", password: "upw" });
  await both(AUTH, "RoleAdd", { name: "r" });
  await both(AUTH, "RoleGrantPermission", { name: "r", perm: { permType: "READ", key: b64("pub/"), range_end: b64("pub0") } });
  await both(AUTH, "RoleGrantPermission", { name: "r", perm: { permType: "READWRITE", key: b64("mine") } });
  await both(AUTH, "UserGrantRole", { user: "u", role: "r" });
  await both(AUTH, "AuthEnable", {});
  await login("root", "rootpw");
  await login("u", "upw");
  return { sides, both, each, login, texts, tokenOf };
}

// A character of `token` changed (its prefix's first letter, so the shape stays).
const tweak = (token) => (token[0] === "a" ? "b" : "a") + token.slice(1);

test("forged, wrong and expired credentials over gRPC and the gateway get etcd's refusals", async (t) => {
  const { sides, both, each, texts, login } = await setup(t, ["--auth-token-ttl", "1"]);
  await both(KV, "Put", { key: b64(SECRET_KEY), value: b64(SECRET_VALUE) }, "root");
  // Which index etcd's tokens carry now (an index both have applied).
  const index = (s) => s.tokens.u.split(".")[1];
  const forged = {
    random: () => "x9Qz!not-a-token",
    "another user's, one letter changed": (s) => tweak(s.tokens.u),
    "root's, one letter changed": (s) => tweak(s.tokens.root),
    "etcd's shape, an applied index guessed": (s) => `abcdefghijklmnop.${index(s)}`,
    "etcd's shape, index 1": () => "ZZZZZZZZZZZZZZZZ.1",
    "two dots": (s) => `${s.tokens.u}.1`,
    empty: () => "",
    "overlong (4 KiB)": () => `${"A".repeat(4096)}.1`,
  };
  for (const [what, token] of Object.entries(forged)) {
    for (const as of ["token", "authorization"]) {
      const key = as;
      const out = await Promise.all(sides.map((s) => s.c.unary(KV, "Range", { key: b64(SECRET_KEY) }, token(s), key)));
      assert.deepEqual(out[1], out[0], `Range with a forged token (${what}) in ${key}`);
      texts.push(...out.map((o) => o.details ?? JSON.stringify(o)));
    }
    await both(KV, "Put", { key: b64(SECRET_KEY), value: b64("x") }, token, what);
    await both(KV, "Txn", { compare: [{ key: b64(SECRET_KEY), target: "VALUE", value: b64(SECRET_VALUE) }] }, token, what);
    await both(LEASE, "LeaseGrant", { ID: 0, TTL: 60 }, token, what);
    await both(AUTH, "UserList", {}, token, what);
    const watches = sides.map((s) => s.c.watch(token(s)));
    for (const w of watches) w.write({ create_request: { key: b64(SECRET_KEY) } });
    assert.ok(await until(() => watches.every((w) => w.messages.length || w.error), 5000), `watch with ${what}: no answer`);
    const [want, got] = watches.map((w) => masked(w.error ?? w.messages[0]));
    assert.deepEqual(got, want, `watch with a forged token (${what})`);
    texts.push(want.cancel_reason ?? "");
    for (const w of watches) w.close();
  }
  // A guessed index past what etcd applied: etcd waits for it until the
  // call's deadline; edge-lease refuses it at once (docs/server.md, Auth).
  // (A negative one is a huge one to etcd's uint64.)
  // (Once the deadline passes, etcd's wait ends and it refuses the token:
  // the client sees that answer or its own DeadlineExceeded, whichever is
  // first. Either way etcd answered only at the deadline.)
  for (const future of ["abcdefghijklmnop.999999999", "abcdefghijklmnop.-1"]) {
    const started = performance.now();
    const [etcdFuture, edgeFuture] = await Promise.all(
      sides.map(async (s) => {
        const out = await s.c.unary(KV, "Range", { key: b64(SECRET_KEY) }, future, "token", 1500);
        return s === sides[0] ? { out, waited: performance.now() - started } : out;
      }),
    );
    assert.ok(etcdFuture.out.code === 4 || isDeepStrictEqual(etcdFuture.out, INVALID_TOKEN), JSON.stringify(etcdFuture.out));
    assert.ok(etcdFuture.waited >= 1400, `etcd answered a future index after ${etcdFuture.waited} ms, before the deadline`);
    assert.deepEqual(edgeFuture, INVALID_TOKEN);
  }

  // Wrong passwords, unknown users, and a password that is another user's.
  for (const [name, password] of [["u", "wrong"], ["u", ""], ["u", "rootpw"], ["root", "upw"], ["ghost", "upw"], ["", ""], ["u", "upw".repeat(1000)]]) {
    await both(AUTH, "Authenticate", { name, password });
  }

  // Expired: u's token left unused past its TTL (1 s) and etcd's 1 s tick.
  await login("root", "rootpw");
  await login("u", "upw");
  const stale = sides.map((s) => s.tokens.u);
  const idleSince = Date.now();
  // Root's token kept in use meanwhile, so only u's expires.
  while (Date.now() - idleSince < 2800) {
    await both(KV, "Range", { key: b64("pub/a") }, "root");
    await new Promise((r) => setTimeout(r, 300));
  }
  const expired = (s) => stale[sides.indexOf(s)];
  const [refused] = await both(KV, "Range", { key: b64("pub/a") }, expired, "(expired)");
  assert.deepEqual(refused, INVALID_TOKEN);
  await both(KV, "Put", { key: b64("mine"), value: b64("x") }, expired, "(expired)");

  // The gateway: the same forged and expired tokens in Authorization.
  const gateway = async (path, body, token, what) => {
    const out = await Promise.all(
      sides.map(async (s) => {
        const headers = token(s) === undefined ? {} : { authorization: token(s) };
        const res = await fetch(s.url + path, { method: "POST", body: JSON.stringify(body), headers, signal: AbortSignal.timeout(10_000) });
        return { status: res.status, body: await res.json() };
      }),
    );
    assert.deepEqual(masked(out[1]), masked(out[0]), `gateway ${path} with ${what}`);
    texts.push(JSON.stringify(out[0].body), JSON.stringify(out[1].body));
    return out;
  };
  for (const [what, token] of Object.entries({ ...forged, expired })) {
    if (what === "empty") continue; // (an empty header is no header)
    await gateway("/v3/kv/range", { key: b64(SECRET_KEY) }, token, what);
    await gateway("/v3/kv/put", { key: b64(SECRET_KEY), value: b64("x") }, token, what);
    await gateway("/v3/kv/txn", { compare: [{ key: b64(SECRET_KEY), target: "VALUE", value: b64(SECRET_VALUE) }] }, token, what);
  }
  await gateway("/v3/auth/authenticate", { name: "u", password: "wrong" }, () => undefined, "a wrong password");

  const leaked = texts.filter((x) => x.includes(SECRET_VALUE) || x.includes(b64(SECRET_VALUE)) || x.includes(SECRET_KEY) || x.includes(b64(SECRET_KEY)));
  assert.deepEqual(leaked, []);
  assert.ok(texts.length > 50);
  await each(KV, "Range", { key: b64("pub/a") }, "root");
});

test("a user learns nothing of a key it may not read: Range, Watch, Txn compares, LeaseTimeToLive's keys, errors", async (t) => {
  const { sides, both, each, texts, login } = await setup(t);
  const secret = b64(SECRET_KEY);
  const hush = b64(SECRET_VALUE);
  const leases = (await both(LEASE, "LeaseGrant", { ID: 777, TTL: 600 }, "root")).map((r) => r.ID);
  await both(KV, "Put", { key: secret, value: hush, lease: 777 }, "root");
  await both(KV, "Put", { key: b64("pub/a"), value: b64("open") }, "root");
  await both(KV, "Put", { key: b64("mine"), value: b64("m") }, "u");
  assert.deepEqual(leases, ["777", "777"]);

  // Range: the key, ranges across it, every key, counts and keys only.
  for (const req of [
    { key: secret },
    { key: secret, count_only: true },
    { key: secret, keys_only: true },
    { key: b64("pub/"), range_end: b64("z") },
    { key: b64("pub/"), range_end: b64("z"), count_only: true },
    { key: b64("s"), range_end: b64("t"), keys_only: true },
    { key: b64("\0"), range_end: b64("\0") },
    { key: b64("a"), range_end: b64("\0"), serializable: true },
  ]) {
    const [want] = await both(KV, "Range", req, "u");
    assert.deepEqual(want, DENIED, JSON.stringify(req));
  }
  // Puts and deletes that would hand back the secret as prev_kv, or that
  // attach u's key to the secret's lease (u could then revoke it).
  await both(KV, "Put", { key: secret, value: b64("x"), prev_kv: true }, "u");
  await both(KV, "DeleteRange", { key: b64("m"), range_end: b64("t"), prev_kv: true }, "u");
  await both(KV, "Put", { key: b64("mine"), value: b64("x"), lease: 777 }, "u");
  await both(LEASE, "LeaseRevoke", { ID: 777 }, "u");

  // Txn compares on the secret, true and false: refused, not answered.
  for (const value of [hush, b64("wrong guess")]) {
    for (const result of ["EQUAL", "NOT_EQUAL", "GREATER", "LESS"]) {
      const [want] = await both(KV, "Txn", { compare: [{ key: secret, target: "VALUE", result, value }], success: [{ request_range: { key: b64("pub/a") } }] }, "u");
      assert.deepEqual(want, DENIED);
    }
  }
  await both(KV, "Txn", { compare: [{ key: b64("pub/"), range_end: b64("z"), target: "VERSION", result: "GREATER", version: 0 }] }, "u");
  await both(KV, "Txn", { compare: [{ key: b64("mine"), target: "CREATE", result: "GREATER", create_revision: 0 }], failure: [{ request_range: { key: secret } }] }, "u");

  // Beyond etcd 3.4.23 (docs/server.md): a nested txn's range and a txn
  // put's prev_kv read the secret on etcd, not here.
  const nested = { success: [{ request_txn: { success: [{ request_range: { key: secret } }] } }] };
  const prevKv = { success: [{ request_put: { key: b64("mine"), value: b64("y"), prev_kv: true } }] };
  const [etcdNested, edgeNested] = await each(KV, "Txn", nested, "u");
  assert.equal(JSON.stringify(etcdNested).includes(hush), true, "etcd 3.4.23 hands the secret to a nested range");
  assert.deepEqual(edgeNested, DENIED);
  // (u may read and write mine: the same answer.)
  await both(KV, "Txn", prevKv, "u");
  // LeaseTimeToLive's keys: etcd 3.4.23 names the secret (CVE-2023-32082).
  const [etcdTtl, edgeTtl] = await each(LEASE, "LeaseTimeToLive", { ID: 777, keys: true }, "u");
  assert.deepEqual(etcdTtl.keys, [secret]);
  assert.deepEqual(edgeTtl, DENIED);
  const [etcdNobody, edgeNobody] = await each(LEASE, "LeaseTimeToLive", { ID: 777, keys: true }, undefined);
  assert.deepEqual(etcdNobody.keys, [secret]);
  assert.deepEqual(edgeNobody, { code: 3, details: "etcdserver: user name is empty" });
  // Without keys, the lease's TTL alone, as etcd.
  const [a, b] = await each(LEASE, "LeaseTimeToLive", { ID: 777 }, "u");
  assert.deepEqual({ ...norm(b), TTL: "-" }, { ...norm(a), TTL: "-" });

  // Watch: created on the key, its prefix, a range across it, every key,
  // from the first revision: refused (created and canceled), as etcd; u's
  // watcher of pub/ hears pub/ only.
  const streams = sides.map((s) => s.c.watch(s.tokens.u));
  const creates = [
    { key: secret },
    { key: b64("secret/"), range_end: b64("secret0") },
    { key: b64("pub/"), range_end: b64("z"), start_revision: 1 },
    { key: b64("\0"), range_end: b64("\0"), prev_kv: true },
    { key: secret, range_end: b64("\0"), start_revision: 1 },
    { key: b64("pub/"), range_end: b64("pub0"), prev_kv: true },
  ];
  for (const c of creates) for (const w of streams) w.write({ create_request: c });
  assert.ok(await until(() => streams.every((w) => w.messages.length >= creates.length), 5000), "every create answered");
  await both(KV, "Put", { key: secret, value: hush }, "root");
  await both(KV, "DeleteRange", { key: secret }, "root");
  await both(KV, "Put", { key: b64("pub/b"), value: b64("late") }, "root");
  // The pub/ watcher's event for pub/b comes after any for the secret would.
  assert.ok(await until(() => streams.every((w) => w.messages.some((m) => m.events?.length)), 5000), "pub/b's event");
  const shape = (w) => w.messages.map((m) => masked({ ...m, header: undefined }));
  assert.deepEqual(shape(streams[1]), shape(streams[0]));
  assert.equal(streams[1].messages.filter((m) => m.canceled).length, 5);
  for (const m of streams[1].messages) texts.push(JSON.stringify(m));

  // A password change for u ends its token; the old one learns nothing more.
  const old = sides.map((s) => s.tokens.u);
  await both(AUTH, "UserChangePassword", { name: "u", password: "new" }, "root");
  await both(KV, "Range", { key: secret }, (s) => old[sides.indexOf(s)]);
  await login("u", "new");
  await both(KV, "Range", { key: secret }, "u");

  const edgeTexts = texts.concat(JSON.stringify(edgeNested), JSON.stringify(edgeTtl), JSON.stringify(edgeNobody));
  const leaked = edgeTexts.filter((x) => x.includes(SECRET_VALUE) || x.includes(hush) || x.includes(SECRET_KEY) || x.includes(secret));
  assert.deepEqual(leaked, []);
  // The watch answers: both sides' texts, etcd's included, carry none.
  assert.ok(texts.length > 20);
});
