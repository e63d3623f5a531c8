// The TypeScript declarations as a user sees them: a strict check of a file
// that imports from the installed package, calls every method with every
// option in js/index.d.ts, and marks misuse with @ts-expect-error (which
// itself fails the check if the misuse ever type-checks). Checked three ways:
// tsc with the DOM lib, tsc with @types/node and no DOM (a usual Node
// project), and deno check.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { packedProject, repo } from "./packed.mjs";

const usage = `
import init, { Lessor, LeaseError, LeaseEvent, leaseId } from "edge-lease";
import { leaseBig, leaseGoHex, leaseHex, leaseId as leaseIdOf, leaseInt64 } from "edge-lease/lease-id";
import { decodeBase64, encodeBase64 } from "edge-lease/base64";
import { lessorOver } from "edge-lease/engine";
import type {
  Batch, DeleteResult, Entry, ErrorCode, Expired, Granted, LeaseId, LessorEventMap, PutResult, TimeToLive, Value,
} from "edge-lease";

await init();
await init(new URL("https://example.invalid/edge_lease_bg.wasm"));

const batches: Batch[] = [];
const lessor = new Lessor({
  now: () => Date.now(),
  minTtl: 5,
  revokeRate: 100,
  maxKeyBytes: 1024,
  maxValueBytes: 65536,
  maxKeysPerLease: 10,
  autoTick: false,
  storage: { write: async (batch: Batch) => { batches.push(batch); } },
  restore: [["k", new Uint8Array([1])], ["t", "text"]],
});
new Lessor();
new Lessor({ storage: { write(batch) { batch.put.forEach(([k, v]: [string, Uint8Array]) => k + v.length); batch.delete.at(0); } } });

const g: Granted = lessor.grant(10);
const fromEtcdctl: LeaseId = leaseId("694d77aa9e38260f");
lessor.grant(10, { id: fromEtcdctl });
lessor.grant(10, { id: -1n });
lessor.grant(10, { id: null });
const ttl: number = lessor.renew(g.id) + lessor.renew(5n) + lessor.renew(leaseId(7n));
const revoked: Expired = lessor.revoke(g.id);
const keys: string[] = revoked.keys;
const t: TimeToLive = lessor.timeToLive(g.id, { keys: true });
lessor.timeToLive(1n);
const ids: LeaseId[] = lessor.leases();
const asText: string = ids[0];
lessor.put("b", new Uint8Array(2), { lease: 7n });
lessor.put("c", "v", { lease: null });
const e = lessor.get("a");
if (e) {
  const v: Value = e.value;
  const lease: LeaseId | null = e.lease;
  const n: number = e.createRevision + e.modRevision + e.version;
}
const r: Entry[] = lessor.range("a").concat(lessor.range());
const d: DeleteResult = lessor.delete("a", { prevKv: true });
lessor.delete("b");
const expired: Expired[] = lessor.tick();
const next: number | null = lessor.nextDeadline();
lessor.promote(); lessor.promote(1000);
lessor.demote();
lessor.checkpoint(g.id, 500); lessor.checkpoint(3n, 500);
const rev: number = lessor.revision;
const primary: boolean = lessor.isPrimary;
const snap: [string, Uint8Array][] = lessor.snapshot();
const flushed: Promise<void> = lessor.flush();
const mem: number = lessor.memoryBytes();

// PutResult is discriminated on created; a lock attempt that lost has the holder.
const lock = lessor.put("/locks/job", "server-3", { lease: g.id, ifAbsent: true });
if (lock.created) {
  const none: undefined = lock.prev;
} else {
  const holder: Value = lock.prev.value;
}
const p: PutResult = lessor.put("a", "v", { lease: g.id, prevKv: true });
const prev: Entry | undefined = p.prev;
const plain = lessor.put("a", "v");
if (!plain.created) {
  const maybe: Entry | undefined = plain.prev;
}
// etcd's Put, and the counts etcd's metrics keep.
const etcdPut: { revision: number } = lessor.put({ key: "a", value: "v", prevKv: true, lease: g.id });
lessor.put({ key: "a", ignoreValue: true, ignoreLease: true });
const counted: number = lessor.counts.ranges + lessor.counts.puts + lessor.counts.expired;

// Each event type carries its own fields.
lessor.addEventListener("grant", (ev) => {
  const x: [LeaseId, number, "grant"] = [ev.lease, ev.ttl, ev.type];
});
lessor.addEventListener("renew", (ev) => { const x: [LeaseId, number] = [ev.lease, ev.ttl]; });
lessor.addEventListener("expire", (ev) => {
  const le: LeaseEvent = ev;
  const x: [LeaseId, string[], number] = [ev.lease, ev.keys, ev.revision];
});
lessor.addEventListener("revoke", { handleEvent(ev) { const x: [LeaseId, string[]] = [ev.lease, ev.keys]; } });
lessor.addEventListener("put", (ev) => { const x: [string, LeaseId | null, number] = [ev.key, ev.lease, ev.revision]; });
lessor.addEventListener("delete", (ev) => { const x: [string, LeaseId | null] = [ev.key, ev.lease]; });
lessor.addEventListener("error", (ev) => { const u: unknown = ev.error; });
lessor.addEventListener("custom", () => {}, { once: true });
const onPut = (ev: LessorEventMap["put"]) => {};
lessor.addEventListener("put", onPut);
lessor.removeEventListener("put", onPut);
lessor.close();

try { lessor.get("x"); } catch (err) {
  if (err instanceof LeaseError) {
    const code: ErrorCode = err.code;
    const entry: string | undefined = err.entry;
    const exp: Expired[] | undefined = err.expired;
  }
}

// Misuse the declarations must reject.
// @ts-expect-error ttl is a number
lessor.grant("10");
// @ts-expect-error ids are LeaseIds or bigints, not numbers
lessor.renew(5);
// @ts-expect-error a plain string is not a LeaseId: leaseId("...") makes one
lessor.renew("hello");
// @ts-expect-error nor is a string that happens to look like one
lessor.grant(10, { id: "00000000000000ff" });
// @ts-expect-error leaseId takes a string or a bigint
leaseId(5);
// @ts-expect-error values are strings or Uint8Array
lessor.put("k", 5);
// @ts-expect-error an ArrayBuffer is not a Uint8Array
lessor.put("k", new ArrayBuffer(1));
// @ts-expect-error unknown option
lessor.put("k", "v", { ttl: 5 });
// @ts-expect-error etcd's Put needs a value unless it keeps the old one
lessor.put({ key: "k" });
// @ts-expect-error counts are read-only figures, not a method
lessor.counts();
// @ts-expect-error a created put has no previous entry
lessor.put("k", "v", { ifAbsent: true }).prev.value;
// @ts-expect-error without ifAbsent or prevKv an existing key's prev may be missing
if (!plain.created) plain.prev.value;
// @ts-expect-error now is a function
new Lessor({ now: 5 });
// @ts-expect-error storage needs write
new Lessor({ storage: {} });
// @ts-expect-error revision is read-only
lessor.revision = 5;
// @ts-expect-error code is one of the ErrorCode strings
const bad: ErrorCode = "Nope";
// @ts-expect-error get may return undefined under strict
lessor.get("k").value;
// @ts-expect-error listeners of known events get that event
lessor.addEventListener("grant", (ev: { data: string }) => {});
// @ts-expect-error expire events have no ttl
lessor.addEventListener("expire", (ev) => ev.ttl);
// @ts-expect-error grant events have no key
lessor.addEventListener("grant", (ev) => ev.key);
// @ts-expect-error put events have no ttl
lessor.addEventListener("put", (ev) => ev.ttl);

// The forms etcd's wire uses, and a host's own build of the engine.
const goHex: string = leaseGoHex(leaseInt64(leaseHex(5n))) + leaseIdOf(leaseBig("1"));
const decoded: Uint8Array = decodeBase64(encodeBase64(new Uint8Array(1)), (at) => new Error(String(at)));
declare const build: Parameters<typeof lessorOver>[0];
const Own = lessorOver(build);
const own: Lessor = new Own({ minTtl: 5 });
// @ts-expect-error leaseGoHex takes the int64 as a bigint
leaseGoHex("0a");
`;

