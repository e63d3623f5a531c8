// A Durable Object's wake-up with 100k leases and a key each, and the
// engine's restore of them, each split into its stages.
//
// - restore (Node, the lean engine through the JS API): the entries of
//   `lessor.snapshot()` restored by `new Lessor({ restore })`, and the same
//   in stages through the binding: packing the entries into parts (JS),
//   decoding them in the engine (`RawRestore.add`), building the lessor
//   (`RawLessor.restore`).
// - wake-up (Miniflare, SQLite-backed objects on a temp dir): a namespace
//   of edge-lease/worker filled through the service itself (the JSON
//   gateway over loopback HTTP: grants from 32 clients, then the keys put
//   128 to a Txn, each with its lease); its object evicted with Miniflare's
//   `unsafeEvictDurableObject` (the runtime and its isolate stay up, the
//   object's memory goes, its SQLite storage stays) and the first answer to
//   a one-key range timed. The Worker is benches/wakeup-worker.mjs, whose
//   object stops part-way when told (`WAKE_STAGE`): its first answers after
//   reading nothing, reading every row, decoding them, restoring the
//   lessor, and the whole object tell where the time goes.
//
//   node benches/wakeup.mjs [--leases 100000] [--runs 7] [--keep DIR] [--journal 0,2000] [--skip-restore] [--skip-wake]
//
// `--keep DIR`: the filled storage is kept there (and, if DIR holds one
// already, used as it is: no fill). Exports `restoreStages`, `fillNamespace`
// and `wakeStages` for `npm run bench`.

import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const CLIENTS = 32;
const TXN_OPS = 128;
const b64 = (s) => Buffer.from(s).toString("base64");
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
const STAGES = ["none", "read", "decode", "build", "restore", "full"];
const WORKER = fileURLToPath(new URL("./wakeup-worker.mjs", import.meta.url));

/** Restore of `n` leases with a key each through the JS API, in stages; medians of `runs`. */
export async function restoreStages({ n = 100_000, runs = 7 } = {}) {
  const { Lessor } = await import("../js/entries/node.mjs");
  const engine = await import("../js/pkg/edge_lease.js");
  const { packEntryParts } = await import("../js/codec.js");
  const l = new Lessor({ autoTick: false });
  for (let i = 0; i < n; i++) l.put(`svc/${i}`, "up", { lease: l.grant(600).id });
  const entries = l.snapshot();
  l.close();
  const t = { whole: [], pack: [], decode: [], build: [] };
  for (let r = 0; r < runs; r++) {
    let t0 = performance.now();
    const back = new Lessor({ restore: entries, autoTick: false });
    t.whole.push(performance.now() - t0);
    if (back.leases().length !== n) throw new Error("restore lost leases");
    back.close();
    // The same through the binding, a stage at a time.
    t0 = performance.now();
    const parts = [];
    packEntryParts(entries, 1 << 20, (p) => parts.push(p.slice()));
    const t1 = performance.now();
    const raw = new engine.RawRestore();
    for (const p of parts) raw.add(p);
    const t2 = performance.now();
    const built = engine.RawLessor.restore(engine.defaults(), raw, Date.now(), undefined);
    const t3 = performance.now();
    built.free();
    t.pack.push(t1 - t0);
    t.decode.push(t2 - t1);
    t.build.push(t3 - t2);
  }
  return {
    n,
    entries: entries.length,
    runs,
    wholeMs: median(t.whole),
    packMs: median(t.pack),
    decodeMs: median(t.decode),
    buildMs: median(t.build),
  };
}

async function post(url, path, body) {
  // Bounded: a runtime that died leaves a fetch hanging otherwise.
  const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** `n` leases with a key each (`w/<i>`) into the namespace at `url`, through its gateway. */
export async function fillNamespace(url, n, { maxMs = 900_000 } = {}) {
  const deadline = Date.now() + maxMs;
  const ids = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < n; i = next++) {
        if (Date.now() > deadline) throw new Error(`fill: ${i} of ${n} leases granted before the time bound`);
        ids[i] = (await post(url, "/v3/lease/grant", { TTL: 3600 })).ID;
      }
    }),
  );
  let batch = 0;
  const batches = Math.ceil(n / TXN_OPS);
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let b = batch++; b < batches; b = batch++) {
        if (Date.now() > deadline) throw new Error(`fill: the keys of ${b * TXN_OPS} of ${n} leases put before the time bound`);
        const success = [];
        for (let i = b * TXN_OPS; i < Math.min(n, (b + 1) * TXN_OPS); i++) success.push({ request_put: { key: b64(`w/${i}`), value: b64("x"), lease: ids[i] } });
        await post(url, "/v3/kv/txn", { success });
      }
    }),
  );
}

