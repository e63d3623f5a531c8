// A WatchResponse sent as its pieces (server/grpc.mjs's WatchMessage): any
// range of it copies out as the same bytes as the response joined, so the
// transport's parts, cut anywhere (inside an event's tag and length too),
// make the message protobufjs would have written.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WatchMessage } from "../../server/grpc.mjs";

const TAG = (11 << 3) | 2;

function varint(n) {
  const out = [];
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  out.push(n);
  return out;
}

function make(sizes) {
  let seed = 7;
  const bytes = (n) => Uint8Array.from({ length: n }, () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 255);
  const head = bytes(12);
  const rest = bytes(3);
  const events = sizes.map(bytes);
  const joined = Uint8Array.from([...head, ...rest, ...events.flatMap((e) => [TAG, ...varint(e.length), ...e])]);
  return { msg: new WatchMessage(TAG, head, rest, events, joined.length), joined };
}

test("WatchMessage: every part size, in order, copies out the joined response", () => {
  // Lengths whose varints take 1, 2 and 3 bytes, and an empty event.
  const { msg, joined } = make([5, 0, 127, 128, 300, 16_384, 20_000, 1]);
  assert.equal(msg.length, joined.length);
  for (const part of [1, 2, 3, 7, 64, 1000, 4096, joined.length]) {
    const out = new Uint8Array(joined.length);
    for (let at = 0; at < joined.length; at += part) {
      const len = Math.min(part, joined.length - at);
      msg.copy(out.subarray(at, at + len), at);
    }
    assert.deepEqual(out, joined, `parts of ${part}`);
  }
});

test("WatchMessage: ranges out of order and repeated copy out the same bytes", () => {
  const { msg, joined } = make([200, 70_000, 3, 129]);
  let seed = 1;
  const rand = (n) => (seed = (seed * 48271) % 2147483647) % n;
  for (let i = 0; i < 2000; i++) {
    const from = rand(joined.length);
    const len = 1 + rand(Math.min(joined.length - from, 5000));
    const into = new Uint8Array(len);
    msg.copy(into, from);
    assert.deepEqual(into, joined.subarray(from, from + len), `[${from}, ${from + len})`);
  }
});
