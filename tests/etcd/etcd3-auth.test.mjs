// The etcd3 npm client (1.1.2) with auth (`auth: { username, password }`),
// the same scenario against a real etcd 3.4 and edge-lease, every answer
// compared: root sets up users and roles with etcd3's own auth API and
// turns auth on; a limited user makes allowed and refused kv, txn, lease,
// watch, lock and election calls (a refusal as etcd3's error class and
// message); a wrong password and an unknown user; a token that expired
// (--auth-token-ttl 2) and etcd3's re-authentication; auth turned off
// under a logged-in client. Then the same client with auth over TLS with a
// client certificate. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { Etcd3, Range } from "etcd3";
import { startBoth, tempDir } from "./harness.mjs";
import { grpcClient, within } from "./grpc-client.mjs";
import { makeCerts, tlsAgent } from "./certs.mjs";

// (bcrypt's lowest cost: each login is quick on both.)
const FAST = ["--bcrypt-cost", "4"];

// A call's answer, or its error as etcd3 types it, within 10 s.
const answer = (p, what) =>
  within(Promise.resolve(p), 10_000, what).then(
    (v) => ({ ok: v }),
    (e) => ({ error: `${e.constructor.name}: ${e.message}` }),
  );

// Masks what differs between two members by nature (ids, terms).
const masked = (v) =>
  JSON.parse(JSON.stringify(v ?? null), (k, x) => (["cluster_id", "member_id", "raft_term", "ID", "id"].includes(k) && x !== "0" ? "<id>" : x));

// `client(side, options)`: an etcd3 client, closed when the test ends,
// before its servers stop (after-hooks run in the order they were added:
// call this first). A client still watching when its server goes retries
// for ever.
function clients(t) {
  const all = [];
  t.after(() => all.forEach((c) => c.close()));
  return (side, options = {}) => {
    const c = new Etcd3({ hosts: side.url, dialTimeout: 5000, ...options });
    all.push(c);
    return c;
  };
}

// Counts the logins (Authenticate calls) etcd3 makes for `c`. (Its
// Authenticator is internal to etcd3 1.1.2, which the lock file pins.)
function countLogins(c) {
  const auth = c.pool.authenticator;
  const get = auth.getCredentialsFromHost.bind(auth);
  const n = { logins: 0 };
  auth.getCredentialsFromHost = (...args) => (n.logins++, get(...args));
  return n;
}

// Users and roles with etcd3's auth API (auth still off), then auth on.
// `app`: readwrite app/, read ro/, write wo/, readwrite the key jobs/a and
// the election app-vote's keys.
async function setUp(admin) {
  const r = [];
  r.push(["add root", await answer(admin.user("root").create("rootpw").then((u) => u.name))]);
  r.push(["root gets role root", await answer(admin.user("root").addRole("root").then((u) => u.name))]);
  r.push(["add role app", await answer(admin.role("app").create().then((x) => x.name))]);
  r.push(["add role app again", await answer(admin.role("app").create())]);
  await admin.role("app").grant([
    { permission: "Readwrite", range: Range.prefix("app/") },
    { permission: "Read", range: Range.prefix("ro/") },
    { permission: "Write", range: Range.prefix("wo/") },
    { permission: "Readwrite", key: "jobs/a" },
    { permission: "Readwrite", range: Range.prefix("election/app-vote/") },
  ]);
  r.push(["app's permissions", await answer(admin.role("app").permissions().then((ps) => ps.map((p) => [p.permission, String(p.range.start), String(p.range.end)])))]);
  r.push(["add u", await answer(admin.user("u").create("upw").then((u) => u.name))]);
  r.push(["u gets role app", await answer(admin.user("u").addRole("app").then((u) => u.name))]);
  r.push(["u gets a missing role", await answer(admin.user("u").addRole("nope"))]);
  r.push(["u's roles", await answer(admin.user("u").roles().then((rs) => rs.map((x) => x.name)))]);
  r.push(["users", await answer(admin.getUsers().then((us) => us.map((x) => x.name)))]);
  await admin.put("ro/1").value("r");
  await admin.put("secret").value("s");
  r.push(["auth enable", await answer(admin.auth.authEnable().then(masked))]);
  return r;
}

