// One small scenario that every runtime runs against the installed package.
// It has no imports and closes over nothing, because the runners embed its
// source (`scenario.toString()`) into ESM, CJS, worker and page scripts.
// It returns plain JSON so each runtime can print it for the test to compare.

export function scenario({ Lessor, LeaseError, leaseId }) {
  let now = 1_700_000_000_000;
  const lessor = new Lessor({ now: () => now, autoTick: false });
  const caught = (f) => {
    try {
      f();
      return "no error";
    } catch (e) {
      return { code: e.code, leaseError: e instanceof LeaseError };
    }
  };
  // The API surface, so a stale build of one entry (dist/node.cjs is a
  // committed bundle) shows up as a difference.
  const out = { methods: Object.getOwnPropertyNames(Lessor.prototype).sort() };
  const { id, ttl } = lessor.grant(10);
  out.grant = { ttl, hexId: /^[0-9a-f]{16}$/.test(id) };
  lessor.put("job/1", "alive", { lease: id });
  out.before = lessor.get("job/1")?.value ?? null;
  now += 12_000;
  out.after = lessor.get("job/1")?.value ?? null;
  out.tick = lessor.tick().map((e) => ({ sameId: e.id === id, keys: e.keys }));
  out.renewExpired = caught(() => lessor.renew(id));
  lessor.put("bin", new Uint8Array([0, 1, 127, 128, 255]));
  const bytes = lessor.get("bin").value;
  out.bytes = { isUint8Array: bytes instanceof Uint8Array, data: Array.from(bytes) };
  out.badTtl = caught(() => lessor.grant(1.5));
  out.leaseId = { fromBigint: leaseId(-1n), bad: caught(() => leaseId("FF")) };
  lessor.close();
  return out;
}

export const expected = {
  grant: { ttl: 10, hexId: true },
  before: "alive",
  after: null,
  tick: [{ sameId: true, keys: ["job/1"] }],
  renewExpired: { code: "LeaseNotFound", leaseError: true },
  bytes: { isUint8Array: true, data: [0, 1, 127, 128, 255] },
  badTtl: { code: "InvalidArgument", leaseError: true },
  leaseId: { fromBigint: "ffffffffffffffff", bad: { code: "InvalidArgument", leaseError: true } },
};
