// Issue 31 item 3: Watch streams whose client never reads (windows shut)
// cost the h2 module a bounded amount a connection, however many streams
// and however much history and how many live writes they are due; their
// watchers stop being sent to and catch up from history once read, as
// etcd's slow watchers do. Scaled from the review's 100-300 streams (1.7
// GB; a trap) to 2 connections of 20 streams each, every one replaying
// ~10 MiB of history from revision 1 while writes go on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";
import { h2Stats, setH2MemoryHigh } from "../../server/h2.mjs";
import { grpcOnLoopback } from "./loopback.mjs";
import { until } from "../etcd/grpc-client.mjs";
import { zeroWindowWatches, startVictim, sleep, mib, MiB } from "./h2-attacks.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const root = loadRoot();
const Req = root.lookupType("etcdserverpb.WatchRequest");
const Res = root.lookupType("etcdserverpb.WatchResponse");
const CONNECTIONS = 2;
const STREAMS = 20;
const VALUE = "v".repeat(64 * 1024);
const HISTORY = 160; // puts of 64 KiB before: ~10 MiB from revision 1
const LIVE = 40; // and while the streams wait
// What one connection's Watch streams may hold in the module (server/README.md,
// "The HTTP/2 transport"): 1 MiB queued across its calls, plus the part
// (256 KiB) that crossed it, and 1 MiB of output; their windows are shut,
// so h2's send buffers hold nothing. (It was 16 MiB and the whole response
// that crossed it: 16.6 MiB a connection here.)
const PER_CONNECTION = 3 * MiB;
// What it may keep outside the module, in memory given back once freed:
// 16 MiB of answers, plus the one that crossed the mark (a catch-up's
// response: here up to the 10 MiB of history).
const KEPT_PER_CONNECTION = 27 * MiB;

test("Watch streams that never read hold a bounded amount of the h2 module a connection; read later, each gets every revision once, in order", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  for (let i = 0; i < HISTORY; i++) lessor.put(`h/${i % 16}`, VALUE);
  const grpc = await grpcOnLoopback(t, createServices({ lessor, member }));
  const port = Number(new URL(grpc.url).port);
  const victim = await startVictim(t, grpc.url);
  await sleep(200);
  victim.lap();
  const before = h2Stats();

  const create = Req.encode({ create_request: { key: Buffer.from("h/"), range_end: Buffer.from("h0"), start_revision: 1 } }).finish();
  const clients = [];
  for (let c = 0; c < CONNECTIONS; c++) clients.push(await zeroWindowWatches(t, port, STREAMS, create, Res));
  for (let i = 0; i < LIVE; i++) {
    lessor.put(`h/${i % 16}`, VALUE);
    await sleep(10);
  }
  await sleep(500);
  const during = h2Stats();
  const grew = during.memory - before.memory;
  const held = during.live - before.live;
  t.diagnostic(`${CONNECTIONS} connections of ${STREAMS} streams that never read: the module grew ${mib(grew)}, holds ${mib(held)} more (${mib(held / CONNECTIONS)} a connection); ${mib(during.kept)} kept outside it`);
  t.diagnostic(`victim meanwhile: ${JSON.stringify(victim.lap())}`);

  // One connection reads now: each of its streams gets every revision of
  // h/ once, in order, from 2 to the last.
  const last = lessor.revision;
  const [reader] = clients;
  await reader.read();
  const revisions = (id) => reader.responses(id).flatMap((r) => (r.events ?? []).map((e) => Number(e.kv.mod_revision)));
  const caughtUp = await until(() => reader.ids.every((id) => revisions(id).at(-1) === last), 20_000);
  const want = Array.from({ length: last - 1 }, (_, i) => i + 2);
  const wrong = reader.ids.filter((id) => JSON.stringify(revisions(id)) !== JSON.stringify(want));
  t.diagnostic(`the reader's streams caught up to revision ${last}: ${caughtUp}; responses a stream: ${reader.responses(1).length}`);
  t.diagnostic(`victim while they caught up (their 200 MiB decoded in this process too): ${JSON.stringify(victim.lap())}`);

  for (const c of clients) c.destroy();
  await sleep(500);
  const after = h2Stats();
  const v = await victim.finish();
  t.diagnostic(`victim: ${v.calls} Ranges, p50 ${v.p50} ms, p99 ${v.p99} ms, max ${v.max} ms; errors ${JSON.stringify(v.errors)}`);
  t.diagnostic(`after they left: the module holds ${mib(after.live)} (${mib(before.live)} before); its memory ${mib(after.memory)}`);

  assert.equal(during.failures, before.failures, "the h2 module failed");
  assert.ok(held <= CONNECTIONS * PER_CONNECTION, `the module holds ${mib(held)} more for ${CONNECTIONS} connections (bound: ${mib(PER_CONNECTION)} each)`);
  assert.ok(grew <= CONNECTIONS * PER_CONNECTION + 8 * MiB, `the module's memory grew ${mib(grew)}`);
  assert.ok(during.kept > 0 && during.kept <= CONNECTIONS * KEPT_PER_CONNECTION, `kept outside the module: ${mib(during.kept)}`);
  assert.equal(after.kept, 0, "kept after they left");
  assert.ok(caughtUp, "the reader's streams caught up");
  assert.deepEqual(wrong, [], "streams that missed or repeated a revision");
  assert.deepEqual(v.errors, []);
  assert.deepEqual(v.watch, { open: true, error: null, event: true });
  // (The module keeps up to 1 MiB of scratch and 64 KiB of each buffer.)
  assert.ok(after.live - before.live <= 2 * MiB, `after: ${mib(after.live)}, before: ${mib(before.live)}`);
});

