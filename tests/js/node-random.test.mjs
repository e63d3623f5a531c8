// js/entries/node-random.js: the random bytes the Node bundles seed the
// core's hash maps with (scripts/bundle.mjs puts fillRandom in place of the
// glue's webcrypto call), from the OS's device, or webcrypto without one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

test("the device is read ahead, each byte handed out once and in order", () => {
  // A file of known bytes as the device shows what each call gets.
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-random-"));
  try {
    const device = join(dir, "device");
    const content = Uint8Array.from({ length: 20_000 }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
    writeFileSync(device, content);
    // Small calls, as the core makes them, take consecutive bytes of the first read.
    const got = [];
    for (const n of [8, 8, 256, 1, 3, 256]) got.push(...fillRandom(new Uint8Array(n), device));
    assert.deepEqual(got, [...content.subarray(0, got.length)]);
    // Until the read-ahead runs short: the next call reads again (here the
    // file from its start), never handing out what is left twice.
    let total = got.length;
    while (total + 256 <= 4096) total += fillRandom(new Uint8Array(256), device).length;
    assert.deepEqual([...fillRandom(new Uint8Array(256), device)], [...content.subarray(0, 256)]);
    // A call larger than the read-ahead reads the device for itself.
    assert.deepEqual(fillRandom(new Uint8Array(10_000), device), content.subarray(0, 10_000));
    assert.deepEqual([...fillRandom(new Uint8Array(4), device)], [...content.subarray(256, 260)]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("without the device, webcrypto fills them", () => {
  const b = fillRandom(new Uint8Array(4096), "/nonexistent/urandom");
  assert.ok(distinct(b) > 200);
  const small = [0, 1, 2].map(() => fillRandom(new Uint8Array(16), "/nonexistent/urandom"));
  assert.notDeepEqual(small[0], small[1]);
  assert.notDeepEqual(small[1], small[2]);
});

test("the Node bundles call it where the glue called webcrypto", () => {
  for (const f of ["../../js/dist/node.mjs", "../../js/dist/node.cjs"]) {
    const text = readFileSync(new URL(f, import.meta.url), "utf8");
    assert.match(text, /fillRandom\(getArrayU8FromWasm0\(/, f);
    assert.doesNotMatch(text, /globalThis\.crypto\.getRandomValues\(getArrayU8FromWasm0/, f);
  }
});
