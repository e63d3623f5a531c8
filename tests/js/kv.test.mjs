// etcd's KV requests through the JS API: range with every option, history,
// deleteRange, txn, compact, watch, the history and quota options, and the
// typed errors of each. (The rules themselves are model-tested in the core,
// tests/history.rs; this checks that they cross the binding intact.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { Lessor } from "edge-lease";
// HashKV and etcd's key bucket are in the etcd server's build of the engine.
import { Lessor as EtcdLessor } from "../../server/engine.mjs";

const T0 = 1_700_000_000_000;
const td = new TextDecoder();
const text = (b) => td.decode(b);
const keys = (kvs) => kvs.map((kv) => text(kv.key));
const code = (f) => {
  try {
    f();
  } catch (e) {
    return e.code;
  }
  return "no error";
};

function setup(opts = {}, L = Lessor) {
  const clock = { t: T0 };
  const lessor = new L({ now: () => clock.t, autoTick: false, ...opts });
  return { clock, lessor };
}

test("range: prefix, rangeEnd, from-key, limit with more and count, sort, keysOnly, countOnly, filters", () => {
  const { lessor } = setup();
  for (const [k, v] of [["a", "3"], ["a/1", "1"], ["a/2", "2"], ["b", "0"]]) lessor.put(k, v);
  lessor.put("a/1", "9"); // a/1: version 2, mod 6
  assert.deepEqual(keys(lessor.range({ key: "a/", prefix: true }).kvs), ["a/1", "a/2"]);
  assert.deepEqual(keys(lessor.range({ key: "a/1", rangeEnd: "b" }).kvs), ["a/1", "a/2"]);
  assert.deepEqual(keys(lessor.range({ key: "a/", rangeEnd: "\0" }).kvs), ["a/1", "a/2", "b"]);
  assert.deepEqual(keys(lessor.range({ key: "b", rangeEnd: "a" }).kvs), [], "an end before the key is empty");
  const one = lessor.range({ key: "a/1" });
  assert.equal(one.kvs.length, 1);
  assert.deepEqual({ ...one.kvs[0], key: text(one.kvs[0].key), value: text(one.kvs[0].value) }, {
    key: "a/1",
    value: "9",
    createRevision: 3,
    modRevision: 6,
    version: 2,
    lease: null,
  });
  const limited = lessor.range({ key: "a", rangeEnd: "c", limit: 2 });
  assert.deepEqual([keys(limited.kvs), limited.more, limited.count, limited.revision], [["a", "a/1"], true, 4, 6]);
  const byValue = lessor.range({ key: "a", rangeEnd: "c", sortTarget: "value" });
  assert.deepEqual(keys(byValue.kvs), ["b", "a/2", "a", "a/1"], "another target sorts ascending");
  const desc = lessor.range({ key: "a", rangeEnd: "c", sortOrder: "descend", sortTarget: "mod" });
  assert.deepEqual(keys(desc.kvs), ["a/1", "b", "a/2", "a"]);
  const ko = lessor.range({ key: "a", prefix: true, keysOnly: true });
  assert.ok(ko.kvs.every((kv) => kv.value.length === 0));
  const co = lessor.range({ key: "a", prefix: true, countOnly: true });
  assert.deepEqual([co.kvs, co.count], [[], 3]);
  assert.deepEqual(keys(lessor.range({ key: "a", rangeEnd: "c", minModRevision: 5 }).kvs), ["a/1", "b"]);
  assert.deepEqual(keys(lessor.range({ key: "a", rangeEnd: "c", maxCreateRevision: 3 }).kvs), ["a", "a/1"]);
  // A limit past 32 bits is no limit (it wrapped to 0 entries in wasm32).
  const huge = lessor.range({ key: "a", rangeEnd: "c", limit: 2 ** 32 - 1 });
  assert.deepEqual([huge.kvs.length, huge.more], [4, false]);
  // etcd's rules: equal values keep key order descending too; with a target
  // but no order, only the first limit + 1 keys are sorted.
  const ties = lessor.range({ key: "a", rangeEnd: "c", sortOrder: "descend", sortTarget: "version" });
  assert.deepEqual(keys(ties.kvs), ["a/1", "a", "a/2", "b"]);
  const firstOnly = lessor.range({ key: "a", rangeEnd: "c", sortTarget: "mod", limit: 1 });
  assert.deepEqual([keys(firstOnly.kvs), firstOnly.more], [["a"], true]);
});

