// etcdctl 3.4's auth commands against a real etcd and edge-lease, outputs
// compared (exit code, stdout, stderr without clientv3's JSON log lines;
// lease ids, member ids and each side's own paths masked): users and roles
// managed (add, get, list, delete, passwd, grant and revoke of roles and of
// permissions on a key, a prefix, from a key and a range), the root rules,
// auth enable and disable; then, with auth on, KV, txn, watch, leases,
// compaction, lock, elect, snapshot, defrag, hashkv, member and alarm list
// as root, as a limited user, as nobody, with a wrong password and an
// unknown user. Where edge-lease checks more than etcd 3.4.23 (lease
// timetolive's keys, a txn put's prev kv), the two answers are asserted
// each.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startBoth, etcdctl, tempDir, etcdctlWatch } from "./harness.mjs";

const ROOT = ["--user", "root:rootpw"];
const U1 = ["--user", "u1:p1"];

function side(s, dir) {
  const leases = [];
  const norm = (text) => {
    for (const m of text.matchAll(/lease ([0-9a-f]{16}) granted/g)) if (!leases.includes(m[1])) leases.push(m[1]);
    return text
      .replaceAll(s.url, "<url>")
      .replaceAll(s.peer, "<peer>")
      .replace(/\b(etcd|edge)-node\b/g, "<name>")
      .replaceAll(dir, "<dir>")
      .replace(/\b[0-9a-f]{16}\b/g, (id) => (leases.includes(id) ? `<lease ${leases.indexOf(id)}>` : "<id>"))
      .replace(/\b[0-9a-f]{12,15}\b/g, "<id>")
      .replace(/remaining\(\d+s\)/g, "remaining(<n>s)");
  };
  return {
    leases,
    dir,
    async run(args, opts) {
      const r = await etcdctl(s.url, args.map((a) => a.replaceAll("<dir>", dir)), opts);
      const stderr = r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n");
      return { code: r.code, stdout: norm(r.stdout), stderr: norm(stderr) };
    },
  };
}


