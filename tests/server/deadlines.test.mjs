// A unary call whose grpc-timeout passes while it waits for the disk ends
// with etcd 3.4's answer for its method (etcd/methods.mjs):
// measured on etcd 3.4.23 with its fsync slowed under strace (a write
// proposed to raft: Unavailable "etcdserver: request timed out"; a read
// waiting for its read index: Unknown "context deadline exceeded"; Status,
// MemberList, LeaseLeases, LeaseTimeToLive and HashKV answered whatever the
// deadline). Here the disk is a store that holds its writes until the test
// lets them go; the server is the real gRPC transport on a loopback socket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { grpcFrame, rawCall } from "../etcd/grpc-client.mjs";
import { grpcOnLoopback } from "./loopback.mjs";

const root = loadRoot();
const B = (s) => Buffer.from(s);
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };

/** One call: [grpc-status, grpc-message] once it ends (bounded); no `type`: headers only, no request. */
async function call(session, path, type, req, timeout) {
  const body = type ? grpcFrame(root.lookupType(type).encode(req).finish()) : null;
  const r = await rawCall(session, path, body, timeout ? { "grpc-timeout": timeout } : {});
  return [r.status, r.message];
}

test("gRPC deadlines while the disk holds a write: etcd's answer per method; what etcd answers without raft goes on", async (t) => {
  const held = [];
  const lessor = new Lessor({ storage: { pipelined: true, write: () => new Promise((resolve) => held.push(resolve)) }, autoTick: false });
  const session = (await grpcOnLoopback(t, createServices({ lessor, member }))).connect();

  // Nothing held yet: answered at once, deadline or not.
  assert.deepEqual(await call(session, "/etcdserverpb.KV/Range", "etcdserverpb.RangeRequest", { key: B("a") }, "200m"), [0, ""]);
  const lease = lessor.grant(60).id;
  held.shift()();
  const leaseId = BigInt("0x" + lease).toString();

  // A write held on the disk (once it is there): every answer now waits for it.
  const first = call(session, "/etcdserverpb.KV/Put", "etcdserverpb.PutRequest", { key: B("a"), value: B("1") }, "200m");
  for (let i = 0; i < 200 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(held.length, 1, "the put reached the disk");
  const t0 = performance.now();
  const status = call(session, "/etcdserverpb.Maintenance/Status", "etcdserverpb.StatusRequest", {}, "200m");
  // A serializable read does not wait for a read index on etcd: it goes on.
  const serializable = call(session, "/etcdserverpb.KV/Range", "etcdserverpb.RangeRequest", { key: B("a"), serializable: true }, "200m");
  const ttl = call(session, "/etcdserverpb.Lease/LeaseTimeToLive", "etcdserverpb.LeaseTimeToLiveRequest", { ID: leaseId }, "200m");
  const answers = await Promise.all([
    first,
    call(session, "/etcdserverpb.KV/DeleteRange", "etcdserverpb.DeleteRangeRequest", { key: B("z") }, "200m"),
    call(session, "/etcdserverpb.Lease/LeaseGrant", "etcdserverpb.LeaseGrantRequest", { TTL: 60 }, "200m"),
    call(session, "/etcdserverpb.KV/Range", "etcdserverpb.RangeRequest", { key: B("a") }, "200m"),
    call(session, "/etcdserverpb.KV/Txn", "etcdserverpb.TxnRequest", { success: [{ request_range: { key: B("a") } }] }, "200m"),
    call(session, "/etcdserverpb.KV/Txn", "etcdserverpb.TxnRequest", { success: [{ request_put: { key: B("b"), value: B("2") } }] }, "200m"),
    // A read-only txn inside a txn goes through raft on etcd: a write.
    call(session, "/etcdserverpb.KV/Txn", "etcdserverpb.TxnRequest", { success: [{ request_txn: { success: [{ request_range: { key: B("a") } }] } }] }, "200m"),
    // No request message at all: grpc-go's own DeadlineExceeded, for a
    // server stream too.
    call(session, "/etcdserverpb.Maintenance/Status", null, null, "200m"),
    call(session, "/v3electionpb.Election/Observe", null, null, "200m"),
  ]);
  const took = performance.now() - t0;
  assert.ok(took >= 150 && took < 3000, `the deadlines took ${took} ms`);
  const timedOut = [14, "etcdserver: request timed out"];
  const context = [2, "context deadline exceeded"];
  const noRequest = [4, "context deadline exceeded"];
  assert.deepEqual(answers, [timedOut, timedOut, timedOut, context, context, timedOut, timedOut, noRequest, noRequest]);

  // Status and LeaseTimeToLive went on past their deadline: answered once
  // the disk lets the writes go.
  const pending = Symbol("pending");
  assert.equal(await Promise.race([status, new Promise((r) => setTimeout(() => r(pending), 100))]), pending);
  while (held.length) held.shift()();
  assert.deepEqual(await status, [0, ""]);
  assert.deepEqual(await serializable, [0, ""]);
  assert.deepEqual(await ttl, [0, ""]);
  // The writes whose callers gave up were made all the same (as on etcd).
  assert.equal(lessor.get("a") !== undefined, true);
});
