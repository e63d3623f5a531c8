// The TypeScript declarations as a user sees them: tsc --strict on a file
// that imports from the installed package, calls every method with every
// option in js/index.d.ts, and marks misuse with @ts-expect-error (which
// itself fails the check if the misuse ever type-checks).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { packedProject, repo } from "./packed.mjs";

const usage = `
import init, { Lessor, LeaseError, LeaseEvent } from "edge-lease";
import type { Batch, Entry, ErrorCode, Expired, LeaseId, PutResult, DeleteResult, TimeToLive, Value } from "edge-lease";

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

const g: { id: LeaseId; ttl: number } = lessor.grant(10);
lessor.grant(10, { id: "00000000000000ff" });
lessor.grant(10, { id: -1n });
const ttl: number = lessor.renew(g.id) + lessor.renew(5n);
const revoked: Expired = lessor.revoke(g.id);
const keys: string[] = revoked.keys;
const t: TimeToLive = lessor.timeToLive(g.id, { keys: true });
lessor.timeToLive(1n);
const ids: LeaseId[] = lessor.leases();
const p: PutResult = lessor.put("a", "v", { lease: g.id, ifAbsent: true, prevKv: true });
lessor.put("b", new Uint8Array(2), { lease: 7n });
lessor.put("c", "v", { lease: null });
const prev: Entry | undefined = p.prev;
const e = lessor.get("a");
if (e) {
  const v: Value = e.value;
  const lease: LeaseId | null = e.lease;
  const n: number = e.createRevision + e.modRevision + e.version;
}
const r: Entry[] = lessor.range("a") .concat(lessor.range());
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
lessor.addEventListener("expire", (ev) => {
  const le: LeaseEvent = ev;
  const x: [LeaseId | null, string | null, string[], number, number] = [ev.lease, ev.key, ev.keys, ev.revision, ev.ttl];
});
lessor.addEventListener("error", (ev) => { const u: unknown = ev.error; });
lessor.addEventListener("custom", () => {}, { once: true });
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
// @ts-expect-error ids are hex strings or bigints, not numbers
lessor.renew(5);
// @ts-expect-error values are strings or Uint8Array
lessor.put("k", 5);
// @ts-expect-error an ArrayBuffer is not a Uint8Array
lessor.put("k", new ArrayBuffer(1));
// @ts-expect-error unknown option
lessor.put("k", "v", { ttl: 5 });
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
// @ts-expect-error event listeners for known events get a LeaseEvent
lessor.addEventListener("grant", (ev: MessageEvent) => {});
`;

// CommonJS users get the same declarations through require.
const usageCjs = `
import edgeLease = require("edge-lease");
const lessor: edgeLease.Lessor = new edgeLease.Lessor({ autoTick: false });
const id: edgeLease.LeaseId = lessor.grant(1).id;
// @ts-expect-error ttl is a number
lessor.grant("1");
`;

const tsconfig = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    // The declarations use Event and EventTarget: the DOM lib has them
    // (this project installs no @types/node).
    lib: ["es2022", "dom"],
    skipLibCheck: false,
    noUnusedLocals: false,
  },
  files: ["usage.mts", "usage.cts"],
};

let dir;
after(() => dir && rmSync(dir, { recursive: true, force: true }));

test("tsc --strict accepts every documented use and rejects misuse", { timeout: 60_000 }, async () => {
  dir = mkdtempSync(join(packedProject(), "types-"));
  writeFileSync(join(dir, "usage.mts"), usage);
  writeFileSync(join(dir, "usage.cts"), usageCjs);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  const tsc = join(repo, "node_modules/.bin/tsc");
  const r = await promisify(execFile)(tsc, ["-p", dir], { timeout: 50_000 }).catch((e) => e);
  assert.equal(r.code ?? 0, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
