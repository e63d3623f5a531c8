// A call whose deadline has passed when its request arrives
// (`grpc-timeout: 1n`), on a real etcd 3.4 and on edge-lease over raw
// HTTP/2. grpc-go reads the request under the call's context: when it sees
// the context done first it answers DeadlineExceeded and no handler runs;
// otherwise etcd's handler runs with a done context and answers Unknown
// "context deadline exceeded", its proposal racing the context (measured:
// about half of those writes are applied). edge-lease always takes the
// first path. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:http2";
import { startBoth } from "./harness.mjs";
import { grpcFrame, rawCall } from "./grpc-client.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";

const root = loadRoot();
const frame = (type, o) => grpcFrame(Buffer.from(root.lookupType(type).encode(root.lookupType(type).fromObject(o)).finish()));
const decode = (type, bytes) => root.lookupType(type).toObject(root.lookupType(type).decode(bytes), { longs: String, bytes: String });
const PASSED = { "grpc-timeout": "1n" };
const N = 10;

async function side(t, url) {
  const session = connect(url);
  t.after(() => session.destroy());
  const answers = { put: [], range: [], grant: [] };
  for (let i = 0; i < N; i++) {
    const put = await rawCall(session, "/etcdserverpb.KV/Put", frame("etcdserverpb.PutRequest", { key: Buffer.from(`k${i}`), value: Buffer.from("v") }), PASSED);
    answers.put.push([put.status, put.message]);
    const range = await rawCall(session, "/etcdserverpb.KV/Range", frame("etcdserverpb.RangeRequest", { key: Buffer.from("k0") }), PASSED);
    answers.range.push([range.status, range.message]);
    const grant = await rawCall(session, "/etcdserverpb.Lease/LeaseGrant", frame("etcdserverpb.LeaseGrantRequest", { TTL: 60 }), PASSED);
    answers.grant.push([grant.status, grant.message]);
  }
  // What was written, read with no deadline.
  const all = await rawCall(session, "/etcdserverpb.KV/Range", frame("etcdserverpb.RangeRequest", { key: Buffer.from([0]), range_end: Buffer.from([0]) }));
  const keys = (decode("etcdserverpb.RangeResponse", all.messages[0]).kvs ?? []).map((kv) => Buffer.from(kv.key, "base64").toString());
  const leases = await rawCall(session, "/etcdserverpb.Lease/LeaseLeases", frame("etcdserverpb.LeaseLeasesRequest", {}));
  const granted = (decode("etcdserverpb.LeaseLeasesResponse", leases.messages[0]).leases ?? []).length;
  return { answers, keys, granted };
}

test("a call whose deadline passed before its request came never runs (grpc-timeout: 1n)", async (t) => {
  const both = await startBoth(t);
  const etcd = await side(t, both.etcd.url);
  const edge = await side(t, both.edge.url);

  const deadlineExceeded = [4, "context deadline exceeded"];
  const handlerSawIt = [2, "context deadline exceeded"];
  // etcd: only these two answers, for a write and a read alike; a write is
  // applied only when its handler ran (never under DeadlineExceeded).
  for (const [method, list] of Object.entries(etcd.answers)) {
    for (const a of list) assert.ok([deadlineExceeded, handlerSawIt].some((x) => x[0] === a[0] && x[1] === a[1]), `etcd ${method}: ${a}`);
  }
  for (const key of etcd.keys) assert.deepEqual(etcd.answers.put[Number(key.slice(1))], handlerSawIt, `etcd applied ${key}`);
  assert.ok(etcd.granted <= etcd.answers.grant.filter((a) => a[0] === 2).length);

  // edge-lease: grpc-go's DeadlineExceeded every time, and nothing applied.
  for (const list of Object.values(edge.answers)) assert.deepEqual(list, Array(N).fill(deadlineExceeded));
  assert.deepEqual(edge.keys, []);
  assert.equal(edge.granted, 0);
});
