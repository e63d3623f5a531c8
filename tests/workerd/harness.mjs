// edge-lease/worker under Miniflare (workerd): the Worker and its
// LeaseNamespace objects, SQLite-backed as wrangler.toml's example declares
// them, served on a loopback port so tests (and the gateway tests written
// for the Node server) reach it with fetch. Storage persists in a temp dir
// across restarts of the runtime.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { workerOptions } from "./worker-options.mjs";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const WORKER = join(ROOT, "tests/workerd/lease-worker.mjs");

/** Miniflare options for `scriptPath` (default: the package's worker) on `persist`. */
export function leaseWorkerOptions({ scriptPath = WORKER, modulesRoot = ROOT, persist, bindings = {}, port = 0 } = {}) {
  return {
    ...workerOptions(scriptPath, modulesRoot),
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
