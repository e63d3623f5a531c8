// Runs one (system, N) pair and prints one JSON line. Meant to be started in
// a fresh process by benches/run.mjs so that heap measurements are clean:
//   node --expose-gc benches/run-one.mjs <system> <N>
// A system whose module fails to import (edge-lease before the package is
// built) is reported as {"skipped": reason} instead of crashing the run.
import { runSystem } from "./workload.mjs";

const [name, nArg] = process.argv.slice(2);
const n = Number(nArg);
if (!name || !Number.isInteger(n) || n <= 0) {
  console.error("usage: node --expose-gc benches/run-one.mjs <system> <N>");
  process.exit(2);
}
if (typeof globalThis.gc !== "function") {
  console.error("run-one.mjs needs node --expose-gc");
  process.exit(2);
}

let factory;
try {
  factory = (await import(`./systems/${name}.mjs`)).default;
} catch (err) {
  const reason = String(err?.message ?? err).split("\n")[0];
  console.log(JSON.stringify({ system: name, n, skipped: `import failed: ${reason}` }));
  process.exit(0);
}

const result = runSystem(factory, n);
console.log(JSON.stringify({ system: factory.name, version: factory.version, n, ...result }));
