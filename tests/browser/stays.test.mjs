// The demo page stays with the server it came from (issue 32): running the
// lock story on the page's own engine is a view of this visit, not a mode
// kept for the next one. After a reload the page shows the server's keys
// again and follows its watch: a real etcdctl put shows within a second.
// In the server's view only the server's panels show. At 1280 and 375 px,
// with etcdctl's lock and election and long keys on the server, and with
// the story run: no lease id is broken across lines or sticks out, nothing
// side by side overlaps, every table column is in its panel (screenshots in
// test-output/).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { screenshotPath, serverAndBrowser, watchedPage } from "./helpers.mjs";
import { assertColumnsVisible, brokenIds, measure, overlaps } from "./layout.mjs";

const run = promisify(execFile);

const env = serverAndBrowser();

const WAIT = { timeout: 5000 };
const SHOWS_WITHIN = 1000; // an etcdctl write reaches the page through its watch

/** etcdctl 3.4 (the real one) against the server; resolves to its stdout. */
async function etcdctl(...args) {
  const { stdout } = await run("/usr/bin/etcdctl", ["--endpoints", env.server.origin, "--command-timeout=3s", ...args], { timeout: 5000 });
  return stdout;
}

const serverShown = (page) => page.waitForFunction(() => document.getElementById("which").textContent.startsWith("the server at"), null, WAIT);

test("after the in-page lock story and a reload, the page shows the server's keys and an etcdctl put within a second", async () => {
  await etcdctl("put", "/config/color", "blue");
  const lease = /lease ([0-9a-f]+) granted/.exec(await etcdctl("lease", "grant", "60"))[1];
  await etcdctl("put", "/locks/job", "worker-1", "--lease", lease);

  const context = await env.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const { page, problems } = await watchedPage(context, env.server.origin);
  await page.goto(`${env.server.origin}/`);
  await serverShown(page);
  const serverKey = (key) => page.locator(`#keys tr[data-key="${key}"]`);
  await serverKey("/config/color").waitFor(WAIT);
  assert.equal(await serverKey("/locks/job").getAttribute("data-value"), "worker-1");

  // The story runs on the page's own engine, on the simulated clock.
  await page.getByRole("button", { name: "Run the lock story" }).click();
  await page.waitForFunction(() => document.getElementById("which").textContent.startsWith("simulated"), null, WAIT);
  assert.equal(await serverKey("/locks/job").getAttribute("data-value"), "server-3");
  // T+0's two writes: server-3's guarded put and its fenced write (async).
  await page.waitForFunction(() => document.querySelectorAll("#resource-rows tr").length === 2, null, WAIT);

  // The server's view is one click away, still watched meanwhile.
  await page.getByRole("radio", { name: /The server/ }).check();
  await serverShown(page);
  await etcdctl("put", "/while/the/story/ran", "1");
  await serverKey("/while/the/story/ran").waitFor({ timeout: SHOWS_WITHIN });
  assert.equal(await serverKey("/locks/job").getAttribute("data-value"), "worker-1");

  // A reload comes back to the server, not to the page's engine.
  await page.getByRole("radio", { name: "This page's engine" }).check();
  await page.getByRole("button", { name: "Run the lock story" }).click();
  await page.reload();
  await serverShown(page);
  await serverKey("/config/color").waitFor(WAIT);
  assert.equal(await serverKey("/locks/job").getAttribute("data-value"), "worker-1");
  assert.equal(await page.locator('#locks tr[data-key="/locks/job"] td').first().innerText(), "holds");
  assert.equal(await page.getByRole("radio", { name: /The server/ }).isChecked(), true);

  // ... and follows its watch: a real etcdctl put shows within a second of
  // etcdctl's answer.
  await etcdctl("put", "/after/reload", "seen");
  await serverKey("/after/reload").waitFor({ timeout: SHOWS_WITHIN });
  assert.equal(await serverKey("/after/reload").getAttribute("data-value"), "seen");

  // The server's view shows only the server's panels: not the page's
  // engine's clock and storage, nor the story's protected resource.
  assert.equal(await page.locator("#engine-panel").isVisible(), false);
  assert.equal(await page.getByText("IndexedDB").first().isVisible(), false);
  assert.equal(await page.locator("#resource-rows").isVisible(), false);
  assert.equal(await page.getByRole("button", { name: "Run the lock story" }).isVisible(), true);

  // A reload ends the page's open watch stream and any poll in flight:
  // those aborts are the page going, not a failure.
  const real = problems().filter((p) => !/^request failed: \S+\/v3\/\S+ net::ERR_ABORTED$/.test(p));
  assert.deepEqual(real, []);
  await context.close();
});

/** `etcdctl lock` or `elect`, left running (they hold until interrupted); resolves once it holds or leads. */
function holding(...args) {
  const child = spawn("/usr/bin/etcdctl", ["--endpoints", env.server.origin, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`etcdctl ${args.join(" ")} did not answer`)), 5000);
    child.on("error", reject);
    child.stdout.once("data", () => {
      clearTimeout(timer);
      resolve(child);
    });
  });
}

test("1280 and 375 px, the server's view and the story's: no lease id broken or sticking out, nothing overlapping, every column in its panel", async () => {
  const lease = /lease ([0-9a-f]+) granted/.exec(await etcdctl("lease", "grant", "120"))[1];
  await etcdctl("put", "/services/a-rather-long-service-name/instance-0123456789abcdef", "http://10.0.0.1:8080/some/long/path?with=query", "--lease", lease);
  const lock = await holding("lock", "nightly-report");
  const elect = await holding("elect", "leader-race", "candidate-a");
  try {
    for (const width of [1280, 375]) {
      const context = await env.browser.newContext({ viewport: { width, height: 900 } });
      const { page, problems } = await watchedPage(context, env.server.origin);
      await page.goto(`${env.server.origin}/`);
      await serverShown(page);
      await page.waitForFunction(() => document.querySelectorAll("#locks tr").length >= 3 && document.querySelectorAll("#leases li").length >= 4, null, WAIT);
      await page.locator('#locks tr[data-lock="leader-race"]').waitFor(WAIT);
      const check = async (name) => {
        const m = await measure(page);
        assert.ok(m.scrollWidth <= width, `${name}: the page is ${m.scrollWidth}px wide`);
        assertColumnsVisible(m);
        assert.deepEqual(await brokenIds(page), [], name);
        assert.deepEqual(await overlaps(page), [], name);
        await page.screenshot({ path: screenshotPath(name), fullPage: true });
      };
      assert.equal(await page.locator("#engine-panel").isVisible(), false);
      await check(`stays-server-${width}`);

      // The story at T+20: server-7 holds /locks/job, both leases named.
      await page.getByRole("button", { name: "Run the lock story" }).click();
      await page.getByRole("button", { name: "Pause" }).click();
      for (let i = 0; i < 2; i++) await page.getByRole("button", { name: "Step +10 s" }).click();
      assert.equal(await page.locator('#keys tr[data-key="/locks/job"]').getAttribute("data-value"), "server-7");
      await check(`stays-story-${width}`);
      assert.deepEqual(problems(), []);
      await context.close();
    }
  } finally {
    lock.kill("SIGINT");
    elect.kill("SIGINT");
  }
});