// The values are etcd 3.4.23's HashKV answers to the same calls (measured
// over gRPC on a fresh etcd): the engine hashes its history as etcd's
// backend stores it, including what a compaction keeps.
test("hashKv: etcd's hash of the same history, before and after a compaction; etcd's errors", () => {
  const { lessor } = setup({}, EtcdLessor);
  assert.equal(lessor.hashKv(), 1084519789);
  lessor.put("a", "b"); // 2
  assert.equal(lessor.hashKv(), 3628877040);
  lessor.grant(600, { id: "00000000000004d2" });
  lessor.put("a", "c", { lease: "00000000000004d2" }); // 3
  assert.equal(lessor.hashKv(), 3818723390);
  lessor.put("b", ""); // 4
  assert.equal(lessor.hashKv(), 2343170282);
  // Three changes in one revision: two deletions, then a put.
  lessor.txn({ success: [{ deleteRange: { key: "\0", rangeEnd: "\0" } }, { put: { key: "a", value: "x" } }] }); // 5
  assert.equal(lessor.hashKv(), 3228441775);
  assert.equal(lessor.hashKv(3), 3818723390);
  assert.equal(lessor.hashKv(-1), 1084519789);
  lessor.compact(4);
  assert.equal(lessor.hashKv(), 1510766133);
  assert.equal(lessor.hashKv(5), 1510766133);
  assert.equal(code(() => lessor.hashKv(4)), "Compacted");
  assert.equal(code(() => lessor.hashKv(99)), "FutureRevision");
  assert.equal(code(() => lessor.hashKv(1.5)), "InvalidArgument");
  lessor.put("b", "z"); // 6
  lessor.revoke("00000000000004d2");
  assert.equal(lessor.hashKv(), 2980382566);
});

test("the lean engine (edge-lease) leaves HashKV and etcd's key bucket to the etcd server's build: Unimplemented", () => {
  const { lessor } = setup();
  lessor.put("a", "1");
  assert.equal(code(() => lessor.hashKv()), "Unimplemented");
  assert.equal(code(() => lessor.etcdKeyBucket()), "Unimplemented");
  assert.equal(lessor.get("a").value, "1");
});

test("etcdKeyBucket: etcd's key bucket in pieces, each record's head first; Compacted once a record not read is dropped", () => {
  const { lessor } = setup({}, EtcdLessor);
  lessor.put("a", "1"); // 2
  lessor.put("a", "2"); // 3
  lessor.txn({ success: [{ deleteRange: { key: "a" } }, { put: { key: "b", value: "x".repeat(5000) } }] }); // 4
  const records = (b) => {
    const out = [];
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    for (let at = 0; at < b.length; ) {
      const k = v.getUint32(at, true);
      const n = v.getUint32(at + 4 + k, true);
      out.push([Buffer.from(b.subarray(at + 4, at + 4 + k)).toString("hex"), n]);
      at += 8 + k + n;
    }
    return out;
  };
  const reader = lessor.etcdKeyBucket();
  const heads = [];
  const hv = new DataView(reader.heads.buffer, reader.heads.byteOffset, reader.heads.byteLength);
  for (let at = 0; at < reader.heads.length; ) {
    const k = hv.getUint32(at, true);
    heads.push([Buffer.from(reader.heads.subarray(at + 4, at + 4 + k)).toString("hex"), hv.getUint32(at + 4 + k, true)]);
    at += 8 + k;
  }
  const rev = (main, sub, t = "") => main.toString(16).padStart(16, "0") + "5f" + sub.toString(16).padStart(16, "0") + t;
  assert.deepEqual(heads.map(([k]) => k), [rev(2, 0), rev(3, 0), rev(4, 0, "74"), rev(4, 1)]);
  // One record a piece at a 1-byte bound; the 5 KB value in a piece of its own.
  const pieces = [];
  for (let p; (p = reader.next(1)).length > 0; ) pieces.push(records(p));
  assert.deepEqual(pieces.flat(), heads);
  assert.deepEqual(pieces.map((p) => p.length), [1, 1, 1, 1]);
  assert.equal(reader.next().length, 0);
  // Read whole: the same records.
  const whole = lessor.etcdKeyBucket();
  assert.deepEqual(records(whole.next(1 << 30)), heads);
  // A compaction past records not yet read.
  const late = lessor.etcdKeyBucket();
  late.next(1);
  lessor.compact(4);
  assert.equal(code(() => late.next()), "Compacted");
  assert.equal(late.next().length, 0); // (freed by the failure)
  lessor.etcdKeyBucket().close();
  const open = lessor.etcdKeyBucket();
  lessor.close();
  assert.equal(code(() => open.next()), "Closed");
});

