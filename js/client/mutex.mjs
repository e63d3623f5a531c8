// etcd's concurrency.Mutex (3.5's, which 3.4's etcdctl lock interoperates
// with: the keys and the order are the same). The key is
// `<name>/<lease id in Go's %x>`, created with the session's lease in a txn
// that also reads the oldest key under the prefix; whoever has the lowest
// create revision holds the lock, the others each wait for the deletion of
// the key created just before theirs (FIFO, no thundering herd). The
// create revision is the fencing token.

import { keyBytes, prefixEnd, toBytes, toText } from "./codec.mjs";
import { LeaseError, aborted } from "./errors.mjs";
import { GUARD, holderOf, keyGuard } from "./guard.mjs";
import { linkSignals, signalOption } from "./signals.mjs";
import { leaseInt64 } from "../lease-id.js";

const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

/** The oldest (`ascend`) or newest (`descend`) key under `pfx`, by create revision. */
export function byCreate(pfx, order, maxCreateRevision = 0) {
  return {
    key: pfx,
    rangeEnd: prefixEnd(pfx),
    limit: 1,
    sortOrder: order,
    sortTarget: "create",
    maxCreateRevision,
  };
}

/**
 * Waits until no key under `pfx` has a create revision at or below
 * `maxCreateRev`: for each, newest first, watch it until it is deleted.
 * Resolves with the revision of the last read.
 */
export async function waitDeletes(client, pfx, maxCreateRev, signal) {
  const backend = client.backend;
  for (;;) {
    if (signal.aborted) throw aborted(signal);
    const r = await backend.range(byCreate(pfx, "descend", maxCreateRev), { signal });
    if (r.kvs.length === 0) return r.revision;
    await waitDelete(client, r.kvs[0].key, r.revision, signal);
  }
}

async function waitDelete(client, key, rev, signal) {
  const w = client.watch(key, { startRevision: rev, noPut: true, signal });
  try {
    for await (const ev of w) {
      if (ev.type === "delete") return;
    }
  } catch (e) {
    // History compacted past `rev`: read again instead (waitDeletes' loop
    // sees whether the key is still there).
    if (e instanceof LeaseError && e.code === "Compacted") return;
    throw e;
  } finally {
    await w.return();
  }
}

const notHeld = (extra, message) => new LeaseError("NotHeld", message, extra);

export class Mutex {
  #session;
  #client;
  #pfx;
  #myKey = null; // bytes while held
  #myRev = -1;

  constructor(session, name) {
    this.#session = session;
    this.#client = session.client;
    this.#pfx = concat(keyBytes(name), toBytes("/"));
  }

  /** The lock's key (`name/<lease hex>`) while held, else undefined. */
  get key() {
    return this.#myKey === null ? undefined : toText(this.#myKey);
  }

  /** The key's create revision while held (the fencing token), else undefined. */
  get token() {
    return this.#myKey === null ? undefined : this.#myRev;
  }

  get session() {
    return this.#session;
  }

  /** The session's signal: aborts when the lock is lost with it (see Session's `signal`). */
  get signal() {
    return this.#session.signal;
  }

  /**
   * Whether the lock is held now: taken, not unlocked, and the session's
   * deadline not passed by the clock read at this call: false at once
   * after a freeze past the deadline, before its overdue timers run.
   */
  get held() {
    return this.#myKey !== null && !this.#session.signal.aborted;
  }

