// Issue 13, items 8 and 9: lease ids and hash seeds come from the OS's
// randomness. Without it (no globalThis.crypto) a Lessor refuses to start
// instead of issuing the same ids in every process; and two processes do
// not lay out their maps alike (the hash seed differs per instance).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";

const entry = new URL("../../js/entries/node.mjs", import.meta.url).href;

function run(source) {
  return execFileSync(process.execPath, ["--input-type=module", "-e", source], {
    encoding: "utf8",
    timeout: 20_000,
  }).trim();
}

test("without OS randomness the constructor fails with NoEntropy", () => {
  const out = run(`
    delete globalThis.crypto;
    const { Lessor } = await import(${JSON.stringify(entry)});
    try {
      const l = new Lessor({ autoTick: false });
      console.log("constructed " + l.grant(10).id);
    } catch (e) {
      console.log(e.name + " " + e.code);
    }
  `);
  assert.equal(out, "LeaseError NoEntropy");
});

// The unbundled entry (Deno, Bun) seeds through webcrypto; the Node bundle
// through js/entries/node-random.js.
const bundle = new URL("../../js/dist/node.mjs", import.meta.url).href;
for (const [name, from] of [["entries/node.mjs", entry], ["dist/node.mjs", bundle]]) {
  test(`two processes give different ids and lay out their maps differently (${name})`, () => twoProcesses(from));
}

function twoProcesses(from) {
  const source = `
    const { Lessor } = await import(${JSON.stringify(from)});
    const l = new Lessor({ autoTick: false });
    const ids = [l.grant(10).id, l.grant(10).id];
    for (let i = 1n; i <= 64n; i++) l.grant(10, { id: i });
    // snapshot() lists the leases in their hash map's order (keys come in
    // key order).
    const order = l.snapshot().map(([k]) => k).filter((k) => k.startsWith("v1/lease/")).join(",");
    console.log(JSON.stringify({ ids, order }));
  `;
  const a = JSON.parse(run(source));
  const b = JSON.parse(run(source));
  assert.notDeepEqual(a.ids, b.ids);
  assert.notEqual(a.order, b.order, "the same hash seed in both processes");
}
