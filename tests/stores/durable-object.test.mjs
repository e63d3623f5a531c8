// The storage contract (contract.mjs) for edge-lease/stores/durable-object
// under Miniflare, on SQLite-backed and KV-backed objects: the store lives
// in an object, reached through a proxy whose write() is one request (a
// transaction per batch, the store's default mode); reopen() restarts the
// runtime on the same persisted storage.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { workerOptions } from "../workerd/worker-options.mjs";
import { storeContract } from "./contract.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const encode = (v) => (v instanceof Uint8Array ? { b: Array.from(v) } : typeof v === "function" ? { fn: true } : { s: v });

function durableObjectFactory(useSQLite) {
  let persist = null;
  let mf = null;
  const start = () =>
    new Miniflare({
      ...workerOptions(join(ROOT, "tests/stores/durable-object-worker.mjs"), ROOT),
      durableObjects: { STORES: { className: "StoreHost", useSQLite } },
      durableObjectsPersist: persist,
    });
  const call = async (body) => {
    const res = await mf.dispatchFetch("http://do/", { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    const out = await res.json();
    if (out.error) throw Object.assign(new Error(out.message), { name: out.error });
    return out.result;
  };
  const proxy = {
    write: (batch) => call({ op: "write", put: batch.put.map(([k, v]) => [k, encode(v)]), del: batch.delete }),
    entries: async () => (await call({ op: "entries" })).map(([k, v]) => [k, v.b ? new Uint8Array(v.b) : v.s]),
  };
  return {
    async open() {
      persist = mkdtempSync(join(tmpdir(), "edge-lease-contract-do-"));
      mf = start();
      return proxy;
    },
    async reopen() {
      await mf.dispose();
      mf = start();
      return proxy;
    },
    async close() {
      await mf?.dispose();
      if (persist) rmSync(persist, { recursive: true, force: true });
      mf = persist = null;
    },
  };
}

storeContract("Durable Object, SQLite-backed (Miniflare)", durableObjectFactory(true));
storeContract("Durable Object, KV-backed (Miniflare)", durableObjectFactory(false));
