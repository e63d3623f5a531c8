// A WatchResponse's bytes from its events' shared encodings
// (server/watch-wire.mjs): the same bytes protobufjs writes, values of
// every length and 64-bit fields of every range; and, sent as pieces, any
// range of it copies out as the response joined, so the transport's parts,
// cut anywhere, make that message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Pieces, watchResponse } from "../../server/watch-wire.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";

let seed = 7;
const rand = (n) => (seed = (seed * 48271) % 2147483647) % n;
const bytes = (n) => Uint8Array.from({ length: n }, () => rand(256));
const whole = (m) => {
  if (m instanceof Uint8Array) return m;
  const out = new Uint8Array(m.length);
  m.copy(out, 0);
  return out;
};

test("watch events encode as protobufjs encodes them: puts and deletes, prev_kv, values short and long, 64-bit fields", async () => {
  const root = await loadRoot();
  const T = root.lookupType("etcdserverpb.WatchResponse");
  const sizes = [0, 1, 127, 128, 1023, 1024, 4096, 16_383, 16_384, 70_000];
  const ints = [0, 1, 127, 128, 2 ** 31, 2 ** 53 - 1, "9007199254740993", "9223372036854775807", "-1", "-9223372036854775808"];
  const kv = () => ({
    key: bytes(1 + rand(40)),
    create_revision: ints[rand(ints.length)],
    mod_revision: ints[rand(ints.length)],
    version: ints[rand(ints.length)],
    value: bytes(sizes[rand(sizes.length)]),
    lease: String(ints[rand(ints.length)]),
  });
  for (let i = 0; i < 300; i++) {
    const events = Array.from({ length: 1 + rand(4) }, () => {
      const e = { type: rand(2) ? "PUT" : "DELETE", kv: kv() };
      if (rand(2)) e.prev_kv = kv();
      return e;
    });
    // proto3 leaves zero values off the wire, as the server writes them (and Go).
    const set = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => !(v === 0 || v === "0" || v === "PUT" || v?.length === 0)));
    const proto = events.map((e) => ({ ...set(e), kv: set(e.kv), ...(e.prev_kv && { prev_kv: set(e.prev_kv) }) }));
    const want = T.encode(T.fromObject({ events: proto })).finish();
    const got = whole(watchResponse(new Uint8Array(0), new Uint8Array(0), events));
    assert.deepEqual(Buffer.from(got), Buffer.from(want), `case ${i}`);
  }
});

test("a response past 4 KiB is pieces, its long values not copied; a short one is bytes", () => {
  const value = bytes(70_000);
  const event = { type: "PUT", kv: { key: bytes(3), create_revision: 2, mod_revision: 2, version: 1, value, lease: "0" } };
  const big = watchResponse(bytes(10), bytes(2), [event]);
  assert.ok(big instanceof Pieces);
  assert.ok(big.list.includes(value), "the value is one of the pieces, as it is");
  const small = watchResponse(bytes(10), bytes(2), [{ ...event, kv: { ...event.kv, value: bytes(100) } }]);
  assert.ok(small instanceof Uint8Array);
});

test("Pieces: every part size, in order, and ranges out of order copy out the joined bytes", () => {
  // Pieces of lengths 0 to 20,000.
  const list = [12, 0, 3, 1, 127, 128, 300, 16_384, 20_000, 1].map(bytes);
  const joined = Uint8Array.from(list.flatMap((p) => [...p]));
  const msg = new Pieces(list, joined.length);
  for (const part of [1, 2, 3, 7, 64, 1000, 4096, joined.length]) {
    const out = new Uint8Array(joined.length);
    for (let at = 0; at < joined.length; at += part) msg.copy(out.subarray(at, Math.min(at + part, joined.length)), at);
    assert.deepEqual(out, joined, `parts of ${part}`);
  }
  for (let i = 0; i < 2000; i++) {
    const from = rand(joined.length);
    const into = new Uint8Array(1 + rand(Math.min(joined.length - from, 5000)));
    msg.copy(into, from);
    assert.deepEqual(into, joined.subarray(from, from + into.length), `[${from}, +${into.length})`);
  }
});
