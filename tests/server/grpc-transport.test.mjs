// The gRPC transport (server/grpc.mjs on server/h2.mjs) at the HTTP/2 level,
// through node:http2 as a raw client: what grpc-go answers for paths it has
// no method for, for requests that are not gRPC and for compressed ones;
// etcd's limit on request size; deadlines; a whole URL as :authority (what
// grpc-go sends for `etcdctl endpoint status`); broken header compression.
// Each time, the server goes on serving.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect as http2Connect } from "node:http2";
import { connect as netConnect } from "node:net";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import { startEdge, startEtcd } from "../etcd/harness.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { grpcFrame as frame, rawCall as call, within } from "../etcd/grpc-client.mjs";

const root = loadRoot();
const T = (name) => root.lookupType(name);

const put = (key, value) => frame(T("etcdserverpb.PutRequest").encode({ key: Buffer.from(key), value }).finish());
const range = (key) => frame(T("etcdserverpb.RangeRequest").encode({ key: Buffer.from(key) }).finish());
const kvs = (res) => T("etcdserverpb.RangeResponse").decode(res.messages[0]).kvs.map((kv) => [kv.key.toString(), kv.value.toString()]);

test("gRPC transport: grpc-go's answers, etcd's size limit, compression, deadlines, authority", async (t) => {
  const edge = await startEdge(t);
  const session = http2Session(t, edge.url);

  const ok = await call(session, "/etcdserverpb.KV/Put", put("a", Buffer.from("1")));
  assert.equal(ok.status, 0);
  assert.equal(ok.head["content-type"], "application/grpc");

  // Paths with no method, as grpc-go words them.
  const noService = await call(session, "/etcdserverpb.Nope/Range", range("a"));
  assert.deepEqual([noService.status, noService.message], [12, "unknown service etcdserverpb.Nope"]);
  const noMethod = await call(session, "/etcdserverpb.KV/Nope", range("a"));
  assert.deepEqual([noMethod.status, noMethod.message], [12, "unknown method Nope for service etcdserverpb.KV"]);

  // Compressed requests: gzip is inflated; a flag with no encoding, or an
  // encoding the server lacks, gets grpc-go's error.
  const body = T("etcdserverpb.PutRequest").encode({ key: Buffer.from("gz"), value: Buffer.from("zipped") }).finish();
  const gz = await call(session, "/etcdserverpb.KV/Put", frame(gzipSync(body), true), { "grpc-encoding": "gzip" });
  assert.equal(gz.status, 0, gz.message);
  assert.deepEqual(kvs(await call(session, "/etcdserverpb.KV/Range", range("gz"))), [["gz", "zipped"]]);
  const flagOnly = await call(session, "/etcdserverpb.KV/Put", frame(body, true));
  assert.deepEqual([flagOnly.status, flagOnly.message], [13, "grpc: compressed flag set with identity or empty encoding"]);
  const snappy = await call(session, "/etcdserverpb.KV/Put", frame(body, true), { "grpc-encoding": "snappy" });
  assert.deepEqual([snappy.status, snappy.message], [12, 'grpc: Decompressor is not installed for grpc-encoding "snappy"']);
  // A gzip bomb stops at the limit.
  const bomb = T("etcdserverpb.PutRequest").encode({ key: Buffer.from("b"), value: Buffer.alloc(3 << 20) }).finish();
  const bombed = await call(session, "/etcdserverpb.KV/Put", frame(gzipSync(bomb), true), { "grpc-encoding": "gzip" });
  assert.equal(bombed.status, 8, bombed.message);

  // Over etcd's 2 MiB receive limit: its message, and nothing written.
  const big = put("big", Buffer.alloc(2.5 * 1024 * 1024, 1));
  const tooBig = await call(session, "/etcdserverpb.KV/Put", big);
  assert.deepEqual([tooBig.status, tooBig.message], [8, `grpc: received message larger than max (${big.length - 5} vs. 2097152)`]);
  assert.deepEqual(kvs(await call(session, "/etcdserverpb.KV/Range", range("big"))), []);

  // A deadline: a Lock that must wait ends with etcd's answer, on time.
  const grant = async () => {
    const r = await call(session, "/etcdserverpb.Lease/LeaseGrant", frame(T("etcdserverpb.LeaseGrantRequest").encode({ TTL: 60 }).finish()));
    return T("etcdserverpb.LeaseGrantResponse").decode(r.messages[0]).ID;
  };
  const lock = async (leaseId, headers) =>
    call(session, "/v3lockpb.Lock/Lock", frame(T("v3lockpb.LockRequest").encode({ name: Buffer.from("held"), lease: leaseId }).finish()), headers);
  const held = await lock(await grant());
  assert.equal(held.status, 0);
  const t0 = performance.now();
  const late = await lock(await grant(), { "grpc-timeout": "300m" });
  const took = performance.now() - t0;
  assert.deepEqual([late.status, late.message], [2, "context deadline exceeded"]);
  assert.ok(took >= 250 && took < 3000, `the deadline took ${took} ms`);

  // grpc-go's :authority for `etcdctl endpoint status`: a whole URL.
  const url = await call(session, "/etcdserverpb.KV/Range", range("a"), { ":authority": edge.url });
  assert.equal(url.status, 0, url.message);
  assert.deepEqual(kvs(url), [["a", "1"]]);

  assert.deepEqual(kvs(await call(session, "/etcdserverpb.KV/Range", range("a"))), [["a", "1"]]);
});

