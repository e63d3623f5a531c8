// Bad input from JS to every method. Each bad call must throw a LeaseError
// with a stable `code` (never a wasm trap such as `RuntimeError:
// unreachable`), change nothing, and leave the instance working.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LeaseError, Lessor } from "edge-lease";

const T0 = 1_700_000_000_000;

function setup(opts = {}) {
  const clock = { now: T0 };
  const lessor = new Lessor({ now: () => clock.now, autoTick: false, ...opts });
  const { id } = lessor.grant(60);
  lessor.put("held", "v", { lease: id });
  return { lessor, clock, id };
}

function throwsCode(f, code, what = "") {
  assert.throws(
    f,
    (e) => {
      assert.ok(e instanceof LeaseError, `${what}: expected a LeaseError, got ${e && e.constructor.name}: ${e && e.message}`);
      assert.equal(e.code, code, `${what}: ${e.message}`);
      return true;
    },
    `${what}: no error`,
  );
}

// The instance still does real work: a grant, an attached put and a get.
function works(lessor) {
  const { id } = lessor.grant(10);
  const rev = lessor.put("after", "ok", { lease: id }).revision;
  const e = lessor.get("after");
  assert.equal(e.value, "ok");
  assert.equal(e.lease, id);
  assert.equal(e.modRevision, rev);
  lessor.revoke(id);
}

// Runs each bad call on one instance: typed error, no change, still works.
function rejects(cases, opts) {
  const ctx = setup(opts);
  for (const [what, call, code = "InvalidArgument"] of cases) {
    const before = ctx.lessor.snapshot();
    throwsCode(() => call(ctx), code, what);
    assert.deepEqual(ctx.lessor.snapshot(), before, `${what} changed the state`);
  }
  works(ctx.lessor);
  ctx.lessor.close();
}

const BAD_IDS = [
  ["number", 255],
  ["null", null],
  ["object", {}],
  ["too short", "ff"],
  ["too long", "00000000000000ff0"],
  ["uppercase", "00000000000000FF"],
  ["non-hex", "000000000000000g"],
  ["0x prefix", "0x000000000000ff"],
  ["padded", " 00000000000000f"],
  ["2^64", 2n ** 64n],
  ["-(2^63) - 1", -(2n ** 63n) - 1n],
];

const BAD_NUMBERS = [
  ["string", "10"],
  ["undefined", undefined],
  ["null", null],
  ["bigint", 10n],
  ["NaN", NaN],
  ["Infinity", Infinity],
  ["-Infinity", -Infinity],
  ["fraction", 1.5],
];

describe("grant", () => {
  test("bad TTLs and options: InvalidArgument", () =>
    rejects([
      ...BAD_NUMBERS.map(([what, ttl]) => [`ttl ${what}`, ({ lessor }) => lessor.grant(ttl)]),
      ["options a string", ({ lessor }) => lessor.grant(10, "x")],
      // (id: null is "no id", like undefined)
      ...BAD_IDS.filter(([what]) => what !== "null").map(([what, id]) => [`id ${what}`, ({ lessor }) => lessor.grant(10, { id })]),
      ["ttl over 9e9 s", ({ lessor }) => lessor.grant(9e9 + 1), "LeaseTtlTooLarge"],
      ["ttl 1e300", ({ lessor }) => lessor.grant(1e300), "LeaseTtlTooLarge"],
      ["id taken", ({ lessor, id }) => lessor.grant(10, { id }), "LeaseExists"],
    ]));

  test("0 and negative TTLs are raised to minTtl", () => {
    const { lessor } = setup({ minTtl: 5 });
    assert.equal(lessor.grant(0).ttl, 5);
    assert.equal(lessor.grant(-7).ttl, 5);
    assert.equal(lessor.grant(-1e300).ttl, 5);
    assert.equal(lessor.grant(9e9).ttl, 9e9);
    lessor.close();
  });

  test("ids: bigints in 64 bits, negatives as two's complement", () => {
    const { lessor } = setup();
    assert.equal(lessor.grant(10, { id: -1n }).id, "ffffffffffffffff");
    // -1n and 2^64-1 are the same id.
    throwsCode(() => lessor.grant(10, { id: 2n ** 64n - 1n }), "LeaseExists");
    assert.equal(lessor.renew("ffffffffffffffff"), 10);
    assert.equal(lessor.grant(10, { id: -(2n ** 63n) }).id, "8000000000000000");
    assert.equal(lessor.grant(10, { id: 2n ** 63n + 1n }).id, "8000000000000001");
    assert.equal(lessor.grant(10, { id: "00000000000000ff" }).id, "00000000000000ff");
    // A bigint id comes back as hex everywhere.
    assert.equal(lessor.timeToLive(255n).id, "00000000000000ff");
    assert.equal(lessor.timeToLive(-2n).id, "fffffffffffffffe");
    let renewed;
    lessor.addEventListener("renew", (e) => (renewed = e.lease));
    lessor.renew(-1n);
    assert.equal(renewed, "ffffffffffffffff");
    assert.equal(lessor.revoke(-1n).id, "ffffffffffffffff");
    works(lessor);
    lessor.close();
  });
});

