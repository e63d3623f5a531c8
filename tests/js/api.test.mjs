// The JS API of edge-lease, with an injected clock (no sleeps).
import { test, mock } from "node:test";
import assert from "node:assert/strict";
import { Lessor, LeaseError, leaseId } from "edge-lease";
// HashKV is in the etcd server's build of the engine.
import { Lessor as EtcdLessor } from "../../server/engine.mjs";
import { packEntryParts, unpackEntries } from "../../js/codec.js";

const T0 = 1_700_000_000_000;

function setup(opts = {}, L = Lessor) {
  const clock = { t: T0 };
  const lessor = new L({ now: () => clock.t, autoTick: false, ...opts });
  return { clock, lessor };
}

function code(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof LeaseError, `expected a LeaseError, got ${e}`);
    return e.code;
  }
  assert.fail("expected a throw");
}

test("seed 000: heartbeat key vanishes with its lease; renew keeps it; revoke deletes it", () => {
  const { clock, lessor } = setup();
  const { id, ttl } = lessor.grant(10);
  assert.match(id, /^[0-9a-f]{16}$/);
  assert.equal(ttl, 10);
  const put = lessor.put("my-service/heartbeat", "alive", { lease: id });
  assert.deepEqual(put, { revision: 2, created: true });
  const e = lessor.get("my-service/heartbeat");
  assert.deepEqual(e, {
    key: "my-service/heartbeat",
    value: "alive",
    lease: id,
    createRevision: 2,
    modRevision: 2,
    version: 1,
  });
  clock.t += 12_000;
  assert.equal(lessor.get("my-service/heartbeat"), undefined);

  const b = lessor.grant(30);
  lessor.put("my-service/status", "healthy", { lease: b.id });
  clock.t += 15_000;
  assert.equal(lessor.renew(b.id), 30);
  clock.t += 29_000;
  assert.equal(lessor.get("my-service/status").value, "healthy");
  const r = lessor.revoke(b.id);
  assert.deepEqual(r.keys, ["my-service/status"]);
  assert.equal(lessor.get("my-service/status"), undefined);
  assert.equal(lessor.timeToLive(b.id).ttl, -1);
});

test("seed 001: lock with fencing token passes from server-3 to server-7", () => {
  const { clock, lessor } = setup();
  const s3 = lessor.grant(10).id;
  const got = lessor.put("/locks/job", "server-3", { lease: s3, ifAbsent: true });
  assert.equal(got.created, true);
  const token3 = lessor.get("/locks/job").createRevision;

  const s7 = lessor.grant(60).id;
  clock.t = T0 + 1_000;
  const busy = lessor.put("/locks/job", "server-7", { lease: s7, ifAbsent: true });
  assert.equal(busy.created, false);
  assert.equal(busy.prev.value, "server-3");
  assert.equal(busy.prev.createRevision, token3);

  for (const at of [3_000, 6_000]) {
    clock.t = T0 + at;
    assert.equal(lessor.renew(s3), 10);
  }
  // server-3 crashes at 9 s: no more renewals.
  clock.t = T0 + 15_999;
  assert.equal(lessor.get("/locks/job").value, "server-3");
  clock.t = T0 + 16_000;
  assert.equal(lessor.get("/locks/job"), undefined);
  const expired = lessor.tick();
  assert.deepEqual(expired.map((x) => [x.id, x.keys]), [[s3, ["/locks/job"]]]);
  clock.t = T0 + 19_000;
  const won = lessor.put("/locks/job", "server-7", { lease: s7, ifAbsent: true });
  assert.equal(won.created, true);
  const token7 = lessor.get("/locks/job").createRevision;
  assert.ok(token7 > token3, `${token7} > ${token3}`);
  assert.equal(code(() => lessor.renew(s3)), "LeaseNotFound");
});

test("values: strings stay strings, bytes stay bytes", () => {
  const { lessor } = setup();
  lessor.put("s", "héllo ✓");
  lessor.put("b", new Uint8Array([0, 255, 7]));
  lessor.put("e", "");
  assert.equal(lessor.get("s").value, "héllo ✓");
  const b = lessor.get("b").value;
  assert.ok(b instanceof Uint8Array);
  assert.deepEqual([...b], [0, 255, 7]);
  assert.equal(lessor.get("e").value, "");
  assert.equal(lessor.get("b").lease, null);
});