// What a client with a deadline sees depends on whose timer fires first, its
// own or the server's: the server's answer is compared here, with a client
// that has no timer of its own.
test("gRPC transport: a call that waits past its grpc-timeout ends with etcd's status and message", async (t) => {
  const answers = [];
  for (const side of [await startEtcd(t), await startEdge(t)]) {
    const session = http2Connect(side.url);
    t.after(() => session.destroy());
    const unary = async (path, type, req) => call(session, path, frame(T(type).encode(req).finish()));
    const grant = async () => T("etcdserverpb.LeaseGrantResponse").decode((await unary("/etcdserverpb.Lease/LeaseGrant", "etcdserverpb.LeaseGrantRequest", { TTL: 60 })).messages[0]).ID;
    const [l1, l2] = [await grant(), await grant()];
    // An open stream: what it got until the server ended it, and how.
    const open = (path, type, req) =>
      within(
        new Promise((ok, fail) => {
          const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "grpc-timeout": "300m" });
          let got = 0;
          s.on("data", () => got++);
          s.on("trailers", (tr) => ok([path, Number(tr["grpc-status"]), decodeURIComponent(tr["grpc-message"] ?? ""), got > 0]));
          s.on("error", fail);
          s.write(frame(T(type).encode(req).finish()));
        }),
        5000,
        path,
      );
    const late = async (path, type, req) => {
      const t0 = performance.now();
      const r = await call(session, path, frame(T(type).encode(req).finish()), { "grpc-timeout": "300m" });
      const took = performance.now() - t0;
      assert.ok(took >= 250 && took < 3000, `${path}: the deadline took ${took} ms`);
      return [path, r.status, r.message, r.messages.length];
    };
    const lock = { name: Buffer.from("q"), lease: l1 };
    await unary("/v3lockpb.Lock/Lock", "v3lockpb.LockRequest", lock);
    const campaign = { name: Buffer.from("e"), lease: l1, value: Buffer.from("a") };
    await unary("/v3electionpb.Election/Campaign", "v3electionpb.CampaignRequest", campaign);
    answers.push([
      await late("/v3lockpb.Lock/Lock", "v3lockpb.LockRequest", { ...lock, lease: l2 }),
      await late("/v3electionpb.Election/Campaign", "v3electionpb.CampaignRequest", { ...campaign, lease: l2 }),
      await open("/etcdserverpb.Watch/Watch", "etcdserverpb.WatchRequest", { create_request: { key: Buffer.from("w") } }),
      await open("/etcdserverpb.Lease/LeaseKeepAlive", "etcdserverpb.LeaseKeepAliveRequest", { ID: l1 }),
      await open("/v3electionpb.Election/Observe", "v3electionpb.LeaderRequest", { name: Buffer.from("e") }),
    ]);
  }
  // For Watch and LeaseKeepAlive etcd's answer is a race between its
  // handler's context error (Unknown, ~70% of runs here) and grpc-go's own
  // DeadlineExceeded; edge-lease gives the first. The rest is always the same.
  const [etcdAnswers, edgeAnswers] = answers;
  for (const [i, a] of etcdAnswers.entries()) {
    if (a[0].endsWith("/Watch") || a[0].endsWith("/LeaseKeepAlive")) {
      assert.ok(a[1] === 4 || (a[1] === 2 && a[2] === "context deadline exceeded"), `etcd: ${JSON.stringify(a)}`);
      assert.deepEqual(edgeAnswers[i], [a[0], 2, "context deadline exceeded", a[3]]);
    } else assert.deepEqual(edgeAnswers[i], a);
  }
  assert.deepEqual(etcdAnswers[0].slice(1), [2, "context deadline exceeded", 0]);
});

