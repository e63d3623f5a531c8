// Memory under issue 31's attacks, before, at the peak and after: the
// server process's RSS (VmRSS of /proc/<pid>/status) and the h2 module's
// linear memory (which never shrinks) and what its allocator holds, what
// the connections keep outside it, the engine's memory and the JS heap; and
// the victim's calls and the server's event-loop delay under the attack.
// Four processes, so each figure is the server's alone: the server (the
// gRPC transport and services over the etcd engine), the attackers, a
// victim (a grpc-js client with a Watch open and a Range every 5 ms
// throughout, so "after" is measured while it stays connected), driven
// from this one. The baseline is a server that has already stored and
// compacted as much as the attack writes: what the attack's data takes
// is the store's, not what its connections cost. Where gdb can attach,
// "rssAfterTrimMiB" is the RSS once glibc's malloc_trim(0) ran in the
// server after "after": what the server freed but glibc kept cached (its
// arenas' free pages, not given back while a live chunk sits above them)
// is the difference. The server process gets the settings server/main.mjs's
// #! line gives the server run as a program (glibc's tunables and Node's
// flags: docs/server.md, "Memory"). Figures, not assertions:
//   node benches/attack-memory.mjs [hpack|zero-window|replay ...]
import { execFileSync, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const MiB = 2 ** 20;
const VALUE = "v".repeat(64 * 1024);
const SETTLE_MS = 15_000;
const HISTORY = 320; // the replay's puts of 64 KiB before the baseline (~20 MiB)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mib = (n) => Math.round((n / MiB) * 10) / 10;

// A child's answers, by request id, over IPC.
function rpc(child) {
  let next = 0;
  const waiting = new Map();
  child.on("message", (m) => {
    waiting.get(m.id)?.(m);
    waiting.delete(m.id);
  });
  return (cmd, arg, ms = 120_000) =>
    new Promise((ok, no) => {
      const id = next++;
      const timer = setTimeout(() => no(new Error(`${cmd}: no answer in ${ms} ms`)), ms);
      waiting.set(id, (m) => (clearTimeout(timer), m.error ? no(new Error(m.error)) : ok(m.value)));
      child.send({ id, cmd, arg });
    });
}

// Answers the parent's requests with `handlers[cmd](arg)`.
function serve(handlers) {
  process.on("message", async ({ id, cmd, arg }) => {
    try {
      process.send({ id, value: await handlers[cmd](arg) });
    } catch (e) {
      process.send({ id, error: String(e?.stack ?? e) });
    }
  });
}

const scope = () => {
  const cleanups = [];
  return { after: (f) => cleanups.push(f), close: () => cleanups.forEach((f) => f()) };
};

// The server process: the transport over a fresh engine on a loopback port.
async function server() {
  const { Lessor } = await import("../server/engine.mjs");
  const { createServices } = await import("../etcd/services/index.mjs");
  const { h2Stats } = await import("../server/h2.mjs");
  const { grpcOnLoopback } = await import("../tests/server/loopback.mjs");
  const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
  const lessor = new Lessor({ autoTick: false });
  const grpc = await grpcOnLoopback(scope(), createServices({ lessor, member }));
  const { monitorEventLoopDelay } = await import("node:perf_hooks");
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  serve({
    url: () => grpc.url,
    // The server's event-loop delay since the last call (ms): how long a
    // client's input may wait for a turn.
    loop: () => {
      const out = { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
      loop.reset();
      return out;
    },
    // gc first for the baseline and the after (not at the peaks).
    stats: (gc) => {
      if (gc) globalThis.gc();
      const h = h2Stats();
      const engine = lessor.memoryBytes();
      const m = process.memoryUsage();
      return { module: h.memory, live: h.live ?? 0, kept: h.kept, engine, wasmRss: residentOf([h.memory, engine]), heap: m.heapUsed, heapTotal: m.heapTotal, ab: m.arrayBuffers, failures: h.failures };
    },
  });
}

// The client process: the victim, and each attack as (port, client) ->
// its connections; bounded in count and time.
async function client() {
  const { connect } = await import("../tests/etcd/grpc-client.mjs");
  const { loadRoot } = await import("../etcd/proto/load.mjs");
  const h2a = await import("../tests/server/h2-attacks.mjs");
  const { PREFACE, settings, bombFrames, attacker, zeroWindowWatches, startVictim } = h2a;
  const root = loadRoot();
  const WatchReq = root.lookupType("etcdserverpb.WatchRequest");
  const WatchRes = root.lookupType("etcdserverpb.WatchResponse");
  const puts = async (c, prefix, n) => {
    for (let i = 0; i < n; i++) {
      const r = await c.kv("Put", { key: Buffer.from(`${prefix}${i % 16}`), value: Buffer.from(VALUE) });
      if (r.code !== undefined) throw new Error(`put: ${r.details}`);
    }
  };
  const attacks = {
    // 8 connections, each sending 64 writes of 64 KiB of HPACK bombs (GOAWAY past their CPU share).
    async hpack(port, _c, s) {
      const blocks = Math.floor((64 * 1024) / 178);
      const conns = [];
      for (let i = 0; i < 8; i++) {
        const a = attacker(s, port);
        await a.connected;
        conns.push(a);
      }
      await Promise.all(
        conns.map(async (a) => {
          await a.send(Buffer.concat([PREFACE, settings()]));
          for (let w = 0, id = 1; w < 64 && !a.closed; w++, id += 2 * blocks) await a.send(bombFrames(blocks, id));
        }),
      );
      return conns;
    },
    // 4 connections of 100 Watch streams with shut windows while 200 puts of 64 KiB go on.
    async "zero-window"(port, c, s) {
      const create = WatchReq.encode({ create_request: { key: Buffer.from("z/"), range_end: Buffer.from("z0") } }).finish();
      const conns = [];
      for (let i = 0; i < 4; i++) conns.push(await zeroWindowWatches(s, port, 100, create, WatchRes));
      await puts(c, "z/", 200);
      return conns;
    },
    // 3 connections of 100 Watch streams replaying the history (put before the baseline) from revision 1, windows shut.
    async replay(port, _c, s) {
      const create = WatchReq.encode({ create_request: { key: Buffer.from("r/"), range_end: Buffer.from("r0"), start_revision: 1 } }).finish();
      const conns = [];
      for (let i = 0; i < 3; i++) conns.push(await zeroWindowWatches(s, port, 100, create, WatchRes));
      return conns;
    },
  };
  let url, c, victim, conns;
  const s = scope();
  serve({
    // As the attacker: a client for its puts.
    start(u) {
      url = u;
      c = connect(s, url);
    },
    // As the victim (its own process, so that what the attackers cost
    // their process is not counted as the server's delay).
    async victim(u) {
      victim = await startVictim(s, u);
    },
    history: () => puts(c, "r/", HISTORY),
    // The zero-window attack's puts, made and compacted away before the
    // baseline (the engine's memory keeps its highest mark).
    async warm() {
      await puts(c, "z/", 200);
      const r = await c.kv("Range", { key: Buffer.from("z/"), count_only: true });
      const done = await c.kv("Compact", { revision: r.header.revision, physical: true });
      if (done.code !== undefined) throw new Error(`compact: ${done.details}`);
    },
    attack: async (name) => (conns = await attacks[name](Number(new URL(url).port), c, s)).length,
    leave: () => {
      for (const a of conns) a.destroy();
    },
    // The victim's calls since the last lap.
    lap: () => victim.lap(),
    async finish() {
      const v = await victim.finish();
      s.close();
      setImmediate(() => process.exit(0));
      return v;
    },
  });
}

const maxOf = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, Math.max(a[k], b[k])]));
// malloc_trim(0) in process `pid` through gdb, then its RSS; null without gdb (or ptrace).
function trimmedRss(pid) {
  try {
    execFileSync("gdb", ["-p", String(pid), "-batch", "-ex", "call (int)malloc_trim(0)"], { stdio: "ignore", timeout: 30_000 });
    return rss(pid);
  } catch {
    return null;
  }
}