test("range at past revisions reads history; compaction and the future are typed errors", () => {
  const { lessor } = setup();
  for (let v = 0; v < 5; v++) lessor.put("k", String(v)); // revisions 2..6
  lessor.delete("k"); // 7
  const at = (revision) => lessor.range({ key: "k", revision });
  assert.equal(text(at(3).kvs[0].value), "1");
  assert.equal(at(3).revision, 7, "the header is the current revision");
  assert.equal(at(7).kvs.length, 0);
  assert.throws(() => at(8), { code: "FutureRevision" });
  // etcd's compaction point: -1 until the first compaction, which may be at 0.
  assert.equal(lessor.compactRevision, -1);
  assert.deepEqual(lessor.compact(0), { revision: 7 });
  assert.equal(lessor.compactRevision, 0);
  assert.throws(() => lessor.compact(0), { code: "Compacted" });
  assert.deepEqual(lessor.compact(5), { revision: 7 });
  assert.equal(lessor.compactRevision, 5);
  assert.throws(() => at(4), (e) => e.code === "Compacted" && e.compactRevision === 5);
  assert.equal(text(at(5).kvs[0].value), "3");
  assert.throws(() => lessor.compact(5), { code: "Compacted" });
  assert.throws(() => lessor.compact(9), { code: "FutureRevision" });
});

test("keys and values are bytes too: any key, including ones that are not UTF-8", () => {
  const { lessor } = setup();
  const key = new Uint8Array([0xff, 0x00, 0x80]);
  const r = lessor.txn({ success: [{ put: { key, value: new Uint8Array([1, 2]) } }] });
  assert.equal(r.succeeded, true);
  const got = lessor.range({ key }).kvs[0];
  assert.deepEqual([...got.key], [0xff, 0x00, 0x80]);
  assert.deepEqual([...got.value], [1, 2]);
  assert.deepEqual(keys(lessor.range({ key: new Uint8Array([0xff]), prefix: true }).kvs).length, 1);
});

test("deleteRange removes every live key of a range in one revision; nothing to delete changes nothing", () => {
  const { lessor } = setup();
  const { id } = lessor.grant(10);
  lessor.put("x/1", "a", { lease: id });
  lessor.put("x/2", "b");
  lessor.put("y", "c");
  const r = lessor.deleteRange({ key: "x/", prefix: true, prevKv: true });
  assert.deepEqual([r.deleted, r.revision, keys(r.prevKvs)], [2, 5, ["x/1", "x/2"]]);
  assert.equal(r.prevKvs[0].lease, id);
  assert.deepEqual(lessor.timeToLive(id, { keys: true }).keys, [], "the key left its lease");
  const none = lessor.deleteRange({ key: "x/", prefix: true });
  assert.deepEqual([none.deleted, none.revision, lessor.revision], [0, 5, 5]);
});

