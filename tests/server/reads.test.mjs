// server/reads.mjs: a connection's bytes off its native handle, or through
// its stream where that is not possible; both must give the same bytes in
// the same order, pause and resume reading, and still end the socket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, connect } from "node:net";
import { once } from "node:events";
import { readBytes } from "../../server/reads.mjs";

const BOUND_MS = 5_000;

function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function until(cond, what) {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > BOUND_MS) throw new Error(`${what}: not within ${BOUND_MS} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

// A server whose first connection is handed on as server/listen.mjs does
// (its first chunk read, put back, then readBytes), and a client of it.
// `onBytes(bytes, reads)` hears each read. Resolves once the client is
// connected: { client, accepted (a promise of { socket, reads }), close }.
async function sniffed(direct, onBytes) {
  let handOver;
  const accepted = new Promise((r) => (handOver = r));
  const server = createServer((socket) => {
    socket.once("data", (first) => {
      socket.pause();
      socket.unshift(first);
      const reads = readBytes(socket, (bytes) => onBytes(bytes, reads), { direct });
      reads.start();
      handOver({ socket, reads });
    });
  });
  server.listen(0, "127.0.0.1");
  await within(once(server, "listening"), "listen");
  const client = connect(server.address().port, "127.0.0.1");
  const close = () => (client.destroy(), server.close());
  try {
    await within(once(client, "connect"), "connect");
  } catch (e) {
    close();
    throw e;
  }
  return { client, accepted: within(accepted, "accept"), close };
}

for (const direct of [true, false]) {
  const path = direct ? "off the handle" : "through the stream";
  test(`readBytes ${path}: bytes in order, pause holds them back, resume lets them in, EOF still ends the socket`, async () => {
    const got = [];
    const { client, accepted, close } = await sniffed(direct, (bytes) => got.push(Buffer.from(bytes)));
    try {
      client.write("first");
      const { socket, reads } = await accepted;
      const ended = once(socket, "end");
      const text = () => Buffer.concat(got).toString();
      await until(() => text() === "first", "the first bytes");

      client.write("second");
      await until(() => text() === "firstsecond", "a later read");

      reads.pause();
      client.write("held");
      // Long enough for loopback to deliver, were the socket still read.
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(text(), "firstsecond", "nothing is read while paused");
      reads.resume();
      await until(() => text() === "firstsecondheld", "the held bytes after resume");

      // A read larger than one buffer arrives whole, in order.
      const big = Buffer.alloc(200_000, 0x61);
      client.write(big);
      await until(() => Buffer.concat(got).length === 15 + big.length, "a large write");
      assert.ok(Buffer.concat(got).subarray(15).equals(big));

      client.end();
      await within(ended, "the socket's end");
    } finally {
      close();
    }
  });

  test(`readBytes ${path}: the controller can be used from the first bytes' callback (those put back)`, async () => {
    const calls = [];
    // h2.mjs may have to pause reading while it handles the first bytes.
    const { client, accepted, close } = await sniffed(direct, (bytes, reads) => {
      reads.pause();
      calls.push(Buffer.from(bytes).toString());
      reads.resume();
    });
    try {
      client.write("preface");
      await accepted;
      client.write("more");
      await until(() => calls.join("") === "prefacemore", "both reads");
    } finally {
      close();
    }
  });
}