  /** Throws unless `held`: the session's end (LeaseNotFound when lost, Closed), else NotHeld. */
  assertHeld() {
    const s = this.#session.signal;
    if (s.aborted) throw s.reason;
    if (this.#myKey === null) throw notHeld({}, "the lock is not held (not locked, or unlocked)");
  }

  /**
   * A txn compare that holds while this lock is held (Go's IsOwner()): its
   * key still exists with the create revision it was taken at. Throws
   * NotHeld when not locked.
   */
  isOwner() {
    const { compare } = this[GUARD]();
    return { key: compare.key, target: "create", result: "=", value: compare.value };
  }

  /** The guard of `ifHeld: lock` (guard.mjs). */
  [GUARD]() {
    if (this.#myKey === null) throw notHeld({}, "the lock is not held (not locked, or unlocked)");
    return keyGuard(this.#myKey, this.#myRev, byCreate(this.#pfx, "ascend"), (kv, revision) =>
      notHeld(holderOf(kv, revision), `the lock is no longer held: ${kv ? `held by ${toText(kv.key)} since revision ${kv.createRevision}` : "nobody holds it"}`),
    );
  }

  // Creates this session's key under the prefix (or finds it), and reads
  // who holds the lock. If the request fails, its outcome is unknown (an
  // abort or a timeout can come after the server applied it), so the key is
  // removed, unless another lock of this session uses it.
  async #tryAcquire(signal) {
    const myKey = concat(this.#pfx, toBytes(this.#session.keySuffix));
    const lease = leaseInt64(this.#session.lease);
    const owner = { range: byCreate(this.#pfx, "ascend") };
    this.#session.claim(myKey);
    let r;
    try {
      r = await this.#client.backend.txn(
        {
          compare: [{ key: myKey, rangeEnd: null, target: "create", result: "=", value: 0 }],
          success: [{ put: { key: myKey, value: new Uint8Array(0), lease, prevKv: false } }, owner],
          // The session already has the key (it holds or waits): reuse it.
          failure: [{ range: { key: myKey, rangeEnd: null } }, owner],
        },
        { signal },
      );
    } catch (e) {
      await this.#session.release(myKey);
      throw signal.aborted ? aborted(signal) : e;
    }
    const myRev = r.succeeded ? r.revision : r.responses[0].range.kvs[0]?.createRevision ?? r.revision;
    const ownerKvs = r.responses[1].range.kvs;
    const held = ownerKvs.length === 0 || ownerKvs[0].createRevision === myRev;
    return { myKey, myRev, held };
  }

  /** Waits for the lock. `signal` (and the session's end) abort the wait; the key is then removed. */
  async lock({ signal } = {}) {
    const link = linkSignals([signalOption(signal), this.#session.signal]);
    try {
      const s = link.signal;
      if (s.aborted) throw aborted(s);
      const { myKey, myRev, held } = await this.#tryAcquire(s);
      if (!held) {
        try {
          await waitDeletes(this.#client, this.#pfx, myRev - 1, s);
          // Still ours? The session may have expired while we waited.
          const g = await this.#client.backend.range({ key: myKey, rangeEnd: null }, { signal: s });
          if (g.kvs.length === 0) {
            throw new LeaseError("LeaseNotFound", `the session's lease ${this.#session.lease} expired while waiting for the lock`);
          }
        } catch (e) {
          await this.#session.release(myKey);
          throw s.aborted ? aborted(s) : e;
        }
      }
      this.#hold(myKey, myRev);
    } finally {
      link.dispose();
    }
  }

  /** Takes the lock if nobody holds it: true if taken, false (and no key left behind) if held. */
  async tryLock({ signal } = {}) {
    const link = linkSignals([signalOption(signal), this.#session.signal]);
    try {
      if (link.signal.aborted) throw aborted(link.signal);
      const { myKey, myRev, held } = await this.#tryAcquire(link.signal);
      if (!held) {
        await this.#session.release(myKey, true);
        return false;
      }
      this.#hold(myKey, myRev);
      return true;
    } finally {
      link.dispose();
    }
  }

  /** Releases the lock (deletes the key). */
  async unlock({ signal } = {}) {
    const key = this.#myKey;
    if (key === null) return;
    // (Idempotent: with several endpoints, retried on another member when
    // the one it went to died.)
    await this.#client.backend.deleteRange({ key, rangeEnd: null, prevKv: false }, { signal: signalOption(signal), idempotent: true });
    this.#myKey = null;
    this.#myRev = -1;
    this.#session.unclaim(key);
  }

  // Each lock()/tryLock() call counts once in the session's claims while it
  // runs; holding keeps one claim for the object, so a call that finds it
  // already held gives its own back.
  #hold(key, rev) {
    if (this.#myKey !== null) this.#session.unclaim(key);
    this.#myKey = key;
    this.#myRev = rev;
  }
}
