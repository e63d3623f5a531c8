// How long one big write holds the server's event loop (issue 31 item 6):
// a lease of N keys revoked over gRPC, and a DeleteRange of N keys (of no
// lease, and of that one lease: each leaves its lease's key list), with W
// Watch streams on the keys, through the real transport and services over
// a file store with group commit (as server/main.mjs). Prints one JSON line
// per case: the engine call (core, store write and watch delivery), the
// answer's time, and the longest event-loop turn meanwhile (what any other
// client waits at most). Figures, not assertions:
//   node benches/big-revoke.mjs [N=100000] [W=1]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor } from "../server/engine.mjs";
import { FileStore } from "edge-lease/stores/file";
import { createServices } from "../etcd/services/index.mjs";
import { loadRoot } from "../etcd/proto/load.mjs";
import { grpcFrame, rawCall } from "../tests/etcd/grpc-client.mjs";
import { grpcOnLoopback } from "../tests/server/loopback.mjs";

const N = Number(process.argv[2] ?? 100_000);
const W = Number(process.argv[3] ?? 1);
const root = loadRoot();
const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };
const frame = (type, m) => grpcFrame(root.lookupType(type).encode(m).finish());
const key = (i) => `k/${String(i).padStart(7, "0")}`;
const turn = () => new Promise((ok) => setTimeout(ok, 5));

async function run(kind) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-big-"));
  const store = FileStore.open(dir, { groupCommit: true });
  const lessor = new Lessor({ storage: store, restore: store.entries(), autoTick: false, maxKeysPerLease: 2 ** 31, history: Infinity });
  const cleanup = [];
  const grpc = await grpcOnLoopback({ after: (f) => cleanup.push(f) }, createServices({ lessor, store, member }));
  const g = lessor.grant(3600);
  // Keys on the lease (revoke, deleteLeased) or on none (deleteRange).
  for (let i = 0; i < N; i++) lessor.put(key(i), `value ${i}`, kind === "deleteRange" ? undefined : { lease: g.id });
  await lessor.flush();
  // W watch streams on the keys, each on its own connection; bytes counted.
  let got = 0;
  for (let i = 0; i < W; i++) {
    const s = grpc.connect().request({ ":method": "POST", ":path": "/etcdserverpb.Watch/Watch", "content-type": "application/grpc", te: "trailers" });
    const at = got;
    s.on("data", (d) => (got += d.length));
    s.write(frame("etcdserverpb.WatchRequest", { create_request: { key: Buffer.from("k/"), range_end: Buffer.from("k0") } }));
    for (let j = 0; j < 400 && got === at; j++) await turn();
  }
  // The engine call, timed inside.
  let engineMs = 0;
  const call = kind === "revoke" ? "revoke" : "deleteRange";
  const orig = lessor[call].bind(lessor);
  lessor[call] = (...a) => {
    const t0 = performance.now();
    try {
      return orig(...a);
    } finally {
      engineMs = performance.now() - t0;
    }
  };
  let worst = 0;
  let last = performance.now();
  let on = true;
  const tick = () => {
    const n = performance.now();
    worst = Math.max(worst, n - last);
    last = n;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const before = got;
  const t0 = performance.now();
  const r =
    kind === "revoke"
      ? await rawCall(grpc.connect(), "/etcdserverpb.Lease/LeaseRevoke", frame("etcdserverpb.LeaseRevokeRequest", { ID: BigInt(`0x${g.id}`).toString() }))
      : await rawCall(grpc.connect(), "/etcdserverpb.KV/DeleteRange", frame("etcdserverpb.DeleteRangeRequest", { key: Buffer.from("k/"), range_end: Buffer.from("k0") }));
  const answerMs = performance.now() - t0;
  // Every watcher has its events (about 20 bytes each at least), bounded at 60 s.
  for (let j = 0; j < 12_000 && W > 0 && got - before < N * 20 * W; j++) await turn();
  const watchedMs = performance.now() - t0;
  on = false;
  const out = { case: kind, keys: N, watchers: W, status: r.status, engineMs: Math.round(engineMs), answerMs: Math.round(answerMs), watchersDoneMs: W ? Math.round(watchedMs) : null, longestTurnMs: Math.round(worst) };
  for (const f of cleanup) f();
  lessor.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

for (const kind of ["revoke", "deleteRange", "deleteLeased"]) console.log(JSON.stringify(await run(kind)));
