// (d) The plain JS lessor written for the bench (benches/peers/plain-lessor.mjs).
// Its API mirrors edge-lease's, so this adapter does the same work as
// edge-lease.mjs (result objects included).
import { PlainLessor } from "../peers/plain-lessor.mjs";

export default {
  name: "plain-js",
  version: "bench",
  create(clock) {
    const lessor = new PlainLessor({ now: () => clock.now });
    return {
      grant: (ttl) => lessor.grant(ttl).id,
      put: (key, value, id) => lessor.put(key, value, { lease: id }),
      renew: (id) => lessor.renew(id),
      get: (key) => lessor.get(key)?.value,
      tick: () => lessor.tick().length,
      count: () => lessor.size,
    };
  },
};
