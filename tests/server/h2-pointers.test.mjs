// The h2 module's pointers above 2 GiB. A wasm i32 reaches JS signed, so an
// address past 2^31 comes as a negative number: server/h2.mjs must read it
// unsigned wherever it becomes an offset into memory (its scratch buffer,
// its take, the WASI imports), or the server fails there at 2 GiB of
// module memory instead of 4. A real memory of 2 GiB + 64 KiB (reserved,
// barely touched) and exports that return such addresses as wasm does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { taken, textToScratch, toScratch, wasi } from "../../server/h2.mjs";

const HIGH = 0x8000_0000 + 4096; // an address past 2 GiB
const memory = new WebAssembly.Memory({ initial: 32769 });
const bytesAt = (ptr, len) => Buffer.from(memory.buffer, ptr, len); // (a view, not a copy)
// As the module's i32 results arrive in JS: signed.
const i32 = (n) => n | 0;

test("the scratch buffer past 2 GiB takes the bytes and the text", () => {
  const x = { h2_scratch: () => i32(HIGH) };
  assert.equal(toScratch(x, memory, Buffer.from("abc")), 3);
  assert.equal(bytesAt(HIGH, 3).toString(), "abc");
  assert.equal(textToScratch(x, memory, "é!"), 3);
  assert.equal(bytesAt(HIGH, 3).toString(), "é!");
});

test("a take past 2 GiB is read: the five words and the buffers they point to", () => {
  const words = new Uint32Array(memory.buffer, HIGH, 5);
  bytesAt(HIGH + 64, 2).set(Buffer.from("ev"));
  bytesAt(HIGH + 128, 3).set(Buffer.from("out"));
  words.set([HIGH + 64, 2, HIGH + 128, 3, 1]);
  const { events, output, more } = taken({ h2_take: () => i32(HIGH) }, memory, 0);
  assert.equal(events.toString(), "ev");
  assert.equal(output.toString(), "out");
  assert.equal(more, true);
});

test("the WASI imports write and read past 2 GiB", () => {
  const w = wasi(() => memory);
  const view = new DataView(memory.buffer);
  assert.equal(w.clock_time_get(0, 0n, i32(HIGH)), 0);
  assert.ok(view.getBigUint64(HIGH, true) > 0n, "the clock was written");
  bytesAt(HIGH + 16, 8).fill(0);
  assert.equal(w.random_get(i32(HIGH + 16), 8), 0);
  assert.equal(w.environ_sizes_get(i32(HIGH + 32), i32(HIGH + 36)), 0);
  // One iovec past 2 GiB pointing at 0 bytes (nothing printed), and the
  // count written past 2 GiB.
  view.setUint32(HIGH + 48, HIGH + 64, true);
  view.setUint32(HIGH + 52, 0, true);
  view.setUint32(HIGH + 56, 7, true);
  assert.equal(w.fd_write(2, i32(HIGH + 48), 1, i32(HIGH + 56)), 0);
  assert.equal(view.getUint32(HIGH + 56, true), 0);
});
