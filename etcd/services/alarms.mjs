// etcd's alarms: a store of (member, alarm) entries that Maintenance/Alarm
// reads, raises and clears, and the appliers they select, as etcd 3.4's
// alarmStore and applyV3 do. Raising the first entry of NOSPACE or CORRUPT
// switches to that alarm's rules (the last raised wins); clearing the last
// entry of either goes back to none. The entries are kept in the engine's
// store (a host entry), so they survive a restart as etcd's do; a restart
// then applies CORRUPT's rules over NOSPACE's for those present, as etcd's
// restoreAlarms does.
// - NOSPACE is raised by the first write the quota refuses. Under it every
//   write that takes space (Put, a Txn with a put at its top level,
//   LeaseGrant; Lock, Campaign and Proclaim, whose recipes put) is refused
//   with "database space exceeded" whatever its size, until `etcdctl alarm
//   disarm`; reads, deletes, revokes and compactions go on.
// - CORRUPT (raised only by a client here) refuses what etcd applies
//   through raft: Put, DeleteRange, a Txn that is not all reads at its top
//   level, Compact, LeaseGrant, LeaseRevoke, and the Lock and Election calls
//   that write. Reads go on. Expiry is a revoke, refused too: the engine
//   holds it (`lessor.holdExpiry`), so a lease past its deadline keeps its
//   keys, lists, and gives a negative TTL until the alarm is cleared; its
//   keepalives wait until then (services/lease.mjs).
// v3lock and v3election hand on their client's error unmapped: Unknown.
// Status lists the entries in `errors`.
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { throughErrors } from "./common.mjs";
import { policyOf } from "../methods.mjs";

const NAMES = ["NONE", "NOSPACE", "CORRUPT"];
const CORRUPT_MESSAGE = "etcdserver: corrupt cluster";

/** An alarm type as etcd's enum name, or its number when it has none. */
const typeOf = (v) => (v === undefined || v === null ? "NONE" : typeof v === "number" ? (NAMES[v] ?? v) : v);
/** An alarm type (as typeOf gives it) as etcd's enum number. */
export const alarmNumber = (type) => (typeof type === "number" ? type : NAMES.indexOf(type));


// The host entry that keeps them: a JSON array of [memberID, alarm] in the
// order raised; while CORRUPT holds expiry, `{ "alarms": that array,
// "heldSince": epoch ms }`, when the hold began, so that a restart (or a
// Durable Object's wake-up) holds the same leases.
const ENTRY = "alarms";
const keyOf = (memberID, alarm) => `${memberID} ${alarm}`;

function load(lessor) {
  const bytes = lessor?.hostEntry(ENTRY);
  const entries = new Map();
  if (bytes === undefined) return { entries, heldSince: null };
  let list;
  let heldSince = null;
  try {
    const doc = JSON.parse(new TextDecoder().decode(bytes));
    list = Array.isArray(doc) ? doc : doc?.alarms;
    if (!Array.isArray(list)) throw new Error("no list of alarms");
    if (!Array.isArray(doc) && doc.heldSince !== null && doc.heldSince !== undefined) {
      if (!Number.isSafeInteger(doc.heldSince)) throw new Error(`heldSince ${JSON.stringify(doc.heldSince)}`);
      heldSince = doc.heldSince;
    }
  } catch (e) {
    throw new Error(`edge-lease: the stored alarms are unreadable (${e.message})`);
  }
  for (const e of list) {
    const [memberID, alarm] = Array.isArray(e) ? e : [];
    if (typeof memberID !== "string" || !/^\d+$/.test(memberID) || !(typeof alarm === "string" || Number.isSafeInteger(alarm))) {
      throw new Error(`edge-lease: the stored alarms are unreadable (entry ${JSON.stringify(e)})`);
    }
    entries.set(keyOf(memberID, alarm), { memberID, alarm });
  }
  return { entries, heldSince };
}

