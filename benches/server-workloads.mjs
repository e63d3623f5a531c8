// The server under etcd's own kind of workloads (issue 28), edge-lease's
// server against a real etcd 3.4 on this machine, fresh servers per part:
//
// - sustained puts (benches/load's put:K case, an 8-byte value, one
//   HTTP/2 connection per client): many distinct keys (300k puts over 100k
//   keys from 8 clients; 400k puts each on its own key from 16 clients, as
//   etcd's `benchmark put --key-space-size` runs them) and one hot key;
// - compaction during those runs: the data dir of edge-lease's server is
//   watched while they run (every POLL_MS), each journal rollover timed
//   from its new journal-<gen> to its snapshot-<gen> in place, and every
//   request over 50 ms placed beside them;
// - `etcdctl check perf --load s|m|l` against both (etcdctl 3.4's PASS/FAIL);
// - a mutex handoff through etcd's Go client (tests/etcd/go/src/lockhandoff).
//
// Every part is bounded in operations and time. --quick scales the put
// runs down by 10 and skips check perf (each load takes ~60 s per server).
//
//   node benches/server-workloads.mjs [--quick] [--check-perf s,m,l|none]

import { spawn, execFile, execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { start, cpuSeconds, turns } from "./server.mjs";
import { goProgram } from "../tests/etcd/go-client.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LOAD = join(ROOT, "target/release/edge-lease-load");
const POLL_MS = 5;
// A request slower than this during a compaction misses the goal.
const STALL_MS = 50;
const KINDS = ["edge-lease", "etcd"];

/** The put runs: [name, keys, clients, puts] at full size. */
const PUTS = [
  ["puts over 100k distinct keys", 100_000, 8, 300_000],
  ["puts, each on a new key", 400_000, 16, 400_000],
  ["puts on one hot key", 1, 16, 100_000],
];

/** The load generator, without blocking this process (the data dir is polled meanwhile). */
function loadAsync(url, loadCase, clients, maxOps, maxMs) {
  return new Promise((ok, fail) => {
    const child = spawn(LOAD, [new URL(url).host, loadCase, String(clients), String(maxOps), String(maxMs)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), maxMs + 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      let r = null;
      try {
        r = JSON.parse(out.trim().split("\n").pop());
      } catch {}
      if (code === 0 && r && !r.error) ok(r);
      else fail(new Error(r?.error ?? `load generator exit ${code}`));
    });
  });
}

/**
 * Watches edge-lease's data dir: `stop()` returns its compactions as
 * { gen, start, end, journalBytes } (Unix ms; end null if still going).
 */
function watchCompactions(dir) {
  const seen = new Map();
  let journalSizes = new Map();
  const poll = () => {
    let names;
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    const now = Date.now();
    const sizes = new Map();
    for (const n of names) {
      const j = /^journal-(\d+)$/.exec(n);
      if (j) {
        const gen = Number(j[1]);
        try {
          sizes.set(gen, statSync(join(dir, n)).size);
        } catch {}
        // journal-1 is the store's first, not a rollover.
        if (gen > 1 && !seen.has(gen)) seen.set(gen, { gen, start: now, end: null, journalBytes: journalSizes.get(gen - 1) ?? null });
      }
      const s = /^snapshot-(\d+)$/.exec(n);
      if (s && seen.has(Number(s[1])) && seen.get(Number(s[1])).end === null) seen.get(Number(s[1])).end = now;
    }
    journalSizes = sizes;
  };
  const timer = setInterval(poll, POLL_MS);
  poll();
  return () => {
    clearInterval(timer);
    poll();
    return [...seen.values()];
  };
}

