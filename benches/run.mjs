// `npm run bench`: runs the churn workload for every system at every N, each
// (system, N) in a fresh process, prints a table and writes BENCHMARKS.md.
//
//   node benches/run.mjs [--n 1000,10000] [--systems plain-js,naive-native]
//                        [--out BENCHMARKS.md] [--max-run-seconds 120]
//                        [--sections churn,extras,worker,durable,server,workloads]
//                        [--quick] [--check-perf s,m,l|none]
//   node benches/run.mjs --from test-output/bench.json [--out FILE]
//
// --sections runs only those parts (default: all); a goal whose figures
// were not measured says so. --quick: smoke sizes for durable, server and
// workloads (their sections say so) and no `etcdctl check perf` unless
// --check-perf names loads. --from: no measuring, the report written again
// from a run's saved figures (what each run leaves in test-output/bench.json),
// e.g. after a change to a row's text; its machine table says so.
//
// JS systems are the modules in benches/systems/ (run by benches/run-one.mjs);
// native ones come from the Rust bench binary (crates/core/benches/native.rs). A system
// that cannot run (edge-lease before pkg/ is built, the native ones when
// cargo cannot build the bench binary, a run that fails or exceeds the time
// budget) shows up as skipped, with the reason.

import { spawnSync } from "node:child_process";
import { readdirSync, writeFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import os from "node:os";
import { STEPS, repsFor, TTL_S, OPS_PER_MS, RENEW_ROUNDS } from "./workload.mjs";
import * as extras from "./extras.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const started = Date.now();
// Other work on the machine skews the numbers: the report records the load.
const loadNow = os.loadavg();

const { values: opt } = parseArgs({
  options: {
    n: { type: "string", default: "1000,10000,100000,1000000" },
    systems: { type: "string" },
    out: { type: "string", default: join(ROOT, "BENCHMARKS.md") },
    // A (system, N) run predicted or found to take longer than this is
    // skipped/killed, so that one slow peer cannot blow the 5-minute budget.
    "max-run-seconds": { type: "string", default: "120" },
    sections: { type: "string", default: "churn,extras,worker,durable,server,workloads" },
    quick: { type: "boolean", default: false },
    "check-perf": { type: "string" },
    from: { type: "string" },
  },
});
// A run's saved figures and settings (--from), or null: measure.
const saved = opt.from ? JSON.parse(readFileSync(opt.from, "utf8")) : null;
if (saved && !saved.settings) throw new Error(`${opt.from}: saved by a run.mjs without its settings: rerun the bench`);
if (saved) Object.assign(opt, saved.settings);
const loadAtStart = saved?.loadAtStart ?? loadNow;
const SECTIONS = new Set(opt.sections.split(","));
for (const s of SECTIONS) {
  if (!["churn", "extras", "worker", "durable", "server", "workloads"].includes(s)) throw new Error(`unknown section ${JSON.stringify(s)}`);
}
const QUICK = opt.quick;
const CHECK_PERF = opt["check-perf"] === undefined ? (QUICK ? [] : ["s", "m", "l"]) : opt["check-perf"] === "none" ? [] : opt["check-perf"].split(",");
const NS = opt.n.split(",").map(Number).sort((a, b) => a - b);
const MAX_RUN_S = Number(opt["max-run-seconds"]);

// Display order; `what` is the issue's letter for each system.
const KNOWN = [
  { system: "edge-lease", what: "(a) edge-lease, JS API in Node" },
  { system: "edge-lease-core", what: "(b) edge-lease Rust core, native release" },
  { system: "ttlcache", what: "(c) @isaacs/ttlcache" },
  { system: "plain-js", what: "(d) plain JS lessor (Map + heap)" },
  { system: "naive-native", what: "naive native Rust lessor (HashMap + BinaryHeap)" },
];
const NATIVE = ["edge-lease-core", "naive-native"];
const JS_PEERS = ["ttlcache", "plain-js"];
const STEP_LABEL = { grant_put: "grant+put", renew: "renew", get: "get", expire: "expire" };

// ---- which systems ----------------------------------------------------------

const jsSystems = readdirSync(join(ROOT, "benches/systems"))
  .filter((f) => f.endsWith(".mjs"))
  .map((f) => f.slice(0, -4));
let systems = [...new Set([...KNOWN.map((k) => k.system), ...jsSystems, ...NATIVE])].filter(
  (s) => jsSystems.includes(s) || NATIVE.includes(s),
);
if (opt.systems) {
  const want = opt.systems.split(",");
  systems = systems.filter((s) => want.includes(s));
}

// ---- native build -----------------------------------------------------------

function buildNative() {
  const r = spawnSync(
    "cargo",
    ["bench", "-p", "edge-lease-core", "--bench", "native", "--no-run", "--message-format=json-render-diagnostics"],
    { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20 },
  );
  if (r.error) return { error: `cargo not runnable: ${r.error.message}` };
  if (r.status !== 0) return { error: `cargo bench --no-run failed: ${r.stderr.trim().split("\n").slice(-3).join(" | ")}` };
  for (const line of r.stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.reason === "compiler-artifact" && m.target?.name === "native" && m.executable) {
      return { exe: m.executable };
    }
  }
  return { error: "cargo built no `native` bench executable" };
}

// ---- running one (system, N) ------------------------------------------------

