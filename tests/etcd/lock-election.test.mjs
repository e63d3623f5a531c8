// etcd's v3lock and v3election services, called over gRPC (and the JSON
// gateway) on a real etcd 3.4 and on edge-lease, the same calls to both and
// the answers compared: keys, revisions, leader keys, errors (code and
// message), what a blocked Lock or Campaign waits for, and what a canceled
// or timed-out one leaves behind. Lease ids (decimal, and hex in keys) are
// normalised. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { startBoth, post } from "./harness.mjs";
import { grpcClient as sharedClient, within } from "./grpc-client.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A gRPC client of `service` (e.g. "v3lockpb.Lock") with etcd/proto's definitions. */
export function grpcClient(t, url, service) {
  const c = sharedClient(url, service);
  t.after(() => c.close());
  return c;
}

/** A unary call: { promise, cancel }; the promise gives the response or { code, details }. */
function call(c, method, req, { deadlineMs } = {}) {
  let handle;
  const opts = deadlineMs ? { deadline: Date.now() + deadlineMs } : {};
  const promise = new Promise((ok) => {
    handle = c[method](req, new grpc.Metadata(), opts, (err, res) => ok(err ? { code: err.code, details: err.details } : res));
  });
  return { promise, cancel: () => handle.cancel() };
}
const b = (s) => Buffer.from(s);

/** `n` leases of 60 s on one side, each given its alias. */
async function leases(s, n) {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push((await call(s.lease, "LeaseGrant", { TTL: 60 }).promise).ID);
  ids.forEach(s.alias);
  return ids;
}

/** An Observe stream of `name`: the leader values it got, and its status code once it ends. */
function observe(s, name) {
  const seen = [];
  const stream = s.election.Observe({ name: b(name) });
  stream.on("data", (d) => seen.push(d));
  const status = new Promise((ok) => stream.on("status", (st) => ok(st.code)));
  stream.on("error", () => {});
  return { seen, status, stream };
}
const text = (b64) => Buffer.from(b64, "base64").toString();

/** Both sides' clients, and the lease ids each side hands out mapped to aliases. */
async function sides(t) {
  const { etcd, edge } = await startBoth(t);
  return [etcd, edge].map((side) => {
    const aliases = new Map();
    const alias = (dec) => {
      if (!aliases.has(dec)) aliases.set(dec, `<L${aliases.size}>`);
      return aliases.get(dec);
    };
    const hexes = () => [...aliases.keys()].map((d) => [BigInt(d).toString(16), aliases.get(d)]);
    const norm = (o) =>
      JSON.parse(JSON.stringify(o), (k, v) => {
        if (["cluster_id", "member_id", "raft_term"].includes(k)) return "<n>";
        if ((k === "lease" || k === "ID") && typeof v === "string" && v !== "0" && BigInt(v) > 1000n) return alias(v);
        if ((k === "key" || k === "name" || k === "value") && typeof v === "string") {
          let s = text(v);
          // A lock or election key names its lease in hex (a server-granted one too).
          const m = /\/([0-9a-f]{8,16})$/.exec(s);
          if (m) alias(BigInt("0x" + m[1]).toString());
          for (const [h, a] of hexes()) s = s.replaceAll(h, a);
          return s;
        }
        if (typeof v === "string") {
          for (const [h, a] of hexes()) v = v.replaceAll(h, a);
        }
        return v;
      });
    return {
      ...side,
      norm,
      alias,
      kv: grpcClient(t, side.url, "etcdserverpb.KV"),
      lease: grpcClient(t, side.url, "etcdserverpb.Lease"),
      lock: grpcClient(t, side.url, "v3lockpb.Lock"),
      election: grpcClient(t, side.url, "v3electionpb.Election"),
    };
  });
}

