// The client's declarations as a user sees them: tsc --strict on a file that
// imports edge-lease/client from the installed package (DOM lib; lib es2022
// with @types/node), uses every call, and marks misuse with @ts-expect-error.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { packedProject, repo } from "../pkg/packed.mjs";

const usage = `
import { connect, leaseId, LeaseError } from "edge-lease/client";
import type { Backend, BackendKv, ClientTlsOptions, BackendWatchResponse, Client, ClientErrorCode, Endpoint, Entry, LeaseId, Mutex, Session, TxnResult, WatchEvent } from "edge-lease/client";
import { Lessor, LeaseError as EngineError } from "edge-lease";
import type { ErrorCode } from "edge-lease";
import { fenced } from "edge-lease/fenced";
import type { Fence } from "edge-lease/fenced";

// In-process: the same Client over a Lessor.
const lessor = new Lessor({ now: () => Date.now(), minTtl: 2 });
const local: Client = connect(lessor);
const localLock: number = await local.withLock("job", { ttl: 10 }, async (lock) => lock.token ?? 0);
const localSession = await local.session({ ttl: 10 });
const localLease: LeaseId = localSession.lease;
lessor.renew(localLease); // the client's ids are the engine's
await local.close();
// The engine's codes are the client's, and the other way round.
const fromClient: ErrorCode = "Unavailable" as ClientErrorCode;
const fromEngine: ClientErrorCode = "NotPrimary" as ErrorCode;
try { lessor.renew(localLease); } catch (err) {
  if (err instanceof EngineError && (err.code === "Compacted" || err.code === "Aborted")) {}
}
// @ts-expect-error connect(lessor) takes no network options
connect(lessor, { timeout: 5 });
// @ts-expect-error a Lessor or a URL, not a lessor's options
connect({ minTtl: 2 });

// A cluster: several endpoints, failed over as etcd's clientv3 does.
const cluster: Client = connect(["http://127.0.0.1:2379", new URL("http://127.0.0.2:2379")], { timeout: 1000 });
connect("http://127.0.0.1:2379,http://127.0.0.2:2379,http://127.0.0.3:2379");
const eps: readonly Endpoint[] = cluster.endpoints;
for (const ep of cluster.endpoints) {
  const u: string = ep.url;
  const h: boolean = ep.healthy;
  const le: LeaseError | null = ep.lastError;
  if (ep.lastError?.code === "Unavailable") { const from: string | undefined = ep.lastError.endpoint; }
}
// @ts-expect-error endpoints are read-only
cluster.endpoints = [];
// @ts-expect-error endpoints are URLs
connect([5]);
// A backend of one's own.
const kv0: BackendKv = { key: new Uint8Array(1), value: new Uint8Array(0), createRevision: 1, modRevision: 1, version: 1, lease: null };
const mine: Backend = {
  async range(req, call) {
    const k: Uint8Array = req.key;
    const s: AbortSignal | undefined = call?.signal;
    return { kvs: [kv0], more: false, count: 1, revision: 1 };
  },
  async put(req) { const l: bigint | null = req.lease; return { revision: 2, prev: null }; },
  async deleteRange(req, call) { const again: boolean | undefined = call?.idempotent; return { deleted: 0, revision: 2, prev: [] }; },
  async txn(req) {
    for (const c of req.compare) { const v: number | bigint | Uint8Array = c.value; }
    return { succeeded: true, revision: 2, responses: [{ range: { kvs: [], more: false, count: 0, revision: 2 } }] };
  },
  async compact(revision, call) { const p: boolean | undefined = call?.physical; return { revision }; },
  async grant(ttl, id) { return { id: "0000000000000001", ttl }; },
  async keepAlive(id, call) { const ms: number | undefined = call?.timeout; return 5; },
  async revoke() { return { revision: 3 }; },
  async timeToLive() { return { ttl: 4, grantedTtl: 5, keys: [] }; },
  async leases() { return ["0000000000000001"]; },
  async *watch(req) {
    const from: number = req.startRevision;
    yield { revision: 1, created: true, events: [] };
    yield { revision: 2, events: [{ type: "put", kv: kv0, prev: null }] };
  },
  close() {},
};
const custom: Client = connect(mine);
const noEndpoints: readonly Endpoint[] = custom.endpoints;
// @ts-expect-error a backend has every method
connect({ range: mine.range });
// @ts-expect-error a watch event is a put or a delete
const badEvent: BackendWatchResponse = { revision: 1, events: [{ type: "update", kv: kv0, prev: null }] };

const etcd: Client = connect("http://127.0.0.1:2379", { timeout: 5000, headers: { authorization: "t" } });
connect(new URL("http://127.0.0.1:2379"), { fetch: (input, init) => fetch(input, init) });
connect("http://127.0.0.1:2379", { webSocket: false });
// TLS in Node: PEM contents; not with a fetch of one's own.
const tls: ClientTlsOptions = { ca: "-----BEGIN CERTIFICATE-----", cert: new Uint8Array(0), key: ["k"], servername: "etcd", rejectUnauthorized: true };
connect("https://127.0.0.1:2379", { tls, user: "root", password: "pw", timeout: 5000 });
// @ts-expect-error tls or fetch, not both
connect("https://127.0.0.1:2379", { tls, fetch: (input: string, init: RequestInit) => fetch(input, init) });
// @ts-expect-error PEM contents are strings or bytes
connect("https://127.0.0.1:2379", { tls: { ca: 5 } });
// @ts-expect-error etcdctl's flag names are not node:tls's
connect("https://127.0.0.1:2379", { tls: { cacert: "x" } });
if (typeof WebSocket !== "undefined") connect("http://127.0.0.1:2379", { webSocket: WebSocket });
const signal = AbortSignal.timeout(1000);

const e = await etcd.get("k", { signal, revision: 5 });
if (e) {
  const k: string = e.key;
  const v: string = e.value;
  const l: LeaseId | null = e.lease;
  const n: number = e.createRevision + e.modRevision + e.version;
}
const b = await etcd.get("k", { bytes: true });
if (b) { const v: Uint8Array = b.value; const k: Uint8Array = b.key; }
const r = await etcd.range({ key: "a/", prefix: true, limit: 2, sortOrder: "descend", sortTarget: "create", keysOnly: true, maxCreateRevision: 9 });
const rs: string[] = r.kvs.map((x) => x.value);
const more: boolean = r.more;
const g = await etcd.grant(10);
const id: LeaseId = g.id;
const p = await etcd.put("k", new Uint8Array(1), { lease: id, prevKv: true });
await etcd.put("k", "v", { lease: 5n, ifAbsent: true });
await etcd.put("k", "v", { lease: null });
const created: boolean | undefined = p.created;
const prev: Entry | undefined = p.prev;
const d = await etcd.delete("k", { prevKv: true });
const deleted: boolean = d.deleted;
const dr = await etcd.deleteRange({ key: "a/", prefix: true, prevKv: true, bytes: true });
const drv: Uint8Array[] = dr.prev.map((x) => x.value);
const t: TxnResult = await etcd.txn({
  compare: [
    { key: "k", target: "create", result: "=", value: 0 },
    { key: "k", target: "value", value: "v" },
    { key: "k", target: "lease", result: "!=", value: id },
    { key: "a/", prefix: true, target: "version", result: ">", value: 1 },
  ],
  success: [{ put: { key: "k", value: "v", lease: id } }, { range: { key: "k" } }, { deleteRange: { key: "x", prevKv: true } }, { txn: { success: [] } }],
  failure: [],
});
for (const x of t.responses) {
  if ("range" in x) { const c: number = x.range.count; }
  else if ("put" in x) { const rev: number = x.put.revision; }
  else if ("deleteRange" in x) { const n: number = x.deleteRange.deleted; }
  else { const ok: boolean = x.txn.succeeded; }
}
await etcd.compact(5, { physical: true });
const ttl: number = await etcd.keepAliveOnce(id);
await etcd.keepAliveOnce(leaseId("694da20804652e06"));
const rv: { id: LeaseId; revision: number } = await etcd.revoke(1n);
const tl = await etcd.timeToLive(id, { keys: true });
const keys: string[] = tl.keys;
const ids: LeaseId[] = await etcd.leases();

const w = etcd.watch("a/", { prefix: true, prevKv: true, startRevision: 3, signal, noDelete: true });
const at: number = await w.ready;
for await (const ev of w) {
  const x: WatchEvent = ev;
  const type: "put" | "delete" = ev.type;
  const pv: string | undefined = ev.prev?.value;
  break;
}
const wb = etcd.watch("a", { bytes: true });
for await (const ev of wb) { const v: Uint8Array = ev.value; }
await wb.return();

const s: Session = await etcd.session({ ttl: 10, signal });
await etcd.session({ lease: id });
const deadline: number = s.deadline;
const sig: AbortSignal = s.signal;
s.addEventListener("lost", (ev) => { const code: ClientErrorCode = ev.reason.code; const dl: number | undefined = ev.reason.deadline; });
const m: Mutex = s.mutex("job");
await m.lock({ signal });
const ok: boolean = await m.tryLock();
const token: number | undefined = m.token;
const key: string | undefined = m.key;
const held: boolean = m.held;
m.assertHeld();
// @ts-expect-error held is read-only
m.held = true;
await m.unlock();
const el = s.election("leader");
await el.campaign("me", { signal });
const leading: boolean = el.leading;
el.assertLeading();
await el.proclaim(new Uint8Array(1));
const leader = await el.leader();
if (leader) { const v: string = leader.value; }
for await (const l of el.observe({ signal, bytes: true })) { const v: Uint8Array = l.value; }
await el.resign();
await s.close();
const n: number = await etcd.withLock("job", { ttl: 10, signal }, async (lock) => lock.token);
const lockKey: string = await etcd.withLock("job", (lock) => lock.key);
// Guarded writes: only while the lock (or leadership) holds.
await etcd.withLock("job", async (lock) => {
  const gp = await etcd.put("out", "v", { ifHeld: lock, prevKv: true });
  await etcd.put("out", "v", { ifHeld: lock, ifAbsent: true });
  await etcd.delete("out", { ifHeld: lock });
  await etcd.deleteRange({ key: "out/", prefix: true, ifHeld: lock });
  await etcd.txn({ ifHeld: lock, compare: [{ key: "out", target: "version", value: 0 }], success: [{ put: { key: "out", value: "v" } }] });
  await etcd.txn({ compare: [lock.isOwner()], success: [{ put: { key: "out", value: "v" } }] });
});
await etcd.put("out", "v", { ifHeld: el });
await etcd.txn({ compare: [el.isLeader()], success: [] });
try { await etcd.put("out", "v", { ifHeld: m }); } catch (err) {
  if (err instanceof LeaseError && (err.code === "NotHeld" || err.code === "NotLeader")) {
    const holder: number | undefined = err.holderToken;
    const holderKey: string | undefined = err.holderKey;
  }
}
// A fenced resource.
const fence: Fence = fenced(new Map(), "res");
const wrote: string = await fence.write(7, async (tok: number) => "done " + tok);
const top: number = await fence.highest();
fenced(lessor, "fences/res");
try { await fence.write(3, () => 0); } catch (err) { if (err instanceof LeaseError && err.code === "StaleToken") {} }
try { m.assertHeld(); } catch (err) { if (err instanceof LeaseError && err.code === "NotHeld") {} }
const s2: string = await etcd.withLock("job", (lock) => "sync result");
await etcd.close();

try { await etcd.get("k"); } catch (err) {
  if (err instanceof LeaseError) {
    const code: ClientErrorCode = err.code;
    if (err.code === "Compacted") { const at: number | undefined = err.compactRevision; }
    if (err.code === "Unavailable" || err.code === "Aborted" || err.code === "LeaseNotFound") {}
  }
}

// Misuse the declarations must reject.
// @ts-expect-error a plain string is not a LeaseId
await etcd.keepAliveOnce("694da20804652e06");
// @ts-expect-error values are strings or bytes
await etcd.put("k", 5);
// @ts-expect-error get may return undefined
(await etcd.get("k")).value;
// @ts-expect-error strings by default
const notBytes: Uint8Array = (await etcd.range({ key: "k" })).kvs[0].value;
// @ts-expect-error unknown sort target
await etcd.range({ key: "k", sortTarget: "size" });
// @ts-expect-error a version compare takes a number
await etcd.txn({ compare: [{ key: "k", target: "version", value: "1" }] });
// @ts-expect-error one op kind per op
await etcd.txn({ success: [{ get: { key: "k" } }] });
// @ts-expect-error the code is a known string
const badCode: ClientErrorCode = "Nope";
// @ts-expect-error watch events have no ttl
for await (const ev of etcd.watch("k")) ev.ttl;
// @ts-expect-error connect needs a URL
connect(5);
// @ts-expect-error ifHeld takes a Mutex or an Election
await etcd.put("k", "v", { ifHeld: "job" });
// @ts-expect-error a fence lives in a Map, a Lessor or a Durable Object's storage
fenced("res", "x");
// @ts-expect-error outside withLock, a lock's token may be undefined
const maybe: number = m.token;
// @ts-expect-error withLock's fn is required
await etcd.withLock("job", { ttl: 5 });
`;

