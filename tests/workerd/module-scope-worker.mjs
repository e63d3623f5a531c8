// A Worker that makes its Lessors at module scope, as a Worker keeps state
// across requests. workerd refuses random values and timers at global scope
// ("Disallowed operation called within global scope"): importing and
// constructing must still work there, and the first call made inside a
// handler makes the core, seeded from the OS's randomness.
import { Lessor } from "../../js/entries/workerd.mjs";

const lessor = new Lessor();
const manual = new Lessor({ autoTick: false, minTtl: 2 });
const closed = new Lessor();
closed.close();

// A call at global scope cannot have randomness: a clear NoEntropy.
let atGlobalScope;
try {
  new Lessor().grant(10);
  atGlobalScope = "granted";
} catch (e) {
  atGlobalScope = { code: e.code, message: e.message };
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/global") return Response.json(atGlobalScope);
    if (url.pathname === "/closed") {
      try {
        closed.grant(10);
        return Response.json("granted");
      } catch (e) {
        return Response.json(e.code);
      }
    }
    const ttl = Number(url.searchParams.get("ttl") ?? 10);
    const g = lessor.grant(ttl);
    lessor.put(`k/${g.id}`, "v", { lease: g.id });
    const m = manual.grant(1);
    return Response.json({
      id: g.id,
      manualTtl: m.ttl,
      keys: lessor.range("k/").map((e) => e.key),
      revision: lessor.revision,
    });
  },
};
