import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { workerOptions } from "../tests/workerd/worker-options.mjs";
const ROOT = new URL("../", import.meta.url).pathname;
const persist = mkdtempSync(join(tmpdir(), "mem-probe-"));
const mf = new Miniflare({ ...workerOptions(join(ROOT, "tests/workerd/do-worker.mjs"), ROOT), durableObjects: { LEASES: { className: "Leases", useSQLite: true } }, durableObjectsPersist: persist });
const now = Date.now() + 10 * 365 * 86_400_000;
const call = async (op, ...args) => { const b = await (await mf.dispatchFetch("http://do/", { method: "POST", body: JSON.stringify({ now, op, args }) })).json(); if (b.error) throw new Error(b.message); return b.result; };
try {
  for (let i = 0; i < 20; i++) { const id = (await call("grant", 3600)).id; await call("putMany", `k${i}/`, 5000, id); }
  console.log("filled", (await call("memoryBytes")) / 2 ** 20, "MiB");
  for (let i = 0; i < 6; i++) {
    await mf.unsafeEvictDurableObject("", "Leases", { name: "test" });
    const t0 = performance.now();
    const m = await call("memoryBytes");
    console.log(`wake ${i}: ${(performance.now() - t0).toFixed(0)} ms, wasm memory ${(m / 2 ** 20).toFixed(1)} MiB`);
  }
} finally { await mf.dispose(); rmSync(persist, { recursive: true, force: true }); }