test("explicit ids, negative ids and bigints", () => {
  const { lessor } = setup();
  assert.equal(lessor.grant(5, { id: "0a1b2c3d4e5f6789" }).id, "0a1b2c3d4e5f6789");
  assert.equal(lessor.grant(5, { id: -1n }).id, "ffffffffffffffff");
  assert.equal(code(() => lessor.grant(5, { id: "ffffffffffffffff" })), "LeaseExists");
  assert.equal(lessor.renew(0xffffffffffffffffn), 5);
  assert.equal(lessor.timeToLive("ffffffffffffffff").grantedTtl, 5);
  assert.equal(code(() => lessor.grant(9_000_000_001)), "LeaseTtlTooLarge");
  assert.equal(lessor.grant(0).ttl, 1, "0 is raised to the minimum");
  assert.equal(lessor.grant(-5).ttl, 1, "negative is raised to the minimum");
});

test("timeToLive, leases, range and delete", () => {
  const { clock, lessor } = setup();
  const a = lessor.grant(10, { id: "0000000000000002" }).id;
  const b = lessor.grant(5, { id: "0000000000000001" }).id;
  lessor.put("svc/b", "1", { lease: a });
  lessor.put("svc/a", "1", { lease: a });
  lessor.put("other", "1");
  clock.t += 1_500;
  assert.deepEqual(lessor.timeToLive(a, { keys: true }), {
    id: a,
    ttl: 8,
    ttlMs: 8_500,
    grantedTtl: 10,
    keys: ["svc/a", "svc/b"],
  });
  assert.deepEqual(lessor.timeToLive(a).keys, []);
  assert.deepEqual(lessor.leases(), [b, a]);
  assert.deepEqual(lessor.range("svc/").map((e) => e.key), ["svc/a", "svc/b"]);
  assert.equal(lessor.range().length, 3);
  const d = lessor.delete("svc/a", { prevKv: true });
  assert.equal(d.deleted, true);
  assert.equal(d.prev.value, "1");
  assert.deepEqual(lessor.timeToLive(a, { keys: true }).keys, ["svc/b"]);
  assert.equal(lessor.delete("svc/a").deleted, false);
  // put without a lease detaches (etcd's lease switch)
  lessor.put("svc/b", "2");
  assert.deepEqual(lessor.timeToLive(a, { keys: true }).keys, []);
  assert.equal(lessor.revision, 6);
});

test("events: grant, renew, put, delete, revoke, expire carry lease, keys and revision", () => {
  const { clock, lessor } = setup();
  const seen = [];
  for (const type of ["grant", "renew", "put", "delete", "revoke", "expire"]) {
    lessor.addEventListener(type, (e) =>
      seen.push([e.type, e.lease, e.key ?? null, [...e.keys], e.revision, e.ttl]),
    );
  }
  const a = lessor.grant(2, { id: "00000000000000aa" }).id;
  lessor.put("k1", "v", { lease: a });
  lessor.renew(a);
  lessor.delete("k1");
  lessor.put("k2", "v", { lease: a });
  const b = lessor.grant(10, { id: "00000000000000bb" }).id;
  lessor.put("k3", "v", { lease: b });
  lessor.revoke(b);
  clock.t += 2_000;
  lessor.tick();
  assert.deepEqual(seen, [
    ["grant", a, null, [], 0, 2],
    ["put", a, "k1", ["k1"], 2, 0],
    ["renew", a, null, [], 0, 2],
    ["delete", a, "k1", ["k1"], 3, 0],
    ["put", a, "k2", ["k2"], 4, 0],
    ["grant", b, null, [], 0, 10],
    ["put", b, "k3", ["k3"], 5, 0],
    ["revoke", b, null, ["k3"], 6, 0],
    ["expire", a, null, ["k2"], 7, 0],
  ]);
});

test("an event handler may call back into the lessor", () => {
  const { clock, lessor } = setup();
  lessor.addEventListener("expire", (e) => {
    lessor.put("log/" + e.lease, "expired");
  });
  const { id } = lessor.grant(1);
  clock.t += 1_000;
  lessor.tick();
  assert.equal(lessor.get("log/" + id).value, "expired");
});

test("demote and promote: standby refuses renew, keeps leases, promotion resumes", () => {
  const { clock, lessor } = setup();
  const { id } = lessor.grant(10);
  clock.t += 4_000;
  lessor.demote();
  assert.equal(lessor.isPrimary, false);
  assert.equal(code(() => lessor.renew(id)), "NotPrimary");
  clock.t += 60_000;
  assert.deepEqual(lessor.tick(), []);
  assert.equal(lessor.nextDeadline(), null);
  lessor.promote(1_000);
  assert.equal(lessor.isPrimary, true);
  assert.equal(lessor.timeToLive(id).ttlMs, 7_000);
  assert.equal(lessor.nextDeadline(), clock.t + 7_000);
});

