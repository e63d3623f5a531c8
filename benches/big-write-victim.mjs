// One big write on each server, etcd 3.4 and edge-lease, and what another
// client waits meanwhile (issue 31 item 6): N keys filled through Txns of
// 128 puts, then a revoke of the lease they share, or a DeleteRange of
// them, while a victim in its own process (etcd3, the npm client) reads one
// other key, one Range at a time, every 5 ms. Both servers fsync each write
// before answering; they take turns, ROUNDS times each. Prints one JSON line
// per run: the big write's answer time, and the victim's Ranges from 1 s
// before it to 1 s after its answer (count, p50, p99, max, over 50 ms).
// Figures, not assertions:
//   node benches/big-write-victim.mjs [N=100000] [ROUNDS=2]
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { start } from "./server.mjs";

const require = createRequire(import.meta.url);
const { Etcd3 } = require("etcd3");
const SELF = fileURLToPath(import.meta.url);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const key = (i) => Buffer.from(`k/${String(i).padStart(7, "0")}`);
const PROBE_MS = 5;
const LIMIT_MS = 120_000;

// The victim: Ranges of one key, one at a time, each's start and time,
// until told to stop (at most LIMIT_MS).
if (process.argv[2] === "--victim") {
  const c = new Etcd3({ hosts: process.argv[3] });
  await c.get("probe").string();
  const calls = [];
  let on = true;
  process.on("message", () => (on = false));
  process.send("ready");
  const t0 = Date.now();
  while (on && Date.now() - t0 < LIMIT_MS) {
    const s = performance.now();
    await c.get("probe").string();
    calls.push([performance.timeOrigin + s, performance.now() - s]);
    await sleep(PROBE_MS);
  }
  process.send(calls);
  c.close();
  process.exit(0);
}

async function run(kind, which, n) {
  const server = await start(kind);
  const c = new Etcd3({ hosts: server.url });
  try {
    let lease = "0";
    if (which === "revoke") lease = await c.lease(3600, { autoKeepAlive: false }).grant();
    // Txns of 128 puts (etcd's --max-txn-ops), 8 in flight.
    let next = 0;
    const fill = async () => {
      while (next < n) {
        const from = next;
        next = Math.min(n, next + 128);
        const success = [];
        for (let i = from; i < next; i++) success.push({ request_put: { key: key(i), value: Buffer.from("value value"), lease } });
        await c.kv.txn({ success });
      }
    };
    await Promise.all(Array.from({ length: 8 }, fill));
    const victim = fork(SELF, ["--victim", server.url], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    await new Promise((ok) => victim.once("message", ok));
    await sleep(1000);
    const t0 = Date.now();
    if (which === "revoke") await c.leaseClient.leaseRevoke({ ID: lease });
    else await c.kv.deleteRange({ key: key(0), range_end: Buffer.from("k0") });
    const t1 = Date.now();
    await sleep(1000);
    victim.send("stop");
    const calls = await new Promise((ok) => victim.once("message", ok));
    const ms = calls.filter(([at]) => at >= t0 - 1000 && at <= t1 + 1000).map(([, d]) => d).sort((a, b) => a - b);
    const q = (p) => Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] * 10) / 10;
    return { server: kind, write: which, keys: n, answerMs: t1 - t0, victim: { calls: ms.length, p50: q(0.5), p99: q(0.99), max: q(1), over50ms: ms.filter((d) => d > 50).length } };
  } finally {
    c.close();
    await server.stop();
  }
}

const n = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 2);
for (let r = 0; r < rounds; r++) {
  for (const which of ["revoke", "deleteRange"]) {
    for (const kind of r % 2 ? ["etcd", "edge"] : ["edge", "etcd"]) console.log(JSON.stringify(await run(kind, which, n)));
  }
}
