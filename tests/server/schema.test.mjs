// etcd/proto/schema.mjs (what the JSON gateway knows of the protos) is
// generated from etcd/proto/*.proto: it must be up to date.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { generate } from "../../etcd/proto/gen.mjs";

test("etcd/proto/schema.mjs matches the .proto files", () => {
  const current = readFileSync(new URL("../../etcd/proto/schema.mjs", import.meta.url), "utf8");
  assert.equal(current, generate(), "run: node etcd/proto/gen.mjs");
});

test("requests' 64-bit integers decode to the same decimal strings as long.js gives", async () => {
  const { default: protobuf } = await import("protobufjs");
  const { Long64, loadRoot } = await import("../../etcd/proto/load.mjs");
  const T = loadRoot().lookupType("etcdserverpb.LeaseKeepAliveRequest");
  const U = loadRoot().lookupType("etcdserverpb.MemberRemoveRequest"); // ID is a uint64
  const Base = Object.getPrototypeOf(Long64);
  const cases = ["0", "1", "-1", "4294967295", "4294967296", "-4294967296", "9007199254740993", "-9007199254740993",
    "7587873587878787123", "9223372036854775807", "-9223372036854775808"];
  for (let i = 0; i < 200; i++) cases.push(Base.fromBits((Math.random() * 2 ** 32) | 0, (Math.random() * 2 ** 32) | 0).toString());
  for (const s of cases) {
    const got = T.toObject(T.decode(T.encode({ ID: protobuf.util.Long.fromString(s) }).finish()), { longs: String });
    assert.equal(got.ID ?? "0", s);
    const u = Base.fromString(s).toUnsigned();
    const gotU = U.toObject(U.decode(U.encode({ ID: u }).finish()), { longs: String });
    assert.equal(gotU.ID ?? "0", u.toString());
  }
});

test("encodedSize is the size proto3 puts on the wire: no field at its default but a oneof's, repeated numbers packed", async () => {
  const { encodedSize } = await import("../../etcd/size.mjs");
  const { fromJson } = await import("../../etcd/jsonpb.mjs");
  const size = (type, json) => encodedSize(type, fromJson(type, json));
  assert.equal(size("etcdserverpb.RangeRequest", { key: "", limit: 0, serializable: false, sort_order: "NONE" }), 0);
  assert.equal(size("etcdserverpb.RangeRequest", { key: "YQ==", limit: 1 }), 3 + 2);
  assert.equal(size("etcdserverpb.LeaseGrantRequest", { TTL: 60, ID: "0" }), 2);
  // target VERSION is the enum's 0: left off; version = 0 is a oneof member: written (tag, 0).
  assert.equal(size("etcdserverpb.Compare", { key: "YQ==", target: "VERSION", version: 0 }), 3 + 2);
  assert.equal(size("etcdserverpb.Compare", { key: "YQ==", target: "MOD", mod_revision: 0 }), 3 + 2 + 2);
  // filters [NOPUT, NODELETE]: one tag, a length, two varints, inside create_request (tag, length).
  assert.equal(size("etcdserverpb.WatchRequest", { create_request: { key: "YQ==", filters: ["NOPUT", "NODELETE"] } }), 2 + 3 + 4);
  // A 64-bit id past 2^53, as a decimal string: a 10-byte varint for a negative one.
  assert.equal(size("etcdserverpb.LeaseRevokeRequest", { ID: "-1" }), 1 + 10);
});

test("the gRPC server's codecs are generated ahead, a few types per turn, and encode and decode as those made on first use do", async () => {
  const { loadRoot } = await import("../../etcd/proto/load.mjs");
  const { prepareCodecs } = await import("../../server/grpc.mjs");
  const ahead = loadRoot();
  const lazy = loadRoot();
  // protobufjs makes a type's codec on its first use (an own `decode`
  // then replaces the prototype's setup stub): none is made yet.
  const types = (root) => {
    const out = [];
    const walk = (ns) => ns.nestedArray?.forEach((o) => (o.fieldsArray && out.push(o), walk(o)));
    walk(root);
    return out;
  };
  assert.ok(types(ahead).every((T) => !Object.hasOwn(T, "decode")));
  let turns = 0;
  let counting = true;
  const count = () => counting && (turns++, setImmediate(count));
  setImmediate(count);
  await prepareCodecs(ahead);
  counting = false;
  const missing = types(ahead).filter((T) => !Object.hasOwn(T, "decode") || !Object.hasOwn(T, "encode")).map((T) => T.fullName);
  assert.deepEqual(missing, []);
  assert.ok(turns >= 2, `other work got ${turns} turns while the codecs were made`);
  // The same bytes and objects as codecs made on first use.
  const enc = new TextEncoder();
  const txn = { compare: [{ key: enc.encode("k"), target: 1, create_revision: 0 }], success: [{ request_put: { key: enc.encode("k"), value: enc.encode("v"), lease: 7 } }, { request_range: { key: enc.encode("k/"), range_end: enc.encode("k0"), limit: 1, sort_target: 1 } }] };
  const A = ahead.lookupType("etcdserverpb.TxnRequest");
  const L = lazy.lookupType("etcdserverpb.TxnRequest");
  const a = A.encode(A.fromObject(txn)).finish();
  assert.deepEqual([...a], [...L.encode(L.fromObject(txn)).finish()]);
  assert.deepEqual(A.toObject(A.decode(a), { longs: String, enums: String }), L.toObject(L.decode(a), { longs: String, enums: String }));
});