describe("renew, revoke, timeToLive, checkpoint", () => {
  const byId = {
    renew: (l, id) => l.renew(id),
    revoke: (l, id) => l.revoke(id),
    timeToLive: (l, id) => l.timeToLive(id),
    checkpoint: (l, id) => l.checkpoint(id, 1000),
  };
  for (const [name, call] of Object.entries(byId)) {
    test(`${name}: malformed ids`, () =>
      rejects([
        ["no id", ({ lessor }) => call(lessor)],
        ...BAD_IDS.map(([what, id]) => [`id ${what}`, ({ lessor }) => call(lessor, id)]),
      ]));
  }

  test("unknown and expired leases: LeaseNotFound (timeToLive: ttl -1)", () => {
    const { lessor, clock, id } = setup();
    clock.now += 61_000;
    for (const target of ["0000000000000001", id]) {
      throwsCode(() => lessor.renew(target), "LeaseNotFound");
      throwsCode(() => lessor.checkpoint(target, 10), "LeaseNotFound");
      assert.equal(lessor.timeToLive(target).ttl, -1);
    }
    throwsCode(() => lessor.revoke("0000000000000001"), "LeaseNotFound");
    works(lessor);
    lessor.close();
  });

  test("bad options and remaining times", () =>
    rejects([
      ["timeToLive options a number", ({ lessor, id }) => lessor.timeToLive(id, 5)],
      ...BAD_NUMBERS.map(([what, ms]) => [`checkpoint ${what}`, ({ lessor, id }) => lessor.checkpoint(id, ms)]),
      ["checkpoint negative", ({ lessor, id }) => lessor.checkpoint(id, -1)],
      // Unbounded, it would saturate the deadline at promotion into the
      // core's "no deadline" marker: the lease would never expire.
      ["checkpoint 1e300", ({ lessor, id }) => lessor.checkpoint(id, 1e300)],
      ["checkpoint MAX_SAFE_INTEGER", ({ lessor, id }) => lessor.checkpoint(id, Number.MAX_SAFE_INTEGER)],
    ]));
});

