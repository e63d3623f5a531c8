// Nested Txns on a real etcd 3.4 and on edge-lease, over gRPC (raw HTTP/2)
// and the JSON gateway: etcd reads any depth and gives each nested Txn the
// --max-txn-ops budget (128) its ancestors left, so a Txn 128 deep is
// applied and a deeper one refused "too many operations in txn request".
// (protobufjs's and the gateway's nesting limits used to refuse one 50
// deep.) Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:http2";
import { startBoth, post } from "./harness.mjs";
import { grpcFrame, norm, rawCall } from "./grpc-client.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";

const root = loadRoot();
const Req = root.lookupType("etcdserverpb.TxnRequest");
const Res = root.lookupType("etcdserverpb.TxnResponse");
const DEPTHS = [1, 50, 64, 100, 128, 129, 200, 1000];

// A Txn `depth` deep whose innermost one puts `key` (`b` makes bytes).
function nested(depth, key, b) {
  let txn = { success: [{ request_put: { key: b(key), value: b("v") } }] };
  for (let i = 1; i < depth; i++) txn = { success: [{ request_txn: txn }] };
  return txn;
}

// The innermost response of a Txn answer (plain object), and its depth.
function innermost(res) {
  let depth = 1;
  while (res.responses?.[0]?.response_txn) [res, depth] = [res.responses[0].response_txn, depth + 1];
  return { depth, responses: res.responses };
}

// (protobufjs's writer, like its reader, counts nesting: a 1000-deep
// request is written by hand, each level wrapping the one inside.)
function encode(depth, key) {
  let bytes = Buffer.from(Req.encode(Req.fromObject(nested(1, key, Buffer.from))).finish());
  const wrap = (field, inner) => Buffer.concat([Buffer.from([(field << 3) | 2]), varint(inner.length), inner]);
  for (let i = 1; i < depth; i++) bytes = wrap(2, wrap(4, bytes)); // TxnRequest.success, RequestOp.request_txn
  return bytes;
}
function varint(n) {
  const out = [];
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  out.push(n);
  return Buffer.from(out);
}

async function side(t, url) {
  const session = connect(url);
  t.after(() => session.destroy());
  const out = [];
  for (const depth of DEPTHS) {
    const r = await rawCall(session, "/etcdserverpb.KV/Txn", grpcFrame(encode(depth, `g${depth}`)));
    const grpc = r.status === 0 ? innermost(Res.toObject(Res.decode(r.messages[0]), { longs: String, bytes: String })) : [r.status, r.message];
    const b64 = (s) => Buffer.from(s).toString("base64");
    const g = await post(url, "/v3/kv/txn", nested(depth, `j${depth}`, b64));
    const gateway = g.status === 200 ? innermost(g.body) : [g.status, g.body];
    out.push({ depth, grpc, gateway });
  }
  const keys = await post(url, "/v3/kv/range", { key: "AA==", range_end: "AA==", keys_only: true });
  return { out: norm(out), keys: keys.body.kvs.map((kv) => Buffer.from(kv.key, "base64").toString()).sort() };
}

test("Txns nested up to etcd's op budget are applied, deeper ones refused as etcd does", async (t) => {
  const both = await startBoth(t);
  const etcd = await side(t, both.etcd.url);
  const edge = await side(t, both.edge.url);
  assert.deepEqual(edge, etcd);
  // What etcd answered (so the comparison is of something).
  const tooMany = "etcdserver: too many operations in txn request";
  for (const { depth, grpc, gateway } of etcd.out) {
    if (depth <= 128) {
      assert.equal(grpc.depth, depth);
      assert.equal(gateway.depth, depth);
    } else {
      assert.deepEqual(grpc, [3, tooMany]);
      assert.deepEqual(gateway, [400, { error: tooMany, message: tooMany, code: 3 }]);
    }
  }
  assert.deepEqual(etcd.keys, ["g1", "g100", "g128", "g50", "g64", "j1", "j100", "j128", "j50", "j64"]);
});
