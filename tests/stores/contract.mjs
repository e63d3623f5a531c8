// The storage contract every store adapter runs: what the Lessor relies on
// from a store (its `write`, and the entries it gives back to `restore`).
// `storeContract(name, factory)` registers the cases for one store; the
// factory's `open()` gives a new, empty store, `reopen()` closes it and
// opens the same data again (a restart), `close()` ends it. Each resolves
// to the store: `{ write(batch), entries(), pipelined? }` (entries() may
// return a promise). Remote stores (a browser's, a Durable Object's) come
// through a proxy whose write() is a round trip, so they are async stores.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "edge-lease";

const T0 = 1_700_000_000_000;

// Every stored entry, sorted by key, values as plain byte arrays.
async function stored(store) {
  const out = [];
  for (const [k, v] of await store.entries()) out.push([k, Array.from(typeof v === "string" ? new TextEncoder().encode(v) : v)]);
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const plain = (entries) => entries.map(([k, v]) => [k, Array.from(v)]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

async function lessorOn(store) {
  return new Lessor({ now: () => T0, autoTick: false, storage: store, restore: await store.entries() });
}

// Writes the batches as the lessor's write queue would: one at a time, each
// once the one before is durable, unless the store keeps their order itself.
async function writeAll(store, batches) {
  if (store.pipelined) return void (await Promise.all(batches.map((b) => store.write(b))));
  for (const b of batches) await store.write(b);
}

const bytes = (...b) => new Uint8Array(b);

export function storeContract(name, factory) {
  describe(`storage contract: ${name}`, () => {
    test("a new store holds nothing", async (t) => {
      t.after(() => factory.close());
      const store = await factory.open();
      assert.deepEqual(await stored(store), []);
      const lessor = await lessorOn(store);
      assert.deepEqual([lessor.range(""), lessor.leases()], [[], []]);
      lessor.close();
    });

    test("a reopen restores exactly what was acknowledged: keys, text, binary and empty values, leases, revisions, deletes, host entries", async (t) => {
      t.after(() => factory.close());
      let store = await factory.open();
      const lessor = await lessorOn(store);
      const { id } = lessor.grant(30, { id: "ffffffffffffffff" });
      const short = lessor.grant(10).id;
      lessor.put("text", "h\u00e9llo \u{1f512}", { lease: id });
      const all = Uint8Array.from({ length: 256 }, (_, i) => i);
      lessor.put("binary", all);
      lessor.put("empty-bytes", new Uint8Array(0));
      lessor.put("empty-text", "");
      lessor.put("gone", "x", { lease: short });
      lessor.revoke(short);
      lessor.put("deleted", "y");
      lessor.delete("deleted");
      lessor.setHostEntry("alarms", bytes(1, 0, 255));
      await lessor.flush();
      const acknowledged = plain(lessor.snapshot());
      const revision = lessor.revision;
      lessor.close();

      store = await factory.reopen();
      assert.deepEqual(await stored(store), acknowledged, "the store gives back the lessor's entries, no more, no less");
      const back = await lessorOn(store);
      assert.equal(back.revision, revision);
      assert.deepEqual(back.leases(), [id]);
      assert.equal(back.get("text").value, "h\u00e9llo \u{1f512}");
      assert.equal(back.get("text").lease, id);
      assert.deepEqual(back.get("binary").value, all);
      assert.deepEqual(back.get("empty-bytes").value, new Uint8Array(0));
      assert.equal(back.get("empty-text").value, "");
      assert.equal(back.get("gone"), undefined);
      assert.equal(back.get("deleted"), undefined);
      assert.deepEqual(back.hostEntry("alarms"), bytes(1, 0, 255));
      assert.equal(back.put("next", "1").revision, revision + 1, "revisions go on from where they were");
      await back.flush();
      back.close();
    });

    test("a batch is applied whole: its puts and deletes together", async (t) => {
      t.after(() => factory.close());
      let store = await factory.open();
      await writeAll(store, [{ put: [["a", bytes(1)], ["b", bytes(2)]], delete: [] }]);
      const put = Array.from({ length: 300 }, (_, i) => [`k/${String(i).padStart(3, "0")}`, bytes(i & 255, i >> 8)]);
      put.push(["k/empty", new Uint8Array(0)]); // an empty value is a value
      await writeAll(store, [{ put, delete: ["a", "b"] }]);
      store = await factory.reopen();
      assert.deepEqual(await stored(store), plain(put));
    });

    test("a refused write changes nothing", async (t) => {
      t.after(() => factory.close());
      let store = await factory.open();
      await writeAll(store, [{ put: [["keep", bytes(9)], ["other", bytes(8)]], delete: [] }]);
      // A value no store can keep (not bytes, not cloneable), after one it can.
      const refused = { put: [["new", bytes(2)], ["bad", () => {}]], delete: ["keep"] };
      await assert.rejects(async () => store.write(refused));
      store = await factory.reopen();
      assert.deepEqual(await stored(store), [["keep", [9]], ["other", [8]]]);
    });

    test("batches are applied in the order they were written", async (t) => {
      t.after(() => factory.close());
      let store = await factory.open();
      // Host entries (v1/host/<name>): raw batches a lessor can restore.
      const [a, b, c] = ["v1/host/a", "v1/host/b", "v1/host/c"];
      await writeAll(store, [
        { put: [[a, bytes(1)]], delete: [] },
        { put: [[a, bytes(2)], [b, bytes(1)]], delete: [] },
        { put: [], delete: [a] },
        { put: [[c, bytes(1)]], delete: [b] },
        { put: [[b, bytes(3)]], delete: [] },
        { put: [[c, bytes(2)]], delete: [] },
      ]);
      store = await factory.reopen();
      assert.deepEqual(await stored(store), [[b, [3]], [c, [2]]]);
      // The lessor's writes, handed over as fast as it makes them.
      const lessor = await lessorOn(store);
      for (let i = 0; i < 50; i++) lessor.put("counter", String(i));
      await lessor.flush();
      const revision = lessor.revision;
      lessor.close();
      store = await factory.reopen();
      const back = await lessorOn(store);
      assert.equal(back.get("counter").value, "49");
      assert.equal(back.get("counter").version, 50);
      assert.equal(back.revision, revision);
      back.close();
    });

    test("a restore of many entries, long values included, gives back each of them", async (t) => {
      t.after(() => factory.close());
      let store = await factory.open();
      const lessor = await lessorOn(store);
      const { id } = lessor.grant(60);
      for (let i = 0; i < 400; i++) lessor.put(`many/${i}`, Uint8Array.from({ length: i * 13 }, (_, j) => (i + j) & 255), { lease: i % 2 ? id : undefined });
      await lessor.flush();
      const acknowledged = plain(lessor.snapshot());
      lessor.close();
      store = await factory.reopen();
      assert.deepEqual(await stored(store), acknowledged);
      const back = await lessorOn(store);
      assert.equal(back.range("many/").length, 400);
      assert.equal(back.get("many/399").value.length, 399 * 13);
      assert.equal(back.get("many/399").value[5], (399 + 5) & 255);
      assert.deepEqual(back.timeToLive(id, { keys: true }).keys.length, 200);
      back.close();
    });
  });
}
