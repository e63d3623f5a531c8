// A SQLite-backed object for durable-layout.test.mjs: a DurableLessor in
// output-gate mode on a clock the test sets, whose stored rows the test can
// read out and write in (the rows of an older release, kept as fixtures).
import { DurableLessor } from "../../js/stores/durable-object.mjs";

const PREFIX = "edge-lease/";
function b64(u8) {
  let s = "";
  for (let i = 0; i < u8.length; i += 8192) s += String.fromCharCode(...u8.subarray(i, i + 8192));
  return btoa(s);
}
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const plain = (v) => (typeof v === "string" ? v : { bytes: b64(v) });

/** Everything a restore gives back that the stored layout carries. */
export function stateOf(l) {
  const leases = l.leases().sort();
  const history = [];
  for (let rev = 2; rev <= l.revision; rev++) {
    try {
      history.push([rev, l.range({ key: "\0", rangeEnd: "\0", revision: rev }).kvs.map((kv) => [plain(kv.key), plain(kv.value), kv.createRevision, kv.modRevision, kv.version, kv.lease])]);
    } catch (e) {
      history.push([rev, e.code]);
    }
  }
  return {
    revision: l.revision,
    nextDeadline: l.nextDeadline(),
    leases: leases.map((id) => [id, l.timeToLive(id, { keys: true })]),
    keys: l.range("").map((e) => ({ ...e, value: plain(e.value) })),
    history,
    host: l.hostEntry("alarms") && plain(l.hostEntry("alarms")),
  };
}

/** Writes of every kind, at clock times from `t0`: see durable-layout.test.mjs. */
export function writeScript(l, clock, t0) {
  clock.t = t0;
  const a = l.grant(60, { id: "00000000000000a1" }).id;
  const b = l.grant(3600, { id: "7fffffffffffff00" }).id;
  const gone = l.grant(5, { id: "ffffffffffffff05" }).id;
  l.put("svc/a", "one", { lease: a });
  l.put("svc/a", "two", { lease: a });
  l.put("svc/b b%/é", new Uint8Array([0, 255, 10, 13]), { lease: b });
  l.put("plain", "no lease");
  l.put("gone/x", "expires", { lease: gone });
  l.txn({ success: [{ put: { key: "t/1", value: "x", lease: b } }, { put: { key: "t/2", value: "y" } }, { deleteRange: { key: "plain" } }] });
  l.compact(l.revision - 2);
  l.put("after/compact", "z");
  l.setHostEntry("alarms", new Uint8Array([1, 2, 3]));
  clock.t = t0 + 40_000;
  l.renew(a);
  l.checkpoint(b, 1_000_000);
  clock.t = t0 + 45_000;
  l.tick();
}

// One operation of durable-layout.test.mjs's sequences.
function runOp(l, [name, ...a]) {
  if (name === "grant") return l.grant(a[0], { id: a[1] }).id;
  if (name === "put") return l.put(a[0], a[1] && a[1].bytes ? unb64(a[1].bytes) : a[1], { lease: a[2] ?? null }).revision;
  if (name === "big") return l.put(a[0], new Uint8Array(a[1]).fill(7)).revision;
  if (name === "delete") return l.deleteRange({ key: a[0], rangeEnd: a[1] }).deleted;
  if (name === "revoke") return l.revoke(a[0]).keys;
  if (name === "txn") return l.txn({ success: a[0] }).revision;
  if (name === "compact") return l.compact(a[0]);
  if (name === "host") return l.setHostEntry(a[0], unb64(a[1]));
  if (name === "checkpoint") return l.checkpoint(a[0], a[1]);
  throw new Error(`run ${name}?`);
}

export class Layout {
  constructor(ctx) {
    this.ctx = ctx;
    this.clock = { t: 0 };
  }

  // (`compactRows` comes as "Infinity" through JSON.)
  async open(options = {}) {
    const compactRows = options.compactRows === "Infinity" ? Infinity : options.compactRows;
    this.dl = await DurableLessor.open(this.ctx.storage, { outputGate: true, now: () => this.clock.t, maxValueBytes: 3 << 20, ...options, compactRows });
  }

  async fetch(request) {
    const { op, now, args = [] } = await request.json();
    try {
      if (now !== undefined) this.clock.t = now;
      let result = null;
      if (op === "load") {
        // Rows as an older release wrote them, before the lessor is opened.
        for (const [k, v] of args[0]) this.ctx.storage.kv.put(k, typeof v === "string" ? unb64(v) : v.s);
      } else if (op === "rows") {
        result = [...this.ctx.storage.kv.list({ prefix: PREFIX })].map(([k, v]) => [k, typeof v === "string" ? { s: v } : b64(v)]);
      } else if (op === "reopen") {
        await this.open(args[0]);
      } else {
        if (!this.dl) await this.open();
        const l = this.dl.lessor;
        if (op === "script") writeScript(l, this.clock, args[0]);
        else if (op === "put") l.put(args[0], args[1], args[2]);
        else if (op === "state") result = stateOf(l);
        else if (op === "run") result = runOp(l, args[0]);
        else throw new Error(`op ${op}?`);
        this.dl.arm();
      }
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
  fetch: (request, env) => env.LAYOUT.get(env.LAYOUT.idFromName("l")).fetch(request),
};
