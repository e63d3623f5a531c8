// A SQLite-backed Durable Object's stored layout (js/stores/durable-object.mjs):
// the snapshot in a few large rows, a journal row per batch after it, and
// rows of one entry each as the release before wrote them, read forever
// (fixtures/durable-v1.json, written by that release). Each check reopens
// the lessor from storage (a new DurableLessor on the object's storage, as
// a woken object does) and compares everything a restore gives back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { workerOptions } from "./worker-options.mjs";
import { ROOT } from "./harness.mjs";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/durable-v1.json", import.meta.url), "utf8"));
const T = fixture.at;

function start(t) {
  const persist = mkdtempSync(join(tmpdir(), "edge-lease-layout-"));
  const make = () =>
    new Miniflare({
      ...workerOptions(join(ROOT, "tests/workerd/layout-worker.mjs"), ROOT),
      durableObjects: { LAYOUT: { className: "Layout", useSQLite: true } },
      durableObjectsPersist: persist,
    });
  let mf = make();
  t.after(async () => {
    await mf?.dispose();
    rmSync(persist, { recursive: true, force: true });
  });
  const call = async (op, ...args) => {
    const r = await (await mf.dispatchFetch("http://do/", { method: "POST", body: JSON.stringify({ op, now: T, args }), signal: AbortSignal.timeout(30_000) })).json();
    if (r.error) throw Object.assign(new Error(`${op}: ${r.message}`), { code: r.error });
    return r.result;
  };
  const restart = async () => {
    await mf.dispose();
    mf = make();
  };
  return { call, restart };
}

const kinds = (rows) => {
  const n = { entry: 0, journal: 0, snapshot: 0 };
  for (const [k] of rows) n[k.startsWith("edge-lease/~journal/") ? "journal" : k.startsWith("edge-lease/~snapshot") ? "snapshot" : "entry"]++;
  return n;
};

test("rows of one entry each, as the release before wrote them, restore to the same state; the first open rewrites them as the snapshot", async (t) => {
  const { call, restart } = start(t);
  await call("load", fixture.rows);
  assert.deepEqual(await call("state"), fixture.state);
  const rows = kinds(await call("rows"));
  assert.equal(rows.entry, 0, "no row of one entry is left");
  assert.ok(rows.snapshot >= 2, JSON.stringify(rows));
  await restart();
  assert.deepEqual(await call("state"), fixture.state, "the snapshot restores the same state");
  // Writes go on, journaled, and come back.
  await call("run", ["put", "svc/a", "three", "00000000000000a1"]);
  const after = await call("state");
  assert.equal(kinds(await call("rows")).journal, 1);
  await restart();
  assert.deepEqual(await call("state"), after);
});

test("journal rows over rows of one entry each (no compaction yet): deletes and puts of their keys win, in order", async (t) => {
  const { call, restart } = start(t);
  await call("load", fixture.rows);
  await call("reopen", { compactRows: "Infinity" });
  assert.deepEqual(await call("state"), fixture.state);
  await call("run", ["put", "svc/a", "over", "00000000000000a1"]);
  await call("run", ["delete", "t/1"]);
  await call("run", ["put", "t/1", "again"]);
  await call("run", ["revoke", "7fffffffffffff00"]);
  await call("run", ["put", "new", "n"]);
  const want = await call("state");
  const rows = kinds(await call("rows"));
  assert.equal(rows.snapshot, 0);
  assert.equal(rows.journal, 5);
  await call("reopen", { compactRows: "Infinity" });
  assert.deepEqual(await call("state"), want);
  await restart();
  assert.deepEqual(await call("state"), want, "then compacted on open, the same");
  assert.deepEqual(kinds(await call("rows")), { entry: 0, journal: 0, snapshot: 2 });
});

test("every write comes back after a reopen, over snapshots compacted every 3 journal rows; a batch past a row's size spans rows", async (t) => {
  const { call } = start(t);
  await call("reopen", { compactRows: 3 });
  const b64 = (s) => Buffer.from(s).toString("base64");
  const ops = [
    ["grant", 60, "0000000000000001"],
    ["grant", 600, "ffffffffffffffff"],
    ["put", "a", "1", "0000000000000001"],
    ["put", "b", { bytes: b64("\u0000\u00ff") }, "ffffffffffffffff"],
    ["put", "a", "2", "0000000000000001"],
    ["txn", [{ put: { key: "c", value: "3" } }, { deleteRange: { key: "b" } }, { put: { key: "d", value: "4", lease: "ffffffffffffffff" } }]],
    ["big", "large/1", 700_000],
    ["txn", [{ put: { key: "large/2", value: "x".repeat(900_000) } }, { put: { key: "large/3", value: "y".repeat(900_000) } }, { deleteRange: { key: "a" } }]],
    ["compact", 5],
    ["host", "alarms", b64("\u0001")],
    ["checkpoint", "ffffffffffffffff", 1000],
    ["delete", "large/", "large0"],
    ["revoke", "0000000000000001"],
    ["put", "e", "5"],
  ];
  let maxJournal = 0;
  for (const op of ops) {
    await call("run", op);
    const want = await call("state");
    maxJournal = Math.max(maxJournal, kinds(await call("rows")).journal);
    await call("reopen", { compactRows: 3 });
    assert.deepEqual(await call("state"), want, `after ${op[0]}`);
  }
  assert.ok(maxJournal >= 1 && maxJournal < 3, `journal rows at most: ${maxJournal}`);
  assert.ok(kinds(await call("rows")).snapshot >= 2);
});

test("a batch past a row's size is journaled in several rows of one transaction, its deletes first", async (t) => {
  const { call, restart } = start(t);
  await call("reopen", { compactRows: "Infinity" });
  await call("run", ["put", "a", "1"]);
  await call("run", ["put", "large/1", "z"]);
  const before = kinds(await call("rows")).journal;
  await call("run", ["txn", [{ deleteRange: { key: "a" } }, { put: { key: "large/1", value: "x".repeat(900_000) } }, { put: { key: "large/2", value: "y".repeat(900_000) } }]]);
  assert.equal(kinds(await call("rows")).journal - before, 3);
  const want = await call("state");
  await restart();
  await call("reopen", { compactRows: "Infinity" });
  assert.deepEqual(await call("state"), want);
});

test("a corrupt journal or snapshot row fails the restore with CorruptEntry naming the row", async (t) => {
  const { call } = start(t);
  await call("run", ["put", "a", "1"]);
  await call("load", [["edge-lease/~journal/zz", "AQ=="]]);
  await assert.rejects(call("reopen"), (e) => e.code === "CorruptEntry" && /~journal\/zz/.test(e.message));
});