/** Runs `scenario(side, log)` on each side; the normalised logs must be equal. */
async function same(t, scenario) {
  const all = await sides(t);
  const logs = [];
  for (const side of all) {
    const log = [];
    try {
      await scenario(side, (what, v) => log.push([what, side.norm(v)]));
    } catch (e) {
      e.message = `${side.name}: ${e.message}\n${JSON.stringify(log)}`;
      throw e;
    }
    logs.push(log);
  }
  if (process.env.SHOW_LOG) console.log(JSON.stringify(logs[0], null, 1));
  for (let i = 0; i < Math.max(logs[0].length, logs[1].length); i++) {
    assert.deepEqual(logs[1][i], logs[0][i], `step ${i}: ${logs[0][i]?.[0]}`);
  }
  return logs[0];
}

// How a waiter ended. A deadline is the client's timer or the server's
// answer (etcd's: Unknown, "context deadline exceeded"), whichever comes
// first: a race on either side, so both count as the deadline.
// (tests/server/grpc-transport.test.mjs compares the server's answers.)
const ended = (r) => (r.code === grpc.status.DEADLINE_EXCEEDED || (r.code === grpc.status.UNKNOWN && r.details === "context deadline exceeded") ? "deadline" : r.code);
const pending = async (p, ms = 300) => (await Promise.race([p.then(() => "done"), sleep(ms).then(() => "pending")])) === "pending";
/** The keys under `prefix`, oldest first (key order depends on the lease ids). */
const keys = async (s, prefix) => {
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await call(s.kv, "Range", { key: b(prefix), range_end: b(end) }).promise;
  return (r.kvs ?? []).sort((x, y) => Number(x.create_revision) - Number(y.create_revision)).map((kv) => text(kv.key));
};
/** Polls `fn` until it is truthy, at most `ms`. */
async function until(fn, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > end) return v;
    await sleep(50);
  }
}

test("Lock: a queue on name/<lease>, each waiter behind its predecessor; Unlock; errors", async (t) => {
  await same(t, async (s, log) => {
    const [l1, l2, l3] = await leases(s, 3);
    const a = await call(s.lock, "Lock", { name: b("job"), lease: l1 }).promise;
    log("first", a);
    const second = call(s.lock, "Lock", { name: b("job"), lease: l2 });
    log("second waits", await pending(second.promise));
    const third = call(s.lock, "Lock", { name: b("job"), lease: l3 });
    log("third waits", await pending(third.promise, 100));
    log("keys", await keys(s, "job/"));
    // The holder again: the same key at once (the txn's compare fails).
    log("again", await call(s.lock, "Lock", { name: b("job"), lease: l1 }).promise);
    // The second gives up its place: the third still waits for the first.
    log("unlock second's key", await call(s.lock, "Unlock", { key: b(`job/${BigInt(l2).toString(16)}`) }).promise);
    log("second still waits", await pending(second.promise, 100));
    log("third still waits", await pending(third.promise, 100));
    log("unlock first", await call(s.lock, "Unlock", { key: Buffer.from(a.key, "base64") }).promise);
    log("second gets it (its key is gone)", await within(second.promise, 3000, "second"));
    log("third gets it", await within(third.promise, 3000, "third"));
    log("unlock a missing key", await call(s.lock, "Unlock", { key: b("job/nothing") }).promise);
    log("unlock no key", await call(s.lock, "Unlock", {}).promise);
    log("unknown lease", await call(s.lock, "Lock", { name: b("job"), lease: "12345" }).promise);
    // Without a lease: a 60 s lease of the server's, never kept alive.
    const own = await call(s.lock, "Lock", { name: b("free") }).promise;
    log("no lease", own);
    const id = BigInt("0x" + text(own.key).split("/")[1]).toString();
    const ttl = await call(s.lease, "LeaseTimeToLive", { ID: id }).promise;
    log("its lease", { granted: ttl.grantedTTL, alive: ttl.TTL > 55 });
    log("leases", (await call(s.lease, "LeaseLeases", {}).promise).leases.length);
    log("empty name", await call(s.lock, "Lock", { name: b(""), lease: l1 }).promise);
  });
});