describe("put, get, range, delete", () => {
  const BAD_KEYS = [
    ["number", 5],
    ["undefined", undefined],
    ["null", null],
    ["object", {}],
    ["symbol", Symbol("k")],
    ["Uint8Array", new Uint8Array([107])],
  ];

  test("bad keys", () =>
    rejects([
      ...BAD_KEYS.flatMap(([what, key]) => [
        [`put key ${what}`, ({ lessor }) => lessor.put(key, "v")],
        [`get key ${what}`, ({ lessor }) => lessor.get(key)],
        [`delete key ${what}`, ({ lessor }) => lessor.delete(key)],
      ]),
      ["range prefix null", ({ lessor }) => lessor.range(null)],
      ["range prefix number", ({ lessor }) => lessor.range(5)],
      ["put empty key", ({ lessor }) => lessor.put("", "v")],
    ]));

  test("oversized keys and values, in UTF-16 units and in UTF-8 bytes", () =>
    rejects(
      [
        ["put key 17 chars", ({ lessor }) => lessor.put("k".repeat(17), "v")],
        ["get key 17 chars", ({ lessor }) => lessor.get("k".repeat(17))],
        ["delete key 17 chars", ({ lessor }) => lessor.delete("k".repeat(17))],
        ["range prefix 17 chars", ({ lessor }) => lessor.range("k".repeat(17))],
        // 9 chars, 18 bytes: only the core's byte count catches it.
        ["put key 18 UTF-8 bytes", ({ lessor }) => lessor.put("é".repeat(9), "v")],
        // Issue 13, item 7: reads of such keys answered "nothing there".
        ["get key 18 UTF-8 bytes", ({ lessor }) => lessor.get("é".repeat(9))],
        ["get key 20 UTF-8 bytes in pairs", ({ lessor }) => lessor.get("😀".repeat(5))],
        ["delete key 18 UTF-8 bytes", ({ lessor }) => lessor.delete("é".repeat(9))],
        ["range prefix 18 UTF-8 bytes", ({ lessor }) => lessor.range("é".repeat(9))],
        ["put value 33 chars", ({ lessor }) => lessor.put("k", "v".repeat(33))],
        ["put value 34 UTF-8 bytes", ({ lessor }) => lessor.put("k", "é".repeat(17))],
        ["put value 33 bytes", ({ lessor }) => lessor.put("k", new Uint8Array(33))],
      ],
      { maxKeyBytes: 16, maxValueBytes: 32 },
    ));

  test("keys and values exactly at the limits are accepted", () => {
    const { lessor } = setup({ maxKeyBytes: 16, maxValueBytes: 32 });
    lessor.put("é".repeat(8), "é".repeat(16));
    lessor.put("k".repeat(16), new Uint8Array(32).fill(7));
    assert.equal(lessor.get("é".repeat(8)).value, "é".repeat(16));
    assert.deepEqual(lessor.get("k".repeat(16)).value, new Uint8Array(32).fill(7));
    lessor.close();
  });

  test("bad values and options", () =>
    rejects([
      ...[
        ["number", 5],
        ["undefined", undefined],
        ["null", null],
        ["object", {}],
        ["array", [1, 2]],
        ["ArrayBuffer", new ArrayBuffer(2)],
        ["DataView", new DataView(new ArrayBuffer(2))],
        ["Uint16Array", new Uint16Array(2)],
        ["Int8Array", new Int8Array(2)],
        ["Uint8ClampedArray", new Uint8ClampedArray(2)],
      ].map(([what, value]) => [`value ${what}`, ({ lessor }) => lessor.put("k", value)]),
      ["put options a string", ({ lessor }) => lessor.put("k", "v", "x")],
      ...BAD_IDS.filter(([what]) => what !== "null").map(([what, lease]) => [
        `lease ${what}`,
        ({ lessor }) => lessor.put("k", "v", { lease }),
      ]),
      ["lease unknown", ({ lessor }) => lessor.put("k", "v", { lease: "0000000000000001" }), "LeaseNotFound"],
      ["delete options a number", ({ lessor }) => lessor.delete("held", 5)],
    ]));

  test("a Buffer is a Uint8Array: stored as bytes", () => {
    const { lessor } = setup();
    lessor.put("b", Buffer.from("ab"));
    const v = lessor.get("b").value;
    assert.ok(v instanceof Uint8Array);
    assert.deepEqual([...v], [97, 98]);
    lessor.close();
  });
});

describe("promote, demote", () => {
  test("bad extensions", () =>
    rejects([
      ...BAD_NUMBERS.filter(([what]) => what !== "undefined").map(([what, ms]) => [
        `extendMs ${what}`,
        ({ lessor }) => lessor.promote(ms),
      ]),
      ["extendMs negative", ({ lessor }) => lessor.promote(-1)],
      ["extendMs 1e300", ({ lessor }) => lessor.promote(1e300)],
    ]));

  test("the largest extension still expires", () => {
    const { lessor, clock, id } = setup();
    lessor.demote();
    lessor.promote(9e12);
    assert.equal(lessor.nextDeadline(), T0 + 9e12 + 60_000);
    clock.now = T0 + 9e12 + 60_000;
    assert.deepEqual(lessor.tick().map((e) => e.id), [id]);
    lessor.close();
  });
});

