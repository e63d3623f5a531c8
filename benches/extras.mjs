// LEAD: edge-lease-specific measurements for BENCHMARKS.md.
//
// Each hook returns null until implemented (the report then says "not
// measured yet"), or the object described above it. benches/run.mjs calls
// them after the churn runs and renders their results; the "goals" section
// reads wasmSize().gzipBytes. Helpers below do the generic parts.

import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { spawnSync } from "node:child_process";

// Release wasm size -> { file, rawBytes, gzipBytes }
// e.g. return fileSizes("pkg/edge_lease_bg.wasm");
export async function wasmSize() {
  return null;
}

// Cold start in Node: import + instantiate + first grant, in a fresh process
// -> { medianMs, runs }
// e.g. return coldStart(["node", "-e", SCRIPT_THAT_PRINTS_MS], 10);
export async function coldStartNode() {
  return null;
}

// Cold start in workerd under Miniflare: same measure -> { medianMs, runs }
export async function coldStartWorkerd() {
  return null;
}

// Batch API gain, if the package has batch forms -> { markdown } (a table or
// a sentence, inserted as is)
export async function batchGain() {
  return null;
}

// ---- helpers --------------------------------------------------------------

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
