// edge-lease/stores/indexeddb in Chromium: a lessor's state round-trips
// through IndexedDB across page reloads, a batch is all-or-nothing, and a
// store that can no longer write fails the lessor with "StorageFailed".

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, startServer, watchedPage } from "./helpers.mjs";

let server;
let browser;
let page;
let problems;

before(async () => {
  server = await startServer();
  browser = await launch();
  const context = await browser.newContext();
  ({ page, problems } = await watchedPage(context, server.origin));
  // An empty page on the demo's origin: the tests import the package into it.
  await page.route(`${server.origin}/blank.html`, (route) =>
    route.fulfill({ contentType: "text/html", body: "<!doctype html><title>indexeddb test</title>" }),
  );
  // Each evaluated test body loads the package with `await window.lib()`.
  await page.addInitScript(() => {
    window.lib = async () => {
      const { init, Lessor } = await import("/edge-lease/entries/browser.mjs");
      const { IndexedDbStore } = await import("/edge-lease/stores/indexeddb.mjs");
      await init();
      return { Lessor, IndexedDbStore };
    };
  });
  await page.goto(`${server.origin}/blank.html`);
});

after(async () => {
  await browser?.close();
  server?.stop();
});

const T0 = 1_700_000_000_000;

test("leases, keys, revision and deadlines survive a reload; expiry is stored too", async () => {
  const first = await page.evaluate(async (t0) => {
    const { Lessor, IndexedDbStore } = await window.lib();
    await IndexedDbStore.delete("t-roundtrip");
    const store = await IndexedDbStore.open("t-roundtrip");
    const loaded = store.entries().length;
    const lessor = new Lessor({ now: () => t0, autoTick: false, storage: store, restore: store.entries() });
    const { id } = lessor.grant(10);
    lessor.put("/lock", "holder", { lease: id });
    lessor.put("/bytes", new Uint8Array([1, 2, 3]));
    await lessor.flush();
    const revision = lessor.revision;
    lessor.close();
    store.close();
    return { loaded, id, revision };
  }, T0);
  assert.equal(first.loaded, 0);

  await page.reload();
  const second = await page.evaluate(async ({ t0, id }) => {
    const { Lessor, IndexedDbStore } = await window.lib();
    const store = await IndexedDbStore.open("t-roundtrip");
    let now = t0 + 2000;
    const lessor = new Lessor({ now: () => now, autoTick: false, storage: store, restore: store.entries() });
    const lock = lessor.get("/lock");
    const bytes = lessor.get("/bytes");
    const out = {
      leases: lessor.leases(),
      revision: lessor.revision,
      lock: { value: lock.value, lease: lock.lease },
      bytes: Array.from(bytes.value),
      bytesLease: bytes.lease,
      ttlMs: lessor.timeToLive(id).ttlMs,
      deadline: lessor.nextDeadline(),
    };
    // Let the lease run out; its expiry is written like any change.
    now = out.deadline;
    out.expired = lessor.tick();
    await lessor.flush();
    out.revisionAfter = lessor.revision;
    lessor.close();
    store.close();
    return out;
  }, { t0: T0, id: first.id });
  assert.deepEqual(second.leases, [first.id]);
  assert.equal(second.revision, first.revision);
  assert.deepEqual(second.lock, { value: "holder", lease: first.id });
  assert.deepEqual(second.bytes, [1, 2, 3]);
  assert.equal(second.bytesLease, null);
  // 2 s of the 10 s TTL passed. The core restores a stored deadline plus
  // half the TTL (renewals are stored coalesced), so 8 s to 13 s are left:
  // never less than the holder was promised.
  assert.ok(second.ttlMs >= 8000 && second.ttlMs <= 13_000, `ttlMs ${second.ttlMs}`);
  assert.equal(second.expired.length, 1);
  assert.deepEqual(second.expired[0].keys, ["/lock"]);
  assert.equal(second.revisionAfter, first.revision + 1);

  await page.reload();
  const third = await page.evaluate(async (t0) => {
    const { Lessor, IndexedDbStore } = await window.lib();
    const store = await IndexedDbStore.open("t-roundtrip");
    const lessor = new Lessor({ now: () => t0 + 60_000, autoTick: false, storage: store, restore: store.entries() });
    const out = { leases: lessor.leases(), lock: lessor.get("/lock") ?? null, bytes: Boolean(lessor.get("/bytes")), revision: lessor.revision };
    lessor.close();
    store.close();
    await IndexedDbStore.delete("t-roundtrip");
    return out;
  }, T0);
  assert.deepEqual(third, { leases: [], lock: null, bytes: true, revision: first.revision + 1 });
});

