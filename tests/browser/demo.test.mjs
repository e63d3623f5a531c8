// The demo page (www/, served by server/main.mjs) in Chromium: the lock
// story on the simulated clock, state kept across a reload in IndexedDB,
// keyboard use, a narrow screen, and nothing loaded from anywhere else.
// Simulated time is moved only by the page's own Step button.

import { test } from "node:test";
import assert from "node:assert/strict";
import { screenshotPath, serverAndBrowser, watchedPage } from "./helpers.mjs";

const env = serverAndBrowser();

async function open(viewport = { width: 1280, height: 900 }) {
  const context = await env.browser.newContext({ viewport });
  const watched = await watchedPage(context, env.server.origin);
  await load(watched.page, env.server.origin);
  return { context, ...watched };
}

// These tests are about the page's own engine. Served by the server, the
// page shows the server on every load (dashboard.test.mjs and
// stays.test.mjs test that): switch to the engine, as a visitor would. The
// page is ready once the real-time lessor is open.
async function load(page, origin) {
  if (origin) await page.goto(`${origin}/`);
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("the server at"));
  await page.getByRole("radio", { name: "This page's engine" }).check();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("real time"));
}

const text = (page, selector) => page.locator(selector).innerText();

async function step(page, times) {
  for (let i = 0; i < times; i++) await page.getByRole("button", { name: "Step +1 s" }).click();
}

test("the lock story: expiry frees the lock, the new holder's token is higher, the stale write is refused", async () => {
  const { context, page, problems } = await open();
  await page.getByLabel("Simulated").check();
  await page.getByRole("button", { name: "Pause" }).click();
  assert.equal(await page.getByRole("button", { name: "Pause" }).getAttribute("aria-pressed"), "true");
  await page.getByRole("button", { name: "Run the lock story" }).click();

  const lock = page.locator('#keys tr[data-key="/locks/job"]');
  assert.equal(await lock.getAttribute("data-value"), "server-3");
  const token3 = Number(await lock.getAttribute("data-create-revision"));
  assert.ok(token3 > 0);

  // Renewed at T+3, T+6, T+9, then silence: still held at T+18.
  await step(page, 18);
  assert.match(await text(page, "#clock-now"), /^T\+18\.0 s/);
  assert.equal(await lock.getAttribute("data-value"), "server-3");
  const server3Lease = page.locator("#leases li", { hasText: "server-3" });
  assert.match(await server3Lease.innerText(), /1\.0 s left of 10 s/);

  // T+19: 10 s after the last renewal the lease expires and takes the key.
  await step(page, 1);
  assert.equal(await lock.count(), 0);
  assert.equal(await server3Lease.count(), 0);
  const expired = page.locator('#logs ol:not([hidden]) li[data-kind="expire"]');
  assert.match(await expired.first().innerText(), /T\+19\.0 s[\s\S]*server-3[\s\S]*expired; deleted \/locks\/job/);
  await page.screenshot({ path: screenshotPath("demo-story-expired"), fullPage: true });

  // T+20: server-7, woken by its watch, holds the lock with a higher token.
  await step(page, 1);
  assert.equal(await lock.getAttribute("data-value"), "server-7");
  const token7 = Number(await lock.getAttribute("data-create-revision"));
  assert.ok(token7 > token3, `server-7's token ${token7} is not above server-3's ${token3}`);

  // T+21: server-3 wakes and writes with its old token: its guarded put is
  // refused by the lock's store, its write by the resource's fence.
  await step(page, 1);
  await page.waitForFunction(() => document.querySelectorAll("#resource-rows tr").length === 6, null, { timeout: 5000 });
  const writes = await page.locator("#resource-rows tr").evaluateAll((rows) =>
    rows.map((r) => [r.dataset.writer, Number(r.dataset.token), r.dataset.where, r.dataset.result]),
  );
  assert.deepEqual(writes, [
    ["server-3", token3, "lock store", "accepted"],
    ["server-3", token3, "resource", "accepted"],
    ["server-7", token7, "lock store", "accepted"],
    ["server-7", token7, "resource", "accepted"],
    ["server-3", token3, "lock store", "rejected"],
    ["server-3", token3, "resource", "rejected"],
  ]);
  assert.equal(await text(page, "#highest-token"), String(token7));
  assert.match(await text(page, "#resource-rows tr:nth-child(5)"), new RegExp(`REJECTED: NotHeld: /locks/job is held by token ${token7}`));
  assert.match(await text(page, "#resource-rows tr:last-child"), new RegExp(`REJECTED: StaleToken: token ${token3} < ${token7}`));
  await page.screenshot({ path: screenshotPath("demo-story"), fullPage: true });

  assert.deepEqual(problems(), []);
  await context.close();
});

