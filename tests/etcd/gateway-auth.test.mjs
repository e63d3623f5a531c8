// etcd's auth on the JSON gateway, fetch calls to a real etcd 3.4 and to
// edge-lease compared (status and body; ids and tokens masked): the token
// in `Authorization` (bare, as etcd3gw sends it), in `Grpc-Metadata-Token`
// (which wins), a `Bearer` one, a wrong one and none; the error bodies and
// HTTP statuses of each auth error; streams (watch, keepalive, snapshot)
// with and without a token.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, b64 } from "./harness.mjs";

const masked = (v) =>
  JSON.parse(JSON.stringify(v), (k, x) =>
    ["cluster_id", "member_id", "raft_term", "leader", "ID", "raftIndex", "raftAppliedIndex", "dbSize", "dbSizeInUse"].includes(k) ? "<n>" : k === "token" ? "<token>" : x,
  );

async function call(url, path, body, headers = {}, lines = 0) {
  const ac = new AbortController();
  const res = await fetch(url + path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers, signal: ac.signal });
  let text = "";
  if (lines === 0) text = await res.text();
  else {
    // A stream: its first `lines` lines, then the client goes.
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const end = Date.now() + 5000;
    while (text.split("\n").length <= lines && Date.now() < end) {
      const r = await Promise.race([reader.read(), new Promise((ok) => setTimeout(() => ok({ done: true }), end - Date.now()))]);
      if (r.done) break;
      text += decoder.decode(r.value, { stream: true });
    }
    ac.abort();
    text = text.split("\n").slice(0, lines).join("\n");
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  }
  return { status: res.status, body: masked(parsed) };
}

test("JSON gateway: auth with the token in Authorization or Grpc-Metadata-Token answers as etcd's gateway", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [etcd, edge].map((s) => ({ url: s.url, tokens: { bogus: "bogus" } }));
  const both = async (path, body, as = {}, lines = 0) => {
    const out = await Promise.all(
      sides.map((s) => {
        const headers = {};
        for (const [h, alias] of Object.entries(as)) headers[h] = alias.startsWith("Bearer ") ? `Bearer ${s.tokens[alias.slice(7)]}` : (s.tokens[alias] ?? alias);
        return call(s.url, path, body, headers, lines);
      }),
    );
    assert.deepEqual(out[1], out[0], `${path} ${JSON.stringify(body)} ${JSON.stringify(as)}`);
    return out;
  };
  const login = async (alias, name, password) => {
    const post = (s) => fetch(s.url + "/v3/auth/authenticate", { method: "POST", body: JSON.stringify({ name, password }) });
    const out = await Promise.all(sides.map(async (s) => post(s).then(async (r) => ({ status: r.status, body: await r.json() }))));
    assert.deepEqual(masked(out[1]), masked(out[0]));
    out.forEach((r, i) => (sides[i].tokens[alias] = r.body.token));
  };

  await both("/v3/auth/user/add", { name: "root", password: "rootpw" });
  await both("/v3/auth/user/grant", { user: "root", role: "root" });
  await both("/v3/auth/user/add", { name: "u", password: "upw" });
  await both("/v3/auth/role/add", { name: "r" });
  await both("/v3/auth/role/grant", { name: "r", perm: { permType: "READWRITE", key: b64("k"), range_end: b64("l") } });
  await both("/v3/auth/user/grant", { user: "u", role: "r" });
  await both("/v3/kv/range", { key: b64("k") }, { authorization: "bogus" }); // (any token while auth is off)
  await both("/v3/auth/enable", {});
  await both("/v3/auth/authenticate", { name: "u", password: "nope" });
  await login("root", "root", "rootpw");
  await login("u", "u", "upw");

  for (const as of [{}, { authorization: "u" }, { authorization: "bogus" }, { authorization: "Bearer u" }, { "grpc-metadata-token": "u" }, { "grpc-metadata-token": "bogus", authorization: "u" }, { authorization: "root" }]) {
    await both("/v3/kv/put", { key: b64("k"), value: b64("v") }, as);
    await both("/v3/kv/range", { key: b64("k") }, as);
    await both("/v3/kv/range", { key: b64("x") }, as);
    await both("/v3/kv/txn", { compare: [{ key: b64("x"), target: "VALUE", value: b64("1") }] }, as);
    await both("/v3/kv/deleterange", { key: b64("x"), prev_kv: true }, as);
    await both("/v3/auth/user/list", {}, as);
    await both("/v3/auth/user/get", { name: "u" }, as);
    await both("/v3/maintenance/defragment", {}, as);
    await both("/v3/maintenance/alarm", {}, as);
    await both("/v3/kv/compaction", { revision: "1" }, as);
    await both("/v3/lease/keepalive", '{"ID":"1"}', as, 1);
    await both("/v3/lease/leases", {}, as);
  }
  // Streams: a watch's creates, checked one by one; a snapshot's refusal.
  for (const as of [{}, { authorization: "bogus" }, { authorization: "u" }]) {
    await both("/v3/watch", `{"create_request":{"key":"${b64("x")}"}}`, as, 1);
    await both("/v3/maintenance/snapshot", {}, as, 1);
  }
  const watched = await both("/v3/watch", `{"create_request":{"key":"${b64("k")}"}}`, { authorization: "u" }, 1);
  assert.equal(watched[0].body.result.created, true);
  await both("/v3/auth/disable", {}, { authorization: "root" });
  await both("/v3/kv/range", { key: b64("k") }, { authorization: "root" });
  await both("/v3/kv/range", { key: b64("k") });
});
