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
import { startEdge } from "../etcd/harness.mjs";
import { loadRoot } from "../../server/proto/load.mjs";
import { within } from "../etcd/grpc-client.mjs";

const root = loadRoot();
const T = (name) => root.lookupType(name);

function frame(bytes, compressed = false) {
  const out = Buffer.alloc(5 + bytes.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** One call on `session`: its response headers, trailers and messages. */
function call(session, path, body, headers = {}) {
  return within(
    new Promise((ok, fail) => {
      const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
      const chunks = [];
      let head = {};
      let trailers = {};
      s.on("response", (h) => (head = h));
      s.on("trailers", (t) => (trailers = t));
      s.on("data", (d) => chunks.push(d));
      s.on("error", fail);
      s.on("close", () => {
        const all = Buffer.concat(chunks);
        const messages = [];
        for (let at = 0; at + 5 <= all.length; at += 5 + all.readUInt32BE(at + 1)) messages.push(all.subarray(at + 5, at + 5 + all.readUInt32BE(at + 1)));
        const status = trailers["grpc-status"] ?? head["grpc-status"];
        const message = decodeURIComponent(trailers["grpc-message"] ?? head["grpc-message"] ?? "");
        ok({ head, status: status === undefined ? undefined : Number(status), message, messages, rst: s.rstCode });
      });
      s.end(body);
    }),
    10_000,
    path,
  );
}

const put = (key, value) => frame(T("etcdserverpb.PutRequest").encode({ key: Buffer.from(key), value }).finish());
const range = (key) => frame(T("etcdserverpb.RangeRequest").encode({ key: Buffer.from(key) }).finish());
const kvs = (res) => T("etcdserverpb.RangeResponse").decode(res.messages[0]).kvs.map((kv) => [kv.key.toString(), kv.value.toString()]);

test("gRPC transport: grpc-go's answers, etcd's size limit, compression, deadlines, authority", async (t) => {
  const edge = await startEdge(t);
  const session = http2Connect(edge.url);
  session.on("error", () => {});
  t.after(() => session.close());

  const ok = await call(session, "/etcdserverpb.KV/Put", put("a", Buffer.from("1")));
  assert.equal(ok.status, 0);
  assert.equal(ok.head["content-type"], "application/grpc");

  // Paths with no method, as grpc-go words them.
  const noService = await call(session, "/etcdserverpb.Nope/Range", range("a"));
  assert.deepEqual([noService.status, noService.message], [12, "unknown service etcdserverpb.Nope"]);
  const noMethod = await call(session, "/etcdserverpb.KV/Nope", range("a"));
  assert.deepEqual([noMethod.status, noMethod.message], [12, "unknown method Nope for service etcdserverpb.KV"]);

  // Not gRPC: HTTP 415, as grpc-go.
  const json = await call(session, "/etcdserverpb.KV/Range", "{}", { "content-type": "application/json" });
  assert.equal(json.head[":status"], 415);

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

  // A deadline: a Lock that must wait ends with DeadlineExceeded, on time.
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
  assert.deepEqual([late.status, late.message], [4, "Deadline exceeded"]);
  assert.ok(took >= 250 && took < 3000, `the deadline took ${took} ms`);

  // grpc-go's :authority for `etcdctl endpoint status`: a whole URL.
  const url = await call(session, "/etcdserverpb.KV/Range", range("a"), { ":authority": edge.url });
  assert.equal(url.status, 0, url.message);
  assert.deepEqual(kvs(url), [["a", "1"]]);

  assert.deepEqual(kvs(await call(session, "/etcdserverpb.KV/Range", range("a"))), [["a", "1"]]);
});

test("gRPC transport: broken header compression ends that connection only", async (t) => {
  const edge = await startEdge(t);
  const { port } = new URL(edge.url);
  // The preface, an empty SETTINGS, then HEADERS whose block indexes past
  // the HPACK table (index 126: neither static nor dynamic).
  const bytes = Buffer.concat([
    Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
    Buffer.from([0, 0, 1, 1, 0x5, 0, 0, 0, 1, 0xfe]),
  ]);
  const closed = await within(
    new Promise((ok) => {
      const s = netConnect(Number(port), "127.0.0.1", () => s.write(bytes));
      let got = Buffer.alloc(0);
      s.on("data", (d) => (got = Buffer.concat([got, d])));
      s.on("close", () => ok(got));
      s.on("error", () => {});
    }),
    5_000,
    "the connection to close",
  );
  // The server's SETTINGS, then GOAWAY (type 7).
  const types = [];
  for (let at = 0; at + 9 <= closed.length; at += 9 + closed.readUIntBE(at, 3)) types.push(closed[at + 3]);
  assert.ok(types.includes(7), `frames: ${types}`);
  const session = http2Connect(edge.url);
  session.on("error", () => {});
  t.after(() => session.close());
  assert.equal((await call(session, "/etcdserverpb.KV/Range", range("a"))).status, 0);
});
