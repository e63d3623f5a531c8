// Shared by the browser tests: the demo server on a free loopback port, and
// Debian's Chromium driven by playwright-core (never a downloaded browser).

import { after, before } from "node:test";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const outDir = fileURLToPath(new URL("../../test-output/", import.meta.url));

/**
 * Starts the server (server/main.mjs) on port 0 with a temporary data
 * directory (tests never write to the repository's data/); resolves to
 * { origin, stop }.
 */
export function startServer() {
  const dataDir = mkdtempSync(join(tmpdir(), "edge-lease-browser-"));
  const child = spawn(
    process.execPath,
    ["server/main.mjs", "--listen-client-urls", "http://127.0.0.1:0", "--data-dir", dataDir],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"] },
  );
  const cleanup = () => rmSync(dataDir, { recursive: true, force: true });
  return new Promise((resolve, reject) => {
    let out = "";
    child.on("error", reject);
    child.on("exit", (code) => {
      cleanup();
      reject(new Error(`server/main.mjs exited with ${code}: ${out}`));
    });
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /demo page at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) {
        resolve({
          origin: m[1],
          stop: () => {
            child.kill();
          },
        });
      }
    });
  });
}

export function launch() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A page that records console errors, page errors and every request that
 * leaves `origin`; `problems()` lists them all.
 */
export async function watchedPage(context, origin) {
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("request", (r) => {
    if (new URL(r.url()).origin !== origin) problems.push(`request outside the page's origin: ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { page, problems: () => problems };
}

export function screenshotPath(name) {
  mkdirSync(outDir, { recursive: true });
  return `${outDir}${name}.png`;
}

/**
 * A server and a browser for the calling test file: started before its
 * tests, stopped after them. `env.server`, `env.browser` once started.
 */
export function serverAndBrowser() {
  const env = { server: null, browser: null };
  before(async () => {
    env.server = await startServer();
    env.browser = await launch();
  });
  after(async () => {
    await env.browser?.close();
    env.server?.stop();
  });
  return env;
}
