// A lease that expires while the lessor sits idle (no call since, no tick)
// is gone for it, and must stay gone through its snapshot: restore gives a
// stored deadline up to half a TTL of slack, so a snapshot taken with the
// lessor's last-seen time used to bring the old holder back with 4 s
// left. With no store, a synchronous one, and the file store (compactFrom
// reads the lessor through the snapshot cursor, then a reopen). The clock
// is injected.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor } from "edge-lease";
import { FileStore } from "edge-lease/stores/file";

const T0 = 1_700_000_000_000;

// grant(10) and a key on it at T0, a 60 s lease beside it; the clock then
// moves 11 s with no call.
function idleAfterExpiry(opts = {}) {
  const clock = { t: T0 };
  const lessor = new Lessor({ now: () => clock.t, autoTick: false, ...opts });
  const old = lessor.grant(10).id;
  lessor.put("lock", "old holder", { lease: old });
  const keep = lessor.grant(60).id;
  clock.t = T0 + 11_000;
  return { clock, lessor, old, keep };
}

// A lessor restored from `entries` at time `t`.
const restoredAt = (t, entries) => new Lessor({ now: () => t, autoTick: false, restore: entries });

function assertGone(l, { old, keep }) {
  assert.equal(l.get("lock"), undefined, "the old holder came back");
  assert.equal(l.timeToLive(old).ttl, -1);
  assert.deepEqual(l.leases(), [keep]);
}

for (const kind of ["no store", "a synchronous store"]) {
  test(`snapshot of an idle lessor leaves out a lease expired since (${kind})`, () => {
    const map = new Map();
    const storage = kind === "no store" ? undefined : { write: (b) => (b.put.forEach(([k, v]) => map.set(k, v)), b.delete.forEach((k) => map.delete(k))) };
    const s = idleAfterExpiry(storage ? { storage } : {});
    assertGone(restoredAt(s.clock.t, s.lessor.snapshot()), s);
    assertGone(restoredAt(s.clock.t, [...s.lessor.snapshotEntries(1)]), s);
    assertGone(s.lessor, s); // as the live lessor says
  });
}

test("the file store's compaction does not bring back a lease expired while the lessor was idle", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-file-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = FileStore.open(dir);
  const s = idleAfterExpiry({ storage: store, restore: store.entries() });
  assert.equal(await store.compactFrom(s.lessor, { force: true }), true);
  await store.close();
  const again = FileStore.open(dir);
  t.after(() => again.close());
  assertGone(restoredAt(s.clock.t, again.entries()), s);
});
