// js/entries/node-random.js: the random bytes the Node bundles seed the
// core's hash maps with (scripts/bundle.mjs puts fillRandom in place of the
// glue's webcrypto call), from the OS's device, or webcrypto without one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fillRandom } from "../../js/entries/node-random.js";

const distinct = (b) => new Set(b).size;

test("fills every byte, past one read's worth, and no two fills alike", () => {
  const a = fillRandom(new Uint8Array(200_000));
  const b = fillRandom(new Uint8Array(200_000));
  assert.equal(distinct(a), 256);
  assert.notDeepEqual(a, b);
  // The tail too: 1,000 zero bytes in a row from a random source would be a bug, not luck.
  assert.ok(a.subarray(-1000).some((x) => x !== 0));
  // A view into a larger buffer (as the glue hands it: wasm memory) gets its bytes, and only those.
  const mem = new Uint8Array(64);
  fillRandom(mem.subarray(16, 48));
  assert.deepEqual([...mem.subarray(0, 16), ...mem.subarray(48)], new Array(32).fill(0));
  assert.ok(mem.subarray(16, 48).some((x) => x !== 0));
});

test("without the device, webcrypto fills them", () => {
  const b = fillRandom(new Uint8Array(4096), "/nonexistent/urandom");
  assert.ok(distinct(b) > 200);
});

test("the Node bundles call it where the glue called webcrypto", () => {
  for (const f of ["../../js/dist/node.mjs", "../../js/dist/node.cjs"]) {
    const text = readFileSync(new URL(f, import.meta.url), "utf8");
    assert.match(text, /fillRandom\(getArrayU8FromWasm0\(/, f);
    assert.doesNotMatch(text, /globalThis\.crypto\.getRandomValues\(getArrayU8FromWasm0/, f);
  }
});
