// edge-lease/client in every runtime it claims, against edge-lease's Node
// server: the installed package (npm pack) in Node, Deno and Bun; in workerd
// (Miniflare); and in Chromium, from a page on the server's own origin (the
// server refuses other origins). Each runs ./scenario.mjs; the runs use one
// server one after the other, so the scenario's keys do not collide.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { launch } from "../browser/helpers.mjs";
import { packedProject, repo } from "../pkg/packed.mjs";
import { workerOptions } from "../workerd/worker-options.mjs";
import { expected, scenario } from "./scenario.mjs";
import { useServers } from "./servers.mjs";

const servers = useServers(["edge-lease"]);
const run = promisify(execFile);
const bin = (name) => join(repo, "node_modules", ".bin", name);
const SRC = `const scenario = ${scenario.toString()};`;

let project;
let dir;
before(() => {
  project = packedProject();
  dir = mkdtempSync(join(project, "client-run-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const script = (url) =>
  `import * as client from "edge-lease/client";\n${SRC}\nconsole.log(JSON.stringify(await scenario(client, ${JSON.stringify(url)})));\n`;

async function runJson(cmd, args, env = {}) {
  const { stdout } = await run(cmd, args, { cwd: dir, timeout: 60_000, killSignal: "SIGKILL", env: { ...process.env, NO_COLOR: "1", ...env } });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}

test("client in Node (the installed package)", { timeout: 60_000 }, async () => {
  writeFileSync(join(dir, "node.mjs"), script(servers["edge-lease"].url));
  assert.deepEqual(await runJson(process.execPath, ["node.mjs"]), expected);
});

test("client in Deno (network allowed to the server only)", { timeout: 60_000 }, async () => {
  const url = new URL(servers["edge-lease"].url);
  writeFileSync(join(dir, "deno.mjs"), script(url.origin));
  const result = await runJson(
    bin("deno"),
    ["run", "--node-modules-dir=manual", "--no-remote", "--no-prompt", `--allow-read=${project}`, `--allow-net=${url.host}`, "deno.mjs"],
    { DENO_DIR: join(dir, ".deno"), DENO_NO_UPDATE_CHECK: "1" },
  );
  assert.deepEqual(result, expected);
});

test("client in Bun", { timeout: 60_000 }, async () => {
  writeFileSync(join(dir, "bun.mjs"), script(servers["edge-lease"].url));
  assert.deepEqual(await runJson(bin("bun"), ["bun.mjs"], { BUN_INSTALL_CACHE_DIR: join(dir, ".bun") }), expected);
});

test("client in workerd (Miniflare)", { timeout: 60_000 }, async () => {
  const worker = join(dir, "worker.mjs");
  // Miniflare does not resolve bare specifiers: the package's file, relative to the project.
  writeFileSync(
    worker,
    `import * as client from "../node_modules/edge-lease/client/index.mjs";\n${SRC}\n` +
      `export default { async fetch(req) { const url = new URL(req.url).searchParams.get("server"); ` +
      `try { return Response.json(await scenario(client, url)); } catch (e) { return new Response(String(e?.stack ?? e), { status: 500 }); } } };\n`,
  );
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare(workerOptions(worker, project));
  try {
    const res = await mf.dispatchFetch(`http://localhost/?server=${encodeURIComponent(servers["edge-lease"].url)}`);
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.deepEqual(JSON.parse(text), expected);
  } finally {
    await mf.dispose();
  }
});

test("client in Chromium, from a page on the server's origin", { timeout: 60_000 }, async () => {
  const origin = servers["edge-lease"].url;
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
    // The test page itself comes from the test; the client's modules
    // (/edge-lease/client/...) and the API come from the server.
    await page.route(`${origin}/client-test.html`, (route) =>
      route.fulfill({
        contentType: "text/html",
        body:
          `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">` +
          `import * as client from "/edge-lease/client/index.mjs";\n${SRC}\n` +
          `scenario(client, location.origin).then((r) => (window.result = r), (e) => (window.result = { error: String(e && e.stack || e) }));` +
          `</script>`,
      }),
    );
    await page.goto(`${origin}/client-test.html`);
    await page.waitForFunction(() => window.result !== undefined, null, { timeout: 20_000 });
    assert.deepEqual(problems, []);
    assert.deepEqual(await page.evaluate(() => window.result), expected);
  } finally {
    await browser.close();
  }
});