function runOne(system, n) {
  const t0 = Date.now();
  const argv = NATIVE.includes(system)
    ? [native.exe, system, String(n)]
    : [process.execPath, "--expose-gc", "--max-old-space-size=8192", join(ROOT, "benches/run-one.mjs"), system, String(n)];
  const r = spawnSync(argv[0], argv.slice(1), {
    cwd: ROOT,
    encoding: "utf8",
    timeout: MAX_RUN_S * 1000,
    killSignal: "SIGKILL",
    maxBuffer: 16 << 20,
  });
  const wallSeconds = (Date.now() - t0) / 1000;
  if (r.error?.code === "ETIMEDOUT") return { system, n, wallSeconds, skipped: `killed after ${MAX_RUN_S} s (--max-run-seconds)` };
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split("\n").slice(-2).join(" | ");
    return { system, n, wallSeconds, skipped: `failed: ${why}` };
  }
  const row = JSON.parse(r.stdout.trim().split("\n").pop());
  if (row.skipped) row.skipped = row.skipped.replaceAll(ROOT, "");
  return { ...row, wallSeconds };
}

// Predicted wall time at n from the same system's run at a smaller N:
// per-op cost kept, repetition count adjusted (see repsFor; ~1.5 runs' worth
// of memory run and warm-up on top).
function predictSeconds(prev, n) {
  const work = (k) => k * (repsFor(k) + 1.5);
  return (prev.wallSeconds * work(n)) / work(prev.n);
}

if (!SECTIONS.has("churn")) systems = [];
const native = !saved && NATIVE.some((s) => systems.includes(s)) ? buildNative() : { error: "not selected" };
if (native.error && !saved) console.log(`native systems skipped: ${native.error}`);

const rows = saved ? saved.rows : [];
for (const n of saved ? [] : NS) {
  for (const system of systems) {
    let row;
    const prev = rows.filter((r) => r.system === system && !r.skipped).pop();
    if (NATIVE.includes(system) && native.error) {
      row = { system, n, skipped: native.error };
    } else if (rows.some((r) => r.system === system && r.skipped)) {
      // Skipped once (import failure, failed run, too slow): skipped for larger N.
      row = { system, n, skipped: rows.find((r) => r.system === system && r.skipped).skipped };
    } else if (prev && predictSeconds(prev, n) > MAX_RUN_S) {
      row = { system, n, skipped: `predicted ${predictSeconds(prev, n).toFixed(0)} s > ${MAX_RUN_S} s budget per run` };
    } else {
      row = runOne(system, n);
    }
    rows.push(row);
    console.log(formatProgress(row));
  }
}

// ---- edge-lease-specific measurements (benches/extras.mjs) ----------------------

async function hook(section, name, args) {
  if (!SECTIONS.has(section)) return { missing: true, notRun: `section ${section} not run (--sections)` };
  try {
    return (await extras[name](args)) ?? { missing: true };
  } catch (err) {
    return { error: String(err?.message ?? err) };
  }
}
const extra = saved ? saved.extra : {
  wasmSize: await hook("extras", "wasmSize"),
  coldStartNode: await hook("extras", "coldStartNode"),
  coldStartWorkerd: await hook("extras", "coldStartWorkerd"),
  restore100k: await hook("extras", "restore100k"),
  compactionStall: await hook("extras", "compactionStall"),
  batchGain: await hook("extras", "batchGain"),
  workerThroughput: await hook("worker", "workerThroughput"),
  durable: await hook("durable", "durableBench", { quick: QUICK }),
  serverBench: await hook("server", "serverBench", { quick: QUICK }),
  serverWorkloads: await hook("workloads", "serverWorkloads", { quick: QUICK, checkPerfLoads: CHECK_PERF }),
};

const totalSeconds = saved ? saved.totalSeconds : (Date.now() - started) / 1000;

// ---- formatting -----------------------------------------------------------------

function fmtNs(x) {
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}
function fmtN(n) {
  return n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n);
}
function fmtRatio(x) {
  return `${x.toFixed(2)}x`;
}
function formatProgress(r) {
  if (r.skipped) return `${r.system.padEnd(16)} ${fmtN(r.n).padStart(5)}  skipped: ${r.skipped}`;
  const s = STEPS.map((k) => `${STEP_LABEL[k]} ${fmtNs(r.steps[k])}`).join("  ");
  return `${r.system.padEnd(16)} ${fmtN(r.n).padStart(5)}  ${s} ns/op  ${r.bytesPerLease.toFixed(0)} B/lease  (${r.wallSeconds.toFixed(1)} s)`;
}

const ok = (s, n) => rows.find((r) => r.system === s && r.n === n && !r.skipped);
// The native core's grant+put against the plain JS lessor's at the smallest
// N: how much of the JS API's gap is the core's own work, not the crossing.
const nativeGap = () => {
  const n = NS[0];
  const [c, p] = [ok("edge-lease-core", n), ok("plain-js", n)];
  return c && p ? ` (the native core alone takes ${fmtRatio(c.steps.grant_put / p.steps.grant_put)} the plain lessor's grant+put at ${fmtN(n)})` : "";
};
const measured = (s) => rows.some((r) => r.system === s && !r.skipped);
const versionOf = (s) => rows.find((r) => r.system === s && r.version)?.version ?? "-";
const whatOf = (s) => KNOWN.find((k) => k.system === s)?.what ?? s;

function mdTable(header, body) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...body.map(line)].join("\n");
}

