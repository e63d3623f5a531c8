// edge-lease/worker in Miniflare (workerd, SQLite-backed objects): routing
// and namespace names, isolation between namespaces, expiry from the alarm
// with no traffic, restarts of the runtime on the same storage (nothing
// acknowledged lost, even when stopped under load), WebSocket keepalives,
// and 20 namespaces x 5 clients under load. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { ROOT, startWorker } from "./harness.mjs";
import { b64 } from "../etcd/harness.mjs";

const unb64 = (s) => Buffer.from(s, "base64").toString();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function post(url, path, body, headers = {}) {
  const res = await fetch(url + path, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body ?? {}),
    headers,
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed };
}

async function ok(url, path, body) {
  const r = await post(url, path, body);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

const put = (url, key, value, lease) => ok(url, "/v3/kv/put", { key: b64(key), value: b64(value), ...(lease ? { lease } : {}) });
const keys = async (url, prefix = "") => {
  const end = prefix ? b64(prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)) : b64("\0");
  const r = await ok(url, "/v3/kv/range", { key: b64(prefix || "\0"), range_end: end });
  return { revision: Number(r.header.revision), kvs: (r.kvs ?? []).map((kv) => [unb64(kv.key), unb64(kv.value ?? "")]) };
};

// workerd takes every export of the main module for an entrypoint (a
// handler object or a class) and refuses to start on any other (a string:
// "Incorrect type for map entry"), so the package's module must work as
// the main one itself, not only re-exported as examples/worker does.
test("worker/index.mjs runs as a Worker's main module", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { scriptPath: join(ROOT, "worker/index.mjs") });
  const url = w.url("main-module");
  await put(url, "a", "1");
  assert.deepEqual((await keys(url)).kvs, [["a", "1"]]);
  const version = await fetch(w.url() + "/version", { signal: AbortSignal.timeout(20_000) });
  assert.equal(version.status, 200);
});

test("routing: /v3 is the namespace default, /n/<name>/v3 that namespace; bad names, paths, origins and tokens", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: "" } });
  await put(w.origin, "k", "default");
  assert.deepEqual((await keys(w.url("default"))).kvs, [["k", "default"]], "/v3 and /n/default are one namespace");
  assert.deepEqual(await (await fetch(w.origin + "/version")).json(), { etcdserver: "3.4.23", etcdcluster: "3.4.0" });
  assert.deepEqual(await (await fetch(w.url("team-a") + "/health")).json(), { health: "true" });
  for (const bad of ["bad!", "-x", "a".repeat(64), "%20x", "", "a%2Fb", "%ZZ"]) {
    const r = await post(w.origin, `/n/${bad}/v3/kv/range`, { key: b64("k") });
    assert.equal(r.status, 400, bad);
    assert.match(r.body, /^invalid namespace .*1 to 63 letters/, bad);
  }
  assert.equal((await post(w.origin, "/n/ok.name_1-x/v3/kv/range", { key: b64("k") })).status, 200);
  for (const path of ["/", "/nope", "/n/team-a", "/n/team-a/", "/n/team-a/nope", "/v2/keys"]) {
    const r = await fetch(w.origin + path);
    assert.equal(r.status, 404, path);
    assert.equal(await r.text(), "404 page not found\n");
  }
  const cross = await post(w.origin, "/v3/kv/put", { key: b64("x"), value: b64("y") }, { origin: "https://evil.example" });
  assert.equal(cross.status, 403);
  assert.deepEqual((await keys(w.origin, "x")).kvs, [], "the cross-origin write did not happen");
  assert.equal((await post(w.origin, "/v3/kv/range", { key: b64("k") }, { origin: w.origin })).status, 200, "same origin");
  // Member list: the namespace's name and URL.
  const members = await ok(w.url("team-a"), "/v3/cluster/member/list", {});
  assert.equal(members.members[0].name, "team-a");
  assert.deepEqual(members.members[0].clientURLs, [w.url("team-a")]);
});

