// etcdctl 3.4 scenarios run against a real etcd and against edge-lease, with
// the outputs compared after lease ids and each side's own URLs and names are
// normalised: the seed 000 transcript (with a 2 s lease instead of 10 s and
// `keep-alive --once` for the `lease renew` etcdctl 3.4 lacks), kv with
// prefixes, lease list and timetolive.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, etcdctl } from "./harness.mjs";

function session(side) {
  const leases = [];
  const own = [[side.url, "<client-url>"], [side.peer, "<peer-url>"], [side.name === "etcd" ? "etcd-node" : "edge-node", "<name>"]];
  const norm = (s) => {
    for (const m of s.matchAll(/^lease ([0-9a-f]{16}) granted/gm)) if (!leases.includes(m[1])) leases.push(m[1]);
    let out = s.replace(/^[0-9a-f]+, started/gm, "<member>, started").replace(/\b[0-9a-f]{16}\b/g, (id) => (leases.includes(id) ? `<lease ${leases.indexOf(id)}>` : id));
    for (const [v, r] of own) out = out.replaceAll(v, r);
    return out.replace(/remaining\(\d+s\)/, "remaining(<n>s)");
  };
  return {
    leases,
    async run(args, opts) {
      const r = await etcdctl(side.url, args, opts);
      // Only etcd's own words: drop clientv3's JSON warning lines on stderr.
      const stderr = r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n");
      return { code: r.code, stdout: norm(r.stdout), stderr: norm(stderr) };
    },
  };
}

async function until(fn, ms) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("etcdctl: the seed 000 transcript, kv and lease commands give etcd's output", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sessions = [session(etcd), session(edge)];
  const both = async (args, opts) => {
    const [a, b] = await Promise.all(sessions.map((s) => s.run(args, opts)));
    assert.deepEqual(b, a, `etcdctl ${args.join(" ")}`);
    return a;
  };
  const lease = (i) => sessions.map((s) => s.leases[i]);
  const each = async (fn) => {
    const outs = await Promise.all(sessions.map((s, i) => fn(s, i)));
    assert.deepEqual(outs[1], outs[0]);
    return outs[0];
  };

  // The seed: member list, a short lease, a key on it, gone after expiry.
  const members = await both(["member", "list"]);
  assert.match(members.stdout, /^<member>, started, <name>, <peer-url>, <client-url>, false\n$/);
  const granted = await both(["lease", "grant", "2"]);
  assert.match(granted.stdout, /^lease <lease 0> granted with TTL\(2s\)\n$/);
  await each((s, i) => s.run(["put", `--lease=${lease(0)[i]}`, "my-service/heartbeat", "alive"]));
  assert.equal((await both(["get", "my-service/heartbeat"])).stdout, "my-service/heartbeat\nalive\n");
  // Both expire the key within a bounded wait (etcd checks every 500 ms).
  for (const s of sessions) {
    assert.ok(await until(async () => (await s.run(["get", "my-service/heartbeat"])).stdout === "", 8000), "expired");
  }
  await both(["get", "my-service/heartbeat"]);

  await both(["lease", "grant", "30"]);
  await each((s, i) => s.run(["put", `--lease=${lease(1)[i]}`, "my-service/status", "healthy"]));
  assert.equal((await both(["lease", "renew", lease(1)[0]])).code, 0); // no such subcommand: help, exit 0
  const kept = await each((s, i) => s.run(["lease", "keep-alive", "--once", lease(1)[i]]));
  assert.equal(kept.stdout, "lease <lease 1> keepalived with TTL(30)\n");
  const ttl = await each((s, i) => s.run(["lease", "timetolive", "--keys", lease(1)[i]]));
  assert.equal(ttl.stdout, "lease <lease 1> granted with TTL(30s), remaining(<n>s), attached keys([my-service/status])\n");
  assert.equal((await both(["lease", "list"])).stdout, "found 1 leases\n<lease 1>\n");
  await each((s, i) => s.run(["lease", "revoke", lease(1)[i]]));
  await both(["get", "my-service/status"]);
  const again = await each((s, i) => s.run(["lease", "revoke", lease(1)[i]]));
  assert.deepEqual([again.code, again.stderr], [1, "Error: failed to revoke lease (etcdserver: requested lease not found)"]);
  const gone = await each((s, i) => s.run(["lease", "timetolive", lease(0)[i]]));
  assert.equal(gone.stdout, "lease <lease 0> already expired\n");
  await both(["lease", "keep-alive", "--once", "0000000000000001"]);

  // kv with prefixes, prev kv, keys only, limit.
  for (const [k, v] of [["svc/a", "1"], ["svc/b", "2"], ["svc/c", "3"], ["svd", "4"]]) await both(["put", k, v]);
  await both(["put", "--prev-kv", "svc/a", "1b"]);
  await both(["get", "--prefix", "svc/"]);
  await both(["get", "--prefix", "svc/", "--keys-only"]);
  await both(["get", "--prefix", "svc/", "--limit=2"]);
  await both(["get", "--prefix", ""]);
  await both(["del", "--prev-kv", "svc/b"]);
  await both(["del", "svc/none"]);
  await both(["del", "--prefix", "svd"]);
  await both(["get", "--prefix", "sv"]);
  await both(["put", "", "x"]);
  // endpoint health prints its own timing: compare the rest.
  for (const s of sessions) {
    const h = await s.run(["endpoint", "health"]);
    assert.match(h.stdout + h.stderr, /^<client-url> is healthy: successfully committed proposal: took = /);
    // endpoint status dials with the whole URL as :authority (grpc-go);
    // sizes and indexes differ between the two, the rest is compared.
    const st = await s.run(["endpoint", "status"]);
    assert.match(st.stdout, /^<client-url>, [0-9a-f]+, 3\.4\.\d+, [\d.]+ [kM]?B, true, false, \d+, \d+, \d+, \n$/, st.stdout + st.stderr);
  }
});