// Per-op scaling: worst/best ns/op over the measured N, per step.
function scaling(system) {
  const rs = rows.filter((r) => r.system === system && !r.skipped);
  if (rs.length < 2) return null;
  const per = {};
  for (const k of STEPS) {
    const xs = rs.map((r) => r.steps[k]);
    per[k] = Math.max(...xs) / Math.min(...xs);
  }
  return { per, from: rs[0].n, to: rs[rs.length - 1].n, flat: STEPS.every((k) => per[k] <= 2) };
}

// The goals of issue 28, each row from this run's figures: [goal,
// edge-lease's figure, its peers' figures from the same run, status, what
// bounds it when missed]. A figure this run did not take is NOT MEASURED.
const ANALYSIS = "benches/ANALYSIS.md, [Why each missed goal is missed](#why-each-missed-goal-is-missed)";
const NOT = (why) => ({ status: "NOT MEASURED", edge: "-", peers: "-", bound: why });
const hookWhy = (h) => (h.notRun ?? h.error ?? (h.missing ? "hook missing" : null));
const status = (met) => (met ? "MET" : "MISS");

// `a`'s steps at most `factor` times `b`'s at each N in `ns`: { compared, fails, worst }.
function stepRatios(a, b, factor, steps, ns) {
  const fails = [];
  const all = [];
  let compared = 0;
  for (const n of ns) {
    const ra = ok(a, n);
    const rb = ok(b, n);
    if (!ra || !rb) continue;
    compared++;
    for (const k of steps) {
      const r = ra.steps[k] / rb.steps[k];
      all.push(`${fmtN(n)} ${STEP_LABEL[k]} ${fmtRatio(r)}`);
      if (!(r <= factor)) fails.push(`${fmtN(n)} ${STEP_LABEL[k]}: ${fmtNs(ra.steps[k])} vs ${fmtNs(rb.steps[k])} ns (${fmtRatio(r)})`);
    }
  }
  return { compared, fails, all };
}

// What bounds `etcdctl check perf` in this run: the loads edge-lease fails,
// and which of them etcd fails too on the same machine (its floor there).
function checkPerfBound(perf, loads) {
  const fails = loads.filter((l) => !perf[l]["edge-lease"].pass);
  const also = fails.filter((l) => !perf[l].etcd.pass);
  const only = fails.filter((l) => perf[l].etcd.pass);
  return (
    `${fails.join(", ") || "-"} (the FAIL lines in the check perf table above say which check): at m and l throughput, etcdctl's 200 and 500 clients sharing the 2 cores with the server` +
    (also.length ? `; etcd fails ${also.join(", ")} in this run too, the machine's floor there` : "") +
    (only.length ? `; etcd passes ${only.join(", ")} in this run` : "") +
    "; the server's CPU profile at l: GC and the per-put copy of the storage batch out of wasm (benches/ANALYSIS.md, check perf l); next step: the batch written to the journal from a view on wasm memory (no copy, no garbage per put) and the journal on a thread of its own (the puts rows')"
  );
}

