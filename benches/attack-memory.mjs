// Memory under issue 31's attacks, before, during and after: the process's
// RSS and the h2 module's linear memory (which never shrinks) and what its
// allocator holds. The server (the gRPC transport and services over the
// etcd engine) and the attackers share this process; the attackers hold
// little (they read nothing, or send small blocks). Figures, not assertions:
//   node --expose-gc benches/attack-memory.mjs [hpack|zero-window|replay ...]
import { Lessor } from "../server/engine.mjs";
import { createServices } from "../etcd/services/index.mjs";
import { loadRoot } from "../etcd/proto/load.mjs";
import { h2Stats } from "../server/h2.mjs";
import { grpcOnLoopback } from "../tests/server/loopback.mjs";
import { PREFACE, settings, bombFrames, attacker, zeroWindowWatches, sleep } from "../tests/server/h2-attacks.mjs";

const MiB = 2 ** 20;
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const root = loadRoot();
const WatchReq = root.lookupType("etcdserverpb.WatchRequest");
const WatchRes = root.lookupType("etcdserverpb.WatchResponse");
const VALUE = "v".repeat(64 * 1024);

function sample() {
  globalThis.gc?.();
  const h = h2Stats();
  return { rss: process.memoryUsage().rss, module: h.memory, live: h.live ?? 0 };
}
const mib = (n) => Math.round((n / MiB) * 10) / 10;

// Each attack: (port, lessor, scope) -> its connections; bounded in count and time.
const attacks = {
  // 8 connections, each sending 64 writes of 64 KiB of HPACK bombs (GOAWAY past their CPU share).
  async hpack(port, _lessor, scope) {
    const blocks = Math.floor((64 * 1024) / 178);
    const conns = [];
    for (let c = 0; c < 8; c++) {
      const a = attacker(scope, port);
      await a.connected;
      conns.push(a);
    }
    await Promise.all(
      conns.map(async (a) => {
        await a.send(Buffer.concat([PREFACE, settings()]));
        for (let w = 0, id = 1; w < 64 && !a.closed; w++, id += 2 * blocks) await a.send(bombFrames(blocks, id));
      }),
    );
    return conns;
  },
  // 4 connections of 100 Watch streams with shut windows while 200 puts of 64 KiB go on.
  async "zero-window"(port, lessor, scope) {
    const create = WatchReq.encode({ create_request: { key: Buffer.from("z/"), range_end: Buffer.from("z0") } }).finish();
    const conns = [];
    for (let c = 0; c < 4; c++) conns.push(await zeroWindowWatches(scope, port, 100, create, WatchRes));
    for (let i = 0; i < 200; i++) {
      lessor.put(`z/${i % 16}`, VALUE);
      if (i % 20 === 0) await sleep(5);
    }
    return conns;
  },
  // 3 connections of 100 Watch streams replaying ~20 MiB of history (put before the baseline) from revision 1, windows shut.
  async replay(port, lessor, scope) {
    const create = WatchReq.encode({ create_request: { key: Buffer.from("r/"), range_end: Buffer.from("r0"), start_revision: 1 } }).finish();
    const conns = [];
    for (let c = 0; c < 3; c++) conns.push(await zeroWindowWatches(scope, port, 100, create, WatchRes));
    return conns;
  },
};

const which = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(attacks);
for (const name of which) {
  const cleanups = [];
  const scope = { after: (f) => cleanups.push(f) };
  const lessor = new Lessor({ autoTick: false });
  const grpc = await grpcOnLoopback(scope, createServices({ lessor, member }));
  const port = Number(new URL(grpc.url).port);
  if (name === "replay") for (let i = 0; i < 320; i++) lessor.put(`r/${i % 16}`, VALUE);
  // The baseline: the module made (by a first connection, gone again) and the keyspace in place.
  const first = attacker(scope, port);
  await first.connected;
  await first.send(Buffer.concat([PREFACE, settings()]));
  first.destroy();
  await sleep(300);
  const before = sample();
  let peak = before;
  const watch = setInterval(() => {
    const s = sample();
    peak = { rss: Math.max(peak.rss, s.rss), module: Math.max(peak.module, s.module), live: Math.max(peak.live, s.live) };
  }, 100);
  const conns = await attacks[name](port, lessor, scope);
  await sleep(1000);
  const during = sample();
  clearInterval(watch);
  for (const a of conns) a.destroy();
  // Bounded: until the module holds what it did before, or 5 s.
  for (let i = 0; i < 50 && h2Stats().live > before.live + MiB; i++) await sleep(100);
  await sleep(500);
  const after = sample();
  const row = (s) => ({ rssMiB: mib(s.rss), moduleMiB: mib(s.module), liveMiB: mib(s.live) });
  console.log(JSON.stringify({ attack: name, connections: conns.length, before: row(before), peak: row({ ...peak, rss: Math.max(peak.rss, during.rss) }), during: row(during), after: row(after), rssAfterVsBefore: Math.round((after.rss / before.rss) * 100) / 100 }));
  for (const f of cleanups) f();
  lessor.close();
}