test("etcdctl move-leader: to the one member itself it is done, to another id refused, as on etcd", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const outs = [];
  for (const side of [etcd, edge]) {
    const id = (await etcdctl(side.url, ["member", "list"])).stdout.split(",")[0];
    const out = [];
    for (const target of [id, "1234"]) {
      const r = await etcdctl(side.url, ["move-leader", target]);
      out.push([r.code, r.stdout.replaceAll(id, "<id>"), r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n")]);
    }
    outs.push(out);
  }
  assert.deepEqual(outs[1], outs[0]);
  assert.deepEqual(outs[0][0], [0, "Leadership transferred from <id> to <id>\n", ""]);
  assert.deepEqual(outs[0][1], [1, "", "Error: etcdserver: bad leader transferee"]);
});

test("etcdctl member update: to the peer URLs the member has it is done, as on etcd; an unknown id is refused", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const outs = [];
  for (const side of [etcd, edge]) {
    const [id, , , peer] = (await etcdctl(side.url, ["member", "list"])).stdout.split(", ");
    // (Read as text: a uint64 does not survive JSON.parse.)
    const cluster = /"cluster_id":(\d+)/.exec((await etcdctl(side.url, ["member", "list", "-w", "json"])).stdout)[1];
    const hex = BigInt(cluster).toString(16);
    const out = [];
    for (const target of [id, "1234"]) {
      const r = await etcdctl(side.url, ["member", "update", target, `--peer-urls=${peer}`]);
      // (etcdctl prints ids with %16x: a shorter one is padded with spaces.)
      const stdout = r.stdout.replaceAll(id, "<id>").replaceAll(hex, "<cluster>").replace(/ +/g, " ");
      out.push([r.code, stdout, r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n")]);
    }
    outs.push(out);
  }
  assert.deepEqual(outs[1], outs[0]);
  assert.deepEqual(outs[0][0], [0, "Member <id> updated in cluster <cluster>\n", ""]);
  assert.match(outs[0][1][2], /member not found/);
});