test("etcdctl: users, roles, auth enable/disable and every command as root, a limited user and nobody give etcd's output", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [side(etcd, tempDir(t)), side(edge, tempDir(t))];
  let n = 0;
  const both = async (args, opts) => {
    const [a, b] = await Promise.all(sides.map((s) => s.run(args, opts)));
    n++;
    assert.deepEqual(b, a, `etcdctl ${args.join(" ")}`);
    return a;
  };
  const each = async (fn) => {
    const outs = await Promise.all(sides.map((s, i) => fn(s, i)));
    assert.deepEqual(outs[1], outs[0]);
    return outs[0];
  };
  const lease = (i) => sides.map((s) => s.leases[i]);

  // Users and roles while auth is off: the root rules, each refusal.
  await both(["auth", "enable"]);
  await both(["user", "add", "root", "--new-user-password=rootpw"]);
  await both(["user", "add", "root", "--new-user-password=again"]);
  await both(["user", "add", "u1:p1"]);
  await both(["user", "add", "u2", "--no-password"]);
  await both(["user", "list"]);
  await both(["user", "get", "root"]);
  await both(["user", "get", "ghost"]);
  await both(["role", "add", "r1"]);
  await both(["role", "add", "r1"]);
  await both(["role", "add", "r2"]);
  await both(["role", "list"]);
  await both(["role", "grant-permission", "r1", "readwrite", "k1"]);
  await both(["role", "grant-permission", "--prefix", "r1", "read", "p/"]);
  await both(["role", "grant-permission", "--from-key", "r1", "write", "z"]);
  await both(["role", "grant-permission", "r1", "read", "a", "c"]);
  await both(["role", "grant-permission", "r1", "write", "k1"]);
  await both(["role", "grant-permission", "r1", "readwrite", "k1"]);
  await both(["role", "grant-permission", "--prefix", "r1", "readwrite", "locks/"]);
  await both(["role", "grant-permission", "--prefix", "r1", "readwrite", "votes/"]);
  await both(["role", "grant-permission", "r1", "read", "lk"]);
  await both(["role", "grant-permission", "ghost", "read", "k"]);
  await both(["role", "grant-permission", "r1", "sometimes", "k"]);
  await both(["role", "get", "r1"]);
  await both(["role", "get", "ghost"]);
  await both(["role", "revoke-permission", "r1", "a", "c"]);
  await both(["role", "revoke-permission", "r1", "never"]);
  await both(["role", "revoke-permission", "ghost", "k1"]);
  await both(["role", "get", "r1"]);
  await both(["user", "grant-role", "u1", "r1"]);
  await both(["user", "grant-role", "u1", "r1"]);
  await both(["user", "grant-role", "u1", "ghost"]);
  await both(["user", "grant-role", "ghost", "r1"]);
  await both(["user", "grant-role", "u2", "r2"]);
  await both(["user", "get", "u1"]);
  await both(["user", "revoke-role", "u1", "r2"]);
  await both(["user", "revoke-role", "ghost", "r2"]);
  await both(["user", "delete", "ghost"]);
  await both(["role", "delete", "ghost"]);
  await both(["auth", "enable"]); // (etcdctl makes the root role, grants it, and tries again)
  await both(["auth", "enable"]);
  await both(["role", "list"]);

  // Who may manage: root; nobody, a wrong password, an unknown user, u1.
  await both([...ROOT, "user", "list"]);
  await both([...ROOT, "role", "get", "root"]);
  await both(["user", "list"]);
  await both(["--user", "root:wrong", "user", "list"]);
  await both(["--user", "ghost:x", "user", "list"]);
  await both(["--user", "u2:x", "get", "k1"]); // (a user without a password cannot authenticate)
  await both([...U1, "user", "list"]);
  await both([...U1, "role", "list"]);
  await both([...U1, "user", "get", "u1"]); // (oneself)
  await both([...U1, "user", "get", "root"]);
  await both([...U1, "role", "get", "r1"]); // (a role one has)
  await both([...U1, "role", "get", "r2"]);
  await both([...U1, "user", "add", "u3", "--new-user-password=x"]);
  await both([...U1, "auth", "disable"]);
  await both([...ROOT, "user", "revoke-role", "root", "root"]);
  await both([...ROOT, "user", "delete", "root"]);
  await both([...ROOT, "role", "delete", "root"]);

  // KV as u1 (rw k1, read p/*, write from z, rw locks/* and votes/*), nobody and root.
  await both([...ROOT, "put", "p/1", "one"]);
  await both([...ROOT, "put", "secret", "s"]);
  await both([...U1, "put", "k1", "v1"]);
  await both([...U1, "get", "k1"]);
  await both([...U1, "put", "--prev-kv", "k1", "v2"]);
  await both([...U1, "get", "p/", "--prefix"]);
  await both([...U1, "get", "p", "--prefix"]);
  await both([...U1, "get", "secret"]);
  await both([...U1, "get", "", "--from-key"]);
  await both([...U1, "put", "secret", "x"]);
  await both([...U1, "put", "zz", "w"]);
  await both([...U1, "get", "zz"]);
  await both([...U1, "put", "--prev-kv", "zz", "w2"]);
  await both([...U1, "del", "zz"]);
  await both([...U1, "del", "--prev-kv", "zz"]);
  await both([...U1, "del", "--prefix", "p/"]);
  await both(["get", "k1"]);
  await both(["put", "k1", "x"]);
  await both([...ROOT, "get", "", "--from-key"]);
  const script = (cmps, yes, no) => [...cmps, "", ...yes, "", ...no, ""].join("\n") + "\n";
  await both([...U1, "txn"], { input: script(['val("k1") = "v2"'], ["put k1 v3", "get p/1"], ["get k1"]) });
  await both([...U1, "txn"], { input: script(['val("secret") = "s"'], ["put k1 v4"], []) });
  await both([...U1, "txn"], { input: script([], ["get k1"], ["get secret"]) });
  await both([...U1, "txn"], { input: script([], ["put zz 1"], ["del --prev-kv zz"]) });
  await both([...U1, "txn"], { input: script(['ver("k1") > "0"'], ["del k1"], []) });

  // Watch: nobody's is refused at once. (etcdctl 3.4 may open its watch
  // stream before its token is set, and etcd then refuses a user's watch
  // as nobody's too: the gRPC and gateway tests watch with a token.)
  await each((s, i) => etcdctlWatch([etcd, edge][i].url, ["k1"], 2, { timeout: 3000, stderr: true }));

  // Leases: u1 revokes its own, not one holding a key it may not write.
  await both([...U1, "lease", "grant", "600"]);
  await each((s, i) => s.run([...U1, "put", `--lease=${lease(0)[i]}`, "k1", "leased"]));
  await both([...ROOT, "lease", "grant", "600"]);
  await each((s, i) => s.run([...ROOT, "put", `--lease=${lease(1)[i]}`, "secret", "leased"]));
  await each((s, i) => s.run([...U1, "put", `--lease=${lease(1)[i]}`, "k1", "again"]));
  await each((s, i) => s.run([...U1, "lease", "revoke", lease(1)[i]]));
  await each((s, i) => s.run([...U1, "lease", "timetolive", lease(0)[i]]));
  await each((s, i) => s.run([...U1, "lease", "timetolive", "--keys", lease(0)[i]]));
  await each((s, i) => s.run([...U1, "lease", "revoke", lease(0)[i]]));
  await each((s, i) => s.run(["lease", "revoke", lease(1)[i]]));
  await both([...U1, "lease", "list"]);
  await both([...U1, "lease", "keep-alive", "--once", "0000000000000001"]);

  // Compaction (anyone), and the admin-only maintenance.
  await both([...U1, "compaction", "2"]);
  await both(["compaction", "3"]);
  await both([...U1, "member", "list"]);
  await both([...U1, "alarm", "list"]);
  await both([...U1, "defrag"]);
  await both([...U1, "endpoint", "hashkv"]);
  await both([...U1, "snapshot", "save", "<dir>/u1.db"]);
  await both(["snapshot", "save", "<dir>/nobody.db"]);
  await both([...ROOT, "defrag"]);
  const saved = await both([...ROOT, "snapshot", "save", "<dir>/root.db"]);
  assert.equal(saved.code, 0, saved.stderr);

  // Lock and elect: u1 under locks/ and votes/, not elsewhere.
  const locked = await both([...U1, "lock", "locks/a", "echo", "held"]);
  assert.equal(locked.stdout, "held\n");
  await both([...U1, "lock", "lk", "echo", "held"]);
  await both(["lock", "locks/a", "echo", "held"]);
  await both([...U1, "elect", "ballot", "me"], { timeout: 4000 });

  // passwd: the old password stops working, tokens of the user go.
  await both([...ROOT, "--interactive=false", "user", "passwd", "u1"], { input: "p1new\n" });
  await both([...U1, "get", "k1"]);
  await both(["--user", "u1:p1new", "get", "k1"]);
  await both([...ROOT, "user", "delete", "u2"]);
  await both([...ROOT, "role", "delete", "r2"]);
  await both([...ROOT, "user", "list"]);
  await both([...ROOT, "auth", "disable"]);
  await both(["get", "k1"]);
  await both(["--user", "u1:p1new", "get", "secret"]);
  assert.ok(n > 100, `${n} commands compared`);
});