test("gRPC transport: a request that is not gRPC is reset with PROTOCOL_ERROR, as etcd 3.4 does", async (t) => {
  for (const side of [await startEtcd(t), await startEdge(t)]) {
    const session = http2Connect(side.url);
    session.on("error", () => {});
    const json = await within(
      new Promise((ok) => {
        const s = session.request({ ":method": "POST", ":path": "/etcdserverpb.KV/Range", "content-type": "application/json" });
        s.on("error", () => {});
        s.on("close", () => ok(s.rstCode));
        s.end("{}");
      }),
      5_000,
      "the reset",
    );
    session.close();
    assert.equal(json, 1, side.url); // NGHTTP2_PROTOCOL_ERROR
  }
});

// Raw HTTP/2 bytes to the server: what comes back until it closes.
function rawExchange(port, bytes, ms = 5_000) {
  return within(
    new Promise((ok) => {
      const s = netConnect(Number(port), "127.0.0.1", () => s.write(bytes));
      let got = Buffer.alloc(0);
      s.on("data", (d) => (got = Buffer.concat([got, d])));
      s.on("close", () => ok(got));
      s.on("error", () => {});
    }),
    ms,
    "the connection to close",
  );
}

// The frames in `bytes`: [type, payload].
function frames(bytes) {
  const out = [];
  for (let at = 0; at + 9 <= bytes.length; at += 9 + bytes.readUIntBE(at, 3)) out.push([bytes[at + 3], bytes.subarray(at + 9, at + 9 + bytes.readUIntBE(at, 3))]);
  return out;
}

const h2frame = (type, flags, stream, payload) => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, Buffer.from(payload)]);
};
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

test("gRPC transport: a header block that decodes huge is refused at once, not expanded", async (t) => {
  const edge = await startEdge(t);
  const { port } = new URL(edge.url);
  // One ~4 KB entry into the client's table, then 16 KB of one-byte
  // references to it in CONTINUATION frames: a gigabyte once decoded.
  const block = [0x40, 0x01, 0x78, 0x7f];
  let n = 4000 - 127;
  while (n >= 128) (block.push((n % 128) | 0x80), (n = Math.floor(n / 128)));
  block.push(n, ...Buffer.alloc(4000, 0x76));
  while (block.length < 16384) block.push(0xbe);
  const parts = [PREFACE, h2frame(4, 0, 0, []), h2frame(1, 0, 1, block)];
  for (let i = 0; i < 15; i++) parts.push(h2frame(9, i === 14 ? 4 : 0, 1, Buffer.alloc(16384, 0xbe)));
  const t0 = performance.now();
  const back = frames(await rawExchange(port, Buffer.concat(parts)));
  const goaway = back.find(([type]) => type === 7);
  assert.ok(goaway, `frames: ${back.map(([type]) => type)}`);
  // h2's answer to a header list past 4 times SETTINGS_MAX_HEADER_LIST_SIZE
  // (COMPRESSION_ERROR from the re-encoder that was in front of h2 before).
  assert.equal(goaway[1].readUInt32BE(4), 11, "ENHANCE_YOUR_CALM");
  assert.ok(performance.now() - t0 < 2_000, `took ${performance.now() - t0} ms`);
  const session = http2Session(t, edge.url);
  assert.equal((await call(session, "/etcdserverpb.KV/Range", range("a"))).status, 0);
});

