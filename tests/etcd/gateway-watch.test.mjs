// /v3/watch at the HTTP level, against a real etcd 3.4 and edge-lease: a
// raw socket sends the request (whole or in pieces) and reads the chunked
// response, so the framing itself is compared: 200, chunked, one
// `{"result":...}\n` per chunk, several requests in one body, the stream
// open after the body ends (later writes still arrive), errors of a first
// request that does not parse, later ones ignored.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect as tcp } from "node:net";
import { startBoth, post, b64 } from "./harness.mjs";
import { byWatcher, until } from "./grpc-client.mjs";


/**
 * POSTs `pieces` (strings, sent `gapMs` apart, chunked when more than one)
 * to `path`; returns { status, headers, chunks, messages, close() } filled
 * as the response arrives.
 */
function rawPost(url, path, pieces, gapMs = 50) {
  const u = new URL(url);
  const sock = tcp(Number(u.port), u.hostname);
  const r = { status: 0, headers: {}, chunks: [], messages: [], ended: false, raw: "" };
  let buf = Buffer.alloc(0);
  let head = true;
  sock.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (head) {
        const i = buf.indexOf("\r\n\r\n");
        if (i < 0) return;
        const lines = buf.subarray(0, i).toString().split("\r\n");
        r.status = Number(lines[0].split(" ")[1]);
        for (const l of lines.slice(1)) {
          const c = l.indexOf(":");
          r.headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
        }
        buf = buf.subarray(i + 4);
        head = false;
        if (r.headers["transfer-encoding"] !== "chunked") {
          r.chunked = false;
        }
        continue;
      }
      if (r.headers["transfer-encoding"] !== "chunked") {
        r.raw += buf.toString();
        buf = Buffer.alloc(0);
        return;
      }
      const i = buf.indexOf("\r\n");
      if (i < 0) return;
      const size = parseInt(buf.subarray(0, i).toString(), 16);
      if (buf.length < i + 2 + size + 2) return;
      const data = buf.subarray(i + 2, i + 2 + size).toString();
      buf = buf.subarray(i + 2 + size + 2);
      if (size === 0) {
        r.ended = true;
        return;
      }
      r.chunks.push(data);
      for (const line of data.split("\n").filter(Boolean)) r.messages.push(JSON.parse(line));
    }
  });
  sock.on("close", () => (r.ended = true));
  sock.on("error", () => {});
  const chunked = pieces.length > 1;
  const headers = [`POST ${path} HTTP/1.1`, `Host: ${u.host}`, "Content-Type: application/json"];
  if (chunked) headers.push("Transfer-Encoding: chunked");
  else headers.push(`Content-Length: ${Buffer.byteLength(pieces[0] ?? "")}`);
  sock.write(headers.join("\r\n") + "\r\n\r\n");
  (async () => {
    for (const [i, p] of pieces.entries()) {
      if (i > 0) await new Promise((ok) => setTimeout(ok, gapMs));
      if (chunked) sock.write(`${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`);
      else sock.write(p);
    }
    if (chunked) sock.write("0\r\n\r\n");
  })();
  r.close = () => sock.destroy();
  return r;
}

const strip = (m) => JSON.parse(JSON.stringify(m, (k, v) => (["cluster_id", "member_id", "raft_term"].includes(k) ? undefined : v)));

test("gateway /v3/watch: chunked framing, several requests per body, open after the body, errors", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const out = [];
  for (const side of [etcd, edge]) {
    const o = {};
    for (const k of ["a", "b/1", "a"]) await post(side.url, "/v3/kv/put", { key: b64(k), value: b64(k + "!") });

    // Three requests in one body (concatenated, then newline-separated).
    const body =
      JSON.stringify({ create_request: { key: b64("a"), start_revision: 1, prev_kv: true } }) +
      JSON.stringify({ create_request: { key: b64("b/"), range_end: b64("b0"), watch_id: 5 } }) +
      "\n" +
      JSON.stringify({ progress_request: {} }) +
      "\n";
    const w = rawPost(side.url, "/v3/watch", [body]);
    t.after(() => w.close());
    assert.ok(await until(() => w.messages.length >= 4, 5000), `${side.name}: first responses`);
    // The body has ended; the stream is still open and gets later writes.
    await post(side.url, "/v3/kv/put", { key: b64("b/2"), value: b64("x") });
    await post(side.url, "/v3/kv/deleterange", { key: b64("a") });
    assert.ok(await until(() => w.messages.length >= 6, 5000), `${side.name}: later events`);
    await new Promise((ok) => setTimeout(ok, 200));
    o.status = w.status;
    o.type = w.headers["content-type"];
    o.chunked = w.headers["transfer-encoding"];
    o.oneMessagePerChunk = w.chunks.every((c) => /^\{"result":.*\}\n$/s.test(c) && c.indexOf("\n") === c.length - 1);
    o.open = !w.ended;
    o.messages = byWatcher(w.messages.map((m) => strip(m.result)));

    // Errors: a first request that does not parse is the whole answer.
    for (const bad of ["xx", '{"create_request":{"key":"!!"}}', '{"create_request":{"key":"YQ==","start_revision":"x"}}']) {
      const e = rawPost(side.url, "/v3/watch", [bad]);
      t.after(() => e.close());
      assert.ok(await until(() => e.status && (e.raw || e.ended), 5000), `${side.name}: ${bad}`);
      await until(() => e.raw.endsWith("}"), 1000);
      (o.errors ??= []).push({ status: e.status, body: JSON.parse(e.raw) });
    }
    // A later one stops the reading; what came before is answered.
    const later = rawPost(side.url, "/v3/watch", [`${JSON.stringify({ create_request: { key: b64("a") } })} xx ${JSON.stringify({ create_request: { key: b64("b") } })}`]);
    t.after(() => later.close());
    assert.ok(await until(() => later.messages.length >= 1, 5000));
    await new Promise((ok) => setTimeout(ok, 300));
    o.later = later.messages.map((m) => strip(m.result));
    out.push(o);
  }
  assert.deepEqual(out[1], out[0]);
  assert.equal(out[1].status, 200);

  // A body sent in pieces: each request is acted on as it arrives. (etcd's
  // gateway drops pieces that arrive after its first response went out, a
  // race in Go's HTTP/1 server, so only edge-lease is checked here.)
  const p = rawPost(edge.url, "/v3/watch", [
    JSON.stringify({ create_request: { key: b64("p") } }),
    JSON.stringify({ create_request: { key: b64("q"), watch_id: 9 } }),
    JSON.stringify({ cancel_request: { watch_id: 9 } }),
  ], 100);
  t.after(() => p.close());
  assert.ok(await until(() => p.messages.length >= 3, 5000), "pieces");
  assert.deepEqual(p.messages.map((m) => [m.result.watch_id, m.result.created, m.result.canceled]), [[undefined, true, undefined], ["9", true, undefined], ["9", undefined, true]]);
  assert.equal(out[1].oneMessagePerChunk, true);
  assert.equal(out[1].open, true);
});