// Requests over STALL_MS ([start ms after t0, ms]) that overlap a compaction
// (with a poll's slack on each side), as Unix-ms spans.
function stallsIn(r, compactions) {
  return (r.slow ?? []).map(([s, ms]) => {
    const a = r.t0 + s;
    const b = a + ms;
    const during = compactions.find((c) => a <= (c.end ?? Infinity) + POLL_MS && b >= c.start - POLL_MS);
    return { ms, during: during ?? null };
  });
}

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function putRuns({ scale, rounds, maxMs }) {
  const out = [];
  for (const [name, keys, clients, puts] of PUTS) {
    const k = Math.max(1, Math.round(keys * scale));
    const n = Math.round(puts * scale);
    const servers = { "edge-lease": await start("edge-lease"), etcd: await start("etcd") };
    const runs = { "edge-lease": [], etcd: [] };
    try {
      for (let round = 0; round < rounds; round++) {
        for (const kind of turns(round)) {
          const server = servers[kind];
          const stop = kind === "edge-lease" ? watchCompactions(server.dataDir) : null;
          const cpu0 = cpuSeconds(server.pid);
          try {
            const r = await loadAsync(server.url, `put:${k}`, clients, n, maxMs);
            const compactions = stop ? stop() : [];
            runs[kind].push({ ...r, opsPerSec: r.ops / r.secs, cpuUs: ((cpuSeconds(server.pid) - cpu0) / r.ops) * 1e6, compactions, stalls: stallsIn(r, compactions) });
          } catch (e) {
            stop?.();
            runs[kind].push({ error: e.message.slice(0, 200) });
          }
        }
      }
    } finally {
      for (const s of Object.values(servers)) await s.stop();
    }
    out.push({ name, keys: k, clients, puts: n, runs });
  }
  return out;
}

function etcdctl(url, args, timeout) {
  return new Promise((ok) => {
    execFile("etcdctl", [`--endpoints=${url}`, ...args], { env: { ...process.env, ETCDCTL_API: "3" }, timeout, killSignal: "SIGKILL" }, (err, stdout, stderr) => {
      ok({ code: err ? (err.code ?? "killed") : 0, text: `${stdout}${stderr}` });
    });
  });
}

/** `etcdctl check perf --load <load>` on both, taking turns: { load: { kind: { pass, lines } } }. */
async function checkPerf(loads) {
  const out = {};
  if (!loads.length) return out;
  const servers = { "edge-lease": await start("edge-lease"), etcd: await start("etcd") };
  try {
    for (const [i, load] of loads.entries()) {
      out[load] = {};
      for (const kind of turns(i)) {
        const r = await etcdctl(servers[kind].url, ["check", "perf", "--load", load], 180_000);
        // Its checks ("PASS: Throughput is ..."), then a bare PASS or FAIL.
        const all = r.text.split("\n").map((l) => l.trim()).filter((l) => /^(PASS|FAIL)/.test(l));
        const lines = all.filter((l) => l !== "PASS" && l !== "FAIL");
        out[load][kind] = { pass: r.code === 0 && all.length > 0 && !all.some((l) => l.startsWith("FAIL")), lines, code: r.code };
      }
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
  }
  return out;
}

/** The Go mutex on both, `rounds` runs each taking turns: { kind: [result] }. */
async function lockHandoff({ n, rounds }) {
  const bin = await goProgram("lockhandoff");
  const servers = { "edge-lease": await start("edge-lease"), etcd: await start("etcd") };
  const out = { "edge-lease": [], etcd: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const kind of turns(round)) {
        out[kind].push(
          await new Promise((ok) =>
            execFile(bin, [servers[kind].url, String(n), "30000"], { timeout: 120_000, killSignal: "SIGKILL" }, (err, stdout) => {
              try {
                const r = JSON.parse(stdout.trim().split("\n").pop());
                ok(r);
              } catch {
                ok({ error: (err?.message ?? "no output").slice(0, 200) });
              }
            }),
          ),
        );
      }
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
  }
  return out;
}

const fmt = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "-");