test("txn: compares on the state before it, one revision for all ops, later ops read earlier ones", () => {
  const { lessor } = setup();
  const lock = lessor.grant(10).id;
  const t = lessor.txn({
    compare: [{ key: "lock", target: "create", result: "=", value: 0 }],
    success: [
      { put: { key: "lock", value: "me", lease: lock } },
      { put: { key: "count", value: "1", prevKv: true } },
      { range: { key: "lock" } },
    ],
    failure: [{ range: { key: "lock" } }],
  });
  assert.equal(t.succeeded, true);
  assert.equal(t.revision, 2);
  assert.deepEqual(t.responses.map((r) => Object.keys(r)[0]), ["put", "put", "range"]);
  assert.deepEqual(t.responses[0].put, { revision: 2 });
  const seen = t.responses[2].range;
  assert.deepEqual([text(seen.kvs[0].value), seen.kvs[0].createRevision, seen.revision], ["me", 2, 2]);
  // Taken: the failure branch reads the holder; nothing changes.
  const again = lessor.txn({
    compare: [{ key: "lock", target: "create", result: "=", value: 0 }],
    success: [{ put: { key: "lock", value: "other" } }],
    failure: [{ range: { key: "lock" } }],
  });
  assert.deepEqual([again.succeeded, again.revision, text(again.responses[0].range.kvs[0].value)], [false, 2, "me"]);
  // Compares on value, version, mod and lease; a missing key never matches a value.
  const holds = (compare) => lessor.txn({ compare: [compare] }).succeeded;
  assert.equal(holds({ key: "lock", target: "value", result: "=", value: "me" }), true);
  assert.equal(holds({ key: "lock", target: "version", result: ">", value: 0 }), true);
  assert.equal(holds({ key: "lock", target: "mod", result: "<", value: 2 }), false);
  assert.equal(holds({ key: "lock", target: "lease", result: "=", value: lock }), true);
  assert.equal(holds({ key: "nope", target: "value", result: "!=", value: "x" }), false);
  assert.equal(holds({ key: "nope", target: "version", result: "=", value: 0 }), true);
  // Nested: its compares also see the state before the outer txn.
  const nested = lessor.txn({
    success: [
      { put: { key: "n", value: "1" } },
      { txn: { compare: [{ key: "n", target: "version", result: "=", value: 0 }], success: [{ put: { key: "m", value: "2" } }] } },
    ],
  });
  assert.deepEqual([nested.revision, nested.responses[1].txn.succeeded, nested.responses[1].txn.revision], [3, true, 0]);
  assert.equal(text(lessor.range({ key: "m" }).kvs[0].value), "2");
});

test("txn refusals are typed and change nothing", () => {
  const { lessor } = setup({ maxTxnOps: 3 });
  lessor.put("k", "v");
  const before = lessor.revision;
  assert.equal(code(() => lessor.txn({ success: [{ put: { key: "a", value: "1" } }, { put: { key: "a", value: "2" } }] })), "DuplicateKey");
  assert.equal(code(() => lessor.txn({ success: [{ deleteRange: { key: "a", prefix: true } }, { put: { key: "ab", value: "1" } }] })), "DuplicateKey");
  const four = Array.from({ length: 4 }, (_, i) => ({ range: { key: `r${i}` } }));
  assert.equal(code(() => lessor.txn({ success: four })), "TooManyOps");
  assert.equal(code(() => lessor.txn({ success: [{ put: { key: "a", value: "1" } }, { put: { key: "b", value: "1", lease: "00000000000000ff" } }] })), "LeaseNotFound");
  assert.equal(code(() => lessor.txn({ success: [{ put: { key: "nope", ignoreValue: true } }] })), "KeyNotFound");
  assert.equal(code(() => lessor.txn({ success: [{ range: { key: "k", revision: 99 } }] })), "FutureRevision");
  assert.equal(lessor.revision, before);
  assert.equal(lessor.range({ key: "a" }).kvs.length, 0);
  // ignoreValue keeps the value and may move the lease.
  const id = lessor.grant(5).id;
  lessor.txn({ success: [{ put: { key: "k", ignoreValue: true, lease: id } }] });
  const kv = lessor.range({ key: "k" }).kvs[0];
  assert.deepEqual([text(kv.value), kv.lease], ["v", id]);
});