// The resident bytes of this process's mappings of exactly these sizes: a
// wasm memory is one read-write mapping of its current size (in front of
// the rest of its reservation), so this is what of the h2 module's and the
// engine's memories is in RAM. Freed inside wasm, a page stays resident:
// wasm memory never shrinks, and nothing in JS can give its pages back.
function residentOf(sizes) {
  let total = 0;
  let size = -1;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    const range = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
    if (range) size = parseInt(range[2], 16) - parseInt(range[1], 16);
    else if (/^[0-9a-f]+-/.test(line)) size = -1;
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && sizes.includes(size)) total += Number(r[1]) * 1024;
  }
  return total;
}

// What server/main.mjs's #! line gives the server it starts: its
// environment and Node's flags.
function asLaunched() {
  const line = readFileSync(new URL("../server/main.mjs", import.meta.url), "utf8").split("\n")[0];
  const m = /^#!\S+ -S GLIBC_TUNABLES=(\S*)\$\{GLIBC_TUNABLES\} node(.*)$/.exec(line);
  if (!m) throw new Error(`server/main.mjs's #! line is not as expected: ${line}`);
  return { env: { ...process.env, GLIBC_TUNABLES: m[1] + (process.env.GLIBC_TUNABLES ?? "") }, execArgv: m[2].split(" ").filter(Boolean) };
}