test("answers that leave the request body unread keep the keep-alive connection: the next request on it is answered", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: "" } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const sockets = new Set();
  const request = (path, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const req = http.request(w.origin + path, { method: "POST", agent, headers, timeout: 20_000 }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode, text }));
      });
      req.on("socket", (s) => sockets.add(s));
      req.on("timeout", () => req.destroy(new Error(`${path}: no answer in 20 s`)));
      req.on("error", reject);
      req.end(body);
    });
  const body = JSON.stringify({ key: b64("k"), pad: "x".repeat(64 * 1024) });
  // The Worker's own answers, the gateway's (in the object), then a real call.
  const cases = [
    ["/nope", 404],
    ["/n/bad!/v3/kv/range", 400],
    ["/v3/nope", 404],
    ["/v3alpha/kv/range", 404],
    ["/version", 405],
    ["/v3/kv/range", 403, { origin: "https://evil.example" }],
    ["/v3/kv/range", 200],
  ];
  for (const [path, status, headers] of cases) {
    const r = await request(path, body, headers);
    assert.equal(r.status, status, `${path}: ${r.text}`);
  }
  assert.equal(sockets.size, 1, "every request went on the one connection (none was closed under the client)");
});

test("EDGE_LEASE_TOKEN: requests need the bearer token", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: "s3cret" } });
  const no = await post(w.origin, "/v3/kv/range", { key: b64("k") });
  assert.equal(no.status, 401);
  assert.equal(no.body.code, 16);
  assert.equal((await post(w.origin, "/v3/kv/range", { key: b64("k") }, { authorization: "Bearer s3crex" })).status, 401);
  assert.equal((await post(w.origin, "/v3/kv/range", { key: b64("k") }, { authorization: "Bearer s3cret" })).status, 200);
});

test("namespaces are isolated: keys, leases and revisions", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t);
  const [a, b] = [w.url("team-a"), w.url("team-b")];
  const lease = (await ok(a, "/v3/lease/grant", { TTL: 60 })).ID;
  await put(a, "svc/x", "a1", lease);
  await put(a, "svc/y", "a2");
  await put(b, "svc/x", "b1");
  assert.deepEqual((await keys(a, "svc/")).kvs, [["svc/x", "a1"], ["svc/y", "a2"]]);
  assert.deepEqual((await keys(b, "svc/")).kvs, [["svc/x", "b1"]]);
  assert.deepEqual((await keys(w.origin)).kvs, [], "default sees neither");
  assert.equal((await keys(a)).revision, 3);
  assert.equal((await keys(b)).revision, 2, "revisions are per namespace");
  // Team a's lease does not exist in team b.
  assert.equal((await post(b, "/v3/kv/put", { key: b64("z"), value: b64("1"), lease })).body.code, 5);
  assert.equal((await ok(b, "/v3/lease/timetolive", { ID: lease })).TTL, "-1");
  assert.deepEqual((await ok(b, "/v3/lease/leases", {})).leases ?? [], []);
  assert.equal((await post(b, "/v3/lease/revoke", { ID: lease })).status, 404);
  // Revoking in a deletes a's key only.
  await ok(a, "/v3/lease/revoke", { ID: lease });
  assert.deepEqual((await keys(a, "svc/")).kvs, [["svc/y", "a2"]]);
  assert.deepEqual((await keys(b, "svc/")).kvs, [["svc/x", "b1"]]);
  // Different members of different clusters.
  const [ma, mb] = [await ok(a, "/v3/maintenance/status", {}), await ok(b, "/v3/maintenance/status", {})];
  assert.notEqual(ma.header.cluster_id, mb.header.cluster_id);
  assert.notEqual(ma.header.member_id, mb.header.member_id);
});

test("the alarm expires leases with no traffic: the expiry's revision is there before any request", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t);
  const url = w.url("quiet");
  const short = (await ok(url, "/v3/lease/grant", { TTL: 1 })).ID; // etcd's minimum: 2 s
  assert.equal((await ok(url, "/v3/lease/timetolive", { ID: short })).grantedTTL, "2");
  const long = (await ok(url, "/v3/lease/grant", { TTL: 60 })).ID;
  await put(url, "gone", "1", short);
  await put(url, "stays", "1", long);
  // No request for 3.5 s: only the alarm can delete the key, in revision 4.
  // (A read does not expire anything: it only hides what is past its deadline.)
  await sleep(3500);
  const s = await keys(url);
  assert.deepEqual(s.kvs, [["stays", "1"]]);
  assert.equal(s.revision, 4, "the alarm's expiry deleted the key in its own revision");
  assert.equal((await ok(url, "/v3/lease/timetolive", { ID: short })).TTL, "-1");
});