test("a batch is one transaction: a refused put commits nothing", async () => {
  const r = await page.evaluate(async () => {
    const { IndexedDbStore } = await window.lib();
    await IndexedDbStore.delete("t-atomic");
    const store = await IndexedDbStore.open("t-atomic");
    await store.write({ put: [["keep", new Uint8Array([9])], ["gone", new Uint8Array([1])]], delete: [] });
    let error = null;
    try {
      // A function cannot be stored: the second put throws, the first must not stay.
      await store.write({ put: [["new", new Uint8Array([2])], ["bad", () => {}]], delete: ["gone"] });
    } catch (e) {
      error = e.name;
    }
    store.close();
    const again = await IndexedDbStore.open("t-atomic");
    const keys = again.entries().map(([k]) => k);
    again.close();
    await IndexedDbStore.delete("t-atomic");
    return { error, keys };
  });
  assert.equal(r.error, "DataCloneError");
  assert.deepEqual(r.keys, ["gone", "keep"]);
});

test("a closed store rejects: flush() rejects and the next write throws StorageFailed", async () => {
  const r = await page.evaluate(async () => {
    const { Lessor, IndexedDbStore } = await window.lib();
    await IndexedDbStore.delete("t-closed");
    const store = await IndexedDbStore.open("t-closed");
    const lessor = new Lessor({ now: () => 1_700_000_000_000, autoTick: false, storage: store, restore: [] });
    const { id } = lessor.grant(30);
    await lessor.flush();
    store.close();
    // The put itself returns: an async store reports through flush().
    const put = lessor.put("/k", "v", { lease: id });
    const out = { putRevision: put.revision, isOpen: store.isOpen };
    try {
      await lessor.flush();
      out.flush = "resolved";
    } catch (e) {
      out.flush = e.code;
      out.flushMessage = e.message;
    }
    try {
      lessor.put("/k2", "v");
      out.next = "no error";
    } catch (e) {
      out.next = e.code;
    }
    lessor.close();
    await IndexedDbStore.delete("t-closed");
    return out;
  });
  assert.equal(r.isOpen, false);
  assert.ok(r.putRevision > 0);
  assert.equal(r.flush, "StorageFailed");
  assert.match(r.flushMessage, /closed/);
  assert.equal(r.next, "StorageFailed");
});

test("deleting the database closes open stores instead of blocking; their lessor fails", async () => {
  const r = await page.evaluate(async () => {
    const { Lessor, IndexedDbStore } = await window.lib();
    await IndexedDbStore.delete("t-deleted");
    const store = await IndexedDbStore.open("t-deleted");
    const lessor = new Lessor({ now: () => 1_700_000_000_000, autoTick: false, storage: store, restore: [] });
    lessor.grant(30);
    await lessor.flush();
    await IndexedDbStore.delete("t-deleted"); // would hang if the store held on
    const out = { isOpen: store.isOpen };
    lessor.grant(30);
    out.flush = await lessor.flush().then(() => "resolved", (e) => e.code);
    lessor.close();
    return out;
  });
  assert.deepEqual(r, { isOpen: false, flush: "StorageFailed" });
});

test("no console errors, page errors or requests off the page's origin", () => {
  assert.deepEqual(problems(), []);
});
