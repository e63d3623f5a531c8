// The "churn" workload, shared by every JS system. crates/core/benches/native.rs runs the
// same workload natively: keep the constants and steps in sync with it.
//
// A system (see benches/systems/) has grant(ttlSeconds) -> id,
// put(key, value, id), renew(id), get(key) -> value | undefined,
// tick() -> number expired, count() -> live leases, and optionally close()
// and memoryBytes().

export const TTL_S = 10;
// The injected clock starts here (ms), not at 0, so nothing relies on a zero
// epoch.
export const START_MS = 1_000_000;
// The clock advances 1 ms every OPS_PER_MS operations (a server doing ~1M
// lease operations per second). Deterministic, and it keeps every renew round
// well inside the 10 s TTL even at 1M leases. It also fixes how many entries
// share one expiry millisecond (1000), which matters to ttlcache.
export const OPS_PER_MS = 1000;
// Same 8-byte value for every key: bytes/lease measures lease and key
// bookkeeping, not payloads.
export const VALUE = "10.0.0.1";
export const RENEW_ROUNDS = 3;
export const STEPS = ["grant_put", "renew", "get", "expire"];

// Timed repetitions per N (the median is reported): small N runs are too short
// to time once, large ones too long to repeat.
export function repsFor(n) {
  if (n <= 1_000) return 15;
  if (n <= 10_000) return 7;
  if (n <= 100_000) return 3;
  return 1;
}

const ns = (t0) => Number(process.hrtime.bigint() - t0);

// Expire everything: jump the clock past every deadline and tick until no
// lease is left. Returns how many leases the ticks reported.
function expireAll(sys, clock) {
  clock.now += TTL_S * 1000 + 1000;
  let expired = 0;
  while (sys.count() > 0) {
    const k = sys.tick();
    if (!(k > 0)) throw new Error(`tick made no progress with ${sys.count()} leases left`);
    expired += k;
  }
  return expired;
}

// Memory only: bytes added by step 1 (N leases, each with its key), per lease.
//
// The heap moves by a few hundred KB on its own (lazily allocated feedback,
// compiled code, caches), which at N = 1k would be hundreds of bytes per
// lease. So below 100k this fills ceil(100k / N) instances of N leases each,
// all alive at once, and divides the total: per-instance costs still count,
// and the noise drops to a few bytes per lease.
//
// Meant to run in a fresh process before any other sizeable run: a wasm
// system's memoryBytes() is its linear memory, which never shrinks, so it
// must not have been grown already.
export function measureMemory(factory, n) {
  const instances = Math.ceil(100_000 / n);
  // One clock for all instances: ttlcache's clock is process-global.
  const clock = { now: START_MS };
  const systems = [];
  let ops = 0;
  globalThis.gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let wasmBefore = 0;
  let wasmAfter = 0;
  for (let k = 0; k < instances; k++) {
    const sys = factory.create(clock);
    if (k === 0 && sys.memoryBytes) wasmBefore = sys.memoryBytes();
    for (let i = 0; i < n; i++) {
      sys.put("svc/" + i, VALUE, sys.grant(TTL_S));
      if (++ops % OPS_PER_MS === 0) clock.now++; // same clock rule as churn()
    }
    if (sys.count() !== n) throw new Error(`memory run: ${sys.count()} live leases, want ${n}`);
    if (sys.memoryBytes) wasmAfter = sys.memoryBytes();
    systems.push(sys);
  }
  globalThis.gc();
  const heapPerLease = (process.memoryUsage().heapUsed - heapBefore) / (n * instances);
  for (let k = 0; k < instances; k++) {
    expireAll(systems[k], clock);
    systems[k].close?.();
  }
  const memory = { memoryInstances: instances };
  if (systems[0].memoryBytes) {
    return {
      ...memory,
      bytesPerLease: (wasmAfter - wasmBefore) / (n * instances),
      memorySource: "memoryBytes() (wasm linear memory)",
      heapBytesPerLease: heapPerLease,
    };
  }
  return { ...memory, bytesPerLease: heapPerLease, memorySource: "V8 heapUsed delta after gc" };
}

// One full churn run on a fresh system. Returns ns/op per step: grant_put per
// lease (one grant + one put), renew per renew call, get per get, expire per
// lease expired.
export function churn(factory, n) {
  const clock = { now: START_MS };
  const ids = new Array(n).fill(0);
  let ops = 0;
  const sys = factory.create(clock);

  // (1) grant + put with the lease. Keys are built inside the loop, as a
  // server would from a request, and identically for every system.
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const id = sys.grant(TTL_S);
    sys.put("svc/" + i, VALUE, id);
    ids[i] = id;
    if (++ops % OPS_PER_MS === 0) clock.now++;
  }
  const grant_put = ns(t0) / n;
  if (sys.count() !== n) throw new Error(`grant+put: ${sys.count()} live leases, want ${n}`);

  // (2) renew every lease RENEW_ROUNDS times
  t0 = process.hrtime.bigint();
  for (let r = 0; r < RENEW_ROUNDS; r++) {
    for (let i = 0; i < n; i++) {
      sys.renew(ids[i]);
      if (++ops % OPS_PER_MS === 0) clock.now++;
    }
  }
  const renew = ns(t0) / (n * RENEW_ROUNDS);

  // (3) get every key
  let hits = 0;
  t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    if (sys.get("svc/" + i) !== undefined) hits++;
    if (++ops % OPS_PER_MS === 0) clock.now++;
  }
  const get = ns(t0) / n;
  if (hits !== n) throw new Error(`get: ${hits} hits, want ${n}`);

  // (4) move the clock past every deadline, tick until all have expired
  t0 = process.hrtime.bigint();
  const expired = expireAll(sys, clock);
  const expire = ns(t0) / n;
  if (expired !== n) throw new Error(`expire: ticks reported ${expired}, want ${n}`);
  if (sys.get("svc/0") !== undefined) throw new Error("expired key still readable");
  sys.close?.();

  return { grant_put, renew, get, expire };
}

function median(xs) {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Everything for one (system, N), in the order that keeps measurements clean:
// a tiny run so the code is compiled, the memory run, a warm-up of 50k
// leases, then the
// timed repetitions (gc before each so one rep's garbage is not collected
// inside the next one's timings).
export function runSystem(factory, n) {
  churn(factory, 64);
  const memory = measureMemory(factory, n);
  // Warm up with at least 50k leases in all, so the timed runs measure
  // optimized code: at small N one run is too short for the JIT to tier up,
  // and the larger a system's JS, the more that skews it.
  for (let done = 0; done < 50_000; done += Math.min(n, 10_000)) churn(factory, Math.min(n, 10_000));
  const reps = repsFor(n);
  const all = [];
  for (let r = 0; r < reps; r++) {
    globalThis.gc();
    // A forced gc() leaves every system slow for a while (edge-lease most:
    // its renew measured 2-15x slower in the first 20k leases after one,
    // with spikes in get). Re-warm with 20k leases so each rep measures the
    // steady state of a running process, for every system alike.
    for (let k = 0; k < 20; k++) churn(factory, 1_000);
    all.push(churn(factory, n));
  }
  const steps = {};
  for (const s of STEPS) steps[s] = Math.round(median(all.map((x) => x[s])) * 10) / 10;
  return { reps, steps, ...memory };
}