describe("constructor options", () => {
  const bad = [
    ["options a string", "x"],
    ["options a number", 5],
    ["now a number", { now: 5 }],
    ["now a string", { now: "Date.now" }],
    ["minTtl 0", { minTtl: 0 }],
    ["minTtl fraction", { minTtl: 1.5 }],
    ["minTtl a string", { minTtl: "1" }],
    ["minTtl over 9e9", { minTtl: 9e9 + 1 }],
    ["revokeRate 0", { revokeRate: 0 }],
    ["revokeRate 2^32", { revokeRate: 2 ** 32 }],
    ["maxKeyBytes -1", { maxKeyBytes: -1 }],
    ["maxValueBytes NaN", { maxValueBytes: NaN }],
    ["maxKeysPerLease Infinity", { maxKeysPerLease: Infinity }],
    ["storage without write", { storage: {} }],
    ["storage a number", { storage: 5 }],
    ["restore a number", { restore: 5 }],
    ["restore a string", { restore: "ab" }],
    ["restore entry too short", { restore: [["k"]] }],
    ["restore key a number", { restore: [[5, "v"]] }],
    ["restore value a number", { restore: [["k", 5]] }],
  ];
  for (const [what, opts] of bad) {
    test(what, () => throwsCode(() => new Lessor(opts), "InvalidArgument"));
  }

  test("a corrupt stored entry: CorruptEntry naming it", () => {
    assert.throws(
      () => new Lessor({ autoTick: false, restore: [["v1/lease/zz", "junk"]] }),
      (e) => e instanceof LeaseError && e.code === "CorruptEntry" && e.entry === "v1/lease/zz",
    );
  });
});

describe("the clock", () => {
  for (const [what, value] of [
    ["NaN", NaN],
    ["a string", "1700000000000"],
    ["undefined", undefined],
    ["Infinity", Infinity],
    ["1e300", 1e300],
    ["a bigint", 1700000000000n],
    ["a Date", new Date(T0)],
  ]) {
    test(`returning ${what}: InvalidArgument from every clocked method`, () => {
      const { lessor, clock, id } = setup();
      const before = lessor.snapshot();
      clock.now = value;
      for (const call of clockedCalls(lessor, id)) {
        throwsCode(call, "InvalidArgument");
      }
      // (A snapshot reads the clock too: which leases are past their deadline.)
      clock.now = T0;
      assert.deepEqual(lessor.snapshot(), before);
      works(lessor);
      lessor.close();
    });
  }

  test("a bad clock at construction, with storage", () =>
    throwsCode(() => new Lessor({ now: () => NaN, storage: { write() {} } }), "InvalidArgument"));
});

// Every method that reads the clock, with valid arguments.
function clockedCalls(lessor, id) {
  return [
    () => lessor.grant(10),
    () => lessor.renew(id),
    () => lessor.revoke(id),
    () => lessor.timeToLive(id),
    () => lessor.leases(),
    () => lessor.put("k", "v"),
    () => lessor.get("held"),
    () => lessor.range(),
    () => lessor.delete("held"),
    () => lessor.tick(),
    () => lessor.promote(),
    () => lessor.demote(),
    () => lessor.checkpoint(id, 10),
    () => lessor.snapshot(),
    () => lessor.snapshotEntries().next(),
  ];
}

describe("after close()", () => {
  test("every method throws Closed; close is idempotent", () => {
    const { lessor, id } = setup();
    lessor.close();
    lessor.close();
    for (const call of [
      ...clockedCalls(lessor, id),
      () => lessor.nextDeadline(),
      () => lessor.revision,
      () => lessor.isPrimary,
      () => lessor.snapshot(),
    ]) {
      throwsCode(call, "Closed");
    }
    // Bad input to a closed lessor still reports Closed first.
    throwsCode(() => lessor.grant("x"), "Closed");
    assert.equal(typeof lessor.memoryBytes(), "number");
    return lessor.flush();
  });

  test("other instances are unaffected", () => {
    const a = setup();
    const b = setup();
    a.lessor.close();
    works(b.lessor);
    assert.equal(b.lessor.get("held").value, "v");
    b.lessor.close();
  });
});

