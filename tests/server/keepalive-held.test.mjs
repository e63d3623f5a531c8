// A keepalive stream whose lease is held past its deadline (expiry held
// under CORRUPT): on the gRPC transport, that answer waits until the alarm
// is cleared, the answers after it come after it, in order, a malformed
// message after it is refused only after it, and the client's half-close
// ends the stream only once they are all sent. Every wait is bounded.
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

async function serve(t) {
  let clock = Date.now();
  const lessor = new Lessor({ now: () => clock, autoTick: false });
  t.after(() => lessor.close());
  const services = createServices({ lessor, member });
  const session = (await grpcOnLoopback(t, services)).connect();
  const alarm = (action) => services.get("etcdserverpb.Maintenance/Alarm")({ action, memberID: "1", alarm: "CORRUPT" });
  return { lessor, session, alarm, pass: (ms) => (clock += ms) };
}

// A LeaseKeepAlive stream: write(id or raw bytes), the TTLs answered so far
// (by lease id), and its end.
function keepAlive(session) {
  const s = session.request({ ":method": "POST", ":path": "/etcdserverpb.Lease/LeaseKeepAlive", "content-type": "application/grpc", te: "trailers" });
  const got = [];
  let buf = Buffer.alloc(0);
  const out = { got, ended: null };
  s.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const n = buf.readUInt32BE(1);
      const r = Res.toObject(Res.decode(buf.subarray(5, 5 + n)), { longs: String });
      got.push([r.ID, Number(r.TTL ?? 0)]);
      buf = buf.subarray(5 + n);
    }
  });
  s.on("trailers", (tr) => (out.ended = [Number(tr["grpc-status"]), decodeURIComponent(tr["grpc-message"] ?? "")]));
  s.on("error", () => {});
  out.write = (v) => s.write(typeof v === "string" ? grpcFrame(Req.encode({ ID: v }).finish()) : v);
  out.end = () => s.end();
  return out;
}

const dec = (hex) => BigInt("0x" + hex).toString();

test("keepalives behind one held past its deadline come after it, in order; a bad message after it is refused after it", async (t) => {
  const { lessor, session, alarm, pass } = await serve(t);
  const held = dec(lessor.grant(5).id);
  const live = dec(lessor.grant(600).id);
  alarm("ACTIVATE");
  pass(7000);
  const s = keepAlive(session);
  s.write(held);
  s.write(live);
  s.write("12345"); // unknown: TTL 0
  await new Promise((ok) => setTimeout(ok, 200));
  assert.deepEqual(s.got, [], "nothing before the held one");
  alarm("DEACTIVATE");
  assert.ok(await until(() => s.got.length === 3, 3000), JSON.stringify(s.got));
  assert.deepEqual(s.got, [
    [held, 0],
    [live, 600],
    ["12345", 0],
  ]);
  // Once nothing waits, answers come at once again.
  s.write(live);
  assert.ok(await until(() => s.got.length === 4, 3000));

  // Held again: a malformed message after a waiting answer ends the stream
  // only once that answer is sent.
  const again = dec(lessor.grant(5).id);
  alarm("ACTIVATE");
  pass(7000);
  const b = keepAlive(session);
  b.write(again);
  b.write(Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]));
  await new Promise((ok) => setTimeout(ok, 200));
  assert.deepEqual([b.got, b.ended], [[], null]);
  alarm("DEACTIVATE");
  assert.ok(await until(() => b.ended !== null, 3000));
  assert.deepEqual(b.got, [[again, 0]]);
  assert.equal(b.ended[0], 13, b.ended[1]); // (a message that does not decode: Internal, as grpc-go)
});

test("a half-close while an answer waits ends the stream after it", async (t) => {
  const { lessor, session, alarm, pass } = await serve(t);
  const held = dec(lessor.grant(5).id);
  alarm("ACTIVATE");
  pass(7000);
  const s = keepAlive(session);
  s.write(held);
  s.end();
  await new Promise((ok) => setTimeout(ok, 200));
  assert.deepEqual([s.got, s.ended], [[], null]);
  alarm("DEACTIVATE");
  assert.ok(await until(() => s.ended !== null, 3000));
  assert.deepEqual([s.got, s.ended], [[[held, 0]], [0, ""]]);
});

test("the hold under CORRUPT keeps its start through a restart: a lease held past its deadline is still held after it", async (t) => {
  let clock = Date.now();
  const first = new Lessor({ now: () => clock, autoTick: false });
  t.after(() => first.close());
  const services = createServices({ lessor: first, member });
  const { ID } = services.get("etcdserverpb.Lease/LeaseGrant")({ TTL: 5 }, { size: 0 });
  first.put("held", "v", { lease: BigInt(ID) });
  services.get("etcdserverpb.Maintenance/Alarm")({ action: "ACTIVATE", memberID: "1", alarm: "CORRUPT" });
  clock += 8_000; // past the deadline: held
  first.tick();
  assert.equal(first.get("held")?.value, "v");
  const stored = first.snapshot();
  // A restart (or a Durable Object's wake-up) a minute later.
  clock += 60_000;
  const second = new Lessor({ now: () => clock, autoTick: false, restore: stored });
  t.after(() => second.close());
  createServices({ lessor: second, member });
  second.tick();
  assert.equal(second.expiryHeld, true);
  assert.equal(second.get("held")?.value, "v", "the held lease kept its key");
  assert.ok(second.timeToLive(BigInt(ID)).ttl < 0, "and its negative TTL");
  assert.equal(second.expiryHeldSince, first.expiryHeldSince);
});

test("the alarms entry keeps the bare list earlier builds read while nothing is held; the hold's start only while CORRUPT holds", () => {
  const lessor = new Lessor({ autoTick: false });
  const services = createServices({ lessor, member });
  const alarm = (action, type) => services.get("etcdserverpb.Maintenance/Alarm")({ action, memberID: "1", alarm: type });
  const stored = () => JSON.parse(new TextDecoder().decode(lessor.hostEntry("alarms")));
  alarm("ACTIVATE", "NOSPACE");
  assert.deepEqual(stored(), [["1", "NOSPACE"]]);
  alarm("DEACTIVATE", "NOSPACE");
  assert.deepEqual(stored(), []);
  alarm("ACTIVATE", "CORRUPT");
  assert.deepEqual(stored(), { alarms: [["1", "CORRUPT"]], heldSince: lessor.expiryHeldSince });
  alarm("DEACTIVATE", "CORRUPT");
  assert.deepEqual(stored(), []);
  lessor.close();
});