test("txn: a put's lease given as a bigint reaches the engine intact at every magnitude", () => {
  const { lessor } = setup();
  const ids = ["0000000000000001", "000000000000003f", "0000000000000040", "000000007fffffff", "0000000080000000",
    "00000000ffffffff", "0000000100000000", "00ffffffffffffff", "1234567890abcdef", "7fffffffffffffff"];
  for (const hex of ids) {
    lessor.grant(60, { id: hex });
    lessor.txn({ success: [{ put: { key: hex, value: "v", lease: BigInt("0x" + hex) } }] });
    assert.equal(lessor.range({ key: hex }).kvs[0].lease, hex);
  }
});

test("bad requests are InvalidArgument, never a trap", () => {
  const { lessor } = setup();
  const bad = [
    () => lessor.range({}),
    () => lessor.range({ key: 5 }),
    () => lessor.range({ key: "a", prefix: true, rangeEnd: "b" }),
    () => lessor.range({ key: "a", limit: 1.5 }),
    () => lessor.range({ key: "a", sortOrder: "sideways" }),
    () => lessor.range({ key: "\uD800" }),
    () => lessor.range(null),
    () => lessor.deleteRange({ key: "" }),
    () => lessor.txn({ compare: [{ key: "a", target: "colour", result: "=", value: 1 }] }),
    () => lessor.txn({ compare: [{ key: "a", target: "version", result: "~", value: 1 }] }),
    () => lessor.txn({ compare: [{ key: "a", target: "version", result: "=", value: "1" }] }),
    () => lessor.txn({ success: [{}] }),
    () => lessor.txn({ success: "nope" }),
    () => lessor.txn({ success: [{ put: { key: "a", value: "1", lease: "xyz" } }] }),
    () => lessor.compact(1.5),
    () => lessor.watch({ key: "a" }),
    () => lessor.watch({ key: "b", rangeEnd: "a" }, () => {}),
  ];
  for (const f of bad) assert.equal(code(f), "InvalidArgument", f.toString());
  // Nesting: etcd's default op budget allows 128 levels; past 256 (the
  // codec's limit) is refused before anything recursive reads it.
  const nest = (depth) => {
    let t = { success: [] };
    for (let i = 1; i < depth; i++) t = { success: [{ txn: t }] };
    return t;
  };
  assert.equal(code(() => lessor.txn(nest(300))), "InvalidArgument");
  assert.equal(lessor.revision, 1);
  assert.equal(lessor.txn(nest(200)).succeeded, true);
});

test("watch: each revision's changes once and in order, prevKv, filters, expiry deletes, cancel", () => {
  const { clock, lessor } = setup();
  const got = [];
  const w = lessor.watch({ key: "s/", prefix: true, prevKv: true }, (b) => got.push(b));
  const puts = [];
  lessor.watch({ key: "s/", prefix: true, noDelete: true }, (b) => puts.push(...b.events.map((e) => e.type)));
  const { id } = lessor.grant(5);
  lessor.put("s/a", "1", { lease: id });
  lessor.put("s/b", "1", { lease: id });
  lessor.put("s/a", "2", { lease: id });
  lessor.put("other", "x");
  lessor.txn({ success: [{ put: { key: "s/c", value: "1" } }, { deleteRange: { key: "s/b" } }] });
  clock.t += 5_000;
  lessor.tick();
  const flat = got.map((b) => b.events.map((e) => `${e.type} ${text(e.kv.key)}@${e.kv.modRevision}${e.prevKv ? ` was ${text(e.prevKv.value)}` : ""}`));
  assert.deepEqual(flat, [
    ["put s/a@2"],
    ["put s/b@3"],
    ["put s/a@4 was 1"],
    ["put s/c@6", "delete s/b@6 was 1"],
    ["delete s/a@7 was 2"],
  ]);
  assert.deepEqual(puts, ["put", "put", "put", "put"]);
  w.cancel();
  lessor.put("s/z", "1");
  assert.equal(got.length, 5, "no event after cancel");
});