/** The alarms of `member` (its id), kept in `lessor`'s store when it has one. */
export function createAlarms(member, lessor = null) {
  // "memberID alarm" -> { memberID, alarm }, in the order raised.
  const loaded = load(lessor);
  let entries = loaded.entries;
  const count = (alarm, of = entries) => [...of.values()].filter((e) => e.alarm === alarm).length;
  // The rule sets in force, checked in this order: etcd's applier. Under
  // CORRUPT's, expiry is held; what waits for its end (`released`) is woken.
  let rules;
  const waiting = [];
  const setRules = (next, since) => {
    rules = next;
    const held = rules.includes("CORRUPT");
    if (lessor && lessor.expiryHeld !== held) {
      // (From `since`, default now: a lease already past its deadline
      // then stays gone.)
      lessor.holdExpiry(held, since === null || since === undefined ? undefined : { since });
      if (!held) for (const wake of waiting.splice(0)) wake();
    }
  };
  setRules(["CORRUPT", "NOSPACE"].filter((a) => count(a) > 0), loaded.heldSince);
  const save = (next, heldSince) => {
    const list = [...next.values()].map((e) => [e.memberID, e.alarm]);
    // (The bare list while nothing is held, as earlier builds wrote it and
    // can read it.)
    const doc = heldSince === null ? list : { alarms: list, heldSince };
    lessor?.setHostEntry(ENTRY, new TextEncoder().encode(JSON.stringify(doc)));
    entries = next;
  };
  // The rules `next` entries select after `alarm` was raised or cleared.
  const rulesAfter = (next, alarm) => {
    if (alarm !== "NOSPACE" && alarm !== "CORRUPT") return rules;
    const n = count(alarm, next);
    if (n === 1 && count(alarm) === 0) return [alarm]; // the first raised
    if (n === 0 && count(alarm) === 1) return []; // the last cleared
    return rules;
  };
  // A change is stored with the hold as it will be; if the store refuses
  // it, nothing changed (a hold just begun is let go again: no lease can
  // have passed its deadline under it meanwhile).
  const change = (next, alarm) => {
    const before = rules;
    const after = rulesAfter(next, alarm);
    const holds = after.includes("CORRUPT");
    if (holds) setRules(after);
    try {
      save(next, holds ? (lessor?.expiryHeldSince ?? null) : null);
    } catch (e) {
      if (holds) setRules(before);
      throw e;
    }
    if (!holds) setRules(after);
  };
  const store = {
    /** The alarms of `type` ("NONE": all). */
    get(type) {
      const t = typeOf(type);
      return [...entries.values()].filter((e) => t === "NONE" || e.alarm === t);
    },
    /** Raises `alarm` for `memberID`; the entry (an existing one as it was). */
    activate(memberID, alarm) {
      const k = keyOf(memberID, alarm);
      if (!entries.has(k)) change(new Map(entries).set(k, { memberID: String(memberID), alarm }), alarm);
      return entries.get(k);
    },
    /** Clears it; the entry cleared, or null if there was none. */
    deactivate(memberID, alarm) {
      const k = keyOf(memberID, alarm);
      const e = entries.get(k) ?? null;
      if (e) {
        const next = new Map(entries);
        next.delete(k);
        change(next, alarm);
      }
      return e;
    },
    /** Resolves once expiry is no longer held (at once if it is not). */
    released() {
      return lessor?.expiryHeld ? new Promise((wake) => waiting.push(wake)) : Promise.resolve();
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
      const { noSpace: capped, corrupt: checked } = policyOf(name);
      if (!capped && !checked) return handler;
      const unmapped = name.startsWith("v3");
      const error = (code, message) => new GrpcError(unmapped ? Code.Unknown : code, message);
      const noSpace = () => error(Code.ResourceExhausted, Etcd.noSpace().message);
      const raise = (e) => {
        if (capped && e?.message === Etcd.noSpace().message) {
          // (If the alarm cannot be kept, the write is refused all the same;
          // the next refused one tries again.)
          try {
            store.activate(member.id, "NOSPACE");
          } catch (stored) {
            console.error(`edge-lease: the NOSPACE alarm could not be kept: ${stored.message}`);
          }
          throw noSpace();
        }
        throw e;
      };
      const raising = throughErrors(handler, raise);
      return (req, call) => {
        if (rules.includes("CORRUPT") && checked?.(req)) throw error(Code.DataLoss, CORRUPT_MESSAGE);
        if (rules.includes("NOSPACE") && capped?.(req)) throw noSpace();
        return raising(req, call);
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
  } else if (action === "ACTIVATE" || action === 1) {
    // Both fields zero: etcd 3.4 exits, storing the alarm under their
    // encoding, an empty key.
    if (type === "NONE" && member === "0") {
      throw new GrpcError(Code.InvalidArgument, "edge-lease: an alarm of type NONE for member 0 cannot be raised");
    }
    e = alarms.activate(member, type);
  }
  else if (action === "DEACTIVATE" || action === 2) e = alarms.deactivate(member, type);
  // (etcd 3.4 answers nothing for an unknown action, which its gateway
  // turns into a crash: an empty answer here.)
  return e ? { alarms: [e] } : {};
}