test("tick is rate limited and nextDeadline says when the next batch may go", () => {
  const { clock, lessor } = setup({ revokeRate: 3 });
  for (let i = 0; i < 7; i++) lessor.grant(1);
  clock.t += 1_000;
  assert.equal(lessor.tick().length, 3);
  assert.equal(lessor.tick().length, 0);
  assert.equal(lessor.nextDeadline(), clock.t + 1_000);
  clock.t += 1_000;
  assert.equal(lessor.tick().length, 3);
  clock.t += 1_000;
  assert.equal(lessor.tick().length, 1);
  assert.equal(lessor.nextDeadline(), null);
});

test("the clock going backwards neither revives nor expires early", () => {
  const { clock, lessor } = setup();
  const { id } = lessor.grant(2);
  lessor.put("k", "v", { lease: id });
  clock.t -= 100_000;
  assert.equal(lessor.timeToLive(id).ttlMs, 2_000);
  clock.t = T0 + 2_000;
  assert.equal(lessor.get("k"), undefined);
  clock.t = T0 + 1_000;
  assert.equal(lessor.get("k"), undefined);
});

test("autoTick: one unref'd timer at the next deadline expires leases and emits events", () => {
  mock.timers.enable({ apis: ["setTimeout"], now: 0 });
  try {
    const clock = { t: T0 };
    const lessor = new Lessor({ now: () => clock.t });
    const expired = [];
    lessor.addEventListener("expire", (e) => expired.push(e.lease));
    const a = lessor.grant(5).id;
    const b = lessor.grant(2).id;
    lessor.put("k", "v", { lease: a });
    assert.equal(lessor.nextDeadline(), T0 + 2_000);
    clock.t = T0 + 1_999;
    mock.timers.tick(1_999);
    assert.deepEqual(expired, []);
    clock.t = T0 + 2_000;
    mock.timers.tick(1);
    assert.deepEqual(expired, [b]);
    // Renewing the remaining lease moves its deadline; an early wake-up only re-arms.
    clock.t = T0 + 4_000;
    lessor.renew(a);
    clock.t = T0 + 5_000;
    mock.timers.tick(3_000);
    assert.deepEqual(expired, [b]);
    clock.t = T0 + 9_000;
    mock.timers.tick(4_000);
    assert.deepEqual(expired, [b, a]);
    assert.equal(lessor.get("k"), undefined);
    lessor.close();
  } finally {
    mock.timers.reset();
  }
});

test("autoTick: very distant deadlines are clamped to the timer limit and re-armed", () => {
  mock.timers.enable({ apis: ["setTimeout"], now: 0 });
  try {
    const clock = { t: T0 };
    const lessor = new Lessor({ now: () => clock.t });
    const expired = [];
    lessor.addEventListener("expire", (e) => expired.push(e.lease));
    const { id } = lessor.grant(30 * 86_400); // 30 days, beyond 2^31-1 ms
    const limit = 2 ** 31 - 1;
    clock.t += limit;
    mock.timers.tick(limit);
    assert.deepEqual(expired, []);
    clock.t = T0 + 30 * 86_400_000;
    mock.timers.tick(30 * 86_400_000 - limit);
    assert.deepEqual(expired, [id]);
    lessor.close();
  } finally {
    mock.timers.reset();
  }
});

test("close releases the timer and refuses later calls", () => {
  const lessor = new Lessor();
  lessor.grant(60);
  lessor.close();
  lessor.close();
  assert.equal(code(() => lessor.grant(1)), "Closed");
  assert.equal(code(() => lessor.get("k")), "Closed");
});

function memoryStore() {
  const map = new Map();
  return {
    map,
    fail: false,
    write(batch) {
      if (this.fail) throw new Error("disk full");
      for (const [k, v] of batch.put) map.set(k, v);
      for (const k of batch.delete) map.delete(k);
    },
  };
}