test("with persistence on, a reload restores leases, keys, revision and honest TTLs; a lost store is reported", async () => {
  const { context, page, problems } = await open();
  assert.equal(await page.getByLabel(/Keep the real-time lessor in IndexedDB/).isChecked(), true);

  await page.getByLabel("TTL (seconds)").fill("120");
  await page.getByRole("button", { name: "Grant lease" }).click();
  const row = page.locator("#leases li");
  const id = await row.getAttribute("data-id");
  // The new lease is preselected for the next put.
  assert.equal(await page.getByLabel("Lease", { exact: true }).inputValue(), id);
  await page.getByLabel("Key", { exact: true }).fill("/config/color");
  await page.getByLabel("Value", { exact: true }).fill("blue");
  await page.getByRole("button", { name: "Put key" }).click();
  await page.getByLabel("Lease", { exact: true }).selectOption("");
  await page.getByLabel("Key", { exact: true }).fill("/config/plain");
  await page.getByLabel("Value", { exact: true }).fill("stays");
  await page.getByRole("button", { name: "Put key" }).click();
  const revision = await text(page, "#revision");
  await page.waitForFunction(
    (rev) => document.getElementById("storage-status").textContent.includes(`up to revision ${rev}`),
    revision,
  );
  const left = async () => page.evaluate(() => [
    Number(document.querySelector("#leases li").dataset.ttlMs),
    Date.now(),
  ]);
  const [ttlBefore, at] = await left();

  await page.reload();
  await load(page);
  await page.waitForSelector("#leases li");
  assert.equal(await row.getAttribute("data-id"), id);
  assert.match(await row.innerText(), /Keys: \/config\/color/);
  assert.equal(await text(page, "#revision"), revision);
  assert.equal(await page.locator('#keys tr[data-key="/config/color"]').getAttribute("data-value"), "blue");
  assert.equal(await page.locator('#keys tr[data-key="/config/plain"]').getAttribute("data-value"), "stays");
  assert.match(await text(page, "#logs ol:not([hidden])"), /restored from IndexedDB/);
  // Time kept running during the reload. The lease is never shorter than
  // it really is, and at most half its TTL longer (the core's restore slack).
  const [ttlAfter, now] = await left();
  const truth = ttlBefore - (now - at);
  assert.ok(ttlAfter >= truth - 50 && ttlAfter <= truth + 60_000 + 50, `ttl ${ttlAfter} ms, truth ${truth} ms`);
  await page.screenshot({ path: screenshotPath("demo-reloaded"), fullPage: true });

  // Revoking is stored too: gone after another reload.
  await page.getByRole("button", { name: `Revoke lease ${id}` }).click();
  // (The status already said "up to revision" before: wait for the revoke's
  // own revision, its key's delete, to be stored.)
  await page.waitForFunction((rev) => document.getElementById("revision").textContent !== rev, revision);
  await page.waitForFunction(
    () => document.getElementById("storage-status").textContent.includes(`up to revision ${document.getElementById("revision").textContent}`),
  );
  await page.reload();
  await load(page);
  assert.equal(await page.locator("#leases li").count(), 0);
  assert.equal(await page.locator('#keys tr[data-key="/config/color"]').count(), 0);
  assert.equal(await page.locator('#keys tr[data-key="/config/plain"]').count(), 1);

  // Another tab deletes the database: the store steps aside, the next write
  // fails the lessor, the page says so, and Reset starts over.
  await page.evaluate(() => new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase("edge-lease-demo");
    req.onsuccess = resolve;
    req.onerror = () => reject(req.error);
  }));
  await page.getByRole("button", { name: "Grant lease" }).click();
  await page.waitForFunction(() => document.getElementById("storage-status").textContent.startsWith("Storage failed"));
  await page.getByRole("button", { name: "Grant lease" }).click();
  assert.match(await text(page, "#status"), /^StorageFailed: /);
  await page.getByRole("button", { name: "Reset this lessor" }).click();
  await page.waitForFunction(() => document.getElementById("storage-status").textContent.startsWith("Stored in IndexedDB"));
  assert.equal(await page.locator("#keys tr").count(), 0);
  await page.getByRole("button", { name: "Grant lease" }).click();
  assert.equal(await page.locator("#leases li").count(), 1);

  // Each reload ends the watch the page opened on the server before the
  // switch: those aborts are the page going, not a failure.
  const real = problems().filter((p) => !/^request failed: \S+\/v3\/\S+ net::ERR_ABORTED$/.test(p));
  assert.deepEqual(real, []);
  await context.close();
});