test("etcd3 with auth: a limited user's allowed and refused kv, txn, lease, watch, lock and election calls, the same on both", { timeout: 120_000 }, async (t) => {
  const client = clients(t);
  const { etcd, edge } = await startBoth(t, { args: FAST });
  const results = {};
  for (const side of [etcd, edge]) {
    const r = await setUp(client(side));
    const admin = client(side);
    const root = client(side, { auth: { username: "root", password: "rootpw" } });
    const u = client(side, { auth: { username: "u", password: "upw" } });
    const logins = countLogins(u);

    // Who may call at all.
    r.push(["no token", await answer(admin.get("app/x").string())]);
    r.push(["wrong password", await answer(client(side, { auth: { username: "u", password: "nope" } }).get("app/x").string())]);
    r.push(["unknown user", await answer(client(side, { auth: { username: "ghost", password: "x" } }).get("app/x").string())]);
    r.push(["root puts secret", await answer(root.put("secret").value("s2").then(masked))]);

    // KV as u.
    r.push(["put app/1", await answer(u.put("app/1").value("one").then(masked))]);
    r.push(["put app/2 with prev", await answer(u.put("app/2").value("two").getPrevious().then(masked))]);
    r.push(["get app/1", await answer(u.get("app/1").string())]);
    r.push(["get app/ prefix", await answer(u.getAll().prefix("app/").strings())]);
    r.push(["count app/", await answer(u.getAll().prefix("app/").count())]);
    r.push(["get ro/1", await answer(u.get("ro/1").string())]);
    r.push(["put ro/1", await answer(u.put("ro/1").value("x"))]);
    r.push(["put wo/1", await answer(u.put("wo/1").value("w").then(masked))]);
    r.push(["get wo/1", await answer(u.get("wo/1").string())]);
    r.push(["put wo/1 with prev", await answer(u.put("wo/1").value("w2").getPrevious())]);
    r.push(["get secret", await answer(u.get("secret").string())]);
    r.push(["put secret", await answer(u.put("secret").value("mine"))]);
    r.push(["get everything", await answer(u.getAll().strings())]);
    r.push(["delete secret", await answer(u.delete().key("secret"))]);
    r.push(["delete app/2", await answer(u.delete().key("app/2").getPrevious().then(masked))]);
    r.push(["user list as u", await answer(u.getUsers())]);
    r.push(["user list as root", await answer(root.getUsers().then((us) => us.map((x) => x.name)))]);

    // Txn as u.
    r.push(["txn in app/", await answer(u.if("app/1", "Value", "==", "one").then(u.put("app/1").value("uno")).else(u.get("app/1")).commit().then(masked))]);
    r.push(["txn comparing secret", await answer(u.if("secret", "Version", ">", 0).then(u.put("app/1").value("x")).commit())]);
    r.push(["txn putting secret in else", await answer(u.if("app/1", "Value", "==", "uno").then(u.get("app/1")).else(u.put("secret").value("x")).commit())]);
    // A txn put's prev_kv: etcd 3.4.23 hands u the old value of wo/1, a key
    // it may not read; edge-lease checks read on it (docs/server.md, Auth).
    const prevPut = { success: [{ request_put: { key: Buffer.from("wo/1"), value: Buffer.from("w3"), prev_kv: true } }] };
    const txnPrev = await answer(u.kv.txn(prevPut).then((res) => res.responses.map((x) => x.response_put.prev_kv?.value.toString())));
    results[`${side.name} txn prev_kv`] = txnPrev;
    // (Refused: root makes the write, so both keyspaces go on alike.)
    if (txnPrev.error) await root.put("wo/1").value("w3");

    // Leases as u.
    const lease = u.lease(60, { autoKeepAlive: false });
    r.push(["grant", await answer(lease.grant().then(() => "granted"))]);
    r.push(["put app/l on it", await answer(lease.put("app/l").value("v").then(masked))]);
    r.push(["put secret on it", await answer(lease.put("secret").value("v"))]);
    r.push(["keepalive", await answer(lease.keepaliveOnce().then((k) => k.TTL))]);
    r.push(["time to live", await answer(u.leaseClient.leaseTimeToLive({ ID: await lease.grant(), keys: true }).then((x) => [x.grantedTTL, x.keys.map(String)]))]);
    r.push(["revoke", await answer(lease.revoke())]);
    r.push(["app/l after revoke", await answer(u.get("app/l").string())]);
    // A lease of root's with a key u may not write: u may not revoke it.
    const rootLease = root.lease(60, { autoKeepAlive: false });
    const rootId = await rootLease.grant();
    await rootLease.put("secret").value("leased");
    r.push(["revoke root's lease", await answer(u.leaseClient.leaseRevoke({ ID: rootId }))]);
    // Its keys: etcd 3.4.23 lists them to u; edge-lease needs read on each
    // (CVE-2023-32082's fix, docs/server.md).
    results[`${side.name} ttl keys`] = await answer(u.leaseClient.leaseTimeToLive({ ID: rootId, keys: true }).then((x) => x.keys.map(String)));
    r.push(["root revokes it", await answer(rootLease.revoke())]);

    // Watch as u: a key of its own sees root's put; secret is refused.
    // (A refused create stalls etcd3's later creates on that stream, so
    // each refusal has a client of its own.)
    const w = await within(u.watch().key("app/w").create(), 10_000, "watch app/w");
    const seen = new Promise((ok) => w.once("put", (kv) => ok(`${kv.key}=${kv.value}`)));
    await root.put("app/w").value("hi");
    r.push(["watch app/w", await answer(seen)]);
    await within(w.cancel(), 10_000, "cancel the watch");
    const asU = () => client(side, { auth: { username: "u", password: "upw" } });
    r.push(["watch secret", await answer(asU().watch().key("secret").create())]);
    r.push(["watch all", await answer(asU().watch().prefix("").create())]);
    r.push(["watch ro/ with prev kvs", await answer(asU().watch().prefix("ro/").withPreviousKV().create().then((x) => x.cancel()).then(() => "created"))]);

    // Lock (etcd3's own: a create-only txn on a lease).
    const lock = u.lock("jobs/a");
    r.push(["lock jobs/a", await answer(lock.acquire().then(() => "acquired"))]);
    r.push(["lock jobs/a again", await answer(u.lock("jobs/a").acquire())]);
    r.push(["unlock jobs/a", await answer(lock.release())]);
    const refusedLock = u.lock("jobs/b");
    r.push(["lock jobs/b", await answer(refusedLock.acquire())]);
    // (Its lease was granted before the refusal: etcd3 leaves it to us.)
    r.push(["unlock jobs/b", await answer(refusedLock.release())]);

    // Election (etcd3's own: keys under election/<name>/).
    const campaign = u.election("app-vote").campaign("v1");
    r.push(["campaign", await answer(campaign.wait().then(() => "elected"))]);
    r.push(["leader", await answer(u.election("app-vote").leader())]);
    r.push(["proclaim", await answer(campaign.proclaim("v2"))]);
    r.push(["leader after proclaim", await answer(u.election("app-vote").leader())]);
    r.push(["resign", await answer(campaign.resign())]);
    r.push(["campaign elsewhere", await answer(u.election("other").campaign("x").wait())]);
    r.push(["leader elsewhere", await answer(u.election("other").leader())]);

    // Auth off under a logged-in u: its token is refused, etcd3 logs in
    // again, and the login is refused.
    r.push(["logins so far", logins.logins]);
    r.push(["auth disable as u", await answer(u.auth.authDisable())]);
    r.push(["auth disable as root", await answer(root.auth.authDisable().then(masked))]);
    r.push(["u after auth disable", await answer(u.get("app/1").string())]);
    r.push(["logins after", logins.logins]);
    r.push(["no token after auth disable", await answer(admin.get("secret").string())]);
    results[side.name] = r;
  }
  const [want, got] = [results.etcd, results["edge-lease"]];
  for (let i = 0; i < Math.max(want.length, got.length); i++) assert.deepEqual(got[i], want[i], `step ${i}: ${want[i]?.[0]}`);
  // What etcd answered, so that equal is also right.
  const step = Object.fromEntries(want);
  assert.equal(step["get app/1"].ok, "one");
  assert.equal(step["get ro/1"].ok, "r");
  assert.deepEqual(step["put secret"], { error: "EtcdPermissionDeniedError: 7 PERMISSION_DENIED: etcdserver: permission denied" });
  assert.match(step["wrong password"].error, /^EtcdAuthenticationFailedError: .*authentication failed, invalid user ID or password$/);
  assert.match(step["watch secret"].error, /^EtcdPermissionDeniedError: Watcher canceled: .*permission denied$/);
  assert.equal(step["campaign"].ok, "elected");
  assert.equal(step["lock jobs/a"].ok, "acquired");
  assert.match(step["lock jobs/b"].error, /permission denied/);
  // The three leaks etcd 3.4.23 has that edge-lease closes (docs/server.md, Auth).
  assert.deepEqual(results["etcd txn prev_kv"], { ok: ["w"] });
  assert.deepEqual(results["edge-lease txn prev_kv"], { error: "EtcdPermissionDeniedError: 7 PERMISSION_DENIED: etcdserver: permission denied" });
  assert.deepEqual(results["etcd ttl keys"], { ok: ["secret"] });
  assert.deepEqual(results["edge-lease ttl keys"], { error: "EtcdPermissionDeniedError: 7 PERMISSION_DENIED: etcdserver: permission denied" });
});

