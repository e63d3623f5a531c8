// edge-lease/worker's Durable Object at scale, in Miniflare (workerd,
// SQLite-backed objects on a temp dir), each namespace filled through the
// service itself (the JSON gateway over loopback HTTP):
//
// - wake-up: WAKE_LEASES leases with a key each (grants from 32 concurrent
//   clients, then the keys put 128 to a Txn, each with its lease); then the
//   object is evicted (Miniflare's unsafeEvictDurableObject: the runtime and
//   its isolate stay up, the object's memory is dropped, its SQLite storage
//   stays) and the time to the first answer of a one-key range is taken
//   (the object's constructor restores the engine from storage first). The
//   same after a whole new runtime on the same storage (dispose, new
//   Miniflare; isolate and wasm compile included) is reported beside it.
// - largest namespace: keys (`m/<i>`, value "x", 128 to a Txn) with the
//   quota lifted (EDGE_LEASE_QUOTA_BYTES at the engine's largest, 1 GiB) until a put fails, the
//   workerd process's resident memory passes its level before the fill by
//   128 MB, or the time bound; the key count where the default 8 MiB quota
//   stops a namespace is noted on the way (etcd's dbSize from Status).
//
//   node benches/durable.mjs [--quick]

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fillNamespace } from "./wakeup.mjs";

const CLIENTS = 32;
const TXN_OPS = 128;
const ISOLATE_BYTES = 128 * 2 ** 20;
const DEFAULT_QUOTA = 8 * 2 ** 20;
// The engine's largest quota.
const LIFTED_QUOTA = 2 ** 30;
const b64 = (s) => Buffer.from(s).toString("base64");

async function post(url, path, body) {
  // Bounded: a runtime that died leaves a fetch hanging otherwise.
  const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  const text = await r.text();
  if (r.status !== 200) throw Object.assign(new Error(`${path}: ${r.status} ${text.slice(0, 200)}`), { status: r.status });
  return JSON.parse(text);
}

/** Resident bytes of the workerd processes under this one (Miniflare's runtime). */
function workerdRss() {
  let total = 0;
  const kids = new Set([process.pid]);
  // Children, grandchildren: a few passes over /proc.
  for (let pass = 0; pass < 3; pass++) {
    for (const p of readdirSync("/proc")) {
      if (!/^\d+$/.test(p)) continue;
      try {
        const stat = readFileSync(`/proc/${p}/stat`, "utf8");
        const ppid = Number(stat.split(") ")[1].split(" ")[1]);
        if (kids.has(ppid)) kids.add(Number(p));
      } catch {}
    }
  }
  for (const pid of kids) {
    if (pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, "utf8").includes("workerd")) continue;
      total += Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)/m)[1]) * 1024;
    } catch {}
  }
  return total;
}

/** ms to the first answer of a one-key range on `url`, checked. */
async function firstAnswer(url) {
  const t0 = performance.now();
  const r = await post(url, "/v3/kv/range", { key: b64("w/0") });
  const ms = performance.now() - t0;
  if (r.count !== "1") throw new Error(`wake-up: w/0 not found after the wake-up: ${JSON.stringify(r).slice(0, 200)}`);
  return ms;
}

const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];

export async function durableWakeUp({ quick = false } = {}) {
  const { Miniflare } = await import("miniflare");
  const { leaseWorkerOptions } = await import("../tests/workerd/harness.mjs");
  const leases = quick ? 5_000 : 100_000;
  const runs = quick ? 3 : 5;
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-bench-wake-"));
  let mf = new Miniflare(leaseWorkerOptions({ persist }));
  try {
    const origin = (await mf.ready).origin;
    const url = `${origin}/n/wake`;
    const t0 = performance.now();
    await fillNamespace(url, leases, { maxMs: quick ? 60_000 : 900_000 });
    const fillSeconds = (performance.now() - t0) / 1000;
    const status = await post(url, "/v3/maintenance/status", {});
    // Evicted object, runtime up; an empty namespace's the same way as the baseline.
    await post(`${origin}/n/empty`, "/v3/kv/put", { key: b64("w/0"), value: b64("x") });
    const evicted = [];
    const evictedEmpty = [];
    for (let i = 0; i < runs; i++) {
      await mf.unsafeEvictDurableObject("", "LeaseNamespace", { name: "wake" });
      evicted.push(await firstAnswer(url));
      await mf.unsafeEvictDurableObject("", "LeaseNamespace", { name: "empty" });
      evictedEmpty.push(await firstAnswer(`${origin}/n/empty`));
    }
    // A new runtime on the same storage: its start, then the first answer.
    const restarted = [];
    for (let i = 0; i < Math.min(runs, 3); i++) {
      await mf.dispose();
      mf = null;
      const a = performance.now();
      mf = new Miniflare(leaseWorkerOptions({ persist }));
      const o = (await mf.ready).origin;
      const ready = performance.now() - a;
      restarted.push({ ready, first: await firstAnswer(`${o}/n/wake`) });
    }
    return {
      leases,
      fillSeconds,
      dbSize: Number(status.dbSize),
      evictedMs: median(evicted),
      evictedEmptyMs: median(evictedEmpty),
      runs,
      restartReadyMs: median(restarted.map((r) => r.ready)),
      restartFirstMs: median(restarted.map((r) => r.first)),
      restartRuns: restarted.length,
    };
  } finally {
    await mf?.dispose();
    rmSync(persist, { recursive: true, force: true });
  }
}