test("past the bound on answers kept for clients the connection keeping most is closed (GOAWAY ENHANCE_YOUR_CALM), not the others", async (t) => {
  // The bound lowered from 2 GiB to 40 MiB: 4 connections as above would
  // keep ~66 MiB.
  setH2MemoryHigh(2 ** 31, 40 * MiB);
  t.after(() => setH2MemoryHigh(2 ** 31, 2 ** 31));
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  for (let i = 0; i < HISTORY; i++) lessor.put(`h/${i % 16}`, VALUE);
  const grpc = await grpcOnLoopback(t, createServices({ lessor, member }));
  const port = Number(new URL(grpc.url).port);
  const victim = await startVictim(t, grpc.url);
  const before = h2Stats();
  const create = Req.encode({ create_request: { key: Buffer.from("h/"), range_end: Buffer.from("h0"), start_revision: 1 } }).finish();
  const clients = [];
  for (let c = 0; c < 4; c++) {
    clients.push(await zeroWindowWatches(t, port, STREAMS, create, Res));
    await sleep(300);
  }
  await until(() => clients.some((c) => c.closed), 5000);
  const during = h2Stats();
  const v = await victim.finish();
  t.diagnostic(`closed: ${clients.map((c) => (c.closed ? `GOAWAY ${c.goawayCode}` : "open")).join(", ")}; the module holds ${mib(during.live)}, ${mib(during.kept)} kept outside it`);
  t.diagnostic(`victim: ${v.calls} Ranges, p50 ${v.p50} ms, p99 ${v.p99} ms, max ${v.max} ms; errors ${JSON.stringify(v.errors)}`);

  assert.equal(during.failures, before.failures, "the h2 module failed");
  const closed = clients.filter((c) => c.closed);
  assert.ok(closed.length >= 1 && closed.length < 4, `${closed.length} of 4 closed`);
  for (const c of closed) assert.equal(c.goawayCode, 11);
  assert.ok(during.kept <= 40 * MiB, `kept: ${mib(during.kept)}`);
  assert.deepEqual(v.errors, []);
  assert.deepEqual(v.watch, { open: true, error: null, event: true });
});