// CommonJS users get the same declarations through require.
const usageCjs = `
import edgeLease = require("edge-lease");
const lessor: edgeLease.Lessor = new edgeLease.Lessor({ autoTick: false });
const id: edgeLease.LeaseId = lessor.grant(1).id;
lessor.renew(edgeLease.leaseId("00000000000000ff"));
// @ts-expect-error ttl is a number
lessor.grant("1");
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

const tsc = promisify(execFile);
let dir;
before(() => {
  dir = mkdtempSync(join(packedProject(), "types-"));
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

// Writes the usage files and a tsconfig with `lib` (and `types`) into a
// subdirectory, runs tsc on it, and fails with tsc's output.
async function check(name, extra) {
  const d = join(dir, name);
  mkdirSync(d);
  writeFileSync(join(d, "usage.mts"), usage);
  writeFileSync(join(d, "usage.cts"), usageCjs);
  const tsconfig = { compilerOptions: { ...compilerOptions, ...extra }, files: ["usage.mts", "usage.cts"] };
  writeFileSync(join(d, "tsconfig.json"), JSON.stringify(tsconfig));
  const r = await tsc(join(repo, "node_modules/.bin/tsc"), ["-p", d], { timeout: 50_000 }).catch((e) => e);
  assert.equal(r.code ?? 0, 0, `tsc (${name}) failed:\n${r.stdout}${r.stderr}`);
}

test("tsc --strict with the DOM lib (browsers, bundlers)", { timeout: 60_000 }, () =>
  check("dom", { lib: ["es2022", "dom"], types: [] }));

test("tsc --strict with lib es2022 and @types/node, no DOM (a usual Node project)", { timeout: 60_000 }, () =>
  // @types/node is this repository's devDependency; the user's project has its own.
  check("node", { lib: ["es2022"], types: ["node"], typeRoots: [join(repo, "node_modules/@types")] }));

test("deno check", { timeout: 60_000 }, async () => {
  const d = join(dir, "deno");
  mkdirSync(d);
  writeFileSync(join(d, "usage.mts"), usage);
  const deno = join(repo, "node_modules/.bin/deno");
  const project = packedProject();
  const file = relative(project, join(d, "usage.mts"));
  const r = await tsc(deno, ["check", "--node-modules-dir=manual", "--no-remote", "--no-lock", file], {
    // From the project root, so "edge-lease" resolves to its node_modules.
    cwd: project,
    timeout: 50_000,
    env: { ...process.env, NO_COLOR: "1", DENO_DIR: join(dir, ".deno"), DENO_NO_UPDATE_CHECK: "1" },
  }).catch((e) => e);
  assert.equal(r.code ?? 0, 0, `deno check failed:\n${r.stdout}${r.stderr}`);
});