test("gRPC transport: broken header compression ends that connection only", async (t) => {
  const edge = await startEdge(t);
  const { port } = new URL(edge.url);
  // The preface, an empty SETTINGS, then HEADERS whose block indexes past
  // the HPACK table (index 126: neither static nor dynamic).
  const bytes = Buffer.concat([
    PREFACE,
    h2frame(4, 0, 0, []),
    h2frame(1, 0x5, 1, [0xfe]),
  ]);
  // The server's SETTINGS, then GOAWAY: h2 says PROTOCOL_ERROR for a block
  // that does not decode (RFC 9113 4.3, and etcd's grpc-go, say
  // COMPRESSION_ERROR; either way the connection is over).
  const back = frames(await rawExchange(port, bytes));
  const goaway = back.find(([type]) => type === 7);
  assert.ok(goaway, `frames: ${back.map(([type]) => type)}`);
  assert.equal(goaway[1].readUInt32BE(4), 1, "PROTOCOL_ERROR");
  const session = http2Session(t, edge.url);
  assert.equal((await call(session, "/etcdserverpb.KV/Range", range("a"))).status, 0);
});

test("gRPC transport: a client that sends and never reads holds the server's memory to its open calls", async (t) => {
  // 20 calls open at once per connection: what may wait unsent is 20 answers.
  const edge = await startEdge(t, { args: ["--max-concurrent-streams", "20"] });
  const { port } = new URL(edge.url);
  const value = Buffer.alloc(200 * 1024, 0x61);
  assert.equal((await call(http2Session(t, edge.url), "/etcdserverpb.KV/Put", put("big", value))).status, 0);
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${edge.child.pid}/status`, "utf8"))[1]) * 1024;
  const before = rss();
  // Headers as literals (no table), a window as large as HTTP/2 allows, and
  // then Range after Range of the 200 kB value, never reading an answer:
  // 12000 of them (120 waves; at most 20 open at once, the rest refused).
  const lit = (n, v) => [0, n.length, ...Buffer.from(n), v.length, ...Buffer.from(v)];
  const headers = [...lit(":method", "POST"), ...lit(":scheme", "http"), ...lit(":path", "/etcdserverpb.KV/Range"), ...lit(":authority", "x"), ...lit("content-type", "application/grpc")];
  const settings = Buffer.alloc(6);
  settings.writeUInt16BE(4, 0);
  settings.writeUInt32BE(0x7fffffff, 2);
  const grow = Buffer.alloc(4);
  grow.writeUInt32BE(0x7fffffff - 65535, 0);
  const s = netConnect(Number(port), "127.0.0.1");
  s.on("error", () => {});
  s.pause();
  t.after(() => s.destroy());
  s.write(Buffer.concat([PREFACE, h2frame(4, 0, 0, settings), h2frame(8, 0, 0, grow)]));
  let id = 1;
  for (let wave = 0; wave < 120; wave++) {
    const parts = [];
    for (let i = 0; i < 100; i++, id += 2) parts.push(h2frame(1, 4, id, headers), h2frame(0, 1, id, range("big")));
    s.write(Buffer.concat(parts));
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));
  const grew = rss() - before;
  // 20 answers of 200 kB and the buffers: it stays near 30-50 MB, where
  // it grew with every wave before (~190 MB by the end).
  t.diagnostic(`grew ${(grew / 1048576).toFixed(0)} MB`);
  assert.ok(grew < 100 * 1024 * 1024, `the server grew by ${(grew / 1048576).toFixed(0)} MB`);
  // And it serves everyone else meanwhile.
  assert.equal((await call(http2Session(t, edge.url), "/etcdserverpb.KV/Range", range("a"))).status, 0);
});

function http2Session(t, url) {
  const session = http2Connect(url);
  session.on("error", () => {});
  t.after(() => session.close());
  return session;
}