test("storage: one batch per change, restore gives the same state", () => {
  const store = memoryStore();
  const { clock, lessor } = setup({ storage: store });
  const { id } = lessor.grant(10, { id: "8000000000000000" });
  lessor.put("a", "text", { lease: id });
  lessor.put("b", new Uint8Array([1, 2]));
  assert.deepEqual([...store.map.keys()].sort(), [
    "v1/compacted",
    "v1/key/a",
    "v1/key/b",
    "v1/lease/8000000000000000",
    "v1/revision",
  ]);
  const again = new Lessor({ now: () => clock.t, autoTick: false, restore: store.map.entries() });
  assert.deepEqual(again.range(), lessor.range());
  assert.equal(again.revision, lessor.revision);
  assert.deepEqual(again.leases(), [id]);
  // A store that throws: the operation fails and nothing changes.
  store.fail = true;
  const before = lessor.range();
  assert.equal(code(() => lessor.put("a", "x", { lease: id })), "StorageFailed");
  assert.equal(code(() => lessor.revoke(id)), "StorageFailed");
  assert.deepEqual(lessor.range(), before);
  store.fail = false;
  lessor.put("a", "x", { lease: id });
  assert.equal(lessor.get("a").value, "x");
});

test("storage: a batch comes packed in one buffer; put and delete read from it, each value its own copy", () => {
  const batches = [];
  const { lessor } = setup({ storage: { write: (b) => batches.push(b) } });
  lessor.grant(10, { id: "00000000000000ff" });
  lessor.put("k\u00e9", new Uint8Array([7, 8]), { lease: "00000000000000ff" });
  lessor.delete("k\u00e9");
  const [, put, del] = batches;
  assert.ok(put.bytes instanceof Uint8Array);
  const key = put.put.find(([k]) => k.startsWith("v1/key/"));
  assert.equal(key[0], "v1/key/k%C3%A9"); // stored names are ASCII
  assert.notEqual(key[1].buffer, put.bytes.buffer, "a value is not a view of the whole batch");
  assert.deepEqual(del.delete, ["v1/key/k%C3%A9"]);
  // The layout: u32 count, (u32 length, bytes) pairs, u32 count, (u32 length, bytes).
  const b = Buffer.from(del.bytes);
  let at = 0;
  const part = () => {
    const n = b.readUInt32LE(at);
    at += 4 + n;
    return b.subarray(at - n, at).toString();
  };
  const puts = [];
  for (let n = b.readUInt32LE((at += 4) - 4); n > 0; n--) puts.push([part(), part()]);
  const dels = [];
  for (let n = b.readUInt32LE((at += 4) - 4); n > 0; n--) dels.push(part());
  assert.equal(at, b.length);
  assert.deepEqual(dels, del.delete);
  assert.deepEqual(puts, del.put.map(([k, v]) => [k, Buffer.from(v).toString()]));
  assert.deepEqual(JSON.parse(JSON.stringify(del)).delete, del.delete);
});

test("storage: async writes stay ordered, flush waits, a rejection fails the lessor", async () => {
  const order = [];
  let rejectNext = false;
  const store = {
    write(batch) {
      const keys = batch.put.map(([k]) => k).concat(batch.delete);
      return new Promise((resolve, reject) =>
        setImmediate(() => {
          if (rejectNext) return reject(new Error("quota exceeded"));
          order.push(keys.join(","));
          resolve();
        }),
      );
    },
  };
  const { lessor } = setup({ storage: store });
  lessor.put("a", "1");
  lessor.put("b", "1");
  lessor.delete("a");
  await lessor.flush();
  // The first key change marks the store as one that keeps history; the
  // delete keeps the deleted version and a deletion mark as history.
  assert.deepEqual(order, [
    "v1/key/a,v1/compacted,v1/revision",
    "v1/key/b,v1/revision",
    "v1/old/0000000000000002/a,v1/old/0000000000000004/a,v1/revision,v1/key/a",
  ]);
  rejectNext = true;
  lessor.put("c", "1");
  await assert.rejects(lessor.flush(), (e) => e.code === "StorageFailed");
  assert.equal(code(() => lessor.put("d", "1")), "StorageFailed");
  // Reads still work.
  assert.equal(lessor.get("b").value, "1");
});

test("restore refuses corrupt entries with a typed error naming the entry", () => {
  const bad = [["v1/lease/zz", new Uint8Array()]];
  assert.throws(() => new Lessor({ restore: bad, autoTick: false }), { code: "CorruptEntry", entry: "v1/lease/zz" });
});

