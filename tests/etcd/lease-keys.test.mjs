// LeaseTimeToLive with keys that are not UTF-8: etcd gives the key bytes
// back as they were put; so must edge-lease (its timeToLive keys went
// through strings, which garbled such keys).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, post } from "./harness.mjs";

test("LeaseTimeToLive returns attached keys byte for byte, on both", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const keys = [Buffer.from([0xff, 0x00, 0x61]), Buffer.from("plain"), Buffer.from([0xc3, 0x28])];
  const out = [];
  for (const side of [etcd, edge]) {
    const g = await post(side.url, "/v3/lease/grant", { TTL: 60 });
    for (const k of keys) {
      const r = await post(side.url, "/v3/kv/put", { key: k.toString("base64"), value: "dg==", lease: g.body.ID });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const ttl = await post(side.url, "/v3/lease/timetolive", { ID: g.body.ID, keys: true });
    out.push(ttl.body.keys.map((k) => [...Buffer.from(k, "base64")]));
  }
  // etcd lists a lease's keys from a Go map (any order): compare as sets.
  const asSet = (list) => new Set(list.map(String));
  assert.deepEqual(asSet(out[1]), asSet(out[0]));
  assert.deepEqual(asSet(out[0]), asSet(keys.map((k) => [...k])));
});