export async function durableCapacity({ quick = false } = {}) {
  const { Miniflare } = await import("miniflare");
  const { leaseWorkerOptions } = await import("../tests/workerd/harness.mjs");
  const maxKeys = quick ? 100_000 : 2_000_000;
  const maxMs = quick ? 30_000 : 600_000;
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-bench-capacity-"));
  const mf = new Miniflare(leaseWorkerOptions({ persist, bindings: { EDGE_LEASE_QUOTA_BYTES: String(LIFTED_QUOTA) } }));
  try {
    const origin = (await mf.ready).origin;
    const url = `${origin}/n/big`;
    await post(url, "/v3/kv/put", { key: b64("w/0"), value: b64("x") });
    const baseRss = workerdRss();
    let keys = 1;
    let atQuota = null;
    let stop = "the key bound";
    let rss = baseRss;
    const t0 = Date.now();
    const deadline = t0 + maxMs;
    for (let b = 0; keys < maxKeys; b++) {
      if (Date.now() > deadline) {
        stop = `the time bound (${maxMs / 1000} s)`;
        break;
      }
      const success = [];
      for (let i = 0; i < TXN_OPS; i++) success.push({ request_put: { key: b64(`m/${b * TXN_OPS + i}`), value: b64("x") } });
      try {
        await post(url, "/v3/kv/txn", { success });
      } catch (e) {
        stop = `a failed put: ${e.message.slice(0, 120)}`;
        break;
      }
      keys += TXN_OPS;
      if (process.env.BENCH_DEBUG && b % 64 === 63) console.error(keys, workerdRss());
      if (b % 64 === 63) {
        rss = workerdRss();
        if (atQuota === null && Number((await post(url, "/v3/maintenance/status", {})).dbSize) > DEFAULT_QUOTA) atQuota = keys;
        if (rss - baseRss > ISOLATE_BYTES) {
          stop = "resident memory 128 MB over its level before the fill";
          break;
        }
      }
    }
    rss = workerdRss();
    const fillSeconds = (Date.now() - t0) / 1000;
    // Can it wake with that much? Evict, time the first answer.
    let wakeMs = null;
    let wakeError = null;
    try {
      await mf.unsafeEvictDurableObject("", "LeaseNamespace", { name: "big" });
      const a = performance.now();
      const r = await post(url, "/v3/kv/range", { key: b64("m/0") });
      wakeMs = performance.now() - a;
      if (r.count !== "1") wakeError = "m/0 missing after the wake-up";
    } catch (e) {
      wakeError = e.message.slice(0, 160);
    }
    return { keys, atQuota, stop, rssGrowth: rss - baseRss, baseRss, fillSeconds, wakeMs, wakeError, maxKeys, maxMs };
  } finally {
    await mf.dispose();
    rmSync(persist, { recursive: true, force: true });
  }
}

/** Both; { wake, capacity, markdown }. */
export async function durableBench({ quick = false } = {}) {
  const settle = async (f) => {
    try {
      return await f();
    } catch (e) {
      return { error: String(e?.message ?? e).slice(0, 300) };
    }
  };
  const wake = await settle(() => durableWakeUp({ quick }));
  const capacity = await settle(() => durableCapacity({ quick }));
  const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  const MiB = 2 ** 20;
  const lines = ["## edge-lease/worker: a Durable Object at scale in Miniflare (benches/durable.mjs)", ""];
  lines.push(
    wake.error
      ? `Wake-up: failed: ${wake.error}`
      : `Wake-up: a namespace of ${wake.leases} leases with a key each (filled through the gateway in ${fmt(wake.fillSeconds, 0)} s: grants from ${CLIENTS} clients, then the keys ${TXN_OPS} to a Txn; etcd's dbSize ${fmt(wake.dbSize / MiB, 2)} MiB), its object evicted with Miniflare's \`unsafeEvictDurableObject\` (the runtime and its isolate stay up; the object's memory goes, its SQLite storage stays), then the first answer to a one-key range, which waits for the object's restore from storage: **${fmt(wake.evictedMs, 1)} ms** (median of ${wake.runs}; an evicted empty namespace the same way: ${fmt(wake.evictedEmptyMs, 1)} ms). ` +
          `After a whole new runtime on the same storage (Miniflare disposed and created again: workerd's start, the Worker's module and its wasm compiled again): ready in ${fmt(wake.restartReadyMs, 0)} ms, then the first answer in ${fmt(wake.restartFirstMs, 1)} ms (median of ${wake.restartRuns}). SQLite's file is in the OS page cache in both, as it would be on a warm machine.`,
    "",
  );
  lines.push(
    capacity.error
      ? `Largest namespace: failed: ${capacity.error}`
      : `Largest namespace: keys \`m/<i>\` (value "x", ${TXN_OPS} to a Txn) into one namespace with the quota lifted (\`EDGE_LEASE_QUOTA_BYTES\` at the engine's largest, 1 GiB), until ${capacity.stop}: **${capacity.keys} keys**, workerd's resident memory +${fmt(capacity.rssGrowth / MiB, 0)} MiB over ${fmt(capacity.baseRss / MiB, 0)} MiB before the fill (${fmt(capacity.fillSeconds, 0)} s; bounds ${capacity.maxKeys} keys, ${capacity.maxMs / 1000} s). ` +
          `The default 8 MiB quota (etcd's dbSize) stops a namespace at ${capacity.atQuota ?? `more than ${capacity.keys}`} keys. Evicted at the end and woken: ${capacity.wakeError ? `failed: ${capacity.wakeError}` : `first answer in ${fmt(capacity.wakeMs, 0)} ms`}. ` +
          "Resident memory is the whole runtime's (workerd, every isolate), read from /proc: Miniflare enforces no 128 MB limit, so the bound is applied from outside.",
    "",
  );
  return { wake, capacity, markdown: lines.join("\n") };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
  const r = await durableBench({ quick: values.quick });
  console.log(r.markdown);
  console.log(JSON.stringify({ wake: r.wake, capacity: r.capacity }));
  process.exit(0);
}
