// edge-lease-etcd/worker under Miniflare (workerd): the Worker and its
// LeaseNamespace objects, SQLite-backed as wrangler.toml's example declares
// them, served on a loopback port so tests (and the gateway tests written
// for the Node server) reach it with fetch. Storage persists in a temp dir
// across restarts of the runtime.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { Miniflare } from "miniflare";
import { workerOptions } from "./worker-options.mjs";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const WORKER = join(ROOT, "tests/workerd/lease-worker.mjs");

// Miniflare loads a Worker's modules as they are and resolves no package
// (the Worker imports edge-lease/...): the Worker is bundled first, as
// wrangler deploys it (esbuild, its .wasm files copied beside the bundle and
// loaded as modules). Once per process and script.
const bundles = new Map();
function bundled(scriptPath) {
  if (!bundles.has(scriptPath)) {
    const outdir = mkdtempSync(join(tmpdir(), "edge-lease-worker-bundle-"));
    process.on("exit", () => rmSync(outdir, { recursive: true, force: true }));
    buildSync({
      entryPoints: [scriptPath],
      bundle: true,
      format: "esm",
      outdir,
      entryNames: "[name]",
      outExtension: { ".js": ".mjs" },
      loader: { ".wasm": "copy" },
      conditions: ["workerd", "worker"],
      logLevel: "error",
    });
    bundles.set(scriptPath, { scriptPath: join(outdir, basename(scriptPath)), modulesRoot: outdir });
  }
  return bundles.get(scriptPath);
}

/**
 * Miniflare options for `scriptPath` (default: the package's worker), bundled
 * here unless `modulesRoot` says it is a bundle already (wrangler's), on
 * `persist`.
 */
export function leaseWorkerOptions({ scriptPath = WORKER, modulesRoot = null, persist, bindings = {}, port = 0 } = {}) {
  const b = modulesRoot ? { scriptPath, modulesRoot } : bundled(scriptPath);
  return {
    ...workerOptions(b.scriptPath, b.modulesRoot),
    durableObjects: { LEASES: { className: "LeaseNamespace", useSQLite: true } },
    durableObjectsPersist: persist,
    bindings,
    host: "127.0.0.1",
    port,
  };
}

/**
 * Starts the Worker; `{ origin, url(namespace), mf, restart(), stop() }`.
 * `restart()` stops the runtime and starts a new one on the same storage
 * and port. Stopped (and its storage removed) after the test.
 */
export async function startWorker(t, options = {}) {
  const persist = options.persist ?? mkdtempSync(join(tmpdir(), "edge-lease-worker-"));
  let mf = new Miniflare(leaseWorkerOptions({ ...options, persist }));
  const origin = (await mf.ready).origin;
  const port = Number(new URL(origin).port);
  const w = {
    origin,
    persist,
    get mf() {
      return mf;
    },
    url: (namespace) => (namespace ? `${origin}/n/${namespace}` : origin),
    async restart() {
      await mf?.dispose();
      mf = new Miniflare(leaseWorkerOptions({ ...options, persist, port }));
      await mf.ready;
    },
    async stop() {
      await mf?.dispose();
      mf = null;
    },
  };
  t.after(async () => {
    await w.stop();
    if (!options.persist) rmSync(persist, { recursive: true, force: true });
  });
  return w;
}