const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;

async function main() {
  const which = process.argv.slice(2).length ? process.argv.slice(2) : ["hpack", "zero-window", "replay"];
  for (const name of which) {
    const { env, execArgv } = asLaunched();
    const srv = fork(SELF, ["--server"], { env, execArgv: ["--expose-gc", ...execArgv], stdio: ["ignore", "ignore", "inherit", "ipc"] });
    const cli = fork(SELF, ["--client"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const vic = fork(SELF, ["--client"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const [toServer, toClient, toVictim] = [rpc(srv), rpc(cli), rpc(vic)];
    try {
      const sample = async (gc) => ({ rss: rss(srv.pid), ...(await toServer("stats", gc)) });
      // The figures after a full GC, the RSS once V8 freed what it swept.
      const collectedSample = async () => {
        const s = await sample(true);
        await sleep(1000);
        return { ...s, rss: rss(srv.pid) };
      };
      const u = await toServer("url");
      await toClient("start", u);
      await toVictim("victim", u);
      if (name === "replay") await toClient("history");
      if (name === "zero-window") await toClient("warm");
      await sleep(500);
      const before = await collectedSample();
      let peak = before;
      let sampling = true;
      // Peaks: every 100 ms while the attack goes on (no gc).
      const peaks = (async () => {
        while (sampling) {
          const s = await sample(false);
          peak = maxOf(peak, s);
          await sleep(100);
        }
      })();
      await toServer("loop");
      await toVictim("lap");
      const connections = await toClient("attack", name);
      await sleep(1000);
      sampling = false;
      await peaks;
      const during = await sample(false);
      peak = maxOf(peak, during);
      const loopUnderAttack = await toServer("loop");
      const underAttack = await toVictim("lap");
      await toClient("leave");
      // Bounded: until the module holds what it did before, or 5 s.
      for (let i = 0; i < 50 && (await sample(false)).live > before.live + MiB; i++) await sleep(100);
      await sleep(1000);
      // V8 gives memory back a while after it is freed (its memory
      // reducer, ~10 s here): "after" is the lowest RSS within SETTLE_MS.
      let low = rss(srv.pid);
      for (const end = Date.now() + SETTLE_MS; Date.now() < end; ) {
        await sleep(1000);
        low = Math.min(low, rss(srv.pid));
      }
      // Or once a full GC ran: what the attack left as garbage in V8's old
      // space waits for one (the victim's few calls may not bring one
      // within the window), and V8 frees ArrayBuffers' memory on another
      // thread after it (a second is ample here).
      const collected = await collectedSample();
      const after = { ...collected, rss: Math.min(low, collected.rss) };
      const victim = await toVictim("finish");
      const trimmed = trimmedRss(srv.pid);
      const row = (s) => ({ rssMiB: mib(s.rss), moduleMiB: mib(s.module), liveMiB: mib(s.live), keptMiB: mib(s.kept), engineMiB: mib(s.engine), wasmRssMiB: mib(s.wasmRss), heapMiB: mib(s.heap), heapTotalMiB: mib(s.heapTotal), abMiB: mib(s.ab) });
      console.log(
        JSON.stringify({
          attack: name,
          connections,
          before: row(before),
          peak: row(peak),
          after: row(after),
          rssAfterVsBefore: Math.round((after.rss / before.rss) * 100) / 100,
          rssAfterTrimMiB: trimmed === null ? null : mib(trimmed),
          moduleFailures: after.failures - before.failures,
          serverLoopDelay: loopUnderAttack,
          // Its Ranges during the attack (and the second after it), then its whole run.
          victim: { underAttack, calls: victim.calls, errors: victim.errors.length, watch: victim.watch },
        }),
      );
    } finally {
      srv.kill("SIGKILL");
      cli.kill("SIGKILL");
      vic.kill("SIGKILL");
    }
  }
}

if (process.argv[2] === "--server") await server();
else if (process.argv[2] === "--client") await client();
else await main();
