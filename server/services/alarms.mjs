// etcd's alarms: a store of (member, alarm) entries that Maintenance/Alarm
// reads, raises and clears, and the one applier they select, as etcd 3.4's
// alarmStore and applyV3 do. Raising the first entry of NOSPACE or CORRUPT
// switches to that alarm's rules (the last raised wins); clearing the last
// entry of either goes back to none.
// - NOSPACE is raised by the first write the quota refuses. Under it every
//   write that takes space (Put, a Txn with a put at its top level,
//   LeaseGrant; Lock, Campaign and Proclaim, whose recipes put) is refused
//   with "database space exceeded" whatever its size, until `etcdctl alarm
//   disarm`; reads, deletes, revokes and compactions go on.
// - CORRUPT (raised only by a client here) refuses what etcd applies
//   through raft: Put, DeleteRange, a Txn that is not all reads at its top
//   level, Compact, LeaseGrant, LeaseRevoke, and the Lock and Election calls
//   that write. Reads go on. (Leases still expire here; etcd's expiry is a
//   revoke, which it refuses.)
// v3lock and v3election hand on their client's error unmapped: Unknown.
// Status lists the entries in `errors`. Unlike etcd's, the store is not
// persisted: after a restart (or a Durable Object's eviction) NOSPACE comes
// back with the next write the quota refuses, and CORRUPT is gone.
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { txnOps, txnReadOnly } from "./common.mjs";

const NAMES = ["NONE", "NOSPACE", "CORRUPT"];
const CORRUPT_MESSAGE = "etcdserver: corrupt cluster";

/** An alarm type as etcd's enum name, or its number when it has none. */
const typeOf = (v) => (v === undefined || v === null ? "NONE" : typeof v === "number" ? (NAMES[v] ?? v) : v);

const always = () => true;

// Under NOSPACE (etcd's applierV3Capped and its quota cost: top-level puts).
const CAPPED = {
  "etcdserverpb.KV/Put": always,
  "etcdserverpb.KV/Txn": (req) => txnOps(req).some((op) => op.request_put),
  "etcdserverpb.Lease/LeaseGrant": always,
  "v3lockpb.Lock/Lock": always,
  "v3electionpb.Election/Campaign": always,
  "v3electionpb.Election/Proclaim": always,
};
// Under CORRUPT (what is not served without raft; etcd's isTxnReadonly).
const CORRUPTED = {
  "etcdserverpb.KV/Put": always,
  "etcdserverpb.KV/DeleteRange": always,
  "etcdserverpb.KV/Txn": (req) => !txnReadOnly(req),
  "etcdserverpb.KV/Compact": always,
  "etcdserverpb.Lease/LeaseGrant": always,
  "etcdserverpb.Lease/LeaseRevoke": always,
  "v3lockpb.Lock/Lock": always,
  "v3lockpb.Lock/Unlock": always,
  "v3electionpb.Election/Campaign": always,
  "v3electionpb.Election/Proclaim": always,
  "v3electionpb.Election/Resign": always,
};

export function createAlarms(member) {
  // "memberID alarm" -> { memberID, alarm }, in the order raised.
  const entries = new Map();
  let rules = null; // "NOSPACE", "CORRUPT" or null: etcd's applier
  const count = (alarm) => [...entries.values()].filter((e) => e.alarm === alarm).length;
  const store = {
    /** The alarms of `type` ("NONE": all). */
    get(type) {
      const t = typeOf(type);
      return [...entries.values()].filter((e) => t === "NONE" || e.alarm === t);
    },
    /** Raises `alarm` for `memberID`; the entry (an existing one as it was). */
    activate(memberID, alarm) {
      const k = `${memberID} ${alarm}`;
      if (!entries.has(k)) {
        entries.set(k, { memberID: String(memberID), alarm });
        if ((alarm === "NOSPACE" || alarm === "CORRUPT") && count(alarm) === 1) rules = alarm;
      }
      return entries.get(k);
    },
    /** Clears it; the entry cleared, or null if there was none. */
    deactivate(memberID, alarm) {
      const k = `${memberID} ${alarm}`;
      const e = entries.get(k) ?? null;
      if (e) {
        entries.delete(k);
        if ((alarm === "NOSPACE" || alarm === "CORRUPT") && count(alarm) === 0) rules = null;
      }
      return e;
    },
    /** Status's `errors`: each entry as etcd prints it (zero fields left out, a trailing space). */
    errors() {
      return [...entries.values()].map((e) => (e.memberID !== "0" ? `memberID:${e.memberID} ` : "") + (e.alarm !== "NONE" ? `alarm:${e.alarm} ` : ""));
    },
    /**
     * `handler` for method `name` under the alarms' rules: refused while
     * they forbid it; a refusal by the quota raises NOSPACE.
     */
    guard(name, handler) {
      const capped = CAPPED[name];
      const checked = CORRUPTED[name];
      if (!capped && !checked) return handler;
      const unmapped = name.startsWith("v3");
      const error = (code, message) => new GrpcError(unmapped ? Code.Unknown : code, message);
      const noSpace = () => error(Code.ResourceExhausted, Etcd.noSpace().message);
      const raise = (e) => {
        if (capped && e?.message === Etcd.noSpace().message) {
          store.activate(member.id, "NOSPACE");
          throw noSpace();
        }
        throw e;
      };
      return (req, call) => {
        if (rules === "CORRUPT" && checked?.(req)) throw error(Code.DataLoss, CORRUPT_MESSAGE);
        if (rules === "NOSPACE" && capped?.(req)) throw noSpace();
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
  let e;
  if (action === "GET" || action === 0) {
    const list = alarms.get(type);
    return list.length ? { alarms: list } : {};
  } else if (action === "ACTIVATE" || action === 1) e = alarms.activate(member, type);
  else if (action === "DEACTIVATE" || action === 2) e = alarms.deactivate(member, type);
  // (etcd 3.4 answers nothing for an unknown action, which its gateway
  // turns into a crash: an empty answer here.)
  return e ? { alarms: [e] } : {};
}
