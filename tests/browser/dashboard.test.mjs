// The demo page as a dashboard of the server it came from (a real
// edge-lease server started here), in Chromium: what another client does
// through the gateway (the test, with edge-lease/client in Node: what
// etcdctl would do) shows up in the page within a bounded wait; locks and
// their fencing tokens; the page's controls act on the server; the switch
// between the server and the page's own engine; and the layout, measured
// from element boxes at 1280x900 and 375 px.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "../../js/client/index.mjs";
import { launch, screenshotPath, startServer, watchedPage } from "./helpers.mjs";
import { assertColumnsVisible, measure } from "./layout.mjs";

let server;
let browser;
let etcd; // the other client: what a terminal with etcdctl would do

before(async () => {
  server = await startServer();
  browser = await launch();
  etcd = connect(server.origin);
});

after(async () => {
  await etcd?.close();
  await browser?.close();
  server?.stop();
});

const WAIT = { timeout: 5000 }; // a poll is every second; a watch event is at once

async function open(viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const watched = await watchedPage(context, server.origin);
  await watched.page.goto(`${server.origin}/`);
  await watched.page.waitForFunction(() => document.getElementById("which").textContent.startsWith("the server at"), null, WAIT);
  return { context, ...watched };
}

/** Every lease and key of the server gone, so each test starts from nothing. */
async function clean() {
  for (const id of await etcd.leases()) await etcd.revoke(id).catch(() => {});
  await etcd.deleteRange({ key: "", prefix: true });
}

const ttlMs = (page, id) => page.locator(`#leases li[data-id="${id}"]`).getAttribute("data-ttl-ms").then(Number);

test("a lease granted elsewhere shows as a shrinking bar, its key at once; renewals and ends land on the timeline", async () => {
  await clean();
  const { context, page, problems } = await open();
  assert.equal(await page.getByRole("radio", { name: /The server/ }).isChecked(), true);

  const { id } = await etcd.grant(30);
  await etcd.put("/services/web/1", "10.0.0.1:8080", { lease: id });
  const bar = page.locator(`#leases li[data-id="${id}"]`);
  await bar.waitFor(WAIT);
  const key = page.locator('#keys tr[data-key="/services/web/1"]');
  await key.waitFor(WAIT);
  assert.equal(await key.getAttribute("data-value"), "10.0.0.1:8080");
  assert.match(await key.innerText(), new RegExp(id));
  await page.waitForFunction((id) => /Keys: \/services\/web\/1/.test(document.querySelector(`#leases li[data-id="${id}"]`).textContent), id, WAIT);

  // The bar shrinks toward the deadline between polls, smoothly: each frame
  // from the last known deadline, not in whole seconds.
  const a = await ttlMs(page, id);
  await page.waitForTimeout(400);
  const b = await ttlMs(page, id);
  assert.ok(a <= 30_000 && a > 25_000, `${a} ms left of 30 s`);
  assert.ok(b < a && a - b < 1000, `${a} ms, then ${b} ms`);
  assert.ok(b % 1000 !== 0 || a % 1000 !== 0, "whole seconds only");
  assert.match(await bar.innerText(), /s left of 30 s/);

  // The timeline: one live lane. A keepalive 4 s in moves the deadline by
  // more than the polls' uncertainty: a renewal on the timeline.
  const lane = page.locator(`#tl-lanes li[data-id="${id}"]`);
  assert.equal(await lane.getAttribute("data-state"), "live");
  await page.waitForTimeout(4000);
  await etcd.keepAliveOnce(id);
  await page.waitForFunction((id) => document.querySelector(`#tl-lanes li[data-id="${id}"]`).dataset.renewals === "1", id, WAIT);
  assert.ok((await ttlMs(page, id)) > 28_000, "the bar is full again after the renewal");
  assert.match(await page.locator("#logs ol:not([hidden]) li[data-kind=renew]").first().innerText(), new RegExp(`lease ${id} renewed`));
  await page.screenshot({ path: screenshotPath("dashboard-live"), fullPage: true });

  // Revoked: the bar and the key go, the lane ends as a revoke.
  await etcd.revoke(id);
  await bar.waitFor({ state: "detached", ...WAIT });
  await key.waitFor({ state: "detached", ...WAIT });
  await page.waitForFunction((id) => document.querySelector(`#tl-lanes li[data-id="${id}"]`)?.dataset.state === "revoke", id, WAIT);

  // A lease left to run out (etcd's 2 s minimum): the lane ends as an expiry.
  const short = (await etcd.grant(2)).id;
  await page.locator(`#leases li[data-id="${short}"]`).waitFor(WAIT);
  await page.locator(`#leases li[data-id="${short}"]`).waitFor({ state: "detached", timeout: 6000 });
  await page.waitForFunction((id) => document.querySelector(`#tl-lanes li[data-id="${id}"]`)?.dataset.state === "expire", short, WAIT);
  assert.match(await page.locator("#logs ol:not([hidden]) li[data-kind=expire]").first().innerText(), new RegExp(`lease ${short} expired`));
  await page.screenshot({ path: screenshotPath("dashboard-ended"), fullPage: true });

  assert.deepEqual(problems(), []);
  await context.close();
});