describe("re-entrant calls", () => {
  test("from event handlers: they work (events come after the operation)", () => {
    const { lessor, clock } = setup();
    const seen = [];
    lessor.addEventListener("grant", (e) => {
      seen.push(["grant", lessor.timeToLive(e.lease).ttl]);
      lessor.put(`lock/${e.lease}`, "mine", { lease: e.lease });
    });
    lessor.addEventListener("put", (e) => {
      seen.push(["put", e.key, lessor.get(e.key).value]);
    });
    lessor.addEventListener("expire", (e) => {
      seen.push(["expire", e.lease, lessor.get(`lock/${e.lease}`)]);
      if (seen.length < 10) lessor.grant(5);
    });
    const { id } = lessor.grant(1);
    assert.deepEqual(seen, [
      ["grant", 1],
      ["put", `lock/${id}`, "mine"],
    ]);
    // Expire everything: the expire handler grants again from inside tick.
    clock.now += 61_000;
    const expired = lessor.tick().map((e) => e.id);
    assert.equal(expired.length, 2);
    assert.ok(expired.includes(id));
    const regranted = lessor.leases();
    assert.equal(regranted.length, 2);
    for (const l of regranted) assert.equal(lessor.get(`lock/${l}`).value, "mine");
    works(lessor);
    lessor.close();
  });

  test("close() from an event handler", () => {
    const { lessor } = setup();
    lessor.addEventListener("put", () => lessor.close());
    assert.equal(lessor.put("k", "v").created, true);
    throwsCode(() => lessor.get("k"), "Closed");
  });

  // From inside the storage callback the core is mid-operation: the inner
  // call throws Reentrant, which fails the write, so the outer operation
  // throws StorageFailed and changes nothing.
  const inner = {
    get: (l) => l.get("held"),
    put: (l) => l.put("x", "y"),
    grant: (l) => l.grant(5),
    range: (l) => l.range(),
    revision: (l) => l.revision,
    snapshot: (l) => l.snapshot(),
    close: (l) => l.close(),
  };
  for (const [name, call] of Object.entries(inner)) {
    test(`${name} from inside the storage callback: Reentrant, outer StorageFailed`, () => {
      const clock = { now: T0 };
      let reenter = false;
      let innerError;
      const writes = [];
      const lessor = new Lessor({
        now: () => clock.now,
        autoTick: false,
        storage: {
          write(batch) {
            if (reenter) {
              reenter = false;
              try {
                call(lessor);
              } catch (e) {
                innerError = e;
                throw e;
              }
            }
            writes.push(batch);
          },
        },
      });
      const { id } = lessor.grant(60);
      lessor.put("held", "v", { lease: id });
      const before = lessor.snapshot();
      const nWrites = writes.length;

      reenter = true;
      throwsCode(() => lessor.put("held", "changed"), "StorageFailed");
      assert.ok(innerError instanceof LeaseError, String(innerError));
      assert.equal(innerError.code, "Reentrant");
      assert.deepEqual(lessor.snapshot(), before);
      assert.equal(writes.length, nWrites);
      assert.equal(lessor.get("held").value, "v");
      works(lessor);
      assert.equal(writes.length, nWrites + 3); // grant, put, revoke
      lessor.close();
    });
  }

  test("a storage callback throwing a non-Error: StorageFailed, nothing changes", () => {
    for (const thrown of ["a string", undefined, 42, { message: 5 }]) {
      let fail = false;
      const lessor = new Lessor({
        autoTick: false,
        now: () => T0,
        storage: {
          write() {
            if (fail) throw thrown;
          },
        },
      });
      lessor.put("k", "v");
      const before = lessor.snapshot();
      fail = true;
      throwsCode(() => lessor.put("k", "w"), "StorageFailed");
      throwsCode(() => lessor.grant(5), "StorageFailed");
      assert.deepEqual(lessor.snapshot(), before);
      fail = false;
      works(lessor);
      lessor.close();
    }
  });
});
