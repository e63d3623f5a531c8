#!/usr/bin/env -S GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768:${GLIBC_TUNABLES} node --max-semi-space-size=4
// edge-lease as a single-member etcd 3.4: gRPC and the JSON gateway on each
// client URL (one port for both, as etcd, over TLS on https:// ones), the
// demo page at /, state in --data-dir through the file store. Takes etcd's
// flags (server/flags.mjs).
//
// Launched as a program (npx edge-lease-etcd, npm start), the process gives
// back what a burst took (docs/server.md, "Memory"): glibc's malloc gives
// buffers of 32 KiB and more their own mappings (the user's GLIBC_TUNABLES
// come after, and win), where its heap kept what they freed while a small
// live chunk sat above; and V8's young generation stays at 4 MiB a
// semi-space (of 16), which it grew to under a burst and kept for as long
// as any client kept calling.
import { networkInterfaces } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Lessor } from "./engine.mjs";
import { FileStore } from "edge-lease/stores/file";
import { parseFlags, FlagError } from "./flags.mjs";
import { createServices, memberIds } from "../etcd/services/index.mjs";
import { isEngineFailure } from "../etcd/services/common.mjs";
import { GRPC_OVERHEAD_BYTES } from "../etcd/limits.mjs";
import { createCallCounters, createHistogram, createMetrics, createServiceStats } from "../etcd/services/metrics.mjs";
import { services as schema } from "../etcd/proto/schema.mjs";
import { hostMetrics } from "./host-metrics.mjs";
import { createGateway, metricsOnly } from "../etcd/gateway.mjs";
import { createGrpcServer, activeCalls } from "./grpc.mjs";
import { createHttpServer, busy as httpBusy } from "./http.mjs";
import { createStatic } from "./static.mjs";
import { connectionPool, sniffingServer, limitsFrom } from "./listen.mjs";
import { clientTls, TlsError } from "./tls.mjs";
import { allowedHosts } from "./guard.mjs";
import { periodicCompactor } from "./compactor.mjs";
import { compact } from "../etcd/services/kv.mjs";
import { storeHashKv, storeSnapshot } from "./snapshot-thread.mjs";

// The most the engine holds (wasm's 4 GiB must fit the data and a snapshot
// of it): etcd's default quota (2 GiB) and larger ones are clamped to this.
const MAX_QUOTA_BYTES = 1024 * 1024 * 1024;

const root = fileURLToPath(new URL("..", import.meta.url));

let flags;
try {
  flags = await parseFlags(process.argv.slice(2), process.env, (text) => console.error(`edge-lease: ${text}`));
} catch (e) {
  if (!(e instanceof FlagError)) throw e;
  console.error(`edge-lease: ${e.message}`);
  process.exit(2);
}

const ids = await memberIds(flags.peerURLs, flags.token);
const member = {
  ...ids,
  name: flags.name,
  peerURLs: flags.peerURLs,
  clientURLs: flags.clientURLs,
  // No raft: the term of a member that elected itself once, as etcd reports it.
  raftTerm: 2,
};

// "localhost" listens on loopback's IPv4 address, as etcd's default does.
const listenHost = (url) => (url.hostname === "localhost" ? "127.0.0.1" : url.hostname.replace(/^\[|\]$/g, ""));

// Filled in once every port is ours (below).
let lessor = null;
let store = null;
let services = null;
const grpcServer = { current: null };

const gatewayProxy = (request) => gateway(request);
let gateway = null;
// The Host names the HTTP side answers to: loopback's, the listen URLs',
// the advertised client URLs' (what clients are told to use), and, on a
// wildcard listen address, every address of this machine's interfaces.
function hostNames(listenURLs) {
  const names = [...listenURLs, ...flags.clientURLs.map((u) => new URL(u))].map((u) => u.hostname);
  if (listenURLs.some((u) => /^(0\.0\.0\.0|\[::\])$/.test(u.hostname))) {
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.push(a.address);
  }
  return allowedHosts(names);
}
const hosts = hostNames(flags.listen);
let limits;
try {
  limits = limitsFrom(process.env);
} catch (e) {
  console.error(`edge-lease: ${e.message}`);
  process.exit(2);
}
const http = createHttpServer({ gateway: gatewayProxy, hosts, serveFile: createStatic(root), refusesCertificateNames: () => flags.tls.clientCertAuth && services.authEnabled(), ...limits });

