// The Durable Object of fence.test.mjs: a resource fenced with
// edge-lease/fenced, its fence kept in the object's storage ("storage") or
// in a DurableLessor in that storage ("lessor"). Each accepted write appends
// its token to a log in storage with a read-modify-write across turns, as a
// real resource would.
import { fenced } from "../../js/fenced.js";
import { DurableLessor } from "../../js/stores/durable-object.mjs";

const turn = () => new Promise((r) => setTimeout(r, 1));

export class Resource {
  constructor(ctx) {
    this.ctx = ctx;
    this.opening = null;
  }

  async store(kind) {
    if (kind === "storage") return this.ctx.storage;
    this.opening ??= DurableLessor.open(this.ctx.storage);
    return (await this.opening).lessor;
  }

  async fetch(request) {
    const { op, kind, token } = await request.json();
    const storage = this.ctx.storage;
    const fence = fenced(await this.store(kind), `fence-${kind}`);
    const logKey = `log-${kind}`;
    if (op === "state") return Response.json({ highest: await fence.highest(), log: (await storage.get(logKey)) ?? [] });
    try {
      await fence.write(token, async () => {
        const log = (await storage.get(logKey)) ?? [];
        await turn();
        await storage.put(logKey, [...log, token]);
      });
      return Response.json({ ok: true });
    } catch (e) {
      return Response.json({ ok: false, code: e.code, token: e.token, highest: e.highest });
    }
  }
}

export default {
  fetch(request, env) {
    return env.RESOURCE.get(env.RESOURCE.idFromName("one")).fetch(request);
  },
};
