// A server stream whose client stops reading is ended after the transport's
// stall time (gRPC: Unavailable; the gateway: the connection dropped), so
// what its handler holds goes: a Snapshot's file and its one-at-a-time
// slot. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, connect as netConnect } from "node:net";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { createGateway } from "../../etcd/gateway.mjs";
import { createHttpServer } from "../../server/http.mjs";
import { allowedHosts } from "../../server/guard.mjs";
import { rawCall } from "../etcd/grpc-client.mjs";
import { grpcOnLoopback } from "./loopback.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const SNAPSHOT = { ":method": "POST", ":path": "/etcdserverpb.Maintenance/Snapshot", "content-type": "application/grpc", te: "trailers" };
const EMPTY = Buffer.alloc(5); // a SnapshotRequest: no fields

test("a Snapshot the client stops reading ends after the stall time and frees the slot", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  // A file larger than what the connection queues and the window lets through.
  for (let i = 0; i < 8; i++) lessor.put(`big/${i}`, "v".repeat(1 << 20));
  t.after(() => lessor.close());
  const grpc = await grpcOnLoopback(t, createServices({ lessor, member }), { stallMs: 300 });
  const stalled = grpc.connect();
  const reader = grpc.connect();

  // This client takes the first bytes, then reads nothing more.
  const s = stalled.request(SNAPSHOT);
  s.end(EMPTY);
  await new Promise((ok) => s.once("data", ok));
  s.pause();

  // Another Snapshot meanwhile is refused; once the stall time has passed, it is sent.
  const snapshot = () => rawCall(reader, SNAPSHOT[":path"], EMPTY);
  const refused = await snapshot();
  assert.deepEqual([refused.status, refused.message], [14, "edge-lease: another snapshot is being sent: try again once it is done"]);
  const t0 = performance.now();
  let sent;
  for (let i = 0; i < 40; i++) {
    sent = await snapshot();
    if (sent.status === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(sent.status, 0, `${sent.status} ${sent.message}`);
  const bytes = sent.messages.reduce((n, m) => n + m.length, 0);
  assert.ok(bytes > 8 << 20, `the whole file: ${bytes} bytes`);
  assert.ok(performance.now() - t0 < 3000, "within the stall time and some");
});

// The gateway over an engine holding 16 values of 1 MiB (~22 MiB of JSON in
// a snapshot: more than the kernel's socket buffers on both sides take),
// with `stallMs`, on a free loopback port, and a raw TCP client of it.
async function gatewayWithClient(t, stallMs) {
  const lessor = new Lessor({ autoTick: false });
  for (let i = 0; i < 16; i++) lessor.put(`big/${i}`, "v".repeat(1 << 20));
  const gateway = createGateway({ services: createServices({ lessor, member }) });
  const http = createHttpServer({ gateway, hosts: allowedHosts(["127.0.0.1"]), serveFile: null, stallMs });
  const server = createServer((socket) => http.emit("connection", socket));
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  const client = netConnect(port, "127.0.0.1");
  t.after(() => {
    client.destroy();
    server.close();
    lessor.close();
  });
  return { port, url: `http://127.0.0.1:${port}`, client };
}

test("on the gateway too: a Snapshot whose client stops reading is dropped after the stall time, and the slot freed", async (t) => {
  const { port, url, client: stalled } = await gatewayWithClient(t, 300);
  // This client takes the first bytes, then reads nothing more.
  stalled.write(`POST /v3/maintenance/snapshot HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 2\r\n\r\n{}`);
  let received = 0;
  stalled.on("data", (d) => {
    received += d.length;
    stalled.pause();
  });
  const closed = new Promise((ok) => stalled.once("close", ok));

  const snapshot = async () => {
    const r = await fetch(url + "/v3/maintenance/snapshot", { method: "POST", body: "{}" });
    return { status: r.status, text: await r.text() };
  };
  // (A stream's error before its first message comes as its one chunk,
  // with the HTTP status of its code, as grpc-gateway's: Unavailable, 503.)
  const refused = await snapshot();
  assert.equal(refused.status, 503);
  assert.equal(JSON.parse(refused.text).error?.message, "edge-lease: another snapshot is being sent: try again once it is done");
  const t0 = performance.now();
  let sent;
  for (let i = 0; i < 40; i++) {
    sent = await snapshot();
    if (!sent.text.startsWith('{"error"')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(sent.status, 200);
  assert.ok(!sent.text.includes('"error"'), sent.text.slice(0, 200));
  const lines = sent.text.trim().split("\n");
  assert.ok(lines.length > 16 * 32, `the whole file: ${lines.length} messages`);
  assert.ok(performance.now() - t0 < 3000, "within the stall time and some");
  // Reading again, the stalled client finds its answer cut short and the
  // connection closed.
  stalled.removeAllListeners("data");
  stalled.on("data", (d) => (received += d.length));
  stalled.resume();
  await Promise.race([closed, new Promise((_, no) => setTimeout(() => no(new Error("the stalled connection is still open")), 3000))]);
  assert.ok(received < sent.text.length, `${received} of ${sent.text.length} bytes`);
});

test("on the gateway, a client that reads slowly but steadily is never cut off, nor is a pipelined answer waiting its turn", async (t) => {
  // (A reader paced as below sees single waits of up to ~0.4 s on loopback,
  // TCP's window opening late; the snapshot takes ~4 s.)
  const { port, client } = await gatewayWithClient(t, 2000);
  const host = `Host: 127.0.0.1:${port}\r\n`;
  const range = JSON.stringify({ key: Buffer.from("big/3").toString("base64") }); // one 1 MiB value: ~1.4 MB in one answer
  // Three requests at once: a ~22 MiB snapshot, a range answered after it,
  // and /version, after which the server closes the connection.
  client.write(
    `POST /v3/maintenance/snapshot HTTP/1.1\r\n${host}Content-Length: 2\r\n\r\n{}` +
      `POST /v3/kv/range HTTP/1.1\r\n${host}Content-Length: ${range.length}\r\n\r\n${range}` +
      `GET /version HTTP/1.1\r\n${host}Connection: close\r\n\r\n`,
  );
  // A reader that pauses 15 ms after each read: the answers take seconds,
  // the range waiting for the snapshot without a socket all that time.
  const chunks = [];
  client.on("data", (d) => {
    chunks.push(d);
    client.pause();
    setTimeout(() => client.resume(), 15);
  });
  await Promise.race([
    new Promise((ok) => client.once("close", ok)),
    new Promise((_, no) => setTimeout(() => no(new Error("the three answers did not come within 30 s")), 30_000)),
  ]);
  const text = Buffer.concat(chunks).toString("latin1");
  assert.equal(text.match(/^HTTP\/1\.1 200 OK\r\n/gm)?.length, 3, text.slice(0, 300));
  assert.match(text, /"etcdserver":"3\.4\.\d+","etcdcluster":"3\.4\.0"}$/, "the last answer, whole");
  assert.match(text, /"count":"1"}/, "the range's answer to its end (after its 1 MiB value)");
});
