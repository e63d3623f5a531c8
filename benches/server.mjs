// The server benchmark: edge-lease's etcd server against a real etcd 3.4 on
// this machine, the same clients and the same durability (both fsync each
// write before answering). Unary calls go through a lean gRPC client on
// node:http2 (protobufjs messages, one HTTP/2 connection per client):
// @grpc/grpc-js as the client cost more CPU than either server and capped both
// at the same rate on this 2-core machine. Streams (keepalive, watch) use
// @grpc/grpc-js. Each server's CPU time per operation is read from /proc. Operations: grant+put,
// keepalive (one bidi stream per client), range of one key, a lock cycle
// (v3lock Lock then Unlock), and watch fan-out (100 watchers, one writer);
// at 1 and 32 concurrent clients. Every case is bounded in count and time.
//
//   node benches/server.mjs            prints the markdown section
//   (npm run bench includes it in BENCHMARKS.md)

import { spawn, execFileSync } from "node:child_process";
import { connect as http2Connect } from "node:http2";
import { connect as netConnect } from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { grpcClient, loadRoot } from "../server/proto/load.mjs";
import { services as SCHEMA } from "../server/proto/schema.mjs";
import { freePort } from "../tests/etcd/harness.mjs";
import { within } from "../tests/etcd/grpc-client.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLIENTS = [1, 32];
const MAX_CLIENTS = Math.max(...CLIENTS);
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
    : kind === "floor"
      ? spawn(process.execPath, [join(ROOT, "benches/http2-floor.mjs"), new URL(client).port], { stdio: "ignore" })
      : spawn(process.execPath, [join(ROOT, "server/main.mjs"), ...args], { stdio: "ignore" });
  const exited = new Promise((r) => child.on("exit", r));
  for (let i = 0; i < 100; i++) {
    try {
      if (kind === "floor" ? await listening(client) : (await fetch(client + "/health")).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: client,
    pid: child.pid,
    async stop() {
      child.kill("SIGKILL");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const root = await loadRoot();

// A unary gRPC client on one HTTP/2 connection: c.KV.Range(req) -> response.
// Every call is bounded by its grpc-timeout and a local timer.
function leanClient(url) {
  const session = http2Connect(url);
  session.on("error", () => {});
  const unary = (path, Req, Res) => (req) =>
    new Promise((ok, fail) => {
      const msg = Req.encode(Req.fromObject(req)).finish();
      const body = Buffer.alloc(5 + msg.length);
      body.writeUInt32BE(msg.length, 1);
      body.set(msg, 5);
      const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "grpc-timeout": "10S" });
      const timer = setTimeout(() => (s.close(), fail(new Error(`${path}: no answer in 10 s`))), 10_000);
      const chunks = [];
      let status = null;
      s.on("response", (h) => (status = h["grpc-status"] ?? null));
      s.on("trailers", (t) => (status = t["grpc-status"] ?? status));
      s.on("data", (d) => chunks.push(d));
      s.on("error", (e) => (clearTimeout(timer), fail(e)));
      s.on("end", () => {
        clearTimeout(timer);
        if (status !== "0") return fail(new Error(`${path}: grpc-status ${status}`));
        const res = Buffer.concat(chunks);
        ok(Res.toObject(Res.decode(res.subarray(5, 5 + res.readUInt32BE(1))), { longs: String }));
      });
      s.end(body);
    });
  const clients = { close: () => session.close() };
  for (const service of ["etcdserverpb.KV", "etcdserverpb.Lease", "v3lockpb.Lock"]) {
    const methods = {};
    for (const [rpc, [reqType, resType, streaming]] of Object.entries(SCHEMA[service])) {
      if (!streaming) methods[rpc] = unary(`/${service}/${rpc}`, root.lookupType(reqType), root.lookupType(resType));
    }
    clients[service.split(".")[1]] = methods;
  }
  return clients;
}

/** Whether something accepts TCP connections at `url`. */
function listening(url) {
  const { hostname, port } = new URL(url);
  return new Promise((ok) => {
    const socket = netConnect(Number(port), hostname, () => (socket.destroy(), ok(true)));
    socket.on("error", () => ok(false));
  });
}

function connect(url) {
  const lean = leanClient(url);
  const streams = {
    Lease: grpcClient(url, "etcdserverpb.Lease", { bytes: Buffer, enums: undefined }),
    Watch: grpcClient(url, "etcdserverpb.Watch", { bytes: Buffer, enums: undefined }),
  };
  return {
    ...lean,
    // Unary calls lean; the keepalive stream through grpc-js.
    Lease: { ...lean.Lease, LeaseKeepAlive: () => streams.Lease.LeaseKeepAlive() },
    Watch: streams.Watch,
    close() {
      lean.close();
      for (const c of Object.values(streams)) c.close();
    },
  };
}

const call = (c, method, req) => c[method](req);

/** CPU seconds (user + system) process `pid` has used. */
function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // clock ticks of 10 ms (USER_HZ)
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
          const cpu0 = cpuSeconds(server.pid);
          const r = await measure(conns, n, async (conn, i) => {
            const s = await c.setup(conn, i);
            states.push(s);
            return s;
          }, c.op);
          for (const s of states) c.done?.(s);
          rows.push({ kind, name, n, ...r, cpuUs: ((cpuSeconds(server.pid) - cpu0) / r.ops) * 1e6 });
        } catch (e) {
          rows.push({ kind, name, n, error: e.details ?? e.message });
        }
      }
    }
    try {
      const cpu0 = cpuSeconds(server.pid);
      const r = await watchFanOut(conns);
      rows.push({ kind, name: `watch fan-out (${WATCHERS} watchers)`, n: 1, ...r, cpuUs: ((cpuSeconds(server.pid) - cpu0) / r.ops) * 1e6 });
    } catch (e) {
      rows.push({ kind, name: `watch fan-out (${WATCHERS} watchers)`, n: 1, error: e.details ?? e.message });
    }
  } finally {
    for (const c of conns) c.close();
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
  const floor = await runFloor();
  const lines = [
    "## Server: edge-lease against etcd 3.4 (benches/server.mjs)",
    "",
    `Both on this machine, on loopback, each write on disk (fsync'd) before it is answered, the same clients: unary calls through a lean gRPC client on node:http2 (one HTTP/2 connection per client), keepalive and watch streams through @grpc/grpc-js. The load generator shares the 2 cores with the server. Each case: at most ${MAX_OPS} operations or ${MAX_MS / 1000} s; latency is per operation in ms; server CPU is the server process's user + system time per operation (µs, from /proc; etcd may use both cores, edge-lease's JS runs on one). Watch fan-out: ${WATCHERS} watch streams on one key and one writer; latency from the put until all ${WATCHERS} have the event, throughput in events delivered per second.`,
    "",
    "| operation | clients | edge-lease ops/s | etcd ops/s | ratio | edge-lease p50 / p99 ms | etcd p50 / p99 ms | server CPU µs/op edge-lease / etcd |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const e of edge) {
    const t = etcd.find((x) => x.name === e.name && x.n === e.n) ?? {};
    const cell = (r) => (r.error ? `error: ${r.error.slice(0, 60)}` : fmt(r.opsPerSec, 0));
    const ratio = e.error || t.error ? "-" : `${fmt(e.opsPerSec / t.opsPerSec, 2)}x`;
    lines.push(
      `| ${e.name} | ${e.n} | ${cell(e)} | ${cell(t)} | ${ratio} | ${e.error ? "-" : `${fmt(e.p50, 2)} / ${fmt(e.p99, 2)}`} | ${t.error ? "-" : `${fmt(t.p50, 2)} / ${fmt(t.p99, 2)}`} | ${fmt(e.cpuUs, 0)} / ${fmt(t.cpuUs, 0)} |`,
    );
  }
  const at32 = edge.filter((e) => e.n === MAX_CLIENTS);
  const goal = at32.map((e) => {
    const t = etcd.find((x) => x.name === e.name && x.n === e.n) ?? {};
    if (e.error || t.error) return `${e.name}: not measured`;
    const r = e.opsPerSec / t.opsPerSec;
    return `${e.name} ${fmt(r, 2)}x, p99 ${fmt(e.p99, 1)} vs ${fmt(t.p99, 1)} ms: ${r >= 3 && e.p99 < t.p99 ? "MET" : "MISS"}`;
  });
  lines.push("", `Goal (issue 10): at least 3x etcd's throughput at ${MAX_CLIENTS} clients with a lower p99, on every operation. ${goal.join("; ")}.`);
  const f = floor.error ? `error: ${floor.error}` : `${fmt(floor.opsPerSec, 0)} calls/s at ${MAX_CLIENTS} clients, ${fmt(floor.cpuUs, 0)} µs of server CPU per call`;
  lines.push(
    "",
    `The floor under any gRPC server in Node (benches/http2-floor.mjs: bare node:http2 answering each call with one fixed message, no work), measured with the same client: ${f}.`,
  );
  return lines.join("\n") + "\n";
}

// The node:http2 floor: the range case's calls against benches/http2-floor.mjs.
export async function runFloor() {
  const server = await start("floor");
  const conns = Array.from({ length: MAX_CLIENTS }, () => leanClient(server.url));
  try {
    const range = (c) => c.KV.Range({ key: Buffer.from("r/0") });
    await measure(conns, MAX_CLIENTS, (c) => c, range); // warm-up, as the servers had earlier cases
    const cpu0 = cpuSeconds(server.pid);
    const r = await measure(conns, MAX_CLIENTS, (c) => c, range);
    return { ...r, cpuUs: ((cpuSeconds(server.pid) - cpu0) / r.ops) * 1e6 };
  } catch (e) {
    return { error: e.message };
  } finally {
    for (const c of conns) c.close();
    await server.stop();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await serverBench());
  process.exit(0);
}