test("restore of a store larger than one part (1 MiB): every entry crosses; a corrupt one in a later part is refused", () => {
  const store = memoryStore();
  const { clock, lessor } = setup({ storage: store }, EtcdLessor);
  const value = new Uint8Array(10_000).fill(7);
  for (let i = 0; i < 300; i++) lessor.put(`k${String(i).padStart(3, "0")}`, value); // ~3 MB
  const entries = [...store.map.entries()];
  const again = new EtcdLessor({ now: () => clock.t, autoTick: false, restore: entries });
  assert.equal(again.revision, lessor.revision);
  assert.equal(again.range().length, 300);
  assert.deepEqual(again.get("k299").value, value);
  assert.equal(again.hashKv(), lessor.hashKv());
  // The bad entry last, in the third part.
  const bad = [...entries, ["v1/key/zz", new Uint8Array([1])]];
  assert.throws(() => new Lessor({ restore: bad, autoTick: false }), { code: "CorruptEntry", entry: "v1/key/zz" });
});

test("packEntryParts: a restore's entries in parts of about the bound, at least one entry each, in order", () => {
  const entries = [];
  for (let i = 0; i < 300; i++) entries.push([`v1/key/k${i}`, new Uint8Array(10_000).fill(i)]);
  entries.push(["v1/key/big", new Uint8Array(3 << 20)]); // over the bound alone
  entries.push(["v1/revision", "302"]);
  // (Each part is a view of a buffer written again for the next: copied.)
  const parts = [];
  packEntryParts(entries, 1 << 20, (p) => parts.push(p.slice()));
  assert.ok(parts.length >= 4, `${parts.length} parts`);
  for (const p of parts.slice(0, -2)) assert.ok(p.length <= (1 << 20) + 10_100, `${p.length}`);
  const back = parts.flatMap((p) => unpackEntries(p));
  assert.deepEqual(back.map(([k]) => k), entries.map(([k]) => k));
  assert.deepEqual(back[299][1], entries[299][1]);
  assert.equal(new TextDecoder().decode(back.at(-1)[1]), "302");
  packEntryParts([], 1 << 20, () => assert.fail("a part of no entries"));
});

test("autoTick: a tick refused by the store is reported and retried, so expiry does not stall", () => {
  mock.timers.enable({ apis: ["setTimeout"], now: 0 });
  try {
    const clock = { t: T0 };
    let refuse = false;
    const store = {
      write() {
        if (refuse) throw new Error("disk full");
      },
    };
    const lessor = new Lessor({ now: () => clock.t, storage: store });
    const errors = [];
    const expired = [];
    lessor.addEventListener("error", (e) => errors.push(e.error.code));
    lessor.addEventListener("expire", (e) => expired.push(e.lease));
    const { id } = lessor.grant(2);
    refuse = true;
    clock.t = T0 + 2_000;
    mock.timers.tick(2_000);
    assert.deepEqual(errors, ["StorageFailed"]);
    assert.deepEqual(expired, []);
    assert.equal(lessor.timeToLive(id).ttl, -1, "gone for reads all the same");
    // Retried a second later, not in a tight loop.
    clock.t = T0 + 2_999;
    mock.timers.tick(999);
    assert.deepEqual(errors, ["StorageFailed"]);
    clock.t = T0 + 3_000;
    mock.timers.tick(1);
    assert.deepEqual(errors, ["StorageFailed", "StorageFailed"]);
    refuse = false;
    clock.t = T0 + 4_000;
    mock.timers.tick(1_000);
    assert.deepEqual(expired, [id]);
    lessor.close();
  } finally {
    mock.timers.reset();
  }
});

test("keys and values must be well-formed Unicode: a lone surrogate would not round-trip", () => {
  const { lessor } = setup();
  assert.equal(code(() => lessor.put("a\uD800", "v")), "InvalidArgument");
  assert.equal(code(() => lessor.put("k", "\uDC00x")), "InvalidArgument");
  assert.equal(code(() => lessor.get("\uD800")), "InvalidArgument");
  // A proper pair is fine, and comes back as given.
  lessor.put("clef \uD834\uDD1E", "\uD834\uDD1E");
  assert.equal(lessor.get("clef \uD834\uDD1E").value, "\uD834\uDD1E");
  assert.equal(lessor.revision, 2);
});

test("a clock that uses another lessor does not change which lease an operation acts on", () => {
  const other = new Lessor({ now: () => T0, autoTick: false });
  const idA = "000000000000000a";
  const idB = "000000000000000b";
  // The host's clock looks at another lessor (a status line, a metric).
  const lessor = new Lessor({ now: () => (other.timeToLive(idB), T0), autoTick: false });
  lessor.grant(10, { id: idA });
  lessor.grant(10, { id: idB });
  assert.equal(lessor.revoke(idA).id, idA);
  assert.equal(lessor.timeToLive(idA).ttl, -1);
  assert.equal(lessor.timeToLive(idB).ttl, 10);
  lessor.close();
  other.close();
});

