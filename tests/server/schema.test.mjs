// server/proto/schema.mjs (what the JSON gateway knows of the protos) is
// generated from server/proto/*.proto: it must be up to date.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { generate } from "../../server/proto/gen.mjs";

test("server/proto/schema.mjs matches the .proto files", () => {
  const current = readFileSync(new URL("../../server/proto/schema.mjs", import.meta.url), "utf8");
  assert.equal(current, generate(), "run: node server/proto/gen.mjs");
});

test("requests' 64-bit integers decode to the same decimal strings as long.js gives", async () => {
  const { default: protobuf } = await import("protobufjs");
  const { Long64, loadRoot } = await import("../../server/proto/load.mjs");
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
