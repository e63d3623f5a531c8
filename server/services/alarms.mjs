// etcd's alarms: a store of (member, alarm) entries that Maintenance/Alarm
// reads, raises and clears, and the rules they put on the other calls
// (etcd 3.4's alarmStore and its capped and corrupt appliers):
// - NOSPACE is raised by the first write that the quota refuses; while it
//   is up, every write that would take space (Put, a Txn with a put in
//   either branch, LeaseGrant; Lock, Campaign and Proclaim, whose recipes
//   put, answer it as Unknown as etcd's do) is refused with "database space
//   exceeded", whatever its size, until `etcdctl alarm disarm`. Reads,
//   deletes, revokes and compactions go on, so space can be freed first.
// - CORRUPT (raised only by a client here) refuses what etcd applies
//   through raft: Put, DeleteRange, a Txn that writes, Compact, LeaseGrant
//   and LeaseRevoke. Reads go on.
// Status lists them in `errors`, as etcd does. Unlike etcd's, the store is
// not persisted: after a restart NOSPACE comes back with the first write
// the quota refuses.
import { Code, Etcd, GrpcError } from "../errors.mjs";

const TYPES = ["NONE", "NOSPACE", "CORRUPT"];
const corrupt = () => new GrpcError(Code.DataLoss, "etcdserver: corrupt cluster");

/** An alarm type as etcd's enum name (the gateway may send the number). */
const typeOf = (v) => (typeof v === "number" ? TYPES[v] : (v ?? "NONE"));

/** Whether a Txn has an op `is` picks, in either branch, at any depth. */
function has(txn, is) {
  return [...(txn?.success ?? []), ...(txn?.failure ?? [])].some((op) => is(op) || (op.request_txn && has(op.request_txn, is)));
}
const always = () => true;

// What each alarm refuses: method -> (request) => refused.
const CAPPED = {
  "etcdserverpb.KV/Put": always,
  // (etcd's quota cost: puts only.)
  "etcdserverpb.KV/Txn": (req) => has(req, (op) => op.request_put),
  "etcdserverpb.Lease/LeaseGrant": always,
  "v3lockpb.Lock/Lock": always,
  "v3electionpb.Election/Campaign": always,
  "v3electionpb.Election/Proclaim": always,
};
// etcd's v3lock and v3election hand on their client's error unmapped.
const unmapped = (name) => name.startsWith("v3");
const CORRUPTED = {
  "etcdserverpb.KV/Put": always,
  "etcdserverpb.KV/DeleteRange": always,
  "etcdserverpb.KV/Txn": (req) => has(req, (op) => op.request_put || op.request_delete_range),
  "etcdserverpb.KV/Compact": always,
  "etcdserverpb.Lease/LeaseGrant": always,
  "etcdserverpb.Lease/LeaseRevoke": always,
};

export function createAlarms(member) {
  // "memberID alarm" -> { memberID, alarm }, in the order raised.
  const entries = new Map();
  const up = (alarm) => [...entries.values()].some((e) => e.alarm === alarm);
  const store = {
    /** The alarms of `type` ("NONE": all). */
    get(type = "NONE") {
      const t = typeOf(type);
      return [...entries.values()].filter((e) => t === "NONE" || e.alarm === t);
    },
    /** Raises `alarm` for `memberID`; the entry (an existing one as it was). */
    activate(memberID, alarm) {
      const k = `${memberID} ${alarm}`;
      if (!entries.has(k)) entries.set(k, { memberID: String(memberID), alarm });
      return entries.get(k);
    },
    /** Clears it; the entry cleared, or null if there was none. */
    deactivate(memberID, alarm) {
      const k = `${memberID} ${alarm}`;
      const e = entries.get(k) ?? null;
      entries.delete(k);
      return e;
    },
    /** Status's `errors`: etcd's text, trailing space included. */
    errors() {
      return [...entries.values()].map((e) => `memberID:${e.memberID} alarm:${e.alarm} `);
    },
    /**
     * `handler` for method `name` under the alarms' rules: refused while
     * one forbids it; a refusal by the quota raises NOSPACE.
     */
    guard(name, handler) {
      const capped = CAPPED[name];
      const checked = CORRUPTED[name];
      if (!capped && !checked) return handler;
      const noSpace = () => (unmapped(name) ? new GrpcError(Code.Unknown, Etcd.noSpace().message) : Etcd.noSpace());
      const raise = (e) => {
        if (capped && e?.message === Etcd.noSpace().message) {
          store.activate(member.id, "NOSPACE");
          throw noSpace();
        }
        throw e;
      };
      return (req, call) => {
        if (checked && up("CORRUPT") && checked(req)) throw corrupt();
        if (capped && up("NOSPACE") && capped(req)) throw noSpace();
        let res;
        try {
          res = handler(req, call);
        } catch (e) {
          raise(e);
        }
        return typeof res?.then === "function" ? res.catch(raise) : res;
      };
    },
  };
  return store;
}

/** Maintenance/Alarm on `alarms`, as etcd answers it (no header, ever). */
export function alarmRpc(alarms, req) {
  const action = req.action ?? "GET";
  const type = typeOf(req.alarm);
  const member = String(req.memberID ?? "0");
  if (action === "GET" || action === 0) {
    const list = alarms.get(type);
    return list.length ? { alarms: list } : {};
  }
  const e = action === "ACTIVATE" || action === 1 ? alarms.activate(member, type) : alarms.deactivate(member, type);
  return e ? { alarms: [e] } : {};
}