const compilerOptions = {
  strict: true,
  noEmit: true,
  target: "es2022",
  module: "nodenext",
  moduleResolution: "nodenext",
  skipLibCheck: false,
  noUnusedLocals: false,
};

const run = promisify(execFile);
let dir;
before(() => {
  dir = mkdtempSync(join(packedProject(), "client-types-"));
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

async function check(name, extra, file = usage) {
  const d = join(dir, name);
  mkdirSync(d);
  writeFileSync(join(d, "usage.mts"), file);
  writeFileSync(join(d, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...compilerOptions, ...extra }, files: ["usage.mts"] }));
  const r = await run(join(repo, "node_modules/.bin/tsc"), ["-p", d], { timeout: 50_000 }).catch((e) => e);
  assert.equal(r.code ?? 0, 0, `tsc (${name}) failed:\n${r.stdout}${r.stderr}`);
}

test("client types: tsc --strict with the DOM lib", { timeout: 60_000 }, () => check("dom", { lib: ["es2022", "dom"], types: [] }));

test("client types: tsc --strict with lib es2022 and @types/node", { timeout: 60_000 }, () =>
  check("node", { lib: ["es2022"], types: ["node"], typeRoots: [join(repo, "node_modules/@types")] }));

test("client types: await using where the lib has Symbol.asyncDispose", { timeout: 60_000 }, () =>
  check(
    "disposable",
    { lib: ["es2022", "esnext.disposable", "dom"], types: [] },
    `import { connect } from "edge-lease/client";
const etcd = connect("http://127.0.0.1:2379");
{
  await using s = await etcd.session({ ttl: 5 });
  await using w = etcd.watch("k");
  await using c = connect("http://127.0.0.1:2379");
}
`,
  ));