// TLS for the https:// listeners (tls.mjs): refused as etcd refuses it
// (status 1), before any port is taken.
const dataDir = resolve(flags.dataDir);
let tls;
try {
  tls = clientTls(flags.tls, {
    listen: flags.listen,
    metrics: flags.listenMetrics,
    dataDir,
    handshakeMs: limits.headersTimeoutMs,
    log: (text) => console.error(`edge-lease: ${text}`),
  });
} catch (e) {
  if (!(e instanceof TlsError)) throw e;
  console.error(`edge-lease: ${e.message}`);
  process.exit(1);
}

// One connection cap for every listener (listen.mjs says what happens past it).
const pool = connectionPool({
  maxConnections: limits.maxConnections,
  burst: limits.burst,
  busy: (c) => (c.kind === "http1" ? httpBusy(c.stream) : activeCalls(c.stream) > 0),
});
// A listener on each of `urls` whose sniffed connections go to `http1` and
// `http2` (over TLS offering `alpn` on https:// ones); a port it cannot
// have ends the server (`what` names the flag).
async function listenAll(urls, http1, http2, what, alpn) {
  const out = [];
  for (const url of urls) {
    const secure = url.protocol === "https:";
    const server = sniffingServer({ http1, http2, pool, sniffTimeoutMs: limits.headersTimeoutMs, tls: secure ? tls.acceptor(alpn) : null });
    server.scheme = secure ? "https" : "http";
    await new Promise((ok, fail) => {
      server.once("error", fail);
      server.listen(Number(url.port || (secure ? 443 : 80)), listenHost(url), ok);
    }).catch((e) => {
      console.error(`edge-lease: cannot listen on ${url.href}${what}: ${e.message}`);
      process.exit(1);
    });
    out.push(server);
  }
  return out;
}
const servers = await listenAll(
  flags.listen,
  (socket) => http.emit("connection", socket),
  (socket) => (grpcServer.current ? grpcServer.current.serve(socket) : socket.destroy()),
  "",
  // HTTP/1.1 first: a client that offers both (curl, browsers, undici) is
  // a gateway client, and gets the HTTP/1.1 side; gRPC's clients offer
  // only h2. (etcd's Go server takes h2 from either, and serves its
  // gateway over both.)
  ["http/1.1", "h2"],
);
// etcd's --listen-metrics-urls: /metrics and /health only, over HTTP/1.1.
const metricsHttp = createHttpServer({ gateway: metricsOnly(gatewayProxy), hosts: hostNames(flags.listenMetrics), serveFile: null, ...limits });
const metricsServers = await listenAll(flags.listenMetrics, (socket) => metricsHttp.emit("connection", socket), (socket) => socket.destroy(), " (--listen-metrics-urls)", ["http/1.1"]);