test("lock and election owners and waiters, by create revision, with their fencing tokens; an election is not called a lock", async () => {
  await clean();
  const { context, page, problems } = await open();
  const s1 = await etcd.session({ ttl: 10 });
  const s2 = await etcd.session({ ttl: 10 });
  const m1 = s1.mutex("/locks/demo");
  await m1.lock();
  const m2 = s2.mutex("/locks/demo");
  const m2Locked = m2.lock();
  // A lock outside the prefix, named as etcdctl lock names its keys.
  const m3 = s1.mutex("nightly-report");
  await m3.lock();
  // A plain create-if-absent lock (the story's kind) under the prefix.
  const plain = await etcd.put("/locks/job", "server-3", { ifAbsent: true });
  assert.equal(plain.created, true);
  // An election: its candidate's key has a lock's shape, name/<lease id>.
  const leader = s2.election("leader-race");
  await leader.campaign("candidate-a");

  const row = (key) => page.locator(`#locks tr[data-key="${key}"]`);
  await row(m1.key).waitFor(WAIT);
  await page.waitForFunction(() => document.querySelectorAll("#locks tr").length === 5, null, WAIT);
  const rows = () => page.locator("#locks tr").evaluateAll((trs) => trs.map((tr) => [tr.dataset.lock, tr.dataset.kind, tr.dataset.state, Number(tr.dataset.token)]));
  const waiterKey = `/locks/demo/${s2.keySuffix}`;
  const waiterToken = Number(await row(waiterKey).getAttribute("data-token"));
  assert.ok(waiterToken > m1.token);
  const leaderKey = `leader-race/${s2.keySuffix}`;
  const leaderToken = Number(await row(leaderKey).getAttribute("data-token"));
  assert.deepEqual(await rows(), [
    ["/locks/demo", "queue", "owner", m1.token],
    ["/locks/demo", "queue", "waiting", waiterToken],
    ["/locks/job", "prefix", "owner", plain.revision],
    ["leader-race", "queue", "owner", leaderToken],
    ["nightly-report", "queue", "owner", m3.token],
  ]);
  // A recipe's queue is a lock or an election (same keys): its first is
  // said to hold or lead, never just to hold. Only the prefix's plain key
  // is a lock by the page's own rule.
  assert.match(await row(m1.key).innerText(), new RegExp(`/locks/demo\\s+owner: holds or leads\\s+${m1.token}\\s+${s1.lease}`));
  assert.match(await row(leaderKey).innerText(), new RegExp(`leader-race\\s+owner: holds or leads\\s+${leaderToken}\\s+${s2.lease}`));
  assert.match(await row("/locks/job").innerText(), /\/locks\/job\s+holds\s/);
  assert.match(await row(waiterKey).innerText(), /waits \(2nd in line\)/);
  assert.equal(await page.locator("#locks-panel thead th").first().innerText(), "Lock or election");
  await page.screenshot({ path: screenshotPath("dashboard-locks"), fullPage: true });

  // The holder lets go: the waiter holds, with its (higher) token.
  await m1.unlock();
  await m2Locked;
  assert.equal(m2.token, waiterToken);
  await row(m1.key).waitFor({ state: "detached", ...WAIT });
  await page.waitForFunction((key) => document.querySelector(`#locks tr[data-key="${key}"]`)?.dataset.state === "owner", waiterKey, WAIT);

  // The prefix is the page's to choose: without it, only the recipes' keys are locks.
  await page.getByLabel("Lock prefix").fill("/nothing/");
  await row("/locks/job").waitFor({ state: "detached", ...WAIT });
  assert.equal(await row(waiterKey).count(), 1);

  await s1.close();
  await s2.close();
  await page.waitForFunction(() => document.querySelectorAll("#locks tr").length === 0, null, WAIT);
  assert.equal(await page.locator("#no-locks").isVisible(), true);
  assert.deepEqual(problems(), []);
  await context.close();
});

