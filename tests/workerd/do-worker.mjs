// The Durable Object used by durable-object.test.mjs. Each request carries
// the test's clock (`now`) and one operation; the object answers with its
// result after `sync()`, as a real object would before responding.
import { DurableLessor } from "../../js/stores/durable-object.mjs";

// Every lessor this isolate opened, oldest first: a test reads whether the
// ones of evicted instances were closed.
const opened = [];

function plain(v) {
  return typeof v === "string" ? v : { bytes: [...v] };
}

export class Leases {
  constructor(ctx) {
    this.ctx = ctx;
    this.t = 0;
    this.failing = false;
    // Keys per put/delete call of each transaction, for the test to check
    // the 128-key limit (Miniflare does not enforce it).
    this.txns = [];
    // ctx.storage, except that transactions can be made to fail.
    const s = ctx.storage;
    this.storage = {
      list: (o) => s.list(o),
      getAlarm: () => s.getAlarm(),
      setAlarm: (t) => s.setAlarm(t),
      transaction: (fn) => {
        if (this.failing) return Promise.reject(new Error("injected failure"));
        const calls = [];
        this.txns.push(calls);
        return s.transaction((txn) =>
          fn({
            put: (o) => (calls.push(Object.keys(o).length), txn.put(o)),
            delete: (keys) => (calls.push(keys.length), txn.delete(keys)),
          }),
        );
      },
    };
  }

  async open() {
    this.dl = await DurableLessor.open(this.storage, { now: () => this.t, id: String(this.ctx.id) });
    opened.push(this.dl.lessor);
  }

  async fetch(request) {
    const { now, op, args = [] } = await request.json();
    this.t = now;
    try {
      if (!this.dl) await this.open();
      const l = this.dl.lessor;
      let result = null;
      let changed = false;
      switch (op) {
        case "alarm":
          await this.dl.alarm();
          break;
        case "getAlarm":
          result = await this.ctx.storage.getAlarm();
          break;
        case "txns":
          result = this.txns.splice(0);
          break;
        case "fail":
          this.failing = args[0];
          break;
        case "reopen":
          await this.open();
          break;
        case "putBytes":
          result = l.put(args[0], new Uint8Array(args[1]), args[2]);
          changed = true;
          break;
        case "putMany":
          for (let i = 0; i < args[1]; i++) l.put(`${args[0]}${i}`, "x", { lease: args[2] });
          changed = true;
          break;
        case "opened":
          // Whether each lessor opened here before is closed (its call throws Closed).
          result = opened.map((o) => {
            try {
              return o.revision >= 0 ? "open" : "?";
            } catch (e) {
              return e.code;
            }
          });
          break;
        case "state":
          result = {
            revision: l.revision,
            nextDeadline: l.nextDeadline(),
            leases: Object.fromEntries(l.leases().map((id) => [id, l.timeToLive(id, { keys: true })])),
            keys: l.range("").map((e) => ({ ...e, value: plain(e.value) })),
          };
          break;
        default:
          result = l[op](...args);
          changed = true;
      }
      if (changed) await this.dl.sync();
      return Response.json({ result });
    } catch (e) {
      return Response.json({ error: e.code ?? "Error", message: e.message });
    }
  }

  async alarm() {
    if (!this.dl) await this.open();
    await this.dl.alarm();
  }
}

export default {
  fetch(request, env) {
    const stub = env.LEASES.get(env.LEASES.idFromName("test"));
    return stub.fetch(request);
  },
};
