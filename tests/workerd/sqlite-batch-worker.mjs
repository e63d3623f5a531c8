// A SQLite-backed object for durable-object.test.mjs: a DurableLessor in
// output-gate mode whose engine takes values larger than the storage does,
// so that a batch can hold one entry the storage refuses.
import { DurableLessor } from "../../js/stores/durable-object.mjs";

export class Batches {
  constructor(ctx) {
    this.ctx = ctx;
  }

  async fetch(request) {
    const { op, args = [] } = await request.json();
    this.dl ??= await DurableLessor.open(this.ctx.storage, { outputGate: true, maxValueBytes: 3 * 1024 * 1024 });
    const l = this.dl.lessor;
    try {
      let result = null;
      if (op === "txn") {
        const [puts] = args;
        result = l.txn({ success: puts.map(([key, size]) => ({ put: { key, value: new Uint8Array(size) } })) }).revision;
      } else if (op === "keys") {
        const text = (k) => (typeof k === "string" ? k : new TextDecoder().decode(k));
        result = l.range({ key: "\0", rangeEnd: "\0" }).kvs.map((kv) => [text(kv.key), kv.value.length]);
      } else if (op === "stored") {
        result = [...this.ctx.storage.kv.list({ prefix: "edge-lease/" })].length;
      } else if (op === "reopen") {
        this.dl = await DurableLessor.open(this.ctx.storage, { outputGate: true, maxValueBytes: 3 * 1024 * 1024 });
      }
      return Response.json({ result });
    } catch (e) {
      return Response.json({ error: e.code ?? "Error", message: e.message });
    }
  }
}

export default {
  fetch: (request, env) => env.BATCHES.get(env.BATCHES.idFromName("b")).fetch(request),
};
