// The server benchmark: edge-lease's etcd server against a real etcd 3.4 on
// this machine, the same gRPC client (@grpc/grpc-js with server/proto) and
// the same durability (both fsync each write). Operations: grant+put,
// keepalive (one bidi stream per client), range of one key, a lock cycle
// (v3lock Lock then Unlock), and watch fan-out (100 watchers, one writer);
// at 1 and 32 concurrent clients. Every case is bounded in count and time.
//
//   node benches/server.mjs            prints the markdown section
//   (npm run bench includes it in BENCHMARKS.md)

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { grpcClient } from "../server/proto/load.mjs";
import { freePort } from "../tests/etcd/harness.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLIENTS = [1, 32];
// Per case: at most this many operations in all, and this long.
const MAX_OPS = 4000;
const MAX_MS = 8000;
const WATCHERS = 100;
const WATCH_PUTS = 200;


async function start(kind) {
  const dir = mkdtempSync(join(tmpdir(), `bench-${kind}-`));
  const client = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const args = [
    "--name", "bench", "--data-dir", join(dir, "data"),
    "--listen-client-urls", client, "--advertise-client-urls", client,
    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
    "--initial-cluster", `bench=${peer}`, "--initial-cluster-state", "new",
  ];
  const child = kind === "etcd"
    ? spawn("etcd", args, { stdio: "ignore" })
    : spawn(process.execPath, [join(ROOT, "server/main.mjs"), ...args], { stdio: "ignore" });
  const exited = new Promise((r) => child.on("exit", r));
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(client + "/health");
      if (r.ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: client,
    async stop() {
      child.kill("SIGKILL");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function connect(url) {
  const clients = {};
  for (const service of ["etcdserverpb.KV", "etcdserverpb.Lease", "etcdserverpb.Watch", "v3lockpb.Lock"]) {
    clients[service.split(".")[1]] = grpcClient(url, service, { bytes: Buffer, enums: undefined });
  }
  return clients;
}

// Every wait is bounded: an RPC by its gRPC deadline, the rest by `within`.
const call = (c, method, req) =>
  new Promise((ok, fail) =>
    c[method](req, { deadline: Date.now() + 10_000 }, (err, res) => (err ? fail(err) : ok(res))),
  );

function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, fail) => (timer = setTimeout(() => fail(new Error(`${what}: no answer in ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Runs `op(client, i)` from `n` clients until MAX_OPS or MAX_MS; latencies in ms.
async function measure(conns, n, setup, op) {
  const states = await Promise.all(conns.slice(0, n).map((c, i) => setup(c, i)));
  const lat = [];
  let next = 0;
  const t0 = performance.now();
  const deadline = t0 + MAX_MS;
  await Promise.all(
    states.map(async (s, i) => {
      for (;;) {
        const k = next++;
        if (k >= MAX_OPS || performance.now() > deadline) return;
        const a = performance.now();
        await op(s, k, i);
        lat.push(performance.now() - a);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return { ops: lat.length, opsPerSec: lat.length / secs, p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

const CASES = {
  "grant+put": {
    setup: (c) => c,
    op: async (c, k) => {
      const g = await call(c.Lease, "LeaseGrant", { TTL: 60 });
      await call(c.KV, "Put", { key: Buffer.from(`svc/${k}`), value: Buffer.from("alive"), lease: g.ID });
    },
  },
  keepalive: {
    setup: async (c) => {
      const g = await call(c.Lease, "LeaseGrant", { TTL: 60 });
      const stream = c.Lease.LeaseKeepAlive();
      const waiting = [];
      stream.on("data", () => waiting.shift()?.());
      stream.on("error", () => {});
      return { stream, id: g.ID, waiting };
    },
    op: (s) =>
      within(
        new Promise((ok) => {
          s.waiting.push(ok);
          s.stream.write({ ID: s.id });
        }),
        10_000,
        "keepalive",
      ),
    done: (s) => s.stream.end(),
  },
  range: {
    setup: async (c, i) => {
      await call(c.KV, "Put", { key: Buffer.from(`r/${i}`), value: Buffer.from("x".repeat(64)) });
      return { c, key: Buffer.from(`r/${i}`) };
    },
    op: (s) => call(s.c.KV, "Range", { key: s.key }),
  },
  "lock cycle": {
    setup: async (c) => ({ c, lease: (await call(c.Lease, "LeaseGrant", { TTL: 60 })).ID }),
    op: async (s) => {
      const r = await call(s.c.Lock, "Lock", { name: Buffer.from("bench-lock"), lease: s.lease });
      await call(s.c.Lock, "Unlock", { key: r.key });
    },
  },
};

// One writer, WATCHERS watch streams on one key: per put, the time until
// every watcher has its event. Reported as events delivered per second.
async function watchFanOut(conns) {
  const watchers = [];
  for (let i = 0; i < WATCHERS; i++) {
    const c = conns[i % conns.length];
    const stream = c.Watch.Watch();
    // Resolvers by revision, and revisions that arrived before the put
    // that made them had answered.
    const seen = new Map();
    const early = new Set();
    let created;
    const ready = new Promise((r) => (created = r));
    stream.on("data", (res) => {
      if (res.created) created();
      for (const ev of res.events ?? []) {
        const rev = Number(ev.kv.mod_revision);
        const r = seen.get(rev);
        if (r) r();
        else early.add(rev);
      }
    });
    stream.on("error", () => {});
    stream.write({ create_request: { key: Buffer.from("fan") } });
    watchers.push({ stream, seen, early, ready });
  }
  try {
    await within(Promise.all(watchers.map((w) => w.ready)), 10_000, "watch create");
  } catch (e) {
    for (const w of watchers) w.stream.cancel();
    throw e;
  }
  const lat = [];
  const t0 = performance.now();
  for (let k = 0; k < WATCH_PUTS && performance.now() - t0 < MAX_MS; k++) {
    const a = performance.now();
    const arrivals = [];
    // The revision is only known once the put answers: register by it then.
    const pending = watchers.map((w) => new Promise((r) => arrivals.push({ w, r })));
    const put = await call(conns[0].KV, "Put", { key: Buffer.from("fan"), value: Buffer.from(String(k)) });
    const rev = Number(put.header.revision);
    for (const { w, r } of arrivals) {
      if (w.early.delete(rev)) r();
      else w.seen.set(rev, r);
    }
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 2000))]);
    lat.push(performance.now() - a);
  }
  const secs = (performance.now() - t0) / 1000;
  for (const w of watchers) w.stream.cancel();
  lat.sort((a, b) => a - b);
  return { ops: lat.length * WATCHERS, opsPerSec: (lat.length * WATCHERS) / secs, p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

async function runSystem(kind) {
  const server = await start(kind);
  const conns = Array.from({ length: Math.max(...CLIENTS) }, () => connect(server.url));
  const rows = [];
  try {
    for (const [name, c] of Object.entries(CASES)) {
      for (const n of CLIENTS) {
        try {
          const states = [];
          const r = await measure(conns, n, async (conn, i) => {
            const s = await c.setup(conn, i);
            states.push(s);
            return s;
          }, c.op);
          for (const s of states) c.done?.(s);
          rows.push({ kind, name, n, ...r });
        } catch (e) {
          rows.push({ kind, name, n, error: e.details ?? e.message });
        }
      }
    }
    try {
      rows.push({ kind, name: `watch fan-out (${WATCHERS} watchers)`, n: 1, ...(await watchFanOut(conns)) });
    } catch (e) {
      rows.push({ kind, name: `watch fan-out (${WATCHERS} watchers)`, n: 1, error: e.details ?? e.message });
    }
  } finally {
    for (const c of conns) for (const s of Object.values(c)) s.close();
    await server.stop();
  }
  return rows;
}

const fmt = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "-");

/** Runs both systems; returns the markdown section. */
export async function serverBench() {
  try {
    execFileSync("etcd", ["--version"], { stdio: "ignore" });
  } catch {
    return "## Server\n\nSkipped: etcd is not installed (`bash scripts/setup.sh --etcd`).\n";
  }
  const edge = await runSystem("edge-lease");
  const etcd = await runSystem("etcd");
  const lines = [
    "## Server: edge-lease against etcd 3.4 (benches/server.mjs)",
    "",
    `Both on this machine, on loopback, with fsync on each write (etcd's default; edge-lease's file store), the same gRPC client (@grpc/grpc-js with server/proto). Each case: at most ${MAX_OPS} operations or ${MAX_MS / 1000} s; latency is per operation in ms. Watch fan-out: ${WATCHERS} watch streams on one key and one writer; latency from the put until all ${WATCHERS} have the event, throughput in events delivered per second.`,
    "",
    "| operation | clients | edge-lease ops/s | etcd ops/s | ratio | edge-lease p50 / p99 ms | etcd p50 / p99 ms |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const e of edge) {
    const t = etcd.find((x) => x.name === e.name && x.n === e.n) ?? {};
    const cell = (r) => (r.error ? `error: ${r.error.slice(0, 60)}` : fmt(r.opsPerSec, 0));
    const ratio = e.error || t.error ? "-" : `${fmt(e.opsPerSec / t.opsPerSec, 2)}x`;
    lines.push(
      `| ${e.name} | ${e.n} | ${cell(e)} | ${cell(t)} | ${ratio} | ${e.error ? "-" : `${fmt(e.p50, 2)} / ${fmt(e.p99, 2)}`} | ${t.error ? "-" : `${fmt(t.p50, 2)} / ${fmt(t.p99, 2)}`} |`,
    );
  }
  return lines.join("\n") + "\n";
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await serverBench());
  process.exit(0);
}
