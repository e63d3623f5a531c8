// Requests grpc-go refuses before any etcd code runs, on a real etcd 3.4 and
// on edge-lease over raw HTTP/2: a message cut short and a call with no
// message, for unary calls and a server stream. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:http2";
import { startBoth } from "./harness.mjs";
import { grpcFrame, rawCall } from "./grpc-client.mjs";

const call = async (session, path, body) => {
  const r = await rawCall(session, path, body);
  return [r.status, r.message];
};

test("a request cut short and a call with no request message get grpc-go's answers", async (t) => {
  const both = await startBoth(t);
  // Each cut short: a 5-byte key with 1 byte sent; a varint TTL missing its last byte.
  const cut = (b) => grpcFrame(Buffer.from(b));
  const cuts = { "/etcdserverpb.KV/Range": cut([0x0a, 0x05, 0x61]), "/etcdserverpb.Lease/LeaseGrant": cut([0x08, 0x80]), "/v3electionpb.Election/Observe": cut([0x0a, 0x05, 0x61]) };
  const answers = [];
  for (const side of [both.etcd, both.edge]) {
    const session = connect(side.url);
    t.after(() => session.destroy());
    const got = [];
    for (const [path, cut] of Object.entries(cuts)) {
      got.push([path, "cut", await call(session, path, cut)], [path, "none", await call(session, path, Buffer.alloc(0))]);
    }
    answers.push(got);
  }
  assert.deepEqual(answers[1], answers[0]);
  assert.deepEqual(answers[0][0], ["/etcdserverpb.KV/Range", "cut", [13, "grpc: error unmarshalling request: unexpected EOF"]]);
  assert.deepEqual(answers[0][1], ["/etcdserverpb.KV/Range", "none", [2, "EOF"]]);
});