test("restart of the runtime on the same storage: every acknowledged write is there, also when stopped under load", { timeout: 120_000 }, async (t) => {
  const w = await startWorker(t);
  const url = w.url("durable");
  const lease = (await ok(url, "/v3/lease/grant", { TTL: 600 })).ID;
  await put(url, "a", "1", lease);
  await put(url, "b", "2");
  await ok(url, "/v3/maintenance/alarm", { action: "ACTIVATE", memberID: "5" }); // (an alarm with no rules)
  const before = await keys(url);
  await w.restart();
  assert.deepEqual(await keys(url), before, "keys and revision");
  assert.deepEqual((await ok(url, "/v3/maintenance/alarm", {})).alarms, [{ memberID: "5" }], "the alarm is kept");
  await ok(url, "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: "5" });
  // etcd's snapshot file, then its SHA-256.
  const lines = (await (await fetch(url + "/v3/maintenance/snapshot", { method: "POST", body: "{}" })).text()).trim().split("\n");
  const blobs = lines.map((l) => Buffer.from(JSON.parse(l).result.blob, "base64"));
  const file = Buffer.concat(blobs.slice(0, -1));
  assert.ok(file.length >= 6 * 4096 && file.length % 4096 === 0, `a bbolt file of ${file.length} bytes`);
  assert.deepEqual(blobs.at(-1), createHash("sha256").update(file).digest());
  // etcd's /metrics, the data's figures (no process's in a Worker).
  const metrics = await (await fetch(url + "/metrics")).text();
  assert.match(metrics, new RegExp(`^etcd_debugging_mvcc_current_revision ${before.revision + 0}$`, "m"));
  assert.match(metrics, /^etcd_debugging_mvcc_keys_total 2$/m);
  assert.doesNotMatch(metrics, /^process_/m);
  const ttl = await ok(url, "/v3/lease/timetolive", { ID: lease, keys: true });
  assert.equal(ttl.grantedTTL, "600");
  assert.deepEqual(ttl.keys.map(unb64), ["a"]);
  assert.equal(Number((await put(url, "c", "3")).header.revision), before.revision + 1, "revisions go on");

  // Under load: writes to four namespaces, the runtime stopped part-way.
  const acked = [];
  let stopping = false;
  const writers = [0, 1, 2, 3].map(async (n) => {
    for (let i = 0; !stopping || i < 5; i++) {
      try {
        const r = await post(w.url(`load-${n}`), "/v3/kv/put", { key: b64(`k${i}`), value: b64(`v${i}`) });
        if (r.status === 200) acked.push([n, i, Number(r.body.header.revision)]);
        else break;
      } catch {
        break;
      }
      if (stopping) break;
    }
  });
  while (acked.length < 100) await sleep(10);
  stopping = true;
  await w.stop();
  await Promise.all(writers);
  await w.restart();
  for (const [n, i, revision] of acked) {
    const r = await ok(w.url(`load-${n}`), "/v3/kv/range", { key: b64(`k${i}`) });
    assert.equal(unb64(r.kvs?.[0]?.value ?? ""), `v${i}`, `load-${n}/k${i} was acknowledged`);
    assert.equal(Number(r.kvs[0].mod_revision), revision);
  }
});

test("WebSocket keepalive: answers each request as the gateway stream, keeps a lease past its TTL, TTL 0 when gone", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t);
  const url = w.url("ws");
  const lease = (await ok(url, "/v3/lease/grant", { TTL: 2 })).ID;
  await put(url, "held", "1", lease);
  const res = await w.mf.dispatchFetch(url + "/v3/lease/keepalive", { headers: { upgrade: "websocket" } });
  assert.equal(res.status, 101);
  const ws = res.webSocket;
  const inbox = [];
  let wake = null;
  ws.addEventListener("message", (e) => {
    inbox.push(JSON.parse(e.data));
    wake?.();
  });
  const closed = new Promise((r) => ws.addEventListener("close", (e) => r(e.code)));
  ws.accept();
  const next = async () => {
    for (let i = 0; i < 100 && inbox.length === 0; i++) await new Promise((r) => ((wake = r), setTimeout(r, 100)));
    return inbox.shift();
  };
  // Every 700 ms for 3.5 s: the lease outlives its 2 s TTL.
  for (let i = 0; i < 5; i++) {
    ws.send(JSON.stringify({ ID: lease }));
    const r = await next();
    assert.equal(r.result.ID, lease);
    assert.equal(r.result.TTL, "2");
    await sleep(700);
  }
  assert.deepEqual((await keys(url)).kvs, [["held", "1"]]);
  // Two values in one message, one of them unknown: two answers, in order.
  ws.send(`{"ID":"${lease}"} {"ID":"5"}`);
  assert.equal((await next()).result.TTL, "2");
  assert.deepEqual((await next()).result.TTL, undefined, "TTL 0 is omitted, as the gateway does");
  ws.send("{nope");
  assert.equal((await next()).error.code, 3);
  assert.equal(await closed, 1007);
  // A WebSocket elsewhere is refused with a reason.
  const other = await w.mf.dispatchFetch(url + "/v3/kv/range", { headers: { upgrade: "websocket" } });
  assert.equal(other.status, 404);
});