// (The deadline leaves a loaded machine time to see both keys before it.)
// One waiter that goes per test, each on a fresh etcd: once a server-side
// wait is canceled, etcd 3.4's in-process watch stream can block for good,
// and later waits on that server (a second canceled waiter's cleanup
// included) never wake (etcd-io/etcd#20716).
for (const how of ["deadline", "cancel"]) {
  test(`Lock: a waiter ${how === "deadline" ? "past its deadline" : "canceled"} deletes its key; its lease stays`, async (t) => {
    await same(t, async (s, log) => {
      const [l1, l2] = await leases(s, 2);
      await call(s.lock, "Lock", { name: b("q"), lease: l1 }).promise;
      const waiter = call(s.lock, "Lock", { name: b("q"), lease: l2 }, how === "deadline" ? { deadlineMs: 2500 } : {});
      log("two keys", await until(async () => (await keys(s, "q/")).length === 2 && (await keys(s, "q/"))));
      if (how === "cancel") waiter.cancel();
      log(how, ended(await within(waiter.promise, 5000, how)));
      log("only the holder's key left", await until(async () => (await keys(s, "q/")).length === 1 && (await keys(s, "q/"))));
      log("their leases stay", (await call(s.lease, "LeaseLeases", {}).promise).leases.length);
    });
  });
}

// Separate from the cancels above, on a fresh etcd (etcd-io/etcd#20716).
test("Lock: a revoked waiter's key goes with its lease; it still waits for the key before it", async (t) => {
  await same(t, async (s, log) => {
    const [l1, l4] = await leases(s, 2);
    const a = await call(s.lock, "Lock", { name: b("q"), lease: l1 }).promise;
    // etcd 3.4's Mutex checks nothing but the keys before its own.
    const revoked = call(s.lock, "Lock", { name: b("q"), lease: l4 });
    log("waits", await pending(revoked.promise));
    log("revoke", (await call(s.lease, "LeaseRevoke", { ID: l4 }).promise).header);
    log("still waits", await pending(revoked.promise, 200));
    await call(s.lock, "Unlock", { key: Buffer.from(a.key, "base64") }).promise;
    log("then", await within(revoked.promise, 3000, "revoked waiter"));
    log("keys", await keys(s, "q/"));
  });
});

test("Election: campaign, leader, proclaim, resign, a queue of candidates; errors", async (t) => {
  await same(t, async (s, log) => {
    const [l1, l2, l3] = await leases(s, 3);
    log("no leader", await call(s.election, "Leader", { name: b("e") }).promise);
    const c1 = await call(s.election, "Campaign", { name: b("e"), lease: l1, value: b("one") }).promise;
    log("elected", c1);
    log("leader", await call(s.election, "Leader", { name: b("e") }).promise);
    const c2 = call(s.election, "Campaign", { name: b("e"), lease: l2, value: b("two") });
    log("second waits", await pending(c2.promise));
    log("proclaim", await call(s.election, "Proclaim", { leader: c1.leader, value: b("uno") }).promise);
    log("leader after proclaim", await call(s.election, "Leader", { name: b("e") }).promise);
    log("proclaim, wrong rev", await call(s.election, "Proclaim", { leader: { ...c1.leader, rev: "1" }, value: b("x") }).promise);
    log("proclaim, no leader", await call(s.election, "Proclaim", { value: b("x") }).promise);
    log("resign, no leader", await call(s.election, "Resign", {}).promise);
    log("resign, wrong rev", await call(s.election, "Resign", { leader: { ...c1.leader, rev: "1" } }).promise);
    // Campaigning again with the same lease: the same key, the value proclaimed.
    log("again", await call(s.election, "Campaign", { name: b("e"), lease: l1, value: b("eins") }).promise);
    log("leader after again", await call(s.election, "Leader", { name: b("e") }).promise);
    log("second still waits", await pending(c2.promise, 100));
    log("resign", await call(s.election, "Resign", { leader: c1.leader }).promise);
    const c2r = await within(c2.promise, 3000, "second elected");
    log("second elected", c2r);
    log("leader now", await call(s.election, "Leader", { name: b("e") }).promise);
    log("proclaim with the old leader key", await call(s.election, "Proclaim", { leader: c1.leader, value: b("x") }).promise);
    log("campaign, unknown lease", await call(s.election, "Campaign", { name: b("e"), lease: "12345", value: b("v") }).promise);
    // Leadership follows the lease: revoked, the next in line leads.
    const c3 = call(s.election, "Campaign", { name: b("e"), lease: l3, value: b("three") });
    log("third waits", await pending(c3.promise));
    await call(s.lease, "LeaseRevoke", { ID: l2 }).promise;
    log("third elected", await within(c3.promise, 3000, "third"));
    // Without a lease: a 60 s lease of the server's.
    const free = await call(s.election, "Campaign", { name: b("f"), value: b("v") }).promise;
    log("no lease", free);
    log("proclaim without the lease", await call(s.election, "Proclaim", { leader: { ...free.leader, lease: "0" }, value: b("w") }).promise);
    const kv = (await call(s.kv, "Range", { key: b(free.leader.key ? text(free.leader.key) : "") }).promise).kvs[0];
    log("its key now has another lease", kv.lease !== free.leader.lease);
    log("leases", (await call(s.lease, "LeaseLeases", {}).promise).leases.length);
  });
});

