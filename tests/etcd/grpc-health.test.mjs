// gRPC's health service (grpc.health.v1.Health), which etcd 3.4 registers
// for probes and load balancers: the same calls to etcd and edge-lease,
// answers compared. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth } from "./harness.mjs";
import http2 from "node:http2";
import { grpcClient, grpcFrame, rawCall } from "./grpc-client.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("grpc.health.v1.Health: Check and Watch answer as etcd 3.4's", async (t) => {
  const both = await startBoth(t);
  const logs = [];
  for (const side of [both.etcd, both.edge]) {
    const c = grpcClient(side.url, "grpc.health.v1.Health");
    t.after(() => c.close());
    const log = [];
    const check = (service) =>
      new Promise((ok) => c.Check({ service }, { deadline: Date.now() + 5000 }, (e, r) => ok(e ? { code: e.code, details: e.details } : r)));
    for (const service of ["", "etcdserverpb.KV", "grpc.health.v1.Health", "x"]) log.push(["check", service, await check(service)]);
    for (const service of ["", "nope"]) {
      const got = [];
      const s = c.Watch({ service });
      s.on("data", (d) => got.push(d));
      s.on("error", (e) => got.push({ code: e.code }));
      // One status, then nothing while it stays open.
      for (let i = 0; i < 100 && got.length === 0; i++) await sleep(20);
      await sleep(200);
      log.push(["watch", service, [...got]]);
      s.cancel();
    }
    // A service name that is not UTF-8 (field 1: 0xff 0xfe): grpc-go's
    // decoder refuses it, in its words for a unary call and for a stream.
    const session = http2.connect(side.url);
    t.after(() => session.close());
    for (const method of ["Check", "Watch"]) {
      const r = await rawCall(session, `/grpc.health.v1.Health/${method}`, grpcFrame(Buffer.from([0x0a, 2, 0xff, 0xfe])));
      log.push(["not UTF-8", method, r.status, r.message, r.messages.length]);
    }
    session.close();
    logs.push(log);
  }
  assert.deepEqual(logs[1], logs[0]);
  assert.deepEqual(logs[0][0], ["check", "", { status: "SERVING" }]);
  assert.deepEqual(logs[0].at(-3), ["watch", "nope", [{ status: "SERVICE_UNKNOWN" }]]);
  assert.match(logs[0].at(-1)[3], /contains invalid UTF-8/);
});
