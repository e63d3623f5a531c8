// Guarded writes: a write that the server applies only while a lock (or an
// election's leadership) is still held, decided in the same transaction as
// the write: a compare on the lock key's create revision, as Go's
// Mutex.IsOwner(). The client's own belief does not matter: a holder frozen
// past its lease, or whose key someone deleted, is refused by the store
// even before it knows. The failure branch reads the oldest key under the
// lock's prefix, so the refusal names who holds it now.

import { toText } from "./codec.mjs";
import { invalid } from "./errors.mjs";

/** The method of Mutex and Election that describes their guard (see `guardOf`). */
export const GUARD = Symbol("edge-lease/client guard");

/**
 * `{ compare, owner, refused(kv) }` of a Mutex or an Election: the compare
 * (backend form) that holds while it holds, the range that reads the
 * current holder, and the error for a refusal. Throws its NotHeld or
 * NotLeader when it does not hold at all (never locked, unlocked, resigned).
 */
export function guardOf(g) {
  if (typeof g?.[GUARD] !== "function") throw invalid("ifHeld takes a Mutex or an Election");
  return g[GUARD]();
}

/** The refusal's extra fields: the holder now (if any) and the revision the server judged at. */
export function holderOf(kv, revision) {
  return kv ? { holderKey: toText(kv.key), holderToken: kv.createRevision, revision } : { revision };
}

/**
 * Runs `op` (one backend txn op) under the guard `g`: resolves with the op's
 * response and the revision; rejects with the guard's error, having
 * written nothing, when the server finds it no longer held.
 */
export async function guarded(backend, g, op, signal) {
  const guard = guardOf(g);
  const r = await backend.txn({ compare: [guard.compare], success: [op], failure: [{ range: guard.owner }] }, { signal });
  if (!r.succeeded) throw guard.refused(r.responses[0].range.kvs[0], r.revision);
  return { response: r.responses[0], revision: r.revision };
}

/**
 * The guard of a lock or a leadership held as key `key` created at `rev`,
 * whose current holder `owner` (a range) reads; `refused(kv, revision)`
 * makes its error.
 */
export function keyGuard(key, rev, owner, refused) {
  return { compare: { key, rangeEnd: null, target: "create", result: "=", value: rev }, owner, refused };
}