/** Runs every part; { markdown, puts, compaction, checkPerf, lock } (the figures the goals read). */
export async function serverWorkloads({ quick = false, checkPerfLoads = quick ? [] : ["s", "m", "l"] } = {}) {
  execFileSync("cargo", ["build", "--release", "-p", "edge-lease-load"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const scale = quick ? 0.1 : 1;
  const rounds = quick ? 1 : 2;
  const puts = await putRuns({ scale, rounds, maxMs: quick ? 30_000 : 180_000 });
  const perf = await checkPerf(checkPerfLoads);
  const lock = await lockHandoff({ n: quick ? 20 : 100, rounds: quick ? 1 : 3 });

  // Per put run and server: the median run's throughput and p99; the worst
  // request and second over all runs.
  const summary = puts.map((p) => {
    const per = {};
    for (const kind of KINDS) {
      const ok = p.runs[kind].filter((r) => !r.error);
      if (ok.length < p.runs[kind].length) {
        per[kind] = { error: p.runs[kind].find((r) => r.error).error };
        continue;
      }
      const mid = [...ok].sort((a, b) => a.opsPerSec - b.opsPerSec)[Math.floor(ok.length / 2)];
      const worst = ok.reduce((a, b) => (b.max > a.max ? b : a));
      const worstSecond = ok.map((r) => r.worstSecond).filter(Boolean).sort((a, b) => a.ops - b.ops)[0] ?? null;
      per[kind] = { opsPerSec: mid.opsPerSec, p50: mid.p50, p99: mid.p99, cpuUs: mid.cpuUs, max: worst.max, worstSecond, compactions: ok.flatMap((r) => r.compactions), stalls: ok.flatMap((r) => r.stalls) };
    }
    const e = per["edge-lease"];
    const t = per.etcd;
    const ratio = e.error || t.error ? NaN : e.opsPerSec / t.opsPerSec;
    return { ...p, per, ratio };
  });
  const compactions = summary.flatMap((p) => p.per["edge-lease"].compactions ?? []);
  const stalls = summary.flatMap((p) => p.per["edge-lease"].stalls ?? []);
  const compactionStalls = stalls.filter((s) => s.during);
  const lockMed = Object.fromEntries(
    KINDS.map((k) => {
      const ok = lock[k].filter((r) => !r.error);
      if (ok.length < lock[k].length || !ok.length) return [k, { error: lock[k].find((r) => r.error)?.error ?? "no run" }];
      return [k, { handoff: med(ok.map((r) => r.handoff.median)), handoffP99: med(ok.map((r) => r.handoff.p99)), first: med(ok.map((r) => r.firstLock.median)), firstP99: med(ok.map((r) => r.firstLock.p99)), veryFirst: Math.max(...ok.map((r) => r.veryFirstLock)), n: ok.reduce((a, r) => a + r.handoff.n, 0) }];
    }),
  );

  const L = [];
  L.push("## Server under etcd's own kind of workloads (benches/server-workloads.mjs)", "");
  L.push(
    `Fresh servers for each part, both up at once, taking turns (${rounds} run${rounds > 1 ? "s" : ""} each per case${rounds > 1 ? "; the table has each one's median run by throughput, the slowest request and second over all runs" : ""}), each write fsync'd before its answer. ` +
      `Puts: benches/load's put:K case, one HTTP/2 connection per client, an 8-byte value, operation k on key \`k/<k mod K>\` (8 digits), as etcd's \`benchmark put --key-space-size K --sequential-keys\`; at most ${quick ? 30 : 180} s per run.` +
      (quick ? " **--quick: every put run at a tenth of its size** (smoke figures, not the goal's workload)." : ""),
    "",
  );
  L.push("| workload | clients | puts | edge-lease puts/s | etcd puts/s | ratio | edge-lease p50 / p99 / max ms | etcd p50 / p99 / max ms | slowest second (fewest puts done; its slowest request) edge-lease / etcd | server CPU µs/put edge-lease / etcd |");
  L.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const p of summary) {
    const e = p.per["edge-lease"];
    const t = p.per.etcd;
    const cell = (r) => (r.error ? `error: ${r.error.slice(0, 60)}` : fmt(r.opsPerSec, 0));
    const lat = (r) => (r.error ? "-" : `${fmt(r.p50, 2)} / ${fmt(r.p99, 2)} / ${fmt(r.max, 1)}`);
    const sec = (r) => (r.error || !r.worstSecond ? "-" : `${r.worstSecond.ops} puts, ${fmt(r.worstSecond.max, 1)} ms`);
    L.push(`| ${p.name} (${p.keys} keys) | ${p.clients} | ${p.puts} | ${cell(e)} | ${cell(t)} | ${Number.isFinite(p.ratio) ? `${fmt(p.ratio, 2)}x` : "-"} | ${lat(e)} | ${lat(t)} | ${sec(e)} / ${sec(t)} | ${fmt(e.cpuUs, 0)} / ${fmt(t.cpuUs, 0)} |`);
  }
  const slowestInCompaction = compactionStalls.reduce((a, s) => (a && a.ms >= s.ms ? a : s), null);
  const fmtC = (c) => `gen ${c.gen}: ${c.end === null ? "unfinished" : `${fmt(c.end - c.start, 0)} ms`}${c.journalBytes ? ` after a ${fmt(c.journalBytes / 2 ** 20, 1)} MiB journal` : ""}`;
  const longest = [...compactions].filter((c) => c.end !== null).sort((a, b) => b.end - b.start - (a.end - a.start))[0];
  L.push(
    "",
    `Compaction during the put runs (edge-lease's file store: at ${compactions.length} journal rollovers the journal moved to a new file and the snapshot was written in the background; timed from the new journal's file to the snapshot's, polled every ${POLL_MS} ms${longest ? `; the longest ${fmtC(longest)}` : ""}): ` +
      `${stalls.length} request${stalls.length === 1 ? "" : "s"} over ${STALL_MS} ms in all (the generator lists at most 50 per run), ${compactionStalls.length} of them during a compaction` +
      (slowestInCompaction ? ` (the slowest ${fmt(slowestInCompaction.ms, 1)} ms, during ${fmtC(slowestInCompaction.during)})` : "") +
      `. A request overlapping a compaction is counted as caused by it (the best this can tell from outside; the fsync of the journal and the snapshot share the disk).`,
  );
  const lk = (r) => (r.error ? `error: ${r.error}` : `handoff median ${fmt(r.handoff, 2)} / p99 ${fmt(r.handoffP99, 2)} ms; first Lock median ${fmt(r.first, 2)} / p99 ${fmt(r.firstP99, 2)} ms, the very first ${fmt(r.veryFirst, 2)} ms`);
  L.push(
    "",
    `Lock handoff through etcd's Go client (clientv3/concurrency 3.4, tests/etcd/go/src/lockhandoff; two clients taking turns on one mutex, the waiter queued for 150 ms before the holder's Unlock, time from the Unlock call until the waiter's Lock returns; first Lock: a free mutex, session open; ${quick ? 20 : 100} of each per run, median of ${quick ? 1 : 3} runs per server). edge-lease: ${lk(lockMed["edge-lease"])}. etcd: ${lk(lockMed.etcd)}.`,
  );
  if (checkPerfLoads.length) {
    L.push("", "`etcdctl check perf` (etcdctl 3.4, 60 s per load and server, taking turns):", "");
    L.push("| load | edge-lease | etcd |", "| --- | --- | --- |");
    for (const [load, r] of Object.entries(perf)) {
      const c = (x) => `**${x.pass ? "PASS" : "FAIL"}**${x.lines.length ? `: ${x.lines.join("; ")}` : ` (exit ${x.code}, no PASS/FAIL line)`}`;
      L.push(`| ${load} | ${c(r["edge-lease"])} | ${c(r.etcd)} |`);
    }
  } else {
    L.push("", "`etcdctl check perf`: not run (--quick, or --check-perf none).");
  }
  return {
    markdown: L.join("\n") + "\n",
    puts: summary.map((p) => ({ name: p.name, keys: p.keys, clients: p.clients, puts: p.puts, ratio: p.ratio, edge: p.per["edge-lease"], etcd: p.per.etcd })),
    compaction: { rollovers: compactions.length, slow: stalls.length, duringCompaction: compactionStalls.length, slowestDuring: slowestInCompaction?.ms ?? null },
    checkPerf: perf,
    lock: lockMed,
    quick,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { quick: { type: "boolean", default: false }, "check-perf": { type: "string" } } });
  const loads = values["check-perf"] === undefined ? undefined : values["check-perf"] === "none" ? [] : values["check-perf"].split(",");
  const r = await serverWorkloads({ quick: values.quick, ...(loads ? { checkPerfLoads: loads } : {}) });
  console.log(r.markdown);
  process.exit(0);
}
