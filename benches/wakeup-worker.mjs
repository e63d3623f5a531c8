// The Worker benches/wakeup.mjs wakes: edge-lease/worker as deployed, whose
// LeaseNamespace can be made to stop part-way through its wake-up
// (`WAKE_STAGE`, a binding set per runtime), so that the first answer's
// time splits into the stages the object goes through: `none` (an object
// that reads nothing), `read` (every stored row the store gives a restore,
// read), `decode` (those handed to the engine's decoder, no lessor built),
// `build` (the lessor built from them, by itself), `restore` (the lessor
// restored: DurableLessor.open), `full` (the real
// object: the etcd services and gateway too, answering the range). Timers
// in workerd do not move while code runs, so the stages are told apart
// from outside.
import { DurableLessor, DurableObjectStore, sqliteBacked } from "edge-lease/stores/durable-object";
import * as engine from "../dist/engine/edge_lease.js";
import { packEntryParts, StoredEntries } from "../js/codec.js";
import { Lessor } from "../worker/engine.mjs";
import { engineOptions, LeaseNamespace as Real } from "../worker/namespace.mjs";
import { fetchWorker } from "../worker/router.mjs";

// What the store hands a restore: its journal, then entry lists as stored,
// or pairs.
async function* items(storage) {
  const entries = await new DurableObjectStore(storage).entries();
  if (!(entries instanceof StoredEntries)) return yield* entries;
  yield { journal: entries.journal };
  yield* entries.items();
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
        for await (const item of items(storage)) {
          n++;
          if (item instanceof Uint8Array) bytes += item.length;
          else if (Array.isArray(item)) bytes += item[0].length + (typeof item[1] === "string" ? item[1].length : item[1].byteLength);
          else for (const b of item.journal) bytes += b.length;
        }
        this.#answer = { stage, items: n, bytes };
      } else if (stage === "decode" || stage === "build") {
        // As js/binding.js hands them over (a restore's first half).
        const r = new engine.RawRestore();
        let pairs = [];
        const flush = () => {
          packEntryParts(pairs, 1 << 20, (part) => r.add(part));
          pairs = [];
        };
        for await (const item of items(storage)) {
          if (item instanceof Uint8Array) {
            flush();
            r.add(item);
          } else if (Array.isArray(item)) {
            if (pairs.push(item) >= 4096) flush();
          } else for (const b of item.journal) r.journal(b);
        }
        flush();
        if (stage === "build") engine.RawLessor.restore(engine.defaults(), r, Date.now(), undefined).free();
        else r.free();
        this.#answer = { stage };
      } else if (stage === "lessor") {
        // The Lessor alone, as DurableLessor.open makes it (no alarm, no sync).
        const store = new DurableObjectStore(storage, undefined, { outputGate: true });
        const l = new Lessor({ ...engineOptions(env, true), autoTick: false, storage: store, restore: await store.entries() });
        this.#answer = { stage, revision: l.revision };
      } else if (stage === "restore") {
        const dl = await DurableLessor.open(storage, { ...engineOptions(env, sqliteBacked(storage)), outputGate: true, Lessor });
        this.#answer = { stage, revision: dl.lessor.revision };
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
