// edge-lease/worker through Miniflare (workerd, SQLite-backed objects on a
// temp dir): throughput and latency of whole client cycles over HTTP, as a
// client of the Worker sees them, with the same 20 concurrent clients on 1
// namespace and spread over 20 namespaces (one object each). Each client
// runs its cycle back to back for DURATION_MS; latency is per cycle.
//
//   node benches/worker.mjs      prints the table (npm run bench puts it in BENCHMARKS.md)
//
// Cycles:
//   grant+put   POST lease/grant (TTL 60), POST kv/put with the lease
//   keepalive   POST lease/keepalive with one {"ID"} (a whole HTTP stream per renewal)
//   keepalive (WebSocket)  one message and its answer on an open /v3/lease/keepalive WebSocket
//   lock        POST lease/grant (TTL 10), POST kv/txn (create_revision == 0 ? put : get),
//               POST lease/revoke: etcd's lock acquire and release on an uncontended key
//               (without Txn on the server: grant, put, revoke; the table says which)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLIENTS = 20;
const DURATION_MS = 3000;
const b64 = (s) => Buffer.from(s).toString("base64");

async function post(url, path, body) {
  const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 200) throw Object.assign(new Error(`${path}: ${r.status} ${text}`), { status: r.status });
  return JSON.parse(text.split("\n")[0]);
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function measure(clients, setup, cycle) {
  const states = await Promise.all(clients.map((c, i) => setup(c, i)));
  const lat = [];
  const end = performance.now() + DURATION_MS;
  const t0 = performance.now();
  await Promise.all(
    states.map(async (s, i) => {
      for (let n = 0; performance.now() < end; n++) {
        const a = performance.now();
        await cycle(s, i, n);
        lat.push(performance.now() - a);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  lat.sort((x, y) => x - y);
  await Promise.all(states.map((s) => s.close?.()));
  return { perSecond: lat.length / seconds, p50: pct(lat, 50), p99: pct(lat, 99), cycles: lat.length };
}

export async function workerThroughput() {
  const { Miniflare } = await import("miniflare");
  const { leaseWorkerOptions } = await import("../tests/workerd/harness.mjs");
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-bench-worker-"));
  const mf = new Miniflare(leaseWorkerOptions({ persist }));
  try {
    const origin = (await mf.ready).origin;
    // Does the server have Txn yet?
    let txn = true;
    try {
      await post(origin, "/v3/kv/txn", { success: [{ request_range: { key: b64("probe") } }] });
    } catch (e) {
      if (e.status !== 501) throw e;
      txn = false;
    }
    const rows = [];
    for (const namespaces of [1, 20]) {
      const clients = Array.from({ length: CLIENTS }, (_, i) => `${origin}/n/bench-${namespaces}-${i % namespaces}`);
      const plain = async (url) => ({ url });
      const withLease = async (url) => ({ url, id: (await post(url, "/v3/lease/grant", { TTL: 600 })).ID });
      rows.push([
        "grant+put",
        namespaces,
        await measure(clients, plain, async (s, i, n) => {
          const { ID } = await post(s.url, "/v3/lease/grant", { TTL: 60 });
          await post(s.url, "/v3/kv/put", { key: b64(`gp/${i}/${n}`), value: b64("x"), lease: ID });
        }),
      ]);
      rows.push([
        "keepalive (HTTP stream per renewal)",
        namespaces,
        await measure(clients, withLease, async (s) => {
          const r = await post(s.url, "/v3/lease/keepalive", { ID: s.id });
          if (r.result.TTL !== "600") throw new Error(`keepalive: ${JSON.stringify(r)}`);
        }),
      ]);
      rows.push([
        "keepalive (WebSocket message)",
        namespaces,
        await measure(
          clients,
          async (url) => {
            const s = await withLease(url);
            const res = await mf.dispatchFetch(url + "/v3/lease/keepalive", { headers: { upgrade: "websocket" } });
            const ws = res.webSocket;
            let answer = null;
            ws.addEventListener("message", (e) => answer?.(e.data));
            ws.accept();
            s.ask = () => new Promise((resolve) => ((answer = resolve), ws.send(JSON.stringify({ ID: s.id }))));
            s.close = () => ws.close(1000);
            return s;
          },
          async (s) => {
            const r = JSON.parse(await s.ask());
            if (r.result?.TTL !== "600") throw new Error(`keepalive: ${JSON.stringify(r)}`);
          },
        ),
      ]);
      rows.push([
        txn ? "lock (grant, txn, revoke)" : "lock stand-in (grant, put, revoke: no Txn yet)",
        namespaces,
        await measure(clients, plain, async (s, i) => {
          const { ID } = await post(s.url, "/v3/lease/grant", { TTL: 10 });
          const key = b64(`lock/${i}`);
          if (txn) {
            const r = await post(s.url, "/v3/kv/txn", {
              compare: [{ key, target: "CREATE", result: "EQUAL", create_revision: 0 }],
              success: [{ request_put: { key, value: b64("me"), lease: ID } }],
              failure: [{ request_range: { key } }],
            });
            if (!r.succeeded) throw new Error("lock not acquired on an uncontended key");
          } else {
            await post(s.url, "/v3/kv/put", { key, value: b64("me"), lease: ID });
          }
          await post(s.url, "/v3/lease/revoke", { ID });
        }),
      ]);
    }
    const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
    const lines = [
      `| cycle | namespaces | cycles/s | p50 ms | p99 ms | cycles |`,
      `| --- | --- | --- | --- | --- | --- |`,
      ...rows.map(([name, ns, r]) => `| ${name} | ${ns} | ${fmt(r.perSecond)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.cycles} |`),
    ];
    return { rows: rows.map(([name, namespaces, r]) => ({ name, namespaces, ...r })), markdown: lines.join("\n") };
  } finally {
    await mf.dispose();
    rmSync(persist, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = await workerThroughput();
  console.log(r.markdown);
}