test("keyboard: forms submit with Enter; rows never move, so focus stays on the button pressed", async () => {
  const { context, page, problems } = await open();
  await page.getByLabel("Simulated").check();
  await page.getByRole("button", { name: "Pause" }).click();
  // A fresh simulated lessor keeps the clock paused, at T+0.
  await page.getByRole("button", { name: "Reset this lessor" }).click();
  const ttl = page.getByLabel("TTL (seconds)");
  await ttl.fill("30");
  await ttl.press("Enter");
  await ttl.fill("35");
  await ttl.press("Enter");
  const rows = page.locator("#leases li");
  const ids = () => rows.evaluateAll((lis) => lis.map((li) => li.dataset.id));
  const [a, b] = await ids();
  assert.ok(a && b);
  await page.getByRole("button", { name: "Step +10 s" }).click();

  // Renewing `a` puts its deadline after `b`'s; its row stays where it is.
  await page.getByRole("button", { name: `Renew lease ${a}` }).focus();
  await page.keyboard.press("Enter");
  const focused = () => page.evaluate(() => document.activeElement.getAttribute("aria-label"));
  assert.equal(await focused(), `Renew lease ${a}`);
  assert.deepEqual(await ids(), [a, b]);
  await page.keyboard.press("Tab");
  assert.equal(await focused(), `Keep alive lease ${a}`);
  await page.keyboard.press("Enter");
  assert.equal(await page.getByRole("button", { name: `Keep alive lease ${a}` }).getAttribute("aria-pressed"), "true");

  // 60 more simulated seconds: `b` expires at T+35, `a` lives on, renewed
  // every 10 s (a third of its TTL) from T+20 to T+70.
  await page.getByRole("button", { name: "Step +10 s" }).focus();
  for (let i = 0; i < 6; i++) await page.keyboard.press("Enter");
  assert.match(await text(page, "#clock-now"), /^T\+70\.0 s/);
  assert.deepEqual(await ids(), [a]);
  const renewals = await page
    .locator('#logs ol:not([hidden]) li[data-kind="renew"]', { hasText: a })
    .count();
  assert.equal(renewals, 1 + 6);
  await page.screenshot({ path: screenshotPath("demo-keyboard"), fullPage: true });

  assert.deepEqual(problems(), []);
  await context.close();
});

test("narrow screen: one column, nothing wider than the viewport", async () => {
  const { context, page, problems } = await open({ width: 375, height: 740 });
  await page.getByLabel("Simulated").check();
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByRole("button", { name: "Run the lock story" }).click();
  await step(page, 4);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  await page.screenshot({ path: screenshotPath("demo-narrow"), fullPage: true });
  assert.deepEqual(problems(), []);
  await context.close();
});
