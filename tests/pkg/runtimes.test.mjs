// The installed package (npm pack → npm install) in every runtime it claims:
// Node ESM and CJS, Deno, Bun, workerd (Miniflare, and wrangler's bundle),
// Chromium (the browser entry, and an esbuild bundle of it). Each runs the
// same scenario (./scenario.mjs) and prints its result as JSON.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { launch } from "../browser/helpers.mjs";
import { workerOptions } from "../workerd/worker-options.mjs";
import { packedProject, repo } from "./packed.mjs";
import { Lessor as SourceLessor } from "../../js/lessor.js";
import { expected as fixed, scenario } from "./scenario.mjs";

const bin = (name) => join(repo, "node_modules", ".bin", name);
const run = promisify(execFile);
const SRC = `const scenario = ${scenario.toString()};`;
// Every entry must expose the methods of the source it was built from.
const expected = { ...fixed, methods: Object.getOwnPropertyNames(SourceLessor.prototype).sort() };

let project; // the temp project with edge-lease installed
let dir; // this file's scratch dir inside it, so bare imports resolve

before(() => {
  project = packedProject();
  dir = mkdtempSync(join(project, "run-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

// The installed package's exports["."] target for one condition: the
// runners that do not resolve packages themselves use what a bundler would.
function exportFor(condition) {
  const pkg = JSON.parse(readFileSync(join(project, "node_modules/edge-lease/package.json"), "utf8"));
  return "./node_modules/edge-lease/" + pkg.exports["."][condition].replace(/^\.\//, "");
}

async function runJson(cmd, args, env = {}) {
  const { stdout } = await run(cmd, args, {
    cwd: dir,
    timeout: 60_000,
    killSignal: "SIGKILL",
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}

test("every relative link in each package's README resolves inside that installed package", () => {
  const linksOf = (pkg) => [...readFileSync(join(pkg, "README.md"), "utf8").matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)].map((m) => m[1]);
  const etcd = join(project, "node_modules/edge-lease-etcd");
  assert.ok(linksOf(etcd).includes("docs/storage.md"), `the storage guide is linked: ${linksOf(etcd)}`);
  for (const pkg of [join(project, "node_modules/edge-lease"), etcd]) {
    for (const link of linksOf(pkg)) assert.ok(existsSync(join(pkg, link)), `${link} is not in ${pkg}'s tarball`);
  }
});

const esm = `import * as edgeLease from "edge-lease";\n${SRC}\nconsole.log(JSON.stringify(scenario(edgeLease)));\n`;

test("Node ESM: import from edge-lease, no init step", async () => {
  writeFileSync(join(dir, "esm.mjs"), esm);
  assert.deepEqual(await runJson(process.execPath, ["esm.mjs"]), expected);
});

test("Node CJS: require('edge-lease')", async () => {
  writeFileSync(
    join(dir, "cjs.cjs"),
    `const edgeLease = require("edge-lease");\n${SRC}\nconsole.log(JSON.stringify(scenario(edgeLease)));\n`,
  );
  assert.deepEqual(await runJson(process.execPath, ["cjs.cjs"]), expected);
});

test("Deno: node_modules resolution, no network", async () => {
  writeFileSync(join(dir, "deno.mjs"), esm);
  const denoDir = join(dir, ".deno");
  const result = await runJson(
    bin("deno"),
    ["run", "--node-modules-dir=manual", "--no-remote", "--no-prompt", `--allow-read=${project}`, "deno.mjs"],
    { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
  );
  assert.deepEqual(result, expected);
});

test("Bun", async () => {
  writeFileSync(join(dir, "bun.mjs"), esm);
  assert.deepEqual(await runJson(bin("bun"), ["bun.mjs"], { BUN_INSTALL_CACHE_DIR: join(dir, ".bun") }), expected);
});

// ---- workerd ---------------------------------------------------------------

const workerSrc = (spec) =>
  `import * as edgeLease from ${JSON.stringify(spec)};\n${SRC}\n` +
  `export default { fetch() { return Response.json(scenario(edgeLease)); } };\n`;

async function inMiniflare(scriptPath, modulesRoot) {
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare(workerOptions(scriptPath, modulesRoot));
  try {
    const res = await mf.dispatchFetch("http://localhost/");
    assert.equal(res.status, 200, await res.clone().text());
    return await res.json();
  } finally {
    await mf.dispose();
  }
}

test("workerd (Miniflare): the package's workerd export", { timeout: 60_000 }, async () => {
  // Miniflare does not resolve bare specifiers: import what the `workerd`
  // condition points at, relative to the project root.
  const worker = join(dir, "worker.mjs");
  writeFileSync(worker, workerSrc("." + exportFor("workerd")));
  assert.deepEqual(await inMiniflare(worker, project), expected);
});

test("workerd (wrangler deploy --dry-run bundle, run in Miniflare)", { timeout: 120_000 }, async () => {
  const w = join(dir, "wrangler");
  mkdirSync(w);
  writeFileSync(join(w, "worker.mjs"), workerSrc("edge-lease"));
  writeFileSync(
    join(w, "wrangler.json"),
    JSON.stringify({ name: "edge-lease-test", main: "worker.mjs", compatibility_date: "2025-01-01" }),
  );
  const out = join(w, "out");
  // wrangler's launcher refuses Node < 22.12 before loading anything, though
  // the CLI itself bundles fine on Node 20. On Node 20 run the CLI directly.
  const major = Number(process.versions.node.split(".")[0]);
  const cli = join(repo, "node_modules/wrangler", major >= 22 ? "bin/wrangler.js" : "wrangler-dist/cli.js");
  await run(process.execPath, [cli, "deploy", "--dry-run", "--outdir", out], {
    cwd: w,
    timeout: 90_000,
    killSignal: "SIGKILL",
    env: {
      ...process.env,
      CI: "true",
      WRANGLER_SEND_METRICS: "false",
      // Keep wrangler's config and logs out of $HOME.
      XDG_CONFIG_HOME: join(w, ".config"),
      WRANGLER_LOG_PATH: join(w, "logs"),
    },
  });
  const files = readdirSync(out);
  assert.ok(files.some((f) => f.endsWith(".wasm")), `the bundle keeps the wasm as a module: ${files}`);
  assert.deepEqual(await inMiniflare(join(out, "worker.js"), out), expected);
});

// ---- Chromium --------------------------------------------------------------

const TYPES = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".wasm": "application/wasm",
};

// Serves `root` on loopback: the page loads the package as a site would.
function serve(root) {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    try {
      const body = readFileSync(join(root, path));
      res.writeHead(200, { "content-type": TYPES[extname(path)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const pageScript = (spec) =>
  `import init, * as edgeLease from ${JSON.stringify(spec)};\n${SRC}\n` +
  `await init();\nwindow.result = scenario(edgeLease);\n`;

const html = (head, script) =>
  // The empty icon stops Chromium asking for /favicon.ico (a 404 console error).
  `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">${head}</head><body>` +
  `<script type="module">${script}</script></body></html>`;

let browser;
let server;

async function inChromium(path) {
  if (!browser) {
    browser = await launch();
    server = await serve(project);
  }
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/${path}`);
    await page.waitForFunction(() => window.result !== undefined || null, null, { timeout: 20_000 }).catch(() => {});
    return { result: await page.evaluate(() => window.result), errors };
  } finally {
    await page.close();
  }
}

after(async () => {
  await browser?.close();
  server?.close();
});

test("Chromium: the browser entry via an import map, served over http", { timeout: 60_000 }, async () => {
  const name = dir.slice(project.length + 1);
  const importMap = `<script type="importmap">${JSON.stringify({
    imports: { "edge-lease": exportFor("browser").slice(1) },
  })}</script>`;
  writeFileSync(join(dir, "page.html"), html(importMap, pageScript("edge-lease")));
  const { result, errors } = await inChromium(`${name}/page.html`);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
});

test("Chromium: an esbuild bundle of the browser entry", { timeout: 60_000 }, async () => {
  const name = dir.slice(project.length + 1);
  const b = join(dir, "bundle");
  mkdirSync(b);
  writeFileSync(join(dir, "entry.mjs"), pageScript("edge-lease"));
  await run(
    bin("esbuild"),
    ["entry.mjs", "--bundle", "--format=esm", "--platform=browser", `--outfile=${join(b, "app.js")}`, "--log-level=warning"],
    { cwd: dir, timeout: 30_000 },
  );
  // esbuild leaves wasm-bindgen's `new URL("edge_lease_bg.wasm", import.meta.url)`
  // alone, so the wasm is deployed next to the bundle, as its users do.
  copyFileSync(join(project, "node_modules/edge-lease/pkg/edge_lease_bg.wasm"), join(b, "edge_lease_bg.wasm"));
  writeFileSync(join(b, "index.html"), html("", `import "./app.js";`));
  const { result, errors } = await inChromium(`${name}/bundle/index.html`);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
});

test("Chromium: an esbuild bundle that imports the wasm's URL (the README's bundler recipe)", { timeout: 60_000 }, async () => {
  const name = dir.slice(project.length + 1);
  const b = join(dir, "recipe");
  mkdirSync(b);
  writeFileSync(
    join(dir, "recipe.mjs"),
    `import init, * as edgeLease from "edge-lease";\nimport wasmUrl from "edge-lease/edge_lease_bg.wasm";\n${SRC}\n` +
      `await init(wasmUrl);\nwindow.result = scenario(edgeLease);\n`,
  );
  await run(
    bin("esbuild"),
    ["recipe.mjs", "--bundle", "--format=esm", "--platform=browser", "--loader:.wasm=file", `--outdir=${b}`, "--log-level=warning"],
    { cwd: dir, timeout: 30_000 },
  );
  // esbuild put the wasm in the output directory under a hashed name;
  // nothing was copied by hand.
  assert.ok(readdirSync(b).some((f) => /^edge_lease_bg-\w+\.wasm$/.test(f)), String(readdirSync(b)));
  writeFileSync(join(b, "index.html"), html("", `import "./recipe.js";`));
  const { result, errors } = await inChromium(`${name}/recipe/index.html`);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
});