// Resolves once a token last used before now has expired on `side`: each
// of `probes` (tokens of the same user, made just now) is used once, a
// fresh one each 200 ms, as a use renews a live token; the first refused
// says every token last used before it was made is gone too. Bounded by
// the number of probes.
async function untilExpired(side, probes) {
  const kv = grpcClient(side.url, "etcdserverpb.KV");
  try {
    for (const token of probes) {
      const md = new grpc.Metadata();
      md.set("token", token);
      const refused = await new Promise((ok) => kv.Range({ key: Buffer.from("app/1") }, md, { deadline: Date.now() + 5000 }, (e) => ok(e?.code === grpc.status.UNAUTHENTICATED)));
      if (refused) return true;
      await new Promise((r) => setTimeout(r, 200));
    }
    return false;
  } finally {
    kv.close();
  }
}

test("etcd3 with auth: a token expired after --auth-token-ttl, and etcd3 logging in again, the same on both", { timeout: 60_000 }, async (t) => {
  const client = clients(t);
  const { etcd, edge } = await startBoth(t, { args: [...FAST, "--auth-token-ttl", "2"] });
  const results = {};
  for (const side of [etcd, edge]) {
    const r = await setUp(client(side));
    const u = client(side, { auth: { username: "u", password: "upw" } });
    const logins = countLogins(u);
    r.push(["put app/1", await answer(u.put("app/1").value("one").then(masked))]);
    // 40 probes of 200 ms: 8 s, past the 2 s TTL and etcd's 1 s sweep.
    const login = client(side);
    const probes = await Promise.all(Array.from({ length: 40 }, () => login.auth.authenticate({ name: "u", password: "upw" }).then((x) => x.token)));
    r.push(["expired within 8 s", await untilExpired(side, probes)]);
    // A watch on the stale token: refused at its create, and etcd3 does
    // not log in again for a watch.
    r.push(["watch with the expired token", await answer(u.watch().key("app/1").create())]);
    r.push(["logins after the watch", logins.logins]);
    // A unary call: refused, so etcd3 logs in again and retries.
    r.push(["get with the expired token", await answer(u.get("app/1").string())]);
    r.push(["logins after the get", logins.logins]);
    results[side.name] = r;
  }
  assert.deepEqual(results["edge-lease"], results.etcd);
  const step = Object.fromEntries(results.etcd);
  assert.equal(step["expired within 8 s"], true);
  assert.deepEqual(step["watch with the expired token"], { error: "EtcdInvalidAuthTokenError: Watcher canceled: rpc error: code = Unauthenticated desc = etcdserver: invalid auth token" });
  assert.deepEqual([step["logins after the watch"], step["get with the expired token"], step["logins after the get"]], [1, { ok: "one" }, 2]);
});

