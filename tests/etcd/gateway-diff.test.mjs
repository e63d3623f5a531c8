// The same JSON gateway calls to a real etcd 3.4 and to edge-lease's server,
// compared response by response: status, body (revisions, kvs, prev kvs,
// counts, more, TTLs, errors with codes and messages). Cluster and member
// ids, raft terms, server-chosen lease ids and each side's own name and URLs
// are normalised; nothing waits for time to pass.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, post, b64 } from "./harness.mjs";


function normaliser(side) {
  const leases = new Map(); // server-chosen id -> alias
  const own = [side.url, side.peer, side.name === "etcd" ? "etcd-node" : "edge-node"];
  const norm = (v, key) => {
    if (Array.isArray(v)) return v.map((x) => norm(x, key));
    if (v && typeof v === "object") {
      const o = {};
      for (const [k, x] of Object.entries(v)) o[k] = norm(x, k);
      return o;
    }
    if (typeof v !== "string") return v;
    if (["cluster_id", "member_id", "leader"].includes(key)) return "<id>";
    if (["raft_term", "raftTerm", "raftIndex", "raftAppliedIndex", "dbSize", "dbSizeInUse"].includes(key)) return "<n>";
    if (key === "ID" && BigInt(v) > 100000n) {
      if (!leases.has(v)) leases.set(v, `<lease ${leases.size}>`);
      return leases.get(v);
    }
    if (key === "lease" && leases.has(v)) return leases.get(v);
    const i = own.indexOf(v);
    return i >= 0 ? `<own ${i}>` : v;
  };
  return norm;
}

