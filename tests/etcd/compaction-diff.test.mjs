// A compaction big enough to be swept in several steps, against a real etcd
// 3.4: the same writes to both, then a compaction that is not physical and,
// at once (either's deletes may still be under way), the same HashKV, reads
// at and after the point, the compacted error before it, and a watch from
// the point with prev kvs; then a physical one and the same again. Only cluster/member ids and raft terms
// are dropped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth } from "./harness.mjs";
import { connect, norm, settle } from "./grpc-client.mjs";
import { SWEEP_STEP } from "../../js/sweep.js";

const B = (s) => Buffer.from(s);
const KEYS = 128;

test("a compaction swept in steps reads, hashes and replays as etcd's", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const sides = [etcd, edge].map((s) => ({ c: connect(t, s.url) }));
  // Each txn puts every key (128 versions); every 20th deletes a tenth of
  // them first (deletions at and before the point drop too).
  const txns = Math.ceil((3 * SWEEP_STEP) / KEYS);
  const key = (i) => B(`k/${String(i).padStart(3, "0")}`);
  for (const { c } of sides) {
    for (let n = 0; n < txns; n++) {
      const success = Array.from({ length: KEYS }, (_, i) => ({ request_put: { key: key(i), value: B(`v${n}.${i}`) } }));
      if (n % 20 === 19) success.unshift({ request_delete_range: { key: B("k/01"), range_end: B("k/02") } });
      const r = await c.kv("Txn", { success: n % 20 === 19 ? [success.shift()] : success });
      assert.ok(r.header, JSON.stringify(r));
      if (n % 20 === 19) assert.ok((await c.kv("Txn", { success })).header);
    }
  }
  const all = { key: B("k/"), range_end: B("k0") };
  const compare = async (what, calls) => {
    const got = [];
    for (const { c } of sides) got.push(await calls(c));
    assert.deepEqual(norm(got[1]), norm(got[0]), what);
  };
  const views = (point) => async (c) => {
    const rev = Number((await c.kv("Range", { key: B("k/000") })).header.revision);
    const out = {};
    for (const at of [point, point + 1, Math.floor((point + rev) / 2), rev]) {
      out[`hash ${at}`] = await c.maintenance("HashKV", { revision: at });
      out[`range ${at}`] = await c.kv("Range", { ...all, revision: at });
      out[`count ${at}`] = await c.kv("Range", { ...all, revision: at, count_only: true });
    }
    out.before = await c.kv("Range", { ...all, revision: point - 1 });
    return out;
  };
  const watchFrom = async (point, least) => {
    const streams = sides.map(({ c }) => c.watch());
    for (const s of streams) s.write({ create_request: { ...all, start_revision: point, prev_kv: true } });
    const eventsOf = (s) => s.messages.reduce((n, m) => n + (m.events?.length ?? 0), 0);
    // etcd moves a watcher from a past revision into sync on a 100 ms tick,
    // later on a loaded machine: wait for the least expected, then quiet.
    await settle(streams, 300, 15_000, { until: () => streams.every((s) => eventsOf(s) >= least) });
    const events = streams.map((s) => norm(s.messages).flatMap((m) => m.events ?? []));
    assert.ok(events[0].length >= least, `${events[0].length} events`);
    assert.deepEqual(events[1], events[0], `watch from ${point}`);
    for (const s of streams) s.close();
  };

  const rev = Number((await sides[0].c.kv("Range", { key: B("k/000") })).header.revision);
  const point = rev - Math.floor(txns / 3);
  await compare("compact", (c) => c.kv("Compact", { revision: point }));
  await compare("after compacting", views(point));
  await watchFrom(point, (rev - point - 2) * KEYS);

  const second = rev - 3;
  await compare("physical compact", (c) => c.kv("Compact", { revision: second, physical: true }));
  await compare("after the physical one", views(second));
  await watchFrom(second, 3 * KEYS);
});
