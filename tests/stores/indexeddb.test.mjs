// The storage contract (contract.mjs) for edge-lease/stores/indexeddb in
// Chromium: the store lives in a page, reached through a proxy whose write()
// hands each batch over (an async store, as IndexedDbStore is); reopen()
// reloads the page, so what comes back is what IndexedDB kept.
import { after, before } from "node:test";
import { launch, startServer } from "../browser/helpers.mjs";
import { storeContract } from "./contract.mjs";

let server;
let browser;
let page;

before(async () => {
  server = await startServer();
  browser = await launch();
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  await page.route(`${server.origin}/blank.html`, (route) =>
    route.fulfill({ contentType: "text/html", body: "<!doctype html><title>storage contract</title>" }),
  );
  await page.goto(`${server.origin}/blank.html`);
});

after(async () => {
  await browser?.close();
  server?.stop();
});

// A value as it crosses into the page: bytes, a string, or a function (a
// value IndexedDB cannot clone, for the refused write).
const encode = (v) => (v instanceof Uint8Array ? { b: Array.from(v) } : typeof v === "function" ? { fn: true } : { s: v });

async function openIn(name, fresh) {
  await page.evaluate(
    async ({ name, fresh }) => {
      const { IndexedDbStore } = await import("/edge-lease/stores/indexeddb.mjs");
      if (fresh) await IndexedDbStore.delete(name);
      window.store = await IndexedDbStore.open(name);
    },
    { name, fresh },
  );
  return {
    write: (batch) =>
      page.evaluate(
        ({ put, del }) => {
          const value = (v) => (v.b ? new Uint8Array(v.b) : v.fn ? () => {} : v.s);
          return window.store.write({ put: put.map(([k, v]) => [k, value(v)]), delete: del });
        },
        { put: batch.put.map(([k, v]) => [k, encode(v)]), del: batch.delete },
      ),
    entries: async () =>
      (await page.evaluate(() => window.store.entries().map(([k, v]) => [k, typeof v === "string" ? v : Array.from(v)]))).map(([k, v]) => [
        k,
        typeof v === "string" ? v : new Uint8Array(v),
      ]),
  };
}

let n = 0;
let name = null;
storeContract("IndexedDB (Chromium)", {
  open: () => openIn((name = `contract-${++n}`), true),
  async reopen() {
    await page.evaluate(() => window.store.close());
    await page.reload();
    return openIn(name, false);
  },
  async close() {
    await page.evaluate(async (name) => {
      window.store?.close();
      const { IndexedDbStore } = await import("/edge-lease/stores/indexeddb.mjs");
      await IndexedDbStore.delete(name);
    }, name);
  },
});