function goals() {
  const g = [];
  const push = (goal, r) => g.push([goal, r]);
  const ALL = Object.keys(STEP_LABEL);
  {
    const w = extra.wasmSize;
    const why = hookWhy(w);
    push("lean wasm (what browsers and Workers load) <= 40 KB gzip -9", why ? NOT(why) : {
      status: status(w.gzipBytes / 1024 <= 40),
      edge: `${(w.gzipBytes / 1024).toFixed(1)} KB gzip (${w.rawBytes} B raw)`,
      peers: `etcd server's build: ${(w.etcd.gzipBytes / 1024).toFixed(1)} KB gzip (${w.etcd.rawBytes} B raw)`,
      bound: `code size: what the client needs (transactions, history, watch) doubled the module, and the rest is spread over ~440 small functions, none above 13.5 KB (${ANALYSIS}, 40 KB of gzipped wasm); next step: a package for leases and keys alone whose core keeps no history (fewer exports alone were measured there and fall short)`,
    });
  }
  {
    const c = extra.coldStartNode;
    const why = hookWhy(c);
    push("Node cold start (import + instantiate + first grant, median of 15 fresh processes) <= 5 ms", why ? NOT(why) : {
      status: status(c.medianMs <= 5), edge: `${c.medianMs.toFixed(2)} ms`,
      peers: `floor, fresh processes, this run: compiling the lean module alone ${c.compileMs.toFixed(2)} ms (node:fs imported, the file read, \`new WebAssembly.Module\`); importing an empty ES module ${c.emptyMs.toFixed(2)} ms`,
      bound: `compiling the module (V8 validates all of it at load and compiles each function at its first call; alone ${c.compileMs.toFixed(1)} ms here, the goal's size by itself), then parsing and running the bundle's JS and the first calls: ${ANALYSIS} (5 ms cold start in Node); next step: a smaller module to compile first: binaryen's wasm-split, guided by a profile of the first grant, put and get, with the rest (transactions, history, watch, ranges) in a second module loaded at its first use`,
    });
  }
  {
    const c = extra.coldStartWorkerd;
    const why = hookWhy(c);
    const added = c.medianMs - c.baselineMs;
    push("workerd cold start, added over an empty worker <= 10 ms", why ? NOT(why) : {
      status: status(added <= 10), edge: `+${added.toFixed(1)} ms (${c.medianMs.toFixed(1)} ms)`,
      peers: `empty worker ${c.baselineMs.toFixed(1)} ms; a worker that only imports the module (compiled at load) ${c.wasmOnlyMs.toFixed(1)} ms (+${(c.wasmOnlyMs - c.baselineMs).toFixed(1)})`,
      bound: `the module's compile at load (+${(c.wasmOnlyMs - c.baselineMs).toFixed(1)} ms, the worker beside it), then instantiating it with its JS, the first Lessor and grant, whose JS and wasm functions compile at their first call: ${ANALYSIS} (10 ms added in workerd); next step: the smaller first module of the row above (wasm-split) and less JS run before the first answer`,
    });
  }
  const d = extra.durable;
  {
    const w = d.wake ?? {};
    const why = hookWhy(d) ?? w.error;
    push(`Durable Object wake-up, ${w.leases ?? "100k"} leases with a key each, first answer after eviction (Miniflare, SQLite) <= 50 ms`, why ? NOT(why) : {
      status: status(w.evictedMs <= 50),
      edge: `${w.evictedMs.toFixed(1)} ms${QUICK ? " (--quick: 5k leases, not the goal's size)" : ""}`,
      peers: `evicted empty namespace ${w.evictedEmptyMs.toFixed(1)} ms; after a new runtime: ready ${w.restartReadyMs.toFixed(0)} ms + first answer ${w.restartFirstMs.toFixed(1)} ms`,
      bound: `the engine decoding the rows and building the lessor (a hash insert per lease and per key, an allocation per key, value and key list, the ordered index), most of it; reading the rows, the object's start and freeing the evicted incarnation's lessor the rest (benches/wakeup.mjs splits it): ${ANALYSIS} (Restore of 100k leases); next step: the memory layout (one map per key: the live entries and their order in one structure, not a hash map and an ordered index each with a slot per key), which halves the inserts`,
    });
  }
  // The restore's stages in this run (benches/wakeup.mjs's restoreStages).
  const stagesText = (st) =>
    st ? `in stages, this run (medians of ${st.runs}): packing the entries in JS ${st.packMs.toFixed(0)} ms, decoding them in the engine ${st.decodeMs.toFixed(0)}, building the lessor ${st.buildMs.toFixed(0)}; ` : "";
  {
    const r = extra.restore100k;
    const why = hookWhy(r);
    push("restore of 100k leases with a key each <= 50 ms", why ? NOT(why) : {
      status: status(r.medianMs <= 50), edge: `${r.medianMs.toFixed(0)} ms (${r.entries} entries)`, peers: "-",
      bound: `${stagesText(r.stages)}building the lessor is a hash insert per lease and per key, an allocation per key and per value and the ordered index; ${ANALYSIS} (Restore of 100k leases); next step: the memory layout (one map per key, not two)`,
    });
  }
  {
    const ns = [100_000, 1_000_000].filter((n) => ok("edge-lease", n));
    const peer = (s) => ns.map((n) => (ok(s, n) ? `${s} ${ok(s, n).bytesPerLease.toFixed(0)} B at ${fmtN(n)}` : null)).filter(Boolean);
    push("wasm memory per lease (one short key) at 100k and 1M <= 150 B", ns.length === 0 ? NOT("churn at 100k or 1M not run") : {
      status: status(ns.length === 2 && ns.every((n) => ok("edge-lease", n).bytesPerLease <= 150)) + (ns.length < 2 ? ` (only at ${ns.map(fmtN).join(", ")})` : ""),
      edge: ns.map((n) => `${ok("edge-lease", n).bytesPerLease.toFixed(0)} B at ${fmtN(n)}`).join(", "),
      peers: [...peer("plain-js"), ...peer("ttlcache"), ...peer("edge-lease-core")].join(", ") || "-",
      bound: `two map slots and a shared key allocation per key, hash-table growth at 1M (old and new tables live at once; linear memory never shrinks): ${ANALYSIS} (200 bytes per lease); next step: one map per key, not two (short keys inline were measured and cost more: ANALYSIS)`,
    });
  }
  {
    const c = d.capacity ?? {};
    const why = hookWhy(d) ?? c.error;
    const held = c.atQuota ?? c.keys;
    push("largest namespace a Durable Object holds inside its 128 MB isolate >= 500k keys", why ? NOT(why) : {
      status: status(held >= 500_000 && c.stop?.startsWith("resident memory")),
      edge: `${held} keys with the default 8 MiB quota${c.atQuota === null ? " (not reached)" : ""}; ${c.keys} keys with the quota lifted, stopped by ${c.stop} (+${(c.rssGrowth / 2 ** 20).toFixed(0)} MiB)${QUICK ? " (--quick: bounded at 100k keys)" : ""}`,
      peers: "-",
      bound: "the default quota (EDGE_LEASE_QUOTA_BYTES, worker/namespace.mjs: 8 MiB, sized for ~4x wasm memory per counted byte) and the engine's bytes per key (row above, whose next step this waits on)",
    });
  }
  {
    const small = stepRatios("edge-lease", "plain-js", 2, ALL, NS.filter((n) => n < 100_000));
    const big = stepRatios("edge-lease", "plain-js", 1, ALL, NS.filter((n) => n >= 100_000));
    const compared = small.compared + big.compared;
    push("JS API against the plain JS lessor, every step: <= 1x at 100k and 1M, <= 2x at 1k and 10k", compared === 0 ? NOT("churn with edge-lease and plain-js not run") : {
      status: status(!small.fails.length && !big.fails.length) + (compared < 4 ? ` (at ${compared} of 4 N)` : ""),
      edge: [...small.all, ...big.all].join(", "),
      peers: "plain-js (ratios are edge-lease / plain-js)",
      bound: `${[...small.fails, ...big.fails].join("; ") || "-"}; the crossing into wasm (a key copied in) and the core's write path (a revision, the ordered index, history, the storage batch), which the plain lessor has none of${nativeGap()}: ${ANALYSIS} (JS API against the plain JS lessor); next step: for 1k-10k, where that fixed work is all there is, the size row's package for leases and keys alone (no history), whose put is a map write and a lease's key list; at 100k-1M the memory layout (one map per key, not two)`,
    });
  }
  {
    const r = stepRatios("edge-lease", "ttlcache", 1.5, ["get"], NS);
    push("get against @isaacs/ttlcache <= 1.5x", r.compared === 0 ? NOT("churn with edge-lease and ttlcache not run") : {
      status: status(!r.fails.length), edge: r.all.join(", "), peers: "ttlcache (ratios are edge-lease / ttlcache)",
      bound: `${r.fails.join("; ") || "-"}; a get crosses into wasm with its key (the fixed cost at 1k-10k), then at 100k-1M reads the key's map slot, the key behind its shared allocation and the value's allocation (three cache misses where a JS Map has one or two; the lease is not looked up while none is due): ${ANALYSIS} (JS API against the plain JS lessor, and get against ttlcache); next step: the memory layout, one map per key whose slot holds the entry with its key (short keys inline in today's two maps were measured: no gain, more memory: ANALYSIS)`,
    });
  }
  const sb = extra.serverBench;
  {
    const why = hookWhy(sb) ?? sb.skipped;
    if (why) push(`server rows at 32 clients >= 2x etcd with a lower p99`, NOT(why));
    else {
      const rows = sb.edge.filter((e) => e.name !== sb.watchName && !e.name.startsWith("watch"));
      const cells = rows.map((e) => {
        const t = sb.etcd.find((x) => x.name === e.name && x.n === e.n) ?? {};
        if (e.error || t.error) return { text: `${e.name}: error`, met: false };
        const r = e.opsPerSec / t.opsPerSec;
        return { text: `${e.name} ${fmtRatio(r)}, p99 ${e.p99.toFixed(2)} vs ${t.p99.toFixed(2)} ms`, met: r >= 2 && e.p99 < t.p99, name: e.name };
      });
      push(`server rows at ${sb.clients} clients >= 2x etcd with a lower p99 (grant+put, keepalive, range, lock cycle)`, {
        status: status(cells.every((c) => c.met)), edge: cells.map((c) => c.text).join("; "), peers: "etcd 3.4 (the server table above)",
        bound: `${cells.filter((c) => !c.met).map((c) => c.name).join(", ") || "-"}: one Node thread serves every socket (Node 20 has no reusePort), and a call's socket read and write are nearly half of a keepalive's time on it: ${"benches/ANALYSIS.md, [The server against etcd](#the-server-against-etcd-issue-10s-3x-goal)"}; next step: the socket writes on a second thread, which lifts calls with work on the main thread (range, grant+put) on a machine with a core to spare for it`,
      });
      const w = sb.edge.find((e) => e.name === sb.watchName);
      const t = sb.etcd.find((e) => e.name === sb.watchName);
      const f = sb.fanout;
      push("watch fan-out (100 watchers, 1 writer) >= 80% of its measured floor", !w || w.error || f.error ? NOT(w?.error ?? f.error ?? "no watch row") : {
        status: status(w.opsPerSec >= 0.8 * f.opsPerSec),
        edge: `${w.opsPerSec.toFixed(0)} events/s = ${((w.opsPerSec / f.opsPerSec) * 100).toFixed(0)}% of the floor`,
        peers: `floor (benches/fanout-floor.mjs, this run) ${f.opsPerSec.toFixed(0)} events/s; etcd ${t && !t.error ? `${t.opsPerSec.toFixed(0)} events/s` : "-"}`,
        bound: "the server's main thread, busy most of each put's cycle: beside the fdatasync and the socket writes (all the floor does), the h2 module framing and pumping a response per watcher and the watch service making each in JS (its header, response object and flush wait): benches/ANALYSIS.md (watch fan-out, profiled 2026-12-07); next step: one call into the h2 module per event for all its watchers (the event's bytes shared, only the stream and watch ids per watcher)",
      });
    }
  }
  const wl = extra.serverWorkloads;
  {
    const why = hookWhy(wl);
    const puts = wl.puts ?? [];
    for (const [i, name] of [[0, "sustained puts over many distinct keys (300k puts over 100k keys, 8 clients) >= 1.5x etcd"], [1, "sustained puts over many distinct keys (400k distinct keys, 16 clients) >= 1.5x etcd"], [2, "puts on one hot key (16 clients): the same 1.5x, for comparison"]]) {
      const p = puts[i];
      if (why || !p) {
        push(name, NOT(why ?? "not run"));
        continue;
      }
      const err = p.edge.error ?? p.etcd.error;
      push(name, err ? NOT(err) : {
        status: status(p.ratio >= 1.5),
        edge: `${fmtRatio(p.ratio)}: ${p.edge.opsPerSec.toFixed(0)} puts/s, p99 ${p.edge.p99.toFixed(2)} ms, ${p.edge.cpuUs.toFixed(0)} µs CPU/put${wl.quick ? ` (--quick: ${p.puts} puts over ${p.keys} keys)` : ""}`,
        peers: `etcd ${p.etcd.opsPerSec.toFixed(0)} puts/s, p99 ${p.etcd.p99.toFixed(2)} ms, ${p.etcd.cpuUs.toFixed(0)} µs CPU/put`,
        bound: `one server thread: when it is off the CPU or in a syscall every client waits, and with clients that each wait for their answer the tail sets the rate (p99 ${p.edge.p99.toFixed(2)} against etcd's ${p.etcd.p99.toFixed(2)} ms here, whose goroutines use both cores); the main thread's CPU profile: socket writes 16%, handing each sync to the pool 13%, the engine's put 12%, h2 and gRPC the rest, spread thin: benches/ANALYSIS.md (The server under etcd's own workloads); next step: the journal's write and fdatasync on a thread of their own with the answers' socket writes batched across connections, so the main thread runs the engine and h2 only`,
      });
    }
    const c = wl.compaction;
    push("compaction under sustained puts: no request over 50 ms during a journal rollover", why || !c ? NOT(why ?? "not run") : {
      status: status(c.duringCompaction === 0 && c.rollovers > 0) + (c.rollovers === 0 ? " (no rollover happened)" : ""),
      edge: `${c.duringCompaction} of ${c.slow} requests over 50 ms overlapped one of ${c.rollovers} rollovers${c.slowestDuring ? ` (slowest ${c.slowestDuring.toFixed(1)} ms)` : ""}`,
      peers: "etcd: slowest request and second in the puts table",
      bound: "the snapshot's writeback while the journal is fsync'd, on one thread: the rollover's own stalls were removed (benches/ANALYSIS.md, compaction stalls: a hot key's history in one step, the next journal made on the loop, the snapshot synced once), and what is left is of the size of this machine's stalls outside rollovers (the puts rows' p99, and 29-95 ms under load there); next step: the journal's writes and syncs on a thread of their own (the puts rows' next step), so no request on the main thread waits behind the disk",
    });
    const perf = wl.checkPerf ?? {};
    const loads = Object.keys(perf);
    push("`etcdctl check perf` passes at loads s, m and l", why || loads.length === 0 ? NOT(why ?? "not run (--quick or --check-perf none)") : {
      status: status(loads.length === 3 && loads.every((l) => perf[l]["edge-lease"].pass)) + (loads.length < 3 ? ` (only ${loads.join(", ")})` : ""),
      edge: loads.map((l) => `${l}: ${perf[l]["edge-lease"].pass ? "PASS" : "FAIL"}`).join(", "),
      peers: `etcd ${loads.map((l) => `${l}: ${perf[l].etcd.pass ? "PASS" : "FAIL"}`).join(", ")}`,
      bound: checkPerfBound(perf, loads),
    });
    const lk = wl.lock ?? {};
    const e = lk["edge-lease"];
    const t = lk.etcd;
    push("lock handoff through etcd's Go client (Unlock until the waiter's Lock returns; a first Lock) at or below etcd", why || !e || !t || e.error || t.error ? NOT(why ?? e?.error ?? t?.error ?? "not run") : {
      status: status(e.handoff <= t.handoff && e.first <= t.first),
      edge: `handoff ${e.handoff.toFixed(2)} ms (p99 ${e.handoffP99.toFixed(2)}), first Lock ${e.first.toFixed(2)} ms (p99 ${e.firstP99.toFixed(2)}, the very first ${e.veryFirst.toFixed(1)})`,
      peers: `etcd handoff ${t.handoff.toFixed(2)} ms (p99 ${t.handoffP99.toFixed(2)}), first Lock ${t.first.toFixed(2)} ms (p99 ${t.firstP99.toFixed(2)}, the very first ${t.veryFirst.toFixed(1)})`,
      bound: "the calls' own time on cold caches after the waiter's 150 ms: traced against etcd's syscalls, the Unlock's read to the journal write takes 0.55-1.1 ms (etcd 0.35-0.39 to its WAL), the waiter's Get 0.3-0.5 (etcd 0.24); the sync, the event's way out and the Go client's turn cost the same on both: benches/ANALYSIS.md (The server under etcd's own workloads, the Go mutex); next step: fewer layers on a call's path (h2 handing decoded requests straight to the engine)",
    });
  }
  return g;
}