test("watch from a past revision replays history in a microtask; a compacted start is cancelled", async () => {
  const { lessor } = setup();
  for (let v = 0; v < 4; v++) lessor.put("h", String(v)); // 2..5
  const past = [];
  lessor.watch({ key: "h", startRevision: 3 }, (b) => past.push(...b.events.map((e) => text(e.kv.value))));
  assert.deepEqual(past, [], "not before the caller has the handle");
  await Promise.resolve();
  assert.deepEqual(past, ["1", "2", "3"]);
  lessor.put("h", "4");
  assert.deepEqual(past, ["1", "2", "3", "4"]);
  lessor.compact(5);
  const late = [];
  lessor.watch({ key: "h", startRevision: 2 }, (b) => late.push(b));
  await Promise.resolve();
  assert.deepEqual(late.map((b) => [b.compactRevision, b.events.length]), [[5, 0]]);
  lessor.put("h", "5");
  assert.equal(late.length, 1, "the cancelled watcher gets nothing more");
});

test("a listener that writes gets its own change next, without re-entering", () => {
  const { lessor } = setup();
  const seen = [];
  lessor.watch({ key: "c" }, (b) => {
    for (const e of b.events) {
      const n = Number(text(e.kv.value));
      seen.push(n);
      if (n < 3) lessor.put("c", String(n + 1));
    }
  });
  lessor.put("c", "0");
  assert.deepEqual(seen, [0, 1, 2, 3]);
  // A listener that throws is reported as an error event, not thrown at the writer.
  const errors = [];
  lessor.addEventListener("error", (e) => errors.push(e.error.message));
  lessor.watch({ key: "boom" }, () => {
    throw new Error("listener failed");
  });
  lessor.put("boom", "1");
  assert.deepEqual(errors, ["listener failed"]);
});

test("history option: at least that many revisions stay readable; watchers keep theirs", () => {
  const { lessor } = setup({ history: 10 });
  const got = [];
  lessor.watch({ key: "k" }, (b) => got.push(...b.events));
  for (let v = 0; v < 100; v++) lessor.put("k", String(v));
  assert.equal(got.length, 100);
  const rev = lessor.revision;
  assert.equal(text(lessor.range({ key: "k", revision: rev - 10 }).kvs[0].value), "89");
  assert.throws(() => lessor.range({ key: "k", revision: 2 }), { code: "Compacted" });
  assert.equal(setup({ history: Infinity }).lessor.range({ key: "k" }).count, 0);
  assert.equal(code(() => setup({ history: 0 })), "InvalidArgument");
});

test("quota: writes past it fail with NoSpace and change nothing; reads and deletes go on", () => {
  const { lessor } = setup({ quotaBytes: 64 * 1024, maxValueBytes: 16 * 1024 });
  const big = new Uint8Array(10 * 1024);
  let n = 0;
  for (; n < 100; n++) {
    if (code(() => lessor.put(`k${n}`, big)) === "NoSpace") break;
  }
  assert.equal(n, 6);
  assert.ok(lessor.sizeBytes > 6 * 10 * 1024 && lessor.sizeBytes <= 64 * 1024, String(lessor.sizeBytes));
  const rev = lessor.revision;
  assert.equal(code(() => lessor.txn({ success: [{ put: { key: "t", value: big } }] })), "NoSpace");
  assert.equal(lessor.revision, rev);
  assert.ok(lessor.get("k0"));
  assert.equal(lessor.deleteRange({ key: "k", prefix: true }).deleted, 6);
  lessor.put("again", big);
  assert.equal(code(() => setup({ quotaBytes: 2 ** 40 })), "InvalidArgument", "more than wasm memory can hold");
});

test("history survives a restart from storage", () => {
  const store = new Map();
  const storage = {
    write(batch) {
      for (const k of batch.delete) store.delete(k);
      for (const [k, v] of batch.put) store.set(k, v);
    },
  };
  const { lessor } = setup({ storage });
  for (let v = 0; v < 5; v++) lessor.put("k", String(v));
  lessor.compact(3);
  const back = new Lessor({ autoTick: false, now: () => T0, restore: store.entries() });
  assert.equal(back.compactRevision, 3);
  assert.equal(text(back.range({ key: "k", revision: 4 }).kvs[0].value), "2");
  assert.throws(() => back.range({ key: "k", revision: 2 }), { code: "Compacted" });
});