// One candidate that goes per test, on a fresh etcd (etcd-io/etcd#20716 above).
for (const how of ["deadline", "cancel"]) {
  test(`Election: a Campaign ${how === "deadline" ? "past its deadline" : "canceled"} resigns; Observe ends when canceled`, async (t) => {
    await same(t, async (s, log) => {
      const [l1, l2] = await leases(s, 2);
      const { seen, status, stream: obs } = observe(s, "o");
      await sleep(200);
      log("nothing yet", seen.length);
      await call(s.election, "Campaign", { name: b("o"), lease: l1, value: b("a") }).promise;
      await until(() => seen.length === 1);
      const waiter = call(s.election, "Campaign", { name: b("o"), lease: l2, value: b("b") }, how === "deadline" ? { deadlineMs: 2500 } : {});
      log("two keys", await until(async () => (await keys(s, "o/")).length === 2 && (await keys(s, "o/")).length));
      if (how === "cancel") waiter.cancel();
      log(how, ended(await within(waiter.promise, 5000, how)));
      log("only the leader's key left", await until(async () => (await keys(s, "o/")).length === 1 && (await keys(s, "o/"))));
      log("observed", seen.length);
      obs.cancel();
      log("observe status after cancel", await within(status, 3000, "observe end"));
    });
  });
}

// On a fresh etcd, with no canceled wait before it (etcd-io/etcd#20716 above).
test("Election: Observe streams each leader value; a candidate waits for any older key under the prefix", async (t) => {
  await same(t, async (s, log) => {
    const [l1, l2] = await leases(s, 2);
    const { seen, status, stream: obs } = observe(s, "o");
    const c1 = await call(s.election, "Campaign", { name: b("o"), lease: l1, value: b("a") }).promise;
    await until(() => seen.length === 1);
    await call(s.election, "Proclaim", { leader: c1.leader, value: b("a2") }).promise;
    await call(s.kv, "Put", { key: b("o/zzz"), value: b("late") }).promise; // not the leader: not observed
    await call(s.election, "Proclaim", { leader: c1.leader, value: b("a3") }).promise;
    const c2 = call(s.election, "Campaign", { name: b("o"), lease: l2, value: b("b") });
    await until(async () => (await keys(s, "o/")).length === 3);
    await call(s.election, "Resign", { leader: c1.leader }).promise;
    // o/zzz was created before l2's key: it leads now, and the campaign waits.
    await until(() => seen.length === 4);
    log("second waits for o/zzz", await pending(c2.promise, 100));
    await call(s.kv, "DeleteRange", { key: b("o/zzz") }).promise;
    log("second elected", await within(c2.promise, 10_000, "second elected"));
    await until(() => seen.length === 5);
    log("observed", seen);
    obs.cancel();
    log("observe status after cancel", await within(status, 3000, "observe end"));
  });
});