function hookText(h, render) {
  if (h.notRun) return h.notRun;
  if (h.missing) return "not measured yet (hook in benches/extras.mjs)";
  if (h.error) return `failed: ${h.error}`;
  return render(h);
}

function sh(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "unavailable";
}

// The machine table, as measured at the end of a run (saved with its figures).
function machine() {
  let cpu = os.cpus()[0]?.model ?? "unknown";
  try {
    const m = readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.+)$/m);
    if (m) cpu = m[1].trim();
  } catch {}
  const dirty = sh("git", ["status", "--porcelain"]) ? " (uncommitted changes)" : "";
  return [
    ["date", new Date().toISOString()],
    ["CPU", cpu],
    ["cores", String(os.cpus().length)],
    ["memory", `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`],
    ["load average at start / end (1 min)", `${loadAtStart[0].toFixed(2)} / ${os.loadavg()[0].toFixed(2)}`],
    ["OS", `${os.type()} ${os.release()} ${os.arch()}`],
    ["Node", process.version],
    ["rustc", sh("rustc", ["--version"])],
    ["git commit", sh("git", ["rev-parse", "--short", "HEAD"]) + dirty],
    ["total run time", `${totalSeconds.toFixed(0)} s`],
  ];
}

// ---- BENCHMARKS.md ----------------------------------------------------------

