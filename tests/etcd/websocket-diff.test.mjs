// The gateway's streams over WebSockets (etcd's websocket proxy; here
// server/websocket.mjs), side by side with etcd 3.4: a watch created by
// one message, a put, its event and a cancel; keepalives of a lease, one
// per message, then one for a lease that is gone. The same messages from
// both once the parts that differ by nature (ids, cluster/member ids, raft
// term, revisions counted from the start) are normalised.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocket } from "undici";
import { b64, post as postRaw, startBoth } from "./harness.mjs";

const post = async (url, path, body) => (await postRaw(url, path, body)).body;

/** A socket on `url`'s `path`: send(obj), next() -> the next message parsed, close(). */
async function socket(url, path) {
  const ws = new WebSocket(url.replace(/^http/, "ws") + path);
  const queue = [];
  const waiting = [];
  ws.onmessage = (ev) => (waiting.length ? waiting.shift()(ev.data) : queue.push(ev.data));
  await new Promise((ok, no) => {
    ws.onopen = ok;
    ws.onerror = () => no(new Error(`no socket on ${url}${path}`));
  });
  return {
    send: (o) => ws.send(JSON.stringify(o)),
    async next(ms = 5000) {
      const data = queue.length ? queue.shift() : await Promise.race([new Promise((r) => waiting.push(r)), new Promise((_, no) => setTimeout(() => no(new Error(`no message on ${path} within ${ms} ms`)), ms))]);
      return JSON.parse(data);
    },
    close: () => ws.close(1000),
  };
}

// Header fields each server has of its own; ids as placeholders; revisions relative to `base`.
function normal(m, base, ids) {
  return JSON.parse(
    JSON.stringify(m, (k, v) => {
      if (k === "cluster_id" || k === "member_id" || k === "raft_term") return "*";
      if (k === "revision" || k === "mod_revision" || k === "create_revision") return String(Number(v) - base);
      if (k === "ID" || k === "watch_id" || k === "lease") return ids.get(v) ?? (ids.set(v, `id${ids.size}`), `id${ids.size - 1}`);
      return v;
    }),
  );
}

async function story(url) {
  const base = Number((await post(url, "/v3/kv/range", { key: b64("ws/probe") })).header.revision);
  const ids = new Map();
  const out = [];
  const w = await socket(url, "/v3/watch");
  w.send({ create_request: { key: b64("ws/"), range_end: b64("ws0") } });
  out.push(normal(await w.next(), base, ids));
  await post(url, "/v3/kv/put", { key: b64("ws/a"), value: b64("1") });
  out.push(normal(await w.next(), base, ids));
  w.send({ cancel_request: { watch_id: "0" } }); // the stream's first watcher
  out.push(normal(await w.next(), base, ids));
  w.close();

  const { ID } = await post(url, "/v3/lease/grant", { TTL: "30" });
  const k = await socket(url, "/v3/lease/keepalive");
  k.send({ ID });
  k.send({ ID });
  out.push(normal(await k.next(), base, ids), normal(await k.next(), base, ids));
  await post(url, "/v3/lease/revoke", { ID });
  k.send({ ID });
  out.push(normal(await k.next(), base, ids));
  k.close();
  return out;
}

test("the gateway's streams over WebSockets: the same messages as etcd 3.4's websocket proxy", { timeout: 60_000 }, async (t) => {
  const { etcd, edge } = await startBoth(t);
  const want = await story(etcd.url);
  const got = await story(edge.url);
  assert.deepEqual(got, want);
  assert.equal(want[1].result.events[0].kv.value, b64("1"), "the put's event came over the socket");
  assert.equal(want[3].result.TTL, "30");
  assert.equal(want[5].result.TTL, undefined, "a revoked lease's keepalive: TTL 0 (omitted)");
});