test("etcd3 with auth over TLS with a client certificate: allowed and refused calls, a wrong password, and the certificate's user without a password, the same on both", { timeout: 60_000 }, async (t) => {
  const client = clients(t);
  const certs = makeCerts(tempDir(t), { users: ["u"] });
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const tls = ["--cert-file", certs.cert, "--key-file", certs.key, "--trusted-ca-file", certs.ca, "--client-cert-auth"];
  const { etcd, edge } = await startBoth(t, { args: [...FAST, ...tls], scheme: "https", dispatcher });
  const creds = (cert, key) => ({ credentials: { rootCertificate: readFileSync(certs.ca), certChain: readFileSync(cert), privateKey: readFileSync(key) } });
  const some = creds(certs.clientCert, certs.clientKey); // CN "some user", not a user
  const results = {};
  for (const side of [etcd, edge]) {
    const r = await setUp(client(side, some));
    const root = client(side, { ...some, auth: { username: "root", password: "rootpw" } });
    const u = client(side, { ...some, auth: { username: "u", password: "upw" } });
    r.push(["root puts secret", await answer(root.put("secret").value("s").then(masked))]);
    r.push(["put app/1", await answer(u.put("app/1").value("one").then(masked))]);
    r.push(["get app/1", await answer(u.get("app/1").string())]);
    r.push(["get secret", await answer(u.get("secret").string())]);
    r.push(["txn on secret", await answer(u.if("secret", "Value", "==", "s").then(u.get("secret")).commit())]);
    const lease = u.lease(30, { autoKeepAlive: false });
    r.push(["lease put", await answer(lease.put("app/l").value("v").then(masked))]);
    r.push(["lease keepalive", await answer(lease.keepaliveOnce().then((k) => k.TTL))]);
    r.push(["lease revoke", await answer(lease.revoke())]);
    const w = await within(u.watch().key("app/1").create(), 10_000, "watch app/1");
    const seen = new Promise((ok) => w.once("put", (kv) => ok(`${kv.key}=${kv.value}`)));
    await u.put("app/1").value("two");
    r.push(["watch app/1", await answer(seen)]);
    await within(w.cancel(), 10_000, "cancel the watch");
    r.push(["wrong password", await answer(client(side, { ...some, auth: { username: "u", password: "nope" } }).get("app/1").string())]);
    // No password: the certificate's CN is the user (--client-cert-auth).
    r.push(["CN some user, no password", await answer(client(side, some).get("app/1").string())]);
    const byCert = client(side, creds(certs.users.u.cert, certs.users.u.key));
    r.push(["CN u, no password: get app/1", await answer(byCert.get("app/1").string())]);
    r.push(["CN u, no password: get secret", await answer(byCert.get("secret").string())]);
    r.push(["auth disable", await answer(root.auth.authDisable().then(masked))]);
    results[side.name] = r;
  }
  const [want, got] = [results.etcd, results["edge-lease"]];
  for (let i = 0; i < Math.max(want.length, got.length); i++) assert.deepEqual(got[i], want[i], `step ${i}: ${want[i]?.[0]}`);
  const step = Object.fromEntries(want);
  assert.equal(step["get app/1"].ok, "one");
  assert.equal(step["watch app/1"].ok, "app/1=two");
  assert.match(step["get secret"].error, /permission denied/);
  assert.match(step["wrong password"].error, /^EtcdAuthenticationFailedError: /);
  assert.equal(step["CN u, no password: get app/1"].ok, "two");
  assert.match(step["CN u, no password: get secret"].error, /permission denied/);
});
