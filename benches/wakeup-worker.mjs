// The Worker benches/wakeup.mjs wakes: edge-lease/worker as deployed, whose
// LeaseNamespace can be made to stop part-way through its wake-up
// (`WAKE_STAGE`, a binding set per runtime), so that the first answer's
// time splits into the stages the object goes through: `none` (an object
// that reads nothing), `read` (every stored row listed), `decode` (the rows
// handed to the engine's decoder, no lessor built), `restore` (the lessor
// restored: DurableLessor.open), `full` (the real object: the etcd
// services and gateway too, answering the range). Timers in workerd do not
// move while code runs, so the stages are told apart from outside.
import { DurableLessor, sqliteBacked } from "edge-lease/stores/durable-object";
import * as engine from "../dist/engine/edge_lease.js";
import { packEntryParts } from "../js/codec.js";
import { Lessor } from "../worker/engine.mjs";
import { engineOptions, LeaseNamespace as Real } from "../worker/namespace.mjs";
import { fetchWorker } from "../worker/router.mjs";

const PREFIX = "edge-lease/";

function* rows(storage) {
  for (const [k, v] of storage.kv.list({ prefix: PREFIX })) yield [k.slice(PREFIX.length), v];
}

export class LeaseNamespace {
  #real = null;
  #answer = null;

  constructor(ctx, env) {
    const stage = env.WAKE_STAGE ?? "full";
    if (stage === "full") {
      this.#real = new Real(ctx, env);
      return;
    }
    ctx.blockConcurrencyWhile(async () => {
      const storage = ctx.storage;
      if (stage === "none") this.#answer = { stage };
      else if (stage === "read") {
        let n = 0;
        let bytes = 0;
        for (const [k, v] of rows(storage)) {
          n++;
          bytes += k.length + (typeof v === "string" ? v.length : v.byteLength);
        }
        this.#answer = { stage, rows: n, bytes };
      } else if (stage === "decode") {
        const r = new engine.RawRestore();
        let parts = 0;
        for (const part of packEntryParts(rows(storage), 1 << 20)) {
          r.add(part);
          parts++;
        }
        r.free();
        this.#answer = { stage, parts };
      } else if (stage === "restore") {
        const dl = await DurableLessor.open(storage, { ...engineOptions(env, sqliteBacked(storage)), outputGate: true, Lessor });
        this.#answer = { stage, leases: dl.lessor.leases().length };
      } else throw new Error(`WAKE_STAGE ${stage}?`);
    });
  }

  async fetch(request) {
    if (this.#real) return this.#real.fetch(request);
    return Response.json(this.#answer);
  }

  async alarm() {
    await this.#real?.alarm();
  }
}

export default { fetch: fetchWorker };