/**
 * The first answer after an eviction, per stage (median ms of `runs`), on a
 * copy of the storage in `persist` (filled by `fillNamespace` in the
 * namespace "wake"). The copy is settled first: the real object woken once
 * (it compacts its rows if they are due), then `journal` more puts, each a
 * journal row on SQLite-backed objects (the most a wake-up reads beside
 * the snapshot is the compaction's bound: 2048 rows).
 */
export async function wakeStages({ persist, runs = 7, stages = STAGES, journal = 0, leaseWorkerOptions, Miniflare }) {
  const settled = mkdtempSync(join(tmpdir(), "edge-lease-wake-settled-"));
  cpSync(persist, settled, { recursive: true });
  let mf = new Miniflare(leaseWorkerOptions({ scriptPath: WORKER, persist: settled }));
  try {
    const url = `${(await mf.ready).origin}/n/wake`;
    await post(url, "/v3/kv/range", { key: b64("w/0") });
    for (let i = 0; i < journal; i++) await post(url, "/v3/kv/put", { key: b64(`j/${i}`), value: b64("x") });
  } finally {
    await mf.dispose();
  }
  const out = { journal };
  try {
    for (const stage of stages) {
      const copy = mkdtempSync(join(tmpdir(), "edge-lease-wake-copy-"));
      cpSync(settled, copy, { recursive: true });
      mf = new Miniflare(leaseWorkerOptions({ scriptPath: WORKER, persist: copy, bindings: { WAKE_STAGE: stage } }));
      try {
        const url = `${(await mf.ready).origin}/n/wake`;
        // The first wake of this runtime pays for the module's compile: not counted.
        const first = await post(url, "/v3/kv/range", { key: b64("w/0") });
        const ms = [];
        for (let i = 0; i < runs; i++) {
          await mf.unsafeEvictDurableObject("", "LeaseNamespace", { name: "wake" });
          const t0 = performance.now();
          const r = await post(url, "/v3/kv/range", { key: b64("w/0") });
          ms.push(performance.now() - t0);
          if (stage === "full" && r.count !== "1") throw new Error(`w/0 missing after the wake-up: ${JSON.stringify(r).slice(0, 200)}`);
        }
        out[stage] = { medianMs: median(ms), minMs: Math.min(...ms), runs, ...(stage === "read" ? { read: first } : {}) };
      } finally {
        await mf.dispose();
        rmSync(copy, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(settled, { recursive: true, force: true });
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      leases: { type: "string", default: "100000" },
      runs: { type: "string", default: "7" },
      keep: { type: "string" },
      stages: { type: "string", default: STAGES.join(",") },
      journal: { type: "string", default: "0,2000" },
      "skip-restore": { type: "boolean", default: false },
      "skip-wake": { type: "boolean", default: false },
    },
  });
  const n = Number(values.leases);
  const runs = Number(values.runs);
  if (!values["skip-restore"]) console.log(JSON.stringify({ restore: await restoreStages({ n, runs }) }));
  if (!values["skip-wake"]) {
    const { Miniflare } = await import("miniflare");
    const { leaseWorkerOptions } = await import("../tests/workerd/harness.mjs");
    const persist = values.keep ?? mkdtempSync(join(tmpdir(), "edge-lease-wake-"));
    try {
      if (!existsSync(persist) || readdirSync(persist).length === 0) {
        const mf = new Miniflare(leaseWorkerOptions({ scriptPath: WORKER, persist }));
        try {
          const t0 = performance.now();
          await fillNamespace(`${(await mf.ready).origin}/n/wake`, n);
          console.log(JSON.stringify({ fillSeconds: (performance.now() - t0) / 1000 }));
        } finally {
          await mf.dispose();
        }
      }
      const stages = values.stages.split(",");
      for (const journal of values.journal.split(",").map(Number)) {
        console.log(JSON.stringify({ wake: await wakeStages({ persist, runs, stages, journal, leaseWorkerOptions, Miniflare }) }));
      }
    } finally {
      if (!values.keep) rmSync(persist, { recursive: true, force: true });
    }
  }
  process.exit(0);
}