test("a put event carries the lease as a hex id also when the put was given a bigint", () => {
  const { lessor } = setup();
  const { id } = lessor.grant(10, { id: "00000000000000ff" });
  const seen = [];
  lessor.addEventListener("put", (e) => seen.push(e.lease));
  lessor.put("k", "v", { lease: 255n });
  lessor.put("k", "v", { lease: id });
  lessor.put("k", "v");
  assert.deepEqual(seen, [id, id, null]);
});

// `n` printable ASCII characters (space included), varied by `seed`.
function printable(n, seed) {
  return Array.from({ length: n }, (_, i) => String.fromCharCode(32 + ((i * 13 + seed) % 95))).join("");
}

test("values: text of every short length reads back as written, ASCII or not, wherever its one non-ASCII character is", () => {
  // Short values are built in JS 8 characters at a time, and those with a
  // non-ASCII byte go through TextDecoder: every length and split.
  const { lessor } = setup();
  for (let n = 0; n <= 40; n++) {
    const ascii = printable(n, n);
    lessor.put("a", ascii);
    assert.equal(lessor.get("a").value, ascii, `ascii ${n}`);
    for (const at of n === 0 ? [] : [0, n >> 1, n - 1]) {
      for (const c of ["é", "✓", "\u{1F600}", "\u007f"]) {
        const v = ascii.slice(0, at) + c + ascii.slice(at + 1);
        lessor.put("u", v);
        assert.equal(lessor.get("u").value, v, `${n} ${at} ${c.codePointAt(0)}`);
      }
    }
  }
});

test("keys and values: ASCII ones that fill the binding's inbox, pass it, or are not ASCII read back the same, across memory growth", () => {
  // ASCII keys and values up to 1 KiB together cross through the core's
  // inbox, the others as strings: each side of the edge, and a view of
  // wasm memory renewed after it grows.
  const { lessor } = setup();
  const cases = [];
  for (const k of [1, 100, 1023, 1024, 1025, 4096]) {
    for (const total of [1023, 1024, 1025]) cases.push([printable(k, k * 7 + total), printable(Math.max(0, total - k), total)]);
  }
  cases.push(["ключ", "v"], ["k-é", printable(1000, 1)], [printable(10, 2), "значение"]);
  for (const [i, [k, v]] of cases.entries()) {
    assert.equal(lessor.put(k, v).created, true, `put ${i}`);
    assert.equal(lessor.get(k).value, v, `get ${i}`);
    if (i % 5 === 0) lessor.put(`big/${i}`, new Uint8Array(1 << 20)); // grows memory
  }
  for (const [k, v] of cases) assert.equal(lessor.get(k).value, v);
  assert.equal(code(() => lessor.put(printable(4097, 3), "v")), "InvalidArgument");
  assert.equal(code(() => lessor.get(printable(4097, 3))), "InvalidArgument");
});

test("lease ids: 16 lowercase hex digits, each digit in its place, from grants, reads and leaseId", () => {
  const { lessor } = setup();
  for (const big of [1n, 0xfn, 0x10n, 0x0123456789abcdefn, 0x7edcba9876543210n, 0x7fffffffffffffffn, 0x00000000fffffffen, 0x0000000100000000n]) {
    const want = big.toString(16).padStart(16, "0");
    const { id } = lessor.grant(10, { id: leaseId(big) });
    assert.equal(id, want);
    lessor.put(`k/${want}`, "v", { lease: id });
    assert.equal(lessor.get(`k/${want}`).lease, want);
  }
  assert.equal(leaseId(-2n), "fffffffffffffffe");
  assert.equal(leaseId(0x8000000000000001n), "8000000000000001");
});

test("leaseId: an id from elsewhere (etcdctl's hex, a bigint) as the API's id; anything else is InvalidArgument", () => {
  const { lessor } = setup();
  const { id } = lessor.grant(10, { id: leaseId("00000000000000ff") });
  assert.equal(id, "00000000000000ff");
  assert.equal(leaseId(255n), id);
  assert.equal(leaseId(-1n), "ffffffffffffffff");
  for (const bad of ["00000000000000FF", "ff", "0x00000000000000f", 255, null, 2n ** 64n]) {
    assert.equal(code(() => leaseId(bad)), "InvalidArgument", String(bad));
  }
});
