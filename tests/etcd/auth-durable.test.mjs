// Auth kept through the engine's store: users, roles, auth on and the
// tokens given out survive a crash and restart (SIGKILL), as on etcd (which
// gives its tokens back as it applies its log again); `etcdctl snapshot save` from
// edge-lease carries them (etcd's auth buckets), so that `snapshot restore`
// gives a real etcd 3.4 the same users, roles and passwords (bcrypt hashes
// made here that etcd's Go bcrypt accepts), with auth on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { etcdctl, clusterFlags, restart, startBoth, startEdge, startEtcd, tempDir } from "./harness.mjs";

const ROOT = ["--user", "root:rootpw"];
const U1 = ["--user", "u1:p1"];
const SETUP = [
  ["user", "add", "root", "--new-user-password=rootpw"],
  ["user", "add", "u1", "--new-user-password=p1"],
  ["user", "add", "cn-only", "--no-password"],
  ["role", "add", "r1"],
  ["role", "grant-permission", "r1", "readwrite", "k1"],
  ["role", "grant-permission", "--prefix", "r1", "read", "p/"],
  ["role", "grant-permission", "--from-key", "r1", "write", "z"],
  ["role", "grant-permission", "r1", "read", "a", "c"],
  ["user", "grant-role", "u1", "r1"],
  ["auth", "enable"],
  [...ROOT, "put", "k1", "v1"],
  [...ROOT, "put", "p/1", "one"],
  [...ROOT, "put", "secret", "s"],
];
// What a user sees of the auth state, through etcdctl.
const VIEW = [
  [...ROOT, "user", "list"],
  [...ROOT, "role", "list"],
  [...ROOT, "role", "get", "r1"],
  [...ROOT, "user", "get", "u1"],
  [...ROOT, "user", "get", "cn-only"],
  [...U1, "get", "k1"],
  [...U1, "get", "p/", "--prefix"],
  [...U1, "get", "secret"],
  [...U1, "put", "zz", "w"],
  ["--user", "u1:wrong", "get", "k1"],
  ["get", "k1"],
];

const run = async (url, args) => {
  const r = await etcdctl(url, args);
  return { code: r.code, stdout: r.stdout, stderr: r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n") };
};
async function setup(url) {
  for (const args of SETUP) {
    const r = await run(url, args);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  }
}
const view = async (url) => {
  const out = [];
  for (const args of VIEW) out.push([args.join(" "), await run(url, args)]);
  return out;
};

test("users, roles, auth on and live tokens survive a crash and restart, as on etcd", async (t) => {
  let { etcd, edge } = await startBoth(t);
  await Promise.all([setup(etcd.url), setup(edge.url)]);
  const before = await Promise.all([view(etcd.url), view(edge.url)]);
  assert.deepEqual(before[1], before[0]);
  const tokens = await Promise.all(
    [etcd, edge].map(async (s) => (await (await fetch(s.url + "/v3/auth/authenticate", { method: "POST", body: JSON.stringify({ name: "root", password: "rootpw" }) })).json()).token),
  );
  [etcd, edge] = await Promise.all([restart(t, etcd), restart(t, edge)]);
  const after = await Promise.all([view(etcd.url), view(edge.url)]);
  assert.deepEqual(after[1], after[0]);
  assert.deepEqual(after[1], before[1], "the same after the restart");
  const stale = await Promise.all(
    [etcd, edge].map(async (s, i) => {
      const r = await fetch(s.url + "/v3/kv/range", { method: "POST", body: JSON.stringify({ key: "azE=" }), headers: { authorization: tokens[i] } });
      return [r.status, (await r.json()).kvs];
    }),
  );
  assert.deepEqual(stale[1], stale[0]);
  assert.deepEqual(stale[1][0], 200);
});

test("etcdctl snapshot save carries users and roles: restored into a real etcd 3.4, it has the same, with auth on", async (t) => {
  const edge = await startEdge(t);
  await setup(edge.url);
  // A change after auth went on moves the auth revision, which etcd keeps too.
  assert.equal((await run(edge.url, [...ROOT, "role", "add", "later"])).code, 0);
  const dir = tempDir(t);
  const file = join(dir, "edge.db");
  const saved = await run(edge.url, [...ROOT, "snapshot", "save", file]);
  assert.equal(saved.stdout, `Snapshot saved at ${file}\n`, saved.stderr);
  const f = await clusterFlags("restored", join(dir, "restored"));
  const restore = await etcdctl("", ["snapshot", "restore", file, "--name", "restored", "--data-dir", join(dir, "restored"), "--initial-cluster", `restored=${f.peer}`, "--initial-advertise-peer-urls", f.peer, "--initial-cluster-token", "etcd-cluster-1"]);
  assert.equal(restore.code, 0, restore.stderr);
  const etcd = await startEtcd(t, { flags: f });
  const [a, b] = await Promise.all([view(etcd.url), view(edge.url)]);
  assert.deepEqual(a, b);
  assert.equal(a[0][1].stdout, "cn-only\nroot\nu1\n");
  assert.equal(a[5][1].stdout, "k1\nv1\n", "u1's password, hashed here, checked by etcd");
  assert.equal(a[7][1].stderr, "Error: etcdserver: permission denied");
  assert.equal(a[10][1].stderr, "Error: etcdserver: user name is empty", "auth is on");
  // Both go on from there alike: root manages, the auth revision is kept.
  for (const args of [[...ROOT, "user", "passwd", "--interactive=false", "u1"], [...ROOT, "role", "delete", "later"]]) {
    const [x, y] = await Promise.all([etcd, edge].map((s) => etcdctl(s.url, args, { input: "p2\n" })));
    assert.deepEqual([y.code, y.stdout], [x.code, x.stdout], args.join(" "));
  }
  const [x, y] = await Promise.all([etcd, edge].map((s) => run(s.url, ["--user", "u1:p2", "get", "k1"])));
  assert.deepEqual(y, x);
});