test("Lock and Election names may be any bytes, as in etcd: keys are the name's bytes, then /<lease>", async (t) => {
  await same(t, async (s, log) => {
    const [l1] = await leases(s, 1);
    const name = Buffer.from([0xff, 0x00, 0x61]); // not UTF-8
    // The name's three bytes, then "/" and the lease in hex (aliased by the log).
    const parts = (v) => {
      const k = Buffer.from(v ?? "", "base64");
      return [k.subarray(0, 3).toString("hex"), k.subarray(3).toString()];
    };
    const lock = await call(s.lock, "Lock", { name, lease: l1 }).promise;
    log("lock key", parts(lock.key));
    log("unlock", await call(s.lock, "Unlock", { key: lock.key }).promise);
    log("no leader", await call(s.election, "Leader", { name }).promise);
    const c = await call(s.election, "Campaign", { name, lease: l1, value: b("v") }).promise;
    log("elected: name and key", [Buffer.from(c.leader.name, "base64").toString("hex"), parts(c.leader.key)]);
    log("leader value", Buffer.from((await call(s.election, "Leader", { name }).promise).kv.value, "base64").toString());
    log("resign", await call(s.election, "Resign", { leader: c.leader }).promise);
    log("unlock of a key that is not UTF-8 and not there", await call(s.lock, "Unlock", { key: Buffer.from([0xc3, 0x28]) }).promise);
  });
});

test("Lock and Election on the JSON gateway: paths, encoding, errors as etcd's (500, code 2)", async (t) => {
  await same(t, async (s, log) => {
    const g = await post(s.url, "/v3/lease/grant", { TTL: 60 });
    s.alias(g.body.ID);
    const lock = await post(s.url, "/v3/lock/lock", { name: b("gw").toString("base64"), lease: g.body.ID });
    log("lock", lock);
    const c = await post(s.url, "/v3/election/campaign", { name: b("ge").toString("base64"), lease: g.body.ID, value: b("v").toString("base64") });
    log("campaign", c);
    log("leader", await post(s.url, "/v3/election/leader", { name: b("ge").toString("base64") }));
    log("no leader", await post(s.url, "/v3/election/leader", { name: b("none").toString("base64") }));
    log("proclaim", await post(s.url, "/v3/election/proclaim", { leader: c.body.leader, value: b("w").toString("base64") }));
    log("proclaim, no leader key", await post(s.url, "/v3/election/proclaim", {}));
    // Observe: a stream of {"result":...} lines; read the first two, then go.
    const ac = new AbortController();
    const res = await fetch(s.url + "/v3/election/observe", { method: "POST", body: JSON.stringify({ name: b("ge").toString("base64") }), signal: ac.signal });
    log("observe status", [res.status, res.headers.get("content-type")]);
    const reader = res.body.getReader();
    let buf = "";
    const lines = async (n) => {
      while (buf.split("\n").length - 1 < n) {
        const { value, done } = await within(reader.read(), 3000, "observe chunk");
        if (done) break;
        buf += Buffer.from(value).toString();
      }
      return buf.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    };
    await lines(1);
    await post(s.url, "/v3/election/proclaim", { leader: c.body.leader, value: b("x").toString("base64") });
    log("observed", await lines(2));
    ac.abort();
    log("resign", await post(s.url, "/v3/election/resign", { leader: c.body.leader }));
    // Last: after a canceled wait, etcd 3.4's in-process watches may stall (etcd-io/etcd#20716).
    // A waiter whose HTTP client goes away: its key is deleted, as on a cancel.
    const g2 = await post(s.url, "/v3/lease/grant", { TTL: 60 });
    s.alias(g2.body.ID);
    const gone = new AbortController();
    const waiting = fetch(s.url + "/v3/lock/lock", { method: "POST", body: JSON.stringify({ name: b("gw").toString("base64"), lease: g2.body.ID }), signal: gone.signal }).catch((e) => e.name);
    log("two keys", await until(async () => (await keys(s, "gw/")).length === 2 && (await keys(s, "gw/"))));
    gone.abort();
    log("aborted", await waiting);
    log("one key", await until(async () => (await keys(s, "gw/")).length === 1 && (await keys(s, "gw/"))));
    log("unlock", await post(s.url, "/v3/lock/unlock", { key: lock.body.key }));
  });
});