test("JSON gateway: the same calls to etcd 3.4 and edge-lease answer the same", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [etcd, edge].map((s) => ({ ...s, norm: normaliser(s) }));
  const ids = [{}, {}]; // alias -> each side's own lease id

  // Makes the call on both sides; asserts equal normalised answers.
  async function both(path, body, tweak = (x) => x) {
    const out = [];
    for (const [i, s] of sides.entries()) {
      const b = typeof body === "function" ? body(ids[i]) : body;
      const r = await post(s.url, path, b);
      const normed = s.norm(r.body);
      out.push({ status: r.status, body: tweak(s.known ? s.known(path, normed) : normed) });
    }
    assert.deepEqual(out[1], out[0], `${path} ${JSON.stringify(typeof body === "function" ? body(ids[0]) : body)}`);
    return out;
  }
  async function grant(alias, body) {
    const out = [];
    for (const [i, s] of sides.entries()) {
      const r = await post(s.url, "/v3/lease/grant", body);
      ids[i][alias] = r.body.ID;
      out.push({ status: r.status, body: s.norm(r.body) });
    }
    assert.deepEqual(out[1], out[0]);
  }

  // Leases.
  await grant("L0", { TTL: 60 });
  await both("/v3/lease/grant", { TTL: 1, ID: 1000 }); // raised to etcd's 2 s minimum
  await both("/v3/lease/grant", { TTL: "30", ID: "1000" }); // exists
  await both("/v3/lease/grant", { TTL: 9000000001 }); // too large
  await both("/v3/lease/revoke", { ID: 1000 });

  // Puts.
  const L0 = (ids) => ids.L0;
  await both("/v3/kv/put", (i) => ({ key: b64("a"), value: b64("1"), lease: L0(i) }));
  await both("/v3/kv/put", (i) => ({ key: b64("a"), value: b64("2"), lease: L0(i), prev_kv: true }));
  for (const k of ["b/1", "b/2", "b/3", "ba"]) await both("/v3/kv/put", { key: b64(k), value: b64(k.toUpperCase()) });
  await both("/v3/kv/put", { key: b64("c"), value: b64("x"), lease: 12345 });
  await both("/v3/kv/put", { key: "", value: b64("x") });
  await both("/v3/kv/put", { key: b64("a"), value: b64("x"), ignore_value: true });
  await both("/v3/kv/put", { key: b64("a"), lease: 12345, ignoreLease: true });
  await both("/v3/kv/put", { key: b64("nope"), ignore_value: true });
  await both("/v3/kv/put", { key: b64("a"), ignore_value: true, prevKv: true });
  await both("/v3/kv/put", { key: b64("b/2"), value: b64("B2'"), ignore_lease: true });

  // Ranges.
  const prefix = (p) => ({ key: b64(p), range_end: b64(p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1)) });
  await both("/v3/kv/range", { key: b64("a") });
  // Escapes: a string's value counts for keys and bytes; a quoted number
  // and an enum's name are read as written (an escaped digit is no digit).
  for (const body of [
    '{"key":"\\u0059Q=="}',
    '{"k\\u0065y":"YQ==","limit":"1"}',
    '{"key":"YQ==","limit":"\\u0031"}',
    '{"key":"YQ==","revision":"\\u0032"}',
    '{"key":"YQ==","limit":"\\"1"}',
    '{"key":"YQ==","limit":"\\x"}',
    '{"key":"YQ==","limit":["\\u0031"]}',
    '{"key":"YQ==","sort_order":"\\u0041SCEND"}',
    '{"key":"YQ==","sort_order":"\\"A"}',
    '{"key":"YQ==","sort_order":["\\u0041SCEND"]}',
    '{"key":"YQ==","serializable":"\\u0074rue"}',
    '"\\u0031"',
    // Bytes as an array take numbers only (encoding/json's rule there).
    '{"key":["\\u0031"]}',
    '{"key":["1"]}',
    // What the parser marks escapes and odd numbers with, sent as objects:
    // objects; an escaped NUL anywhere changes nothing; names of
    // Object.prototype are no enum values.
    '{"key":{"\\u0000s":"YQ==","\\u0000r":"YQ=="}}',
    '{"key":"YQ==","limit":{"\\u0000n":"1"},"x":1e5}',
    '{"key":"YQ==","sort_order":"\\u0041SCEND","p":"\\u0000"}',
    '{"key":"YQ==","sort_order":"toString"}',
    '{"key":"YQ==","sort_order":"__proto__"}',
  ]) {
    await both("/v3/kv/range", body);
  }
  await both("/v3/kv/range", { key: b64("missing") });
  await both("/v3/kv/range", prefix("b/"));
  await both("/v3/kv/range", prefix("b"));
  await both("/v3/kv/range", { ...prefix("b/"), limit: 2 });
  await both("/v3/kv/range", { ...prefix("b/"), limit: "3" });
  await both("/v3/kv/range", { ...prefix("b/"), count_only: true });
  await both("/v3/kv/range", { ...prefix("b/"), keys_only: true });
  await both("/v3/kv/range", { ...prefix("b/"), min_mod_revision: 6 });
  await both("/v3/kv/range", { ...prefix("b/"), maxCreateRevision: 5, limit: 1 });
  await both("/v3/kv/range", { key: b64("\0"), range_end: b64("\0") });
  await both("/v3/kv/range", { key: b64("a"), serializable: true });
  await both("/v3/kv/range", { key: "" });
  await both("/v3/kv/range", { key: b64("a"), revision: 1000 });
  await both("/v3/kv/range", { key: b64("a"), sort_order: "BOGUS" });

  // Lease reads.
  const ttlish = (r) => {
    // The remaining TTL may differ by a second between the two calls.
    if (r.TTL && r.grantedTTL && Number(r.grantedTTL) - Number(r.TTL) <= 2) r.TTL = "<remaining>";
    return r;
  };
  await both("/v3/lease/timetolive", (i) => ({ ID: L0(i), keys: true }), ttlish);
  await both("/v3/kv/lease/timetolive", (i) => ({ ID: L0(i) }), ttlish);
  await both("/v3/lease/timetolive", { ID: 5 });
  await both("/v3/lease/leases", {});
  await both("/v3/kv/lease/leases", {});
  await both("/v3/lease/keepalive", (i) => `{"ID":"${L0(i)}"}\n{"ID":5} {"ID":"${L0(i)}"}`);
  await both("/v3/lease/keepalive", "");

  // Deletes.
  await both("/v3/kv/deleterange", { key: b64("b/1"), prev_kv: true });
  await both("/v3/kv/deleterange", { key: b64("b/1") }); // nothing: no revision bump
  await both("/v3/kv/deleterange", prefix("zz/"));
  await both("/v3/kv/deleterange", { ...prefix("ba"), prev_kv: true });
  await both("/v3/kv/range", { key: b64("\0"), range_end: b64("\0"), keys_only: true });

  // Revoking deletes the lease's keys in one revision.
  await both("/v3/lease/revoke", (i) => ({ ID: L0(i) }));
  await both("/v3/kv/lease/revoke", (i) => ({ ID: L0(i) }));
  await both("/v3/kv/range", { key: b64("a") });
  await both("/v3/lease/timetolive", (i) => ({ ID: L0(i) }));

  // Cluster, maintenance, auth.
  await both("/v3/cluster/member/list", {});
  await both("/v3/maintenance/status", {});
  await both("/v3/maintenance/alarm", {});
  await both("/v3/auth/authenticate", { name: "root", password: "x" });
  await both("/v3/auth/user/list", {});
  await both("/v3/auth/role/get", { role: "nope" });
  await both("/v3/auth/user/get", { name: "nope" });
  await both("/v3/auth/enable", {});

  // Encoding and request errors.
  await both("/v3beta/kv/range", { key: b64("b/2") });
  await both("/v3/kv/put", { key: "!!!", value: b64("x") });
  await both("/v3/kv/put", { key: "YQ", value: b64("x") });
  await both("/v3/kv/put", { key: b64("a"), lease: 1.5 });
  await both("/v3/kv/put", { key: b64("a"), lease: "abc" });
  await both("/v3/kv/put", { key: b64("a"), prev_kv: "true" });
  await both("/v3/kv/put", [1]);
  await both("/v3/kv/put", "{");
  await both("/v3/kv/put", "");
  await both("/v3/kv/put", "null");
  await both("/v3/kv/put", { key: b64("u"), value: b64("v"), unknown_field: 1 });
  await both("/v3/kv/put", `{"key":"${b64("x")}","value":"${b64("y")}"}{"trailing":1}`);
  await both("/v3/kv/range", { key: b64("x"), limit: "7587869491981537280" });
  await both("/v3/lease/timetolive", { ID: "9223372036854775807" });
  await both("/v3/nope", {});
  await both("/v3alpha/kv/range", {});

  for (const s of sides) {
    assert.deepEqual(await (await fetch(s.url + "/version")).json(), { etcdserver: "3.4.23", etcdcluster: "3.4.0" });
    const get = await fetch(s.url + "/v3/kv/range");
    assert.equal(get.status, 405, s.name);
    assert.equal(await get.text(), "Method Not Allowed\n");
    const missing = await fetch(s.url + "/nope");
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "404 page not found\n");
    const health = await fetch(s.url + "/health");
    assert.deepEqual(await health.json(), { health: "true" });
  }

  // etcd's request limit: 1.5 MiB for a write, the gRPC 2 MiB limit past that.
  await both("/v3/kv/put", { key: b64("big"), value: b64("x".repeat(1.5 * 1024 * 1024)) });
  await both("/v3/kv/put", { key: b64("big"), value: b64("x".repeat(1.4 * 1024 * 1024)) });
  await both("/v3/kv/range", { key: b64("big"), keys_only: true });
});
