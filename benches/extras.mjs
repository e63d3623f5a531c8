// edge-lease-specific measurements for BENCHMARKS.md: wasm size, cold
// starts, batch gain, edge-lease/worker cycles (benches/worker.mjs). benches/run.mjs calls them after the churn runs and
// renders their results; the "goals" section reads wasmSize().gzipBytes.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { spawnSync } from "node:child_process";
import { workerOptions } from "../tests/workerd/worker-options.mjs";

const root = new URL("..", import.meta.url).pathname;

export { workerThroughput } from "./worker.mjs";
export { serverBench } from "./server.mjs";
export { serverWorkloads } from "./server-workloads.mjs";
export { durableBench } from "./durable.mjs";

// Release wasm sizes: the lean engine browsers and Workers load (edge-lease)
// -> { file, rawBytes, gzipBytes, etcd: the etcd server's build, the same }.
export async function wasmSize() {
  const size = (file) => ({ ...fileSizes(root + file), file });
  return { ...size("js/pkg/edge_lease_bg.wasm"), etcd: size("dist/engine/edge_lease_bg.wasm") };
}

// Cold start in Node: import + instantiate + first grant, in a fresh process.
export async function coldStartNode() {
  const script = [
    "const t0 = performance.now();",
    'const { Lessor } = await import("edge-lease");',
    "new Lessor({ autoTick: false }).grant(10);",
    "console.log(performance.now() - t0);",
  ].join("\n");
  // The floor under it, in fresh processes too: compiling the lean module
  // alone (node:fs imported, the file read, \`new WebAssembly.Module\`), and
  // importing an empty ES module.
  const compile = [
    "const t0 = performance.now();",
    'const { readFileSync } = await import("node:fs");',
    `new WebAssembly.Module(readFileSync(${JSON.stringify(root + "js/pkg/edge_lease_bg.wasm")}));`,
    "console.log(performance.now() - t0);",
  ].join("\n");
  const file = root + "benches/.cold-start.mjs";
  const compileFile = root + "benches/.cold-compile.mjs";
  const emptyFile = root + "benches/.cold-empty.mjs";
  const emptyModule = root + "benches/.cold-empty-module.mjs";
  writeFileSync(file, script);
  writeFileSync(compileFile, compile);
  writeFileSync(emptyModule, "export {};\n");
  writeFileSync(emptyFile, 'const t0 = performance.now();\nawait import("./.cold-empty-module.mjs");\nconsole.log(performance.now() - t0);\n');
  try {
    return {
      ...coldStart(["node", file], 15),
      compileMs: coldStart(["node", compileFile], 15).medianMs,
      emptyMs: coldStart(["node", emptyFile], 15).medianMs,
    };
  } finally {
    for (const f of [file, compileFile, emptyFile, emptyModule]) rmSync(f, { force: true });
  }
}

