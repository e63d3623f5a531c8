// `npm run bench`: runs the churn workload for every system at every N, each
// (system, N) in a fresh process, prints a table and writes BENCHMARKS.md.
//
//   node benches/run.mjs [--n 1000,10000] [--systems plain-js,naive-native]
//                        [--out BENCHMARKS.md] [--max-run-seconds 120]
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
const loadAtStart = os.loadavg();

const { values: opt } = parseArgs({
  options: {
    n: { type: "string", default: "1000,10000,100000,1000000" },
    systems: { type: "string" },
    out: { type: "string", default: join(ROOT, "BENCHMARKS.md") },
    // A (system, N) run predicted or found to take longer than this is
    // skipped/killed, so that one slow peer cannot blow the 5-minute budget.
    "max-run-seconds": { type: "string", default: "120" },
  },
});
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

const native = NATIVE.some((s) => systems.includes(s)) ? buildNative() : { error: "not selected" };
if (native.error) console.log(`native systems skipped: ${native.error}`);

const rows = [];
for (const n of NS) {
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

async function hook(name) {
  try {
    return (await extras[name]()) ?? { missing: true };
  } catch (err) {
    return { error: String(err?.message ?? err) };
  }
}
const extra = {
  wasmSize: await hook("wasmSize"),
  coldStartNode: await hook("coldStartNode"),
  coldStartWorkerd: await hook("coldStartWorkerd"),
  restore100k: await hook("restore100k"),
  compactionStall: await hook("compactionStall"),
  batchGain: await hook("batchGain"),
  workerThroughput: await hook("workerThroughput"),
  serverBench: await hook("serverBench"),
};

const totalSeconds = (Date.now() - started) / 1000;

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

// The goals of issue 14, each { status, detail } from this run's figures.
const verdict = (compared, fails, what) =>
  compared === 0
    ? { status: "NOT MEASURED", detail: `needs ${what}` }
    : fails.length
      ? { status: "MISS", detail: fails.join("; ") }
      : { status: "MET", detail: `at ${compared} N` };

// `a`'s steps (those in `steps`) at most `factor` times `b`'s, at each N in `ns`.
function stepsWithin(a, b, factor, steps, ns = NS) {
  const fails = [];
  let compared = 0;
  for (const n of ns) {
    const ra = ok(a, n);
    const rb = ok(b, n);
    if (!ra || !rb) continue;
    compared++;
    for (const k of steps) {
      if (!(ra.steps[k] <= factor * rb.steps[k])) fails.push(`${fmtN(n)} ${STEP_LABEL[k]}: ${fmtNs(ra.steps[k])} vs ${fmtNs(rb.steps[k])} (${fmtRatio(ra.steps[k] / rb.steps[k])})`);
    }
  }
  return verdict(compared, fails, `${a} and ${b}`);
}

const limit = (h, value, max, unit, digits = 1) =>
  h.missing || h.error || value === undefined
    ? { status: "NOT MEASURED", detail: h.error ?? "hook missing" }
    : { status: value <= max ? "MET" : "MISS", detail: `${value.toFixed(digits)} ${unit} (goal ${max} ${unit})` };

function goals() {
  const ALL = Object.keys(STEP_LABEL);
  const g = [];
  g.push(["JS API: every step at or below the plain JS lessor, 1k to 1M", stepsWithin("edge-lease", "plain-js", 1, ALL)]);
  g.push(["JS API: get within 1.5x of ttlcache", stepsWithin("edge-lease", "ttlcache", 1.5, ["get"])]);
  g.push(["JS API: expire within 2x of ttlcache", stepsWithin("edge-lease", "ttlcache", 2, ["expire"])]);
  {
    // "at least 1.5x faster": core * 1.5 <= naive, i.e. core <= naive / 1.5.
    const big = NS.filter((n) => n >= 100_000);
    g.push(["native core at least 1.5x faster than the naive native lessor, every step at 100k and 1M", stepsWithin("edge-lease-core", "naive-native", 1 / 1.5, ALL, big)]);
  }
  {
    const fails = [];
    let compared = 0;
    for (const n of NS.filter((n) => n >= 100_000)) {
      const e = ok("edge-lease", n);
      if (!e) continue;
      compared++;
      if (!(e.bytesPerLease <= 200)) fails.push(`${fmtN(n)}: ${e.bytesPerLease.toFixed(0)} B`);
    }
    g.push(["JS API memory at most 200 B per lease (one short key, wasm memory included) at 100k and 1M", verdict(compared, fails, "edge-lease at 100k or 1M")]);
  }
  g.push(["release wasm (the lean engine browsers and Workers load) at most 40 KB gzip", limit(extra.wasmSize, extra.wasmSize.gzipBytes / 1024, 40, "KB")]);
  g.push(["cold start in Node at most 5 ms (median of 15 fresh processes)", limit(extra.coldStartNode, extra.coldStartNode.medianMs, 5, "ms", 2)]);
  {
    const w = extra.coldStartWorkerd;
    g.push(["cold start in workerd at most 10 ms over an empty worker", limit(w, w.medianMs - w.baselineMs, 10, "ms", 1)]);
  }
  g.push(["restore of 100k leases with a key each at most 100 ms", limit(extra.restore100k, extra.restore100k.medianMs, 100, "ms", 0)]);
  return g;
}

function hookText(h, render) {
  if (h.missing) return "not measured yet (hook in benches/extras.mjs)";
  if (h.error) return `failed: ${h.error}`;
  return render(h);
}

function sh(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "unavailable";
}

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
  out.push(mdTable(["", ""], machine()), "");
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
  out.push(hookText(extra.serverBench, (md) => md), "");

  out.push("## Goals (issue 14)", "");
  out.push(mdTable(["goal", "status", "detail"], goals().map(([name, r]) => [name, r.status, r.detail])), "");
  // The standing analysis (profiles, causes of misses) follows the figures.
  out.push(readFileSync(join(ROOT, "benches/ANALYSIS.md"), "utf8").trimEnd());
  return out.join("\n");
}

// ---- output ---------------------------------------------------------------------

const md = markdown();
writeFileSync(opt.out, md + "\n");
mkdirSync(join(ROOT, "test-output"), { recursive: true });
writeFileSync(join(ROOT, "test-output/bench.json"), JSON.stringify({ rows, extra, totalSeconds }, null, 2) + "\n");

console.log("");
for (const n of NS) {
  console.log(`N = ${fmtN(n)}`.padEnd(24) + STEPS.map((k) => STEP_LABEL[k].padStart(11)).join("") + "    B/lease");
  for (const s of systems) {
    const r = rows.find((x) => x.system === s && x.n === n);
    const cells = r && !r.skipped ? STEPS.map((k) => fmtNs(r.steps[k]).padStart(11)).join("") + r.bytesPerLease.toFixed(0).padStart(11) : "    skipped";
    console.log(`  ${s.padEnd(22)}${cells}`);
  }
}
console.log("");
for (const [name, r] of goals()) console.log(`${r.status.padEnd(14)} ${name}${r.detail ? `: ${r.detail}` : ""}`);
console.log(`\nwrote ${opt.out} (total ${totalSeconds.toFixed(0)} s)`);
