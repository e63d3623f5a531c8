// A server stream whose client stops reading is ended after the transport's
// stall time (Unavailable), so what its handler holds goes: a Snapshot's
// file and its one-at-a-time slot. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { connect } from "node:http2";
import { Lessor } from "../../js/node.mjs";
import { createServices } from "../../server/services/index.mjs";
import { createGrpcServer } from "../../server/grpc.mjs";
import { rawCall } from "../etcd/grpc-client.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const SNAPSHOT = { ":method": "POST", ":path": "/etcdserverpb.Maintenance/Snapshot", "content-type": "application/grpc", te: "trailers" };
const EMPTY = Buffer.alloc(5); // a SnapshotRequest: no fields

test("a Snapshot the client stops reading ends after the stall time and frees the slot", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  // A file larger than what the connection queues and the window lets through.
  for (let i = 0; i < 8; i++) lessor.put(`big/${i}`, "v".repeat(1 << 20));
  const grpc = createGrpcServer(createServices({ lessor, member }), { stallMs: 300 });
  const server = createServer((socket) => grpc.serve(socket));
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${server.address().port}`;
  const stalled = connect(url);
  const reader = connect(url);
  t.after(() => {
    stalled.destroy();
    reader.destroy();
    grpc.close();
    server.close();
    lessor.close();
  });

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