// Cold start in workerd under Miniflare: a new runtime, then the first
// request, which imports the package, instantiates the wasm and grants.
// The worker is bundled first (esbuild, as wrangler deploys it: one script
// plus the .wasm module), so the runtime loads what a deployment loads, not
// the package's module graph file by file.
// Miniflare's own start-up is measured the same way with an empty worker and
// reported beside it (workerd freezes Date.now inside a request, so the
// worker cannot time itself).
export async function coldStartWorkerd() {
  const { Miniflare } = await import("miniflare");
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-cold-"));
  const source = join(root, "benches/.cold-worker.mjs");
  const withLease = join(dir, "out", "worker.mjs");
  const empty = join(dir, "empty.mjs");
  writeFileSync(
    source,
    'import { Lessor } from "../js/entries/workerd.mjs";\n' +
      "export default { fetch() { return new Response(new Lessor({ autoTick: false }).grant(10).id); } };\n",
  );
  const { build } = await import("esbuild");
  // The bundle keeps the wasm import as written ("../pkg/..."): put the
  // module there, beside out/.
  await build({ entryPoints: [source], bundle: true, format: "esm", outfile: withLease, external: ["*.wasm"], logLevel: "error" });
  mkdirSync(join(dir, "pkg"));
  copyFileSync(join(root, "js/pkg/edge_lease_bg.wasm"), join(dir, "pkg/edge_lease_bg.wasm"));
  writeFileSync(empty, 'export default { fetch() { return new Response("x"); } };\n');
  // The floor: a worker that only imports the module (compiled at load).
  const wasmOnly = join(dir, "wasm-only.mjs");
  writeFileSync(wasmOnly, 'import m from "./pkg/edge_lease_bg.wasm";\nexport default { fetch() { return new Response(String(WebAssembly.Module.exports(m).length)); } };\n');
  const once = async (scriptPath, modulesRoot) => {
    const t0 = performance.now();
    const mf = new Miniflare(workerOptions(scriptPath, modulesRoot));
    try {
      await (await mf.dispatchFetch("http://localhost/")).text();
      return performance.now() - t0;
    } finally {
      await mf.dispose();
    }
  };
  try {
    const runs = 5;
    const a = [];
    const b = [];
    const c = [];
    for (let i = 0; i < runs; i++) {
      a.push(await once(withLease, dir));
      b.push(await once(empty, dir));
      c.push(await once(wasmOnly, dir));
    }
    const median = (v) => v.sort((x, y) => x - y)[v.length >> 1];
    return { medianMs: median(a), runs, baselineMs: median(b), wasmOnlyMs: median(c) };
  } finally {
    rmSync(source, { force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

// Batch API gain: edge-lease has no batch forms. Each call already crosses
// into wasm once with scalars only; the per-call cost left is argument
// checking and id parsing in JS, which a batch form would still do per item.
// Restoring 100k leases, each with one short key, from storage entries
// (what a Durable Object pays on each wake-up): median of 5 in a fresh
// process, so earlier runs' heap does not weigh on it.
export async function restore100k() {
  const script = [
    'import { Lessor } from "edge-lease";',
    "const N = 100_000;",
    "const l = new Lessor({ autoTick: false });",
    'for (let i = 0; i < N; i++) l.put(`svc/${i}`, "up", { lease: l.grant(600).id });',
    "const entries = l.snapshot();",
    "l.close();",
    "const ms = [];",
    "for (let r = 0; r < 5; r++) {",
    "  const t0 = performance.now();",
    "  const back = new Lessor({ restore: entries, autoTick: false });",
    "  ms.push(performance.now() - t0);",
    "  if (back.leases().length !== N) throw new Error('restore lost leases');",
    "  back.close();",
    "}",
    "ms.sort((a, b) => a - b);",
    "console.log(JSON.stringify({ medianMs: ms[2], entries: entries.length }));",
  ];
  const whole = runScript("restore", script);
  // Where it goes: the same restore in stages through the binding (packing
  // the entries in JS, decoding them in the engine, building the lessor),
  // in a fresh process of its own.
  const r = spawnSync("node", [root + "benches/wakeup.mjs", "--skip-wake", "--runs", "5"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`restore stages failed: ${r.stderr.slice(-500)}`);
  const { restore: stages } = JSON.parse(r.stdout.trim().split("\n").pop());
  return { ...whole, stages };
}

// A file store's compaction under a server's state (100k leases with a key
// each): the longest the event loop waits while compactFrom writes the
// snapshot, writes going on meanwhile, against taking `snapshot()` whole,
// which compaction did before it read the lessor in steps.
export async function compactionStall() {
  const script = [
    'import { Lessor } from "edge-lease";',
    'import { FileStore } from "edge-lease/stores/file";',
    'import { mkdtempSync, rmSync } from "node:fs";',
    'import { tmpdir } from "node:os";',
    'import { join } from "node:path";',
    "const N = 100_000;",
    'const dir = mkdtempSync(join(tmpdir(), "edge-lease-compact-"));',
    "const store = FileStore.open(dir, { groupCommit: true });",
    "const l = new Lessor({ storage: store, restore: store.entries(), autoTick: false });",
    'for (let i = 0; i < N; i++) l.put(`svc/${i}`, "up", { lease: l.grant(600).id });',
    "await l.flush();",
    "let t0 = performance.now();",
    "const whole = l.snapshot().length;",
    "const wholeMs = performance.now() - t0;",
    "t0 = performance.now();",
    "let done = false, last = t0, maxGap = 0, writes = 0;",
    "store.compactFrom(l, { force: true }).then(() => (done = true));",
    "while (!done) {",
    "  await new Promise((r) => setImmediate(r));",
    "  const now = performance.now();",
    "  maxGap = Math.max(maxGap, now - last);",
    "  last = now;",
    '  l.put(`during/${writes++ % 100}`, "x");',
    "}",
    "const totalMs = performance.now() - t0;",
    "await store.close();",
    "l.close();",
    "rmSync(dir, { recursive: true, force: true });",
    "console.log(JSON.stringify({ maxGapMs: maxGap, totalMs, wholeMs, entries: whole, writes }));",
  ];
  return runScript("compaction", script);
}

export async function batchGain() {
  return {
    markdown:
      "none: edge-lease has no batch API. Calls pass scalars (ids as two u32, results in a shared scratch array), so a batch would only save the per-call entry checks, not the per-item work.",
  };
}

// ---- helpers --------------------------------------------------------------

// Runs `lines` as an ES module in a fresh Node process (benches/ resolves
// "edge-lease" to this package); its last stdout line is JSON, returned.
function runScript(name, lines) {
  const file = root + `benches/.${name}.mjs`;
  writeFileSync(file, lines.join("\n"));
  try {
    const r = spawnSync("node", [file], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${name} run failed: ${r.stderr.slice(-500)}`);
    return JSON.parse(r.stdout.trim().split("\n").pop());
  } finally {
    rmSync(file, { force: true });
  }
}

// Raw and gzip (level 9) size of a file.
export function fileSizes(file) {
  const raw = readFileSync(file);
  return { file, rawBytes: raw.length, gzipBytes: gzipSync(raw, { level: 9 }).length };
}

// Runs `argv` `runs` times, each in a fresh process; each run must print the
// measured milliseconds as its last stdout line. Returns the median.
export function coldStart(argv, runs = 10) {
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(argv[0], argv.slice(1), { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${argv.join(" ")} failed: ${r.stderr}`);
    ms.push(Number(r.stdout.trim().split("\n").pop()));
  }
  ms.sort((a, b) => a - b);
  return { medianMs: ms[ms.length >> 1], runs };
}
