// A Durable Object holding one DurableObjectStore, for the storage
// contract (durable-object.test.mjs): each request is one store call.
import { DurableObjectStore } from "../../js/stores/durable-object.mjs";

export class StoreHost {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = new DurableObjectStore(ctx.storage);
  }

  async fetch(request) {
    const { op, put = [], del = [] } = await request.json();
    try {
      if (op === "wipe") await this.ctx.storage.deleteAll();
      if (op === "write") {
        const value = (v) => (v.b ? new Uint8Array(v.b) : v.fn ? () => {} : v.s);
        await this.store.write({ put: put.map(([k, v]) => [k, value(v)]), delete: del });
      }
      if (op === "entries") {
        const out = [];
        for (const [k, v] of await this.store.entries()) out.push([k, typeof v === "string" ? { s: v } : { b: Array.from(v) }]);
        return Response.json({ result: out });
      }
      return Response.json({ result: null });
    } catch (e) {
      return Response.json({ error: e.name ?? "Error", message: e.message });
    }
  }
}

export default {
  fetch: (request, env) => env.STORES.get(env.STORES.idFromName("contract")).fetch(request),
};
