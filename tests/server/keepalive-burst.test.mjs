// A burst of keepalives pipelined on one LeaseKeepAlive stream whose client
// reads nothing at first (clientv3 renews every lease of a client on one
// stream): etcd answers every one by back-pressure, it stops reading the
// stream while its answers wait. So does the server: the stream's window is
// not given back while its answers wait, and nothing is reset (it was reset
// with ENHANCE_YOUR_CALM once 1 MiB of requests waited unread).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { grpcFrame, until } from "../etcd/grpc-client.mjs";
import { grpcOnLoopback } from "./loopback.mjs";

const root = loadRoot();
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const Req = root.lookupType("etcdserverpb.LeaseKeepAliveRequest");
const Res = root.lookupType("etcdserverpb.LeaseKeepAliveResponse");
// 15 bytes a request: 100k of them are 1.5 MB, past the 1 MiB that was
// read unparsed before the reset.
const COUNT = 100_000;

test("100k keepalives pipelined on one stream, read only later, are all answered, in order, and nothing is reset", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const grpc = await grpcOnLoopback(t, createServices({ lessor, member }));
  const leases = [lessor.grant(60).id, lessor.grant(90).id].map((hex) => BigInt(`0x${hex}`).toString());
  const frames = leases.map((ID) => grpcFrame(Req.encode({ ID }).finish()));
  assert.equal(frames[0].length, 15);

  const s = grpc.connect().request({ ":method": "POST", ":path": "/etcdserverpb.Lease/LeaseKeepAlive", "content-type": "application/grpc", te: "trailers" });
  const got = { n: 0, wrong: [], ended: null, reset: null, closed: false };
  let buf = Buffer.alloc(0);
  s.on("data", (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    let at = 0;
    while (buf.length - at >= 5 && buf.length - at >= 5 + buf.readUInt32BE(at + 1)) {
      const n = buf.readUInt32BE(at + 1);
      const r = Res.toObject(Res.decode(buf.subarray(at + 5, at + 5 + n)), { longs: String });
      const i = got.n++ % 2;
      if ((r.ID !== leases[i] || Number(r.TTL) !== [60, 90][i]) && got.wrong.length < 5) got.wrong.push([got.n, r.ID, r.TTL]);
      at += 5 + n;
    }
    buf = buf.subarray(at);
  });
  s.on("trailers", (tr) => (got.ended = [Number(tr["grpc-status"]), tr["grpc-message"] ?? ""]));
  s.on("close", () => {
    got.closed = true;
    if (s.rstCode !== 0) got.reset = s.rstCode;
  });
  s.on("error", () => {});

  // Everything sent, and the answers left unread: the server answers what
  // it reads until its answers wait, then holds what it reads meanwhile
  // and its window, so the client waits, held to the stream's window (1 MiB
  // of the connection's 4); it was reset instead.
  s.pause();
  s.end(Buffer.concat(Array.from({ length: COUNT }, (_, i) => frames[i % 2])));
  const session = s.session;
  const held = () => (4 << 20) - session.state.remoteWindowSize;
  const window = () => held() >= (1 << 20) - (64 << 10) && held() <= (1 << 20) + (64 << 10);
  const waited = await until(() => window() || got.reset !== null, 5000);
  assert.equal(got.reset, null, `the stream was reset (code ${got.reset})`);
  assert.ok(waited, `window held back: ${held()} bytes`);
  await new Promise((ok) => setTimeout(ok, 200));
  assert.ok(window() && got.reset === null, `still held: ${held()} bytes, reset ${got.reset}`);
  t.diagnostic(`window held back: ${held()} bytes, ${got.n} answers read`);
  // Then read, slowly at first.
  for (let i = 0; i < 10; i++) {
    s.resume();
    await new Promise((ok) => setImmediate(ok));
    s.pause();
    await new Promise((ok) => setTimeout(ok, 20));
  }
  s.resume();
  // (Closed, not just the trailers heard: answers may still wait in the
  // stream's buffer then.)
  assert.ok(await until(() => got.closed, 20_000), `${got.n} answered, nothing more`);
  assert.deepEqual(got.wrong, []);
  assert.deepEqual({ answered: got.n, ended: got.ended }, { answered: COUNT, ended: [0, ""] });
  assert.equal(s.rstCode, 0);
});