test("the page's controls act on the server", async () => {
  await clean();
  const { context, page, problems } = await open();
  await page.getByLabel("TTL (seconds)").fill("60");
  await page.getByRole("button", { name: "Grant lease" }).click();
  const row = page.locator("#leases li");
  await row.waitFor(WAIT);
  const id = await row.getAttribute("data-id");
  assert.deepEqual(await etcd.leases(), [id]);
  // The new lease is preselected for the next put once it shows.
  await page.waitForFunction((id) => document.getElementById("put-lease").value === id, id, WAIT);
  await page.getByLabel("Key", { exact: true }).fill("/config/color");
  await page.getByLabel("Value", { exact: true }).fill("green");
  await page.getByRole("button", { name: "Put key" }).click();
  await page.locator('#keys tr[data-key="/config/color"]').waitFor(WAIT);
  const entry = await etcd.get("/config/color");
  assert.equal(entry.value, "green");
  assert.equal(entry.lease, id);

  // Only if absent: refused while the key exists.
  await page.getByLabel("Only if absent (take a lock)").check();
  await page.getByRole("button", { name: "Put key" }).click();
  await page.waitForFunction(() => /^Refused: \/config\/color exists \(fencing token \d+\)/.test(document.getElementById("status").textContent), null, WAIT);

  await page.getByRole("button", { name: `Revoke lease ${id}` }).click();
  await row.waitFor({ state: "detached", ...WAIT });
  assert.deepEqual(await etcd.leases(), []);
  assert.equal(await etcd.get("/config/color"), undefined);
  assert.deepEqual(problems(), []);
  await context.close();
});

test("the switch: the server when served by it (on every load), the page's engine when chosen, or when there is no server", async () => {
  await clean();
  await etcd.put("/on/the/server", "yes");
  const { context, page, problems } = await open();
  await page.locator('#keys tr[data-key="/on/the/server"]').waitFor(WAIT);
  assert.equal(await page.locator(".page-only").first().isVisible(), false);

  await page.getByRole("radio", { name: "This page's engine" }).check();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("real time"), null, WAIT);
  assert.equal(await page.locator('#keys tr[data-key="/on/the/server"]').count(), 0);
  assert.equal(await page.getByRole("button", { name: "Run the lock story" }).isVisible(), true);
  assert.equal(await page.getByLabel("Simulated").isVisible(), true);

  // The choice is not kept: a reload shows the server again.
  await page.reload();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("the server at"), null, WAIT);
  assert.equal(await page.getByRole("radio", { name: /The server/ }).isChecked(), true);
  await page.locator('#keys tr[data-key="/on/the/server"]').waitFor(WAIT);
  assert.equal(await page.getByLabel("Simulated").isVisible(), false);
  // A reload ends the page's open watch stream and any poll in flight:
  // those aborts are the page going, not a failure.
  const real = problems().filter((p) => !/^request failed: \S+\/v3\/\S+ net::ERR_ABORTED$/.test(p));
  assert.deepEqual(real, []);
  await context.close();

  // Served by something that is not an etcd server (no /version): the
  // page's engine, and no server to choose.
  const other = await browser.newContext();
  const w = await watchedPage(other, server.origin);
  await w.page.route(`${server.origin}/version`, (route) => route.fulfill({ status: 404, body: "404 page not found\n" }));
  await w.page.goto(`${server.origin}/`);
  await w.page.waitForFunction(() => document.getElementById("which").textContent.startsWith("real time"), null, WAIT);
  assert.equal(await w.page.getByRole("radio", { name: /The server/ }).isDisabled(), true);
  // (the one 404 is that /version; Chromium logs it on the console too)
  const notVersion = (p) => !p.startsWith(`HTTP 404: ${server.origin}/version`) && !/^console error: Failed to load resource: .*404/.test(p);
  assert.deepEqual(w.problems().filter(notVersion), []);
  await other.close();
});