// The store is opened only once the ports are ours, so a second server that
// finds a port taken fails before touching the first one's data directory
// (a FileStore is for one process at a time).
const syncs = createHistogram();
// etcd's only limit on keys and values is its request size
// (--max-request-bytes, which the services check); the engine's own limits
// are never below the default's 1.5 MiB, so reads of long keys answer as
// they do at the default.
const itemBytes = Math.max(1536 * 1024, flags.maxRequestBytes);
const quotaBytes = flags.quotaBytes > 0 ? Math.min(flags.quotaBytes, MAX_QUOTA_BYTES) : MAX_QUOTA_BYTES;
const engine = {
  minTtl: flags.minTtl,
  // The engine needs each limit within the quota.
  maxKeyBytes: Math.min(itemBytes, quotaBytes),
  maxValueBytes: Math.min(itemBytes, quotaBytes),
  quotaBytes,
  maxTxnOps: flags.maxTxnOps,
  // etcd puts no bound on the keys of one lease (its revoke deletes them
  // all in one transaction, as the engine's expiry does).
  maxKeysPerLease: 2 ** 31,
  // etcd keeps every revision until compacted; revision-mode
  // auto-compaction keeps the last N.
  history: flags.autoCompaction?.revisions ?? Infinity,
};
try {
  // Group commit: concurrent writes share an fsync; each answer waits for
  // the one that covers it (services/index.mjs), as etcd's do for its WAL.
  store = FileStore.open(dataDir, { groupCommit: true, onSync: (ms) => syncs.observe(ms / 1000) });
  lessor = new Lessor({ storage: store, restore: store.entries(), ...engine });
} catch (e) {
  console.error(`edge-lease: cannot open the store in ${dataDir}: ${e.message}`);
  process.exit(1);
}
// An engine that failed (a wasm trap) cannot serve again: exit, so that a
// supervisor restarts the server from its store, which has every
// acknowledged write, rather than answer errors forever.
function engineFailed(e) {
  console.error(`edge-lease: the engine failed (${e?.message ?? e}); exiting so that a restart reopens it from the store`);
  process.exit(70);
}
lessor.addEventListener("error", (e) => (isEngineFailure(e.error) ? engineFailed(e.error) : console.error(`edge-lease: expiry failed: ${e.error?.message}`)));
// One that surfaces outside any call (a watch stream's catch-up or progress
// timer, say) ends the server the same way; any other uncaught error as
// Node would (its stack, status 1).
process.on("uncaughtException", (e) => {
  if (isEngineFailure(e)) engineFailed(e);
  console.error(e);
  process.exit(1);
});
const stats = createServiceStats();
services = createServices({ lessor, store, member, snapshot: storeSnapshot(store, engine), hashKv: storeHashKv(store, engine), maxTxnOps: flags.maxTxnOps, maxRequestBytes: flags.maxRequestBytes, progressIntervalMs: flags.progressIntervalMs, stats, onFatal: engineFailed, auth: flags.auth });
const stopCompactor = flags.autoCompaction?.periodMs ? periodicCompactor(lessor, flags.autoCompaction.periodMs, { compact: (rev) => compact(lessor, stats, rev) }) : () => {};
// Compacts the journal once it has outgrown the snapshot; cheap otherwise.
// (Alarm and the auth changes too: each rewrites a host entry.)
const AUTH_CHANGES = ["AuthEnable", "AuthDisable", "UserAdd", "UserDelete", "UserChangePassword", "UserGrantRole", "UserRevokeRole", "RoleAdd", "RoleDelete", "RoleGrantPermission", "RoleRevokePermission"];
for (const name of ["etcdserverpb.KV/Put", "etcdserverpb.KV/DeleteRange", "etcdserverpb.KV/Txn", "etcdserverpb.KV/Compact", "etcdserverpb.Lease/LeaseRevoke", "etcdserverpb.Maintenance/Alarm", ...AUTH_CHANGES.map((m) => `etcdserverpb.Auth/${m}`)]) {
  const handler = services.get(name);
  services.set(name, (req, call) => {
    const res = handler(req, call);
    // In the background: the snapshot is written while requests go on.
    store.compactFrom(lessor).catch((e) => (isEngineFailure(e) ? engineFailed(e) : console.error(`edge-lease: store compaction failed: ${e.message}`)));
    return res;
  });
}
const calls = createCallCounters(schema);
const health = { success: 0, failures: 0 };
// etcd's gRPC receive limit, which its gateway meets too.
const maxMessageBytes = flags.maxRequestBytes + GRPC_OVERHEAD_BYTES;
gateway = createGateway({ services, maxMessageBytes, counters: calls, health, metrics: createMetrics({ lessor, store, member, quotaBytes, host: hostMetrics, calls, syncs, stats, health }) });
grpcServer.current = createGrpcServer(services, { maxConcurrentStreams: flags.maxConcurrentStreams, maxMessageBytes, counters: calls, certAuth: flags.tls.clientCertAuth });

const origin = (s) => {
  const a = s.address();
  return `${s.scheme}://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`;
};
for (const s of servers) console.log(`edge-lease: etcd v3 API (gRPC and JSON) on ${origin(s)}, demo page at ${origin(s)}/`);
for (const s of metricsServers) console.log(`edge-lease: /metrics and /health on ${origin(s)}`);
console.log(
  `edge-lease: member ${BigInt(member.id).toString(16)} (${member.name}) of cluster ${BigInt(member.clusterId).toString(16)}, data in ${dataDir}`,
);

// Every acknowledged write is already fsync'd: closing only releases the
// timer and the journal.
async function shutdown(signal) {
  for (const s of [...servers, ...metricsServers]) s.close();
  grpcServer.current?.close();
  stopCompactor();
  lessor?.close();
  // Waits for a compaction in progress to stop and the lock to go.
  await store?.close();
  console.log(`edge-lease: stopped (${signal})`);
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