test("etcdctl: what edge-lease refuses that etcd 3.4.23 lets through: a lease's key names, a txn put's prev kv", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [side(etcd, tempDir(t)), side(edge, tempDir(t))];
  for (const s of sides) {
    for (const args of [
      ["user", "add", "root", "--new-user-password=rootpw"],
      ["user", "add", "u1:p1"],
      ["role", "add", "w"],
      ["role", "grant-permission", "w", "write", "wo"],
      ["user", "grant-role", "u1", "w"],
      ["auth", "enable"],
      [...ROOT, "put", "wo", "hidden"],
      [...ROOT, "lease", "grant", "600"],
    ]) assert.equal((await s.run(args)).code, 0, args.join(" "));
    assert.equal((await s.run([...ROOT, "put", `--lease=${s.leases[0]}`, "secret/name", "x"])).code, 0);
  }
  const script = ["", "put --prev-kv wo again", "", "", ""].join("\n");
  const [e, g] = await Promise.all(sides.map(async (s) => ({
    ttl: await s.run([...U1, "lease", "timetolive", "--keys", s.leases[0]]),
    txn: await s.run([...U1, "txn"], { input: script }),
  })));
  // etcd 3.4.23 names the key, and hands the write-only user the value.
  assert.match(e.ttl.stdout, /attached keys\(\[secret\/name\]\)/);
  assert.match(e.txn.stdout, /hidden/);
  assert.deepEqual([g.ttl.code > 0, g.ttl.stderr], [true, "Error: etcdserver: permission denied"]);
  assert.deepEqual([g.txn.code, g.txn.stderr], [1, "Error: etcdserver: permission denied"]);
  // The same without keys or prev kv: both answer.
  const plain = await Promise.all(sides.map((s) => s.run([...U1, "lease", "timetolive", s.leases[0]])));
  assert.deepEqual(plain[1], plain[0]);
});
