// etcd's Compact on the server: answered once the point has moved, or with
// `physical` once the sweep of what it left unreadable is done; reads are
// answered while the sweep runs, and /metrics has each step as one of
// etcd's compaction pauses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { createMetrics, createServiceStats } from "../../etcd/services/metrics.mjs";
import { SWEEP_STEP } from "../../js/sweep.js";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const key = (s) => new TextEncoder().encode(s);
const count = (text, name) => Number(text.match(new RegExp(`^${name}_count (\\d+)`, "m"))?.[1]);

test("Compact answers once the point moved; physical once swept, reads served meanwhile", async (t) => {
  const lessor = new Lessor({ history: Infinity });
  t.after(() => lessor.close());
  const stats = createServiceStats();
  const services = createServices({ lessor, member, stats });
  const metrics = createMetrics({ lessor, member, stats });
  const call = (name, req) => services.get(`etcdserverpb.KV/${name}`)(req, { size: 0 });
  for (let i = 0; i < 3 * SWEEP_STEP; i++) lessor.put(`k/${i % 100}`, `v${i}`);

  // Not physical: answered with the sweep still to come.
  const point = lessor.revision - 2 * SWEEP_STEP;
  await call("Compact", { revision: point });
  assert.equal(lessor.compactRevision, point);
  assert.ok(lessor.compactionPending > 0);
  await lessor.whenCompacted();

  // Physical: answered only once swept; a read made meanwhile is answered
  // before it.
  const order = [];
  const compacted = Promise.resolve(call("Compact", { revision: lessor.revision - 10, physical: true })).then(() => {
    order.push("compact");
    assert.equal(lessor.compactionPending, 0);
  });
  await new Promise((ok) => setTimeout(ok, 0));
  const read = await call("Range", { key: key("k/1") });
  order.push("range");
  assert.equal(read.kvs.length, 1);
  await compacted;
  assert.deepEqual(order, ["range", "compact"]);

  const text = metrics();
  // (etcd observes a pause after each batch of deletes that more follow.)
  assert.ok(count(text, "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds") >= 1, "a pause per sweep step");
  const dropped = Number(text.match(/^etcd_debugging_mvcc_db_compaction_keys_total (\d+)/m)?.[1]);
  assert.equal(dropped, lessor.counts.compacted);
  assert.equal(dropped, 3 * SWEEP_STEP - 100 - 10, "every superseded version but the 10 after the last point");
  assert.equal(count(text, "etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds"), 2);
  assert.equal(count(text, "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds"), 2);
});
