// Big answers against a real etcd 3.4 and edge-lease: a Range of several
// MiB through the JSON gateway (edge-lease sends it as it is encoded, in
// chunks) answers the same JSON, and back-to-back large gRPC answers on one
// connection stay fast (Nagle's algorithm on the port's relay once held
// HTTP/2 window updates back: 1 MB/s). Maintenance Status reports dbSize
// without walking the data.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, post, b64 } from "./harness.mjs";
import { connect } from "./grpc-client.mjs";


test("big answers: a multi-MiB range on the gateway and on gRPC, Status dbSize", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const value = b64("v".repeat(100 * 1024));
  const answers = [];
  for (const side of [etcd, edge]) {
    for (let i = 0; i < 60; i++) await post(side.url, "/v3/kv/put", { key: b64(`big/${String(i).padStart(3, "0")}`), value });
    const res = await fetch(side.url + "/v3/kv/range", { method: "POST", body: JSON.stringify({ key: b64("big/"), range_end: b64("big0") }) });
    const text = await res.text();
    const body = JSON.parse(text);
    for (const k of ["cluster_id", "member_id", "raft_term"]) delete body.header[k];
    // Values compared by whether they are the one written (short messages on failure).
    for (const kv of body.kvs) kv.value = kv.value === value ? "<value>" : kv.value.length;
    answers.push({ status: res.status, body, size: text.length > 6_000_000 });
    if (side === edge) assert.equal(res.headers.get("transfer-encoding"), "chunked");

    const c = connect(t, side.url);
    const started = Date.now();
    for (let k = 0; k < 3; k++) {
      const r = await c.kv("Range", { key: Buffer.from("big/"), range_end: Buffer.from("big0") });
      assert.equal(r.kvs.length, 60);
    }
    assert.ok(Date.now() - started < 8000, `${side.name}: three 6 MiB gRPC answers took ${Date.now() - started} ms`);
  }
  assert.deepEqual(answers[1], answers[0]);

  const status = await post(edge.url, "/v3/maintenance/status", {});
  assert.ok(Number(status.body.dbSize) > 60 * 100 * 1024, status.body.dbSize);
  // (On disk: the journal, with its record headers and the deletes.)
  assert.ok(Number(status.body.dbSizeInUse) > 60 * 100 * 1024 && Number(status.body.dbSizeInUse) <= Number(status.body.dbSize), status.body.dbSizeInUse);
});