test("timeToLive gives a lease's keys as bytes on request (keys need not be UTF-8)", () => {
  const { lessor } = setup();
  const { id } = lessor.grant(10);
  const key = new Uint8Array([0xff, 0x00, 0x61]);
  lessor.txn({ success: [{ put: { key, value: "v", lease: id } }] });
  lessor.put("text", "v", { lease: id });
  const t = lessor.timeToLive(id, { keys: true, bytes: true });
  assert.deepEqual(t.keys.map((k) => [...k]), [[0x74, 0x65, 0x78, 0x74], [0xff, 0x00, 0x61]]);
  assert.deepEqual(lessor.timeToLive(id, { keys: true }).keys[0], "text");
});

test("put(request): etcd's Put, its lease checked before the key ignoreValue needs, and counts as etcd's", () => {
  const { clock, lessor } = setup();
  const id = lessor.grant(60).id;
  const first = lessor.put({ key: "k", value: "v1", lease: id });
  assert.deepEqual(first, { revision: 2 });
  const second = lessor.put({ key: "k", value: "v2", prevKv: true });
  assert.equal(second.revision, 3);
  assert.equal(text(second.prevKv.value), "v1");
  assert.equal(second.prevKv.lease, id);
  // The lease first (a txn would find the missing key first).
  assert.equal(code(() => lessor.put({ key: "missing", ignoreValue: true, lease: 7n })), "LeaseNotFound");
  assert.equal(code(() => lessor.txn({ success: [{ put: { key: "missing", ignoreValue: true, lease: 7n } }] })), "KeyNotFound");
  assert.equal(code(() => lessor.put({ key: "missing", ignoreValue: true })), "KeyNotFound");
  const kept = lessor.put({ key: "k", ignoreValue: true });
  assert.equal(text(lessor.range({ key: "k" }).kvs[0].value), "v2");
  assert.equal(kept.revision, 4);
  assert.equal(code(() => lessor.put({ key: "", value: "x" })), "InvalidArgument");

  // Counted as etcd counts them (tests/counts.rs has the rules).
  const before = lessor.counts;
  lessor.put({ key: "k", value: "abc", prevKv: true });
  lessor.txn({ compare: [{ key: "k", target: "version", result: ">", value: 0 }], success: [{ put: { key: "j", value: "1" } }] });
  lessor.deleteRange({ key: "j" });
  clock.t += 61_000;
  lessor.tick();
  const after = lessor.counts;
  const moved = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
  assert.deepEqual(moved, { ranges: 2, puts: 2, deletes: 1, txns: 1, putBytes: 6, granted: 0, revoked: 1, renewed: 0, expired: 1, compacted: 0 });
});

test("int64 request fields: exact past 2^53 both ways, refused past an int64; keys a request only compares may be longer than a key can be", () => {
  const { lessor } = setup({ maxKeyBytes: 16 });
  lessor.put("a", "1");
  const long = "a".repeat(245); // (a request long enough to have filled the codec's buffer)
  assert.throws(() => lessor.range({ key: long, revision: 2 ** 60 }), { code: "FutureRevision" });
  assert.equal(lessor.range({ key: "a", revision: -(2 ** 60) - 2 ** 10 }).kvs.length, 1, "a negative revision is the current one, as on etcd");
  assert.equal(lessor.txn({ compare: [{ key: "a", target: "version", result: ">", value: -(2 ** 60) }] }).succeeded, true);
  assert.throws(() => lessor.range({ key: "a", revision: 1e308 }), { code: "InvalidArgument" });
  // 17 bytes, over maxKeyBytes: nothing there, as on etcd; get still refuses it (issue 13).
  assert.equal(lessor.range({ key: "k".repeat(17) }).kvs.length, 0);
  assert.equal(lessor.range({ key: "a", rangeEnd: "z".repeat(17) }).kvs.length, 1);
  assert.throws(() => lessor.get("k".repeat(17)), { code: "InvalidArgument" });
  assert.throws(() => lessor.put("k".repeat(17), "v"), { code: "InvalidArgument" });
  lessor.close();
});