async function fill() {
  await clean();
  const { id } = await etcd.grant(120);
  await etcd.put("/services/a-rather-long-service-name/instance-0123456789abcdef", "http://10.0.0.1:8080/some/long/path?with=query", { lease: id });
  await etcd.put("/config/color", "blue");
  const s = await etcd.session({ ttl: 30 });
  const m = s.mutex("/locks/report-generator");
  await m.lock();
  return s;
}

test("1280x900: the live view and the lock story both on the first screen, every column of every table in its panel", async () => {
  const session = await fill();
  const { context, page, problems } = await open({ width: 1280, height: 900 });
  await page.waitForFunction(() => document.querySelectorAll("#keys tr").length === 3 && document.querySelectorAll("#locks tr").length === 1 && document.querySelectorAll("#leases li").length === 2, null, WAIT);
  let m = await measure(page);
  assert.ok(m.scrollWidth <= 1280, `the page is ${m.scrollWidth}px wide`);
  assert.ok(m.storyButton.bottom <= 900, `the story's button ends at ${m.storyButton.bottom}px, below the fold`);
  assert.ok(m.story.top < 300, `the story starts at ${m.story.top}px`);
  assert.ok(m.leases.top < 300 && m.firstLease.bottom <= 900, "the leases start on the first screen");
  assertColumnsVisible(m);
  await page.screenshot({ path: screenshotPath("dashboard-1280") });

  // The page's engine, with the story run to its end: the same.
  await page.getByRole("radio", { name: "This page's engine" }).check();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("real time"), null, WAIT);
  await page.getByLabel("Simulated").check();
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByRole("button", { name: "Run the lock story" }).click();
  for (let i = 0; i < 3; i++) await page.getByRole("button", { name: "Step +10 s" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#resource-rows tr").length === 6, null, { timeout: 5000 }); // three writers, each a guarded put and a fenced write
  m = await measure(page);
  assert.ok(m.storyButton.bottom <= 900, `the story's button ends at ${m.storyButton.bottom}px, below the fold`);
  assert.ok(m.scrollWidth <= 1280);
  assertColumnsVisible(m);
  await page.screenshot({ path: screenshotPath("dashboard-1280-story") });
  await session.close();
  assert.deepEqual(problems(), []);
  await context.close();
});

test("375 px: no sideways scrolling, the leases on the first screen, every column of every table visible", async () => {
  const session = await fill();
  const { context, page, problems } = await open({ width: 375, height: 740 });
  await page.waitForFunction(() => document.querySelectorAll("#keys tr").length === 3 && document.querySelectorAll("#locks tr").length === 1 && document.querySelectorAll("#leases li").length === 2, null, WAIT);
  await page.waitForSelector("#tl-lanes li");
  let m = await measure(page);
  assert.ok(m.scrollWidth <= 375, `the page is ${m.scrollWidth}px wide`);
  assert.ok(m.leases.top < 400, `the leases panel starts at ${m.leases.top}px`);
  assert.ok(m.firstLease.top < 740, `the first lease starts at ${m.firstLease.top}px, below the first screen`);
  assertColumnsVisible(m);
  // Each key's cells: all six values and the Delete button, one card each.
  const keyCells = m.tables["keys-panel"].cells;
  assert.equal(keyCells.length, 3 * 7);
  assert.ok(keyCells.every((c) => c.box.width > 0 && c.box.height > 0));
  await page.screenshot({ path: screenshotPath("dashboard-375"), fullPage: true });

  await page.getByRole("radio", { name: "This page's engine" }).check();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("real time"), null, WAIT);
  await page.getByLabel("Simulated").check();
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByRole("button", { name: "Run the lock story" }).click();
  for (let i = 0; i < 3; i++) await page.getByRole("button", { name: "Step +10 s" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#resource-rows tr").length === 6, null, WAIT);
  m = await measure(page);
  assert.ok(m.scrollWidth <= 375, `the page is ${m.scrollWidth}px wide`);
  assert.ok(m.leases.top < 740, `the leases panel starts at ${m.leases.top}px`);
  assertColumnsVisible(m);
  const tokens = m.tables["story-panel"].cells.filter((c) => /^\d+$/.test(c.text));
  assert.equal(tokens.length, 6, "the fencing token of each write (a guarded put and a fenced write per holder) is on screen");
  await page.screenshot({ path: screenshotPath("dashboard-375-story"), fullPage: true });
  await session.close();
  assert.deepEqual(problems(), []);
  await context.close();
});