test("an open HTTP keepalive stream gets each answer at once (not held back by compression)", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t);
  const url = w.url("stream");
  const lease = (await ok(url, "/v3/lease/grant", { TTL: 30 })).ID;
  let push;
  const body = new ReadableStream({ start: (c) => (push = c) });
  const enc = new TextEncoder();
  // The gateway answers once the first request is in (as etcd's).
  push.enqueue(enc.encode(JSON.stringify({ ID: lease }) + "\n"));
  const res = await fetch(url + "/v3/lease/keepalive", {
    method: "POST",
    body,
    duplex: "half",
    // What etcd's and most HTTP clients send.
    headers: { "accept-encoding": "gzip, br" },
    signal: AbortSignal.timeout(20_000),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-encoding"), "identity");
  const reader = res.body.getReader();
  for (let i = 0; i < 3; i++) {
    if (i > 0) push.enqueue(enc.encode(JSON.stringify({ ID: lease }) + "\n"));
    const chunk = await Promise.race([reader.read(), sleep(3000).then(() => null)]);
    assert.ok(chunk && !chunk.done, `answer ${i} came while the stream is open`);
    assert.equal(JSON.parse(new TextDecoder().decode(chunk.value)).result.TTL, "30");
  }
  push.close();
  await reader.cancel();
});

test("an Observe stream gets the leader at once, uncompressed, also for clients that accept gzip", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t);
  const url = w.url("observe");
  const lease = (await ok(url, "/v3/lease/grant", { TTL: 30 })).ID;
  await ok(url, "/v3/election/campaign", { name: b64("e"), lease, value: b64("leader-1") });
  const ctl = new AbortController();
  t.after(() => ctl.abort());
  const res = await fetch(url + "/v3/election/observe", {
    method: "POST",
    body: JSON.stringify({ name: b64("e") }),
    headers: { "accept-encoding": "gzip, br" },
    signal: ctl.signal,
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-encoding"), "identity");
  const reader = res.body.getReader();
  const chunk = await Promise.race([reader.read(), sleep(3000).then(() => null)]);
  assert.ok(chunk && !chunk.done, "the leader came while the stream is open");
  assert.equal(unb64(JSON.parse(new TextDecoder().decode(chunk.value)).result.kv.value), "leader-1");
  await reader.cancel();
});

test("20 namespaces x 5 clients under load: no errors, each namespace's state exact", { timeout: 180_000 }, async (t) => {
  const w = await startWorker(t);
  const ROUNDS = 10;
  const errors = [];
  const client = async (ns, c) => {
    const url = w.url(`load-ns-${ns}`);
    for (let i = 0; i < ROUNDS; i++) {
      const calls = [
        ["/v3/lease/grant", { TTL: 30 }],
        ["/v3/kv/range", { key: b64("c"), range_end: b64("d"), count_only: true }],
      ];
      const g = await post(url, ...calls[0]);
      if (g.status !== 200) errors.push([ns, c, i, "grant", g.status, g.body]);
      const p = await post(url, "/v3/kv/put", { key: b64(`c${c}/${i}`), value: b64("x"), lease: g.body.ID });
      if (p.status !== 200) errors.push([ns, c, i, "put", p.status, p.body]);
      const k = await post(url, "/v3/lease/keepalive", { ID: g.body.ID });
      if (k.status !== 200 || k.body?.result?.TTL !== "30") errors.push([ns, c, i, "keepalive", k.status, k.body]);
      const r = await post(url, ...calls[1]);
      if (r.status !== 200) errors.push([ns, c, i, "range", r.status, r.body]);
    }
  };
  const jobs = [];
  for (let ns = 0; ns < 20; ns++) for (let c = 0; c < 5; c++) jobs.push(client(ns, c));
  await Promise.all(jobs);
  assert.deepEqual(errors.slice(0, 5), []);
  for (let ns = 0; ns < 20; ns++) {
    const r = await ok(w.url(`load-ns-${ns}`), "/v3/kv/range", { key: b64("c"), range_end: b64("d"), count_only: true });
    assert.equal(r.count, String(5 * ROUNDS), `namespace ${ns}`);
    assert.equal(r.header.revision, String(1 + 5 * ROUNDS), "one revision per put, nothing else");
    assert.equal((await ok(w.url(`load-ns-${ns}`), "/v3/lease/leases", {})).leases.length, 5 * ROUNDS);
  }
});