function markdown() {
  const out = [];
  out.push("# Benchmarks", "");
  out.push(`Generated by \`npm run bench\` (benches/run.mjs). Numbers are ns per operation (lower is better) and bytes per lease.`, "");
  out.push("## Machine and versions", "");
  out.push(mdTable(["", ""], machineRows), "");
  out.push(mdTable(["system", "what", "version"], systems.map((s) => [s, whatOf(s), versionOf(s)])), "");
  if (loadAtStart[0] > 0.5) {
    out.push(
      `> **The machine was busy** (1-min load ${loadAtStart[0].toFixed(2)} on ${os.cpus().length} cores at start): ` +
        "other processes competed for the CPU, so timings are inflated and noisy. Rerun on an idle machine before judging goals.",
      "",
    );
  }
  const skipped = systems.filter((s) => !measured(s));
  for (const s of skipped) out.push(`- **${s} not measured**: ${rows.find((r) => r.system === s).skipped}`);
  const partial = rows.filter((r) => r.skipped && measured(r.system));
  for (const r of partial) out.push(`- ${r.system} at N=${fmtN(r.n)} skipped: ${r.skipped}`);
  if (skipped.length || partial.length) out.push("");

  if (SECTIONS.has("churn")) {
  out.push("## Workload: churn", "");
  out.push(
    `N leases, each with one attached key \`svc/<i>\` (value: the same 8-byte string), TTL ${TTL_S} s. ` +
      `Steps: (1) grant + put with the lease, (2) renew every lease ${RENEW_ROUNDS} times, (3) get every key, ` +
      `(4) move the clock past every deadline and tick until all have expired. ns/op is per grant+put pair, ` +
      `per renew, per get, and per lease expired. The clock is injected and advances 1 ms every ${OPS_PER_MS} operations ` +
      `(no sleeping, fully deterministic). Each (system, N) runs in a fresh process: a tiny run to compile, a memory run, ` +
      `a warm-up at min(N, 10k), then timed repetitions (15 at 1k, 7 at 10k, 3 at 100k, 1 at 1M); the median is reported. ` +
      `Bytes/lease: what step 1 adds. JS: in a separate run before the warm-up, V8 \`heapUsed\` delta after gc, or wasm linear ` +
      `memory (\`memoryBytes()\`) for edge-lease when it reports it. Native: live bytes from a counting global allocator during ` +
      `the first timed repetition. Below 100k the JS memory run fills ceil(100k / N) instances of N leases at once and divides the total, ` +
      `because the V8 heap drifts by a few hundred KB on its own. Peers: ttlcache keeps one entry per lease (renew = \`setTTL\`, expiry = \`purgeStale()\` with ` +
      `\`performance.now\` pointed at the injected clock, \`checkAgeOnGet\` on so it never returns an expired key); the plain JS ` +
      `and naive native lessors use lazy deletion like etcd's LeaseQueue and also hide keys whose lease is past its deadline.`,
    "",
  );

  for (const n of NS) {
    out.push(`## N = ${fmtN(n)}`, "");
    const body = [];
    for (const s of systems) {
      const r = rows.find((x) => x.system === s && x.n === n);
      if (!r || r.skipped) {
        body.push([s, ...STEPS.map(() => "-"), "-", "skipped", "-"]);
        continue;
      }
      body.push([s, ...STEPS.map((k) => fmtNs(r.steps[k])), r.bytesPerLease.toFixed(0), r.memorySource, r.wallSeconds.toFixed(1)]);
    }
    out.push(mdTable(["system", ...STEPS.map((k) => `${STEP_LABEL[k]} ns/op`), "bytes/lease", "memory measured by", "run s"], body), "");
    const e = ok("edge-lease", n);
    if (e) {
      out.push("Ratio system / edge-lease (above 1: edge-lease is faster or smaller):", "");
      const rb = systems
        .filter((s) => s !== "edge-lease" && ok(s, n))
        .map((s) => {
          const r = ok(s, n);
          return [s, ...STEPS.map((k) => fmtRatio(r.steps[k] / e.steps[k])), fmtRatio(r.bytesPerLease / e.bytesPerLease)];
        });
      out.push(mdTable(["system", ...STEPS.map((k) => STEP_LABEL[k]), "bytes/lease"], rb), "");
    } else {
      out.push("Ratios against edge-lease: not available (edge-lease not measured).", "");
    }
  }

  out.push("## Scaling", "");
  out.push("Worst / best ns/op over the measured N, per step. Flat means within 2x.", "");
  const sb = [];
  for (const s of systems) {
    const sc = scaling(s);
    if (!sc) {
      sb.push([s, "-", ...STEPS.map(() => "-"), "not measured at two N"]);
      continue;
    }
    sb.push([s, `${fmtN(sc.from)}..${fmtN(sc.to)}`, ...STEPS.map((k) => fmtRatio(sc.per[k])), sc.flat ? "flat" : "NOT flat"]);
  }
  out.push(mdTable(["system", "N range", ...STEPS.map((k) => STEP_LABEL[k]), "verdict"], sb), "");

  } else {
    out.push("## Workload: churn", "", "Not run (--sections).", "");
  }

  out.push("## edge-lease extras", "");
  out.push(
    mdTable(
      ["measure", "result"],
      [
        ["release wasm size (raw / gzip): the lean engine (edge-lease)", hookText(extra.wasmSize, (w) => `${w.rawBytes} B / ${w.gzipBytes} B (${w.file})`)],
        ["release wasm size (raw / gzip): the etcd server's build (edge-lease-etcd)", hookText(extra.wasmSize, (w) => `${w.etcd.rawBytes} B / ${w.etcd.gzipBytes} B (${w.etcd.file})`)],
        ["cold start in Node (import + instantiate + first grant)", hookText(extra.coldStartNode, (c) => `${c.medianMs.toFixed(2)} ms (median of ${c.runs})`)],
        ["cold start in workerd under Miniflare", hookText(extra.coldStartWorkerd, (c) => `${c.medianMs.toFixed(2)} ms to a new runtime's first answer (median of ${c.runs}); the same with an empty worker: ${c.baselineMs.toFixed(2)} ms`)],
        ["restore of 100k leases with a key each (JS API, from `snapshot()` entries)", hookText(extra.restore100k, (r) => `${r.medianMs.toFixed(0)} ms (median of 5, ${r.entries} entries)`)],
        [
          "file store compaction of 100k leases with a key each (`compactFrom`, writes going on)",
          hookText(
            extra.compactionStall,
            (c) =>
              `longest event-loop wait ${c.maxGapMs.toFixed(1)} ms over ${c.totalMs.toFixed(0)} ms, ${c.writes} writes meanwhile; taking \`snapshot()\` whole instead: ${c.wholeMs.toFixed(0)} ms in one piece (${c.entries} entries)`,
          ),
        ],
        ["batch API gain", hookText(extra.batchGain, (b) => b.markdown)],
      ],
    ),
    "",
  );

  out.push("## edge-lease/worker in Miniflare", "");
  out.push(
    "Whole client cycles through the Worker and its Durable Objects (benches/worker.mjs): workerd under Miniflare, " +
      "SQLite-backed objects on a temp dir, 20 concurrent clients over loopback HTTP (Node's fetch) for 3 s per row, " +
      "all on 1 namespace or one per namespace over 20. Every write is confirmed by storage before its answer (the output gate). " +
      "Client and runtime share this machine's cores, so 20 objects cannot run in parallel here as they would across Cloudflare's machines.",
    "",
  );
  out.push(hookText(extra.workerThroughput, (w) => w.markdown), "");

  // The server benchmark writes its own section (benches/server.mjs).
  out.push(hookText(extra.durable, (d) => d.markdown), "");
  out.push(hookText(extra.serverBench, (r) => r.markdown), "");
  out.push(hookText(extra.serverWorkloads, (r) => r.markdown), "");

  out.push("## Goals (issue 28)", "");
  out.push(
    "Each row from this run's figures, edge-lease beside its peers. A missed goal names what bounds it (the analysis below)." +
      (QUICK ? " **--quick: the durable, server and workload figures are smoke sizes, not the goals' workloads.**" : "") +
      (SECTIONS.size < 6 ? ` Sections run: ${[...SECTIONS].join(", ")} (--sections).` : ""),
    "",
  );
  out.push(mdTable(["goal", "status", "edge-lease", "peers (same run)", "what bounds it (for a MISS)"], goals().map(([name, r]) => [name, r.status, r.edge, r.peers, r.status.startsWith("MET") ? "-" : r.bound])), "");
  // The standing analysis (profiles, causes of misses) follows the figures.
  out.push(readFileSync(join(ROOT, "benches/ANALYSIS.md"), "utf8").trimEnd());
  return out.join("\n");
}

