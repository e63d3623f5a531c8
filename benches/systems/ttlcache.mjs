// (c) @isaacs/ttlcache: one cache entry per lease (the lease's one key),
// renew = setTTL, expiry = purgeStale().
import { createRequire } from "node:module";
import { TTLCache } from "@isaacs/ttlcache";

const { version } = createRequire(import.meta.url)("@isaacs/ttlcache/package.json");

export default {
  name: "ttlcache",
  version,
  create(clock) {
    // ttlcache has no clock option: it reads time only through the global
    // performance.now(), so point that at the injected clock. Safe because
    // each (system, N) runs in its own process.
    performance.now = () => clock.now;
    // checkAgeOnGet: like a lessor, never return a key past its deadline.
    const cache = new TTLCache({ checkAgeOnGet: true });
    // ttlcache knows entries, not leases: remember each lease's key and TTL
    // (plain arrays indexed by id, the cheapest bookkeeping there is).
    const keyOf = [];
    const ttlMsOf = [];
    let nextId = 0;
    return {
      grant(ttl) {
        const id = nextId++;
        ttlMsOf[id] = ttl * 1000;
        return id;
      },
      put(key, value, id) {
        keyOf[id] = key;
        cache.set(key, value, { ttl: ttlMsOf[id] });
      },
      renew(id) {
        cache.setTTL(keyOf[id], ttlMsOf[id]);
      },
      get: (key) => cache.get(key),
      tick() {
        const before = cache.size;
        cache.purgeStale();
        return before - cache.size;
      },
      count: () => cache.size,
      // Drop its (unref'd) purge timer.
      close: () => cache.cancelTimer(),
    };
  },
};