// ---- output ---------------------------------------------------------------------

// The machine as the run ended; --from keeps the run's and says when and by
// which commit the report was written again.
const machineRows = saved
  ? [...saved.machine, ["written again from these figures (--from)", `${new Date().toISOString()}, ${sh("git", ["rev-parse", "--short", "HEAD"])}${sh("git", ["status", "--porcelain"]) ? " (uncommitted changes)" : ""}`]]
  : machine();
const md = markdown();
writeFileSync(opt.out, md + "\n");
if (!saved) {
  const settings = Object.fromEntries(["n", "systems", "sections", "quick", "check-perf", "max-run-seconds"].map((k) => [k, opt[k]]));
  mkdirSync(join(ROOT, "test-output"), { recursive: true });
  writeFileSync(join(ROOT, "test-output/bench.json"), JSON.stringify({ settings, loadAtStart, machine: machineRows, rows, extra, totalSeconds }, null, 2) + "\n");
}

console.log("");
for (const n of SECTIONS.has("churn") ? NS : []) {
  console.log(`N = ${fmtN(n)}`.padEnd(24) + STEPS.map((k) => STEP_LABEL[k].padStart(11)).join("") + "    B/lease");
  for (const s of systems) {
    const r = rows.find((x) => x.system === s && x.n === n);
    const cells = r && !r.skipped ? STEPS.map((k) => fmtNs(r.steps[k]).padStart(11)).join("") + r.bytesPerLease.toFixed(0).padStart(11) : "    skipped";
    console.log(`  ${s.padEnd(22)}${cells}`);
  }
}
console.log("");
for (const [name, r] of goals()) console.log(`${r.status.padEnd(14)} ${name}: ${r.edge}${r.status.startsWith("NOT") ? ` (${r.bound})` : ""}`);
console.log(`\nwrote ${opt.out} (total ${totalSeconds.toFixed(0)} s)`);
