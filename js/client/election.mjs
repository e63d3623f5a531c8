// etcd's concurrency.Election: candidates put `<name>/<lease id in Go's %x>`
// with their session's lease; the oldest key by create revision is the
// leader and its value the proclamation. campaign() waits until every older
// candidate is gone; observe() follows the leader (and its proclamations)
// as `etcdctl elect -l` does.

import { keyBytes, keyId, toBytes, toText } from "./codec.mjs";
import { entryOut } from "./entries.mjs";
import { LeaseError, aborted, closed } from "./errors.mjs";
import { GUARD, holderOf, keyGuard } from "./guard.mjs";
import { byCreate, waitDeletes } from "./mutex.mjs";
import { linkSignals, signalOption } from "./signals.mjs";
import { leaseInt64 } from "../lease-id.js";

const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

const notLeader = (extra) => new LeaseError("NotLeader", "election: not leader", extra);

export class Election {
  #session;
  #client;
  #pfx;
  #leaderKey = null; // bytes while a candidate or leader
  #leaderRev = -1;
  #leading = false; // campaign() found this candidate the leader (while #leaderKey is set)

  constructor(session, name) {
    this.#session = session;
    this.#client = session.client;
    this.#pfx = concat(keyBytes(name), toBytes("/"));
  }

  /** This candidate's key while campaigning or leading, else undefined. */
  get key() {
    return this.#leaderKey === null ? undefined : toText(this.#leaderKey);
  }

  /** The key's create revision (a fencing token for the leader), else undefined. */
  get token() {
    return this.#leaderKey === null ? undefined : this.#leaderRev;
  }

  get session() {
    return this.#session;
  }

  /**
   * Whether this candidate leads now: campaign() won, no resign() or lost
   * proclaim() since, and the session's deadline not passed by the clock
   * read at this call (as a Mutex's `held`).
   */
  get leading() {
    return this.#leading && this.#leaderKey !== null && !this.#session.signal.aborted;
  }

  /** Throws unless `leading`: the session's end (LeaseNotFound when lost, Closed), else NotLeader. */
  assertLeading() {
    const s = this.#session.signal;
    if (s.aborted) throw s.reason;
    if (!this.#leading || this.#leaderKey === null) throw notLeader();
  }

  /**
   * A txn compare that holds while this candidate leads: its key still
   * exists with the create revision it campaigned with (once elected, no
   * older key can appear). Throws NotLeader when not leading.
   */
  isLeader() {
    const { compare } = this[GUARD]();
    return { key: compare.key, target: "create", result: "=", value: compare.value };
  }

  /** The guard of `ifHeld: election` (guard.mjs). */
  [GUARD]() {
    if (!this.#leading || this.#leaderKey === null) throw notLeader();
    return keyGuard(this.#leaderKey, this.#leaderRev, byCreate(this.#pfx, "ascend"), (kv, revision) => notLeader(holderOf(kv, revision)));
  }

  #lease() {
    return leaseInt64(this.#session.lease);
  }

  /** Puts this candidate in and waits until it leads. An abort (or the session's end) withdraws it. */
  async campaign(value, { signal } = {}) {
    const val = toBytes(value, "value");
    const link = linkSignals([signalOption(signal), this.#session.signal]);
    const s = link.signal;
    try {
      if (s.aborted) throw aborted(s);
      const key = concat(this.#pfx, toBytes(this.#session.keySuffix));
      // Each call counts once in the session's claims while it runs; a
      // candidate keeps one claim for the object.
      this.#session.claim(key);
      let r;
      try {
        r = await this.#client.backend.txn(
          {
            compare: [{ key, rangeEnd: null, target: "create", result: "=", value: 0 }],
            success: [{ put: { key, value: val, lease: this.#lease(), prevKv: false } }],
            failure: [{ range: { key, rangeEnd: null } }],
          },
          { signal: s },
        );
      } catch (e) {
        // Its outcome is unknown (an abort or a timeout can come after the
        // server applied it): withdraw, unless something else of this
        // session uses the key now.
        await this.#session.release(key);
        throw s.aborted ? aborted(s) : e;
      }
      if (this.#leaderKey === null) {
        this.#leaderKey = key;
        this.#leading = false;
      } else this.#session.unclaim(key); // a candidate already: one claim
      this.#leaderRev = r.revision;
      if (!r.succeeded) {
        const kv = r.responses[0].range.kvs[0];
        this.#leaderRev = kv.createRevision;
        if (!sameBytes(kv.value, val)) {
          try {
            await this.proclaim(val, { signal: s });
          } catch (e) {
            await this.#withdraw().catch(() => {});
            throw e;
          }
        }
      }
      try {
        await waitDeletes(this.#client, this.#pfx, this.#leaderRev - 1, s);
        this.#leading = this.#leaderKey !== null; // (not resigned meanwhile)
      } catch (e) {
        // Withdraw when the caller gave up; otherwise leave the key (Go does).
        if (s.aborted) {
          await this.#withdraw().catch(() => {});
          throw aborted(s);
        }
        if (this.#leaderKey !== null) {
          this.#leaderKey = null;
          this.#session.unclaim(key);
        }
        throw e;
      }
    } finally {
      link.dispose();
    }
  }

  // Stops being a candidate; the key is deleted (if it is still the one
  // created) only if nothing else of the session uses it: resign() without
  // the user asking for it.
  async #withdraw() {
    if (this.#leaderKey === null) return;
    const key = this.#leaderKey;
    const rev = this.#leaderRev;
    this.#leaderKey = null;
    this.#leaderRev = -1;
    if (this.#session.unclaim(key) && !this.#client.closed.aborted) await this.#deleteIfCreated(key, rev);
  }

  // (Idempotent: a key's create revision is never reused, so a second run
  // deletes nothing; with several endpoints it is retried on another member.)
  #deleteIfCreated(key, rev, signal) {
    return this.#client.backend.txn(
      {
        compare: [{ key, rangeEnd: null, target: "create", result: "=", value: rev }],
        success: [{ deleteRange: { key, rangeEnd: null, prevKv: false } }],
        failure: [],
      },
      { signal, idempotent: true },
    );
  }

  /** A new value from the leader, without a new election; NotLeader if this candidate no longer leads. */
  async proclaim(value, { signal } = {}) {
    if (this.#leaderKey === null) throw notLeader();
    const key = this.#leaderKey;
    const r = await this.#client.backend.txn(
      {
        compare: [{ key, rangeEnd: null, target: "create", result: "=", value: this.#leaderRev }],
        success: [{ put: { key, value: toBytes(value, "value"), lease: this.#lease(), prevKv: false } }],
        failure: [],
      },
      { signal: signalOption(signal) },
    );
    if (!r.succeeded) {
      if (this.#leaderKey === key) {
        this.#leaderKey = null;
        this.#session.unclaim(key);
      }
      throw notLeader();
    }
  }

  /** Steps down (deletes this candidate's key if it is still the one it created). */
  async resign({ signal } = {}) {
    if (this.#leaderKey === null) return;
    const key = this.#leaderKey;
    await this.#deleteIfCreated(key, this.#leaderRev, signalOption(signal));
    if (this.#leaderKey === key) {
      this.#leaderKey = null;
      this.#leaderRev = -1;
      this.#session.unclaim(key);
    }
  }

  /** The leader's entry (`value` is its proclamation), or undefined when there is none. */
  async leader({ bytes = false, signal } = {}) {
    const r = await this.#client.backend.range(byCreate(this.#pfx, "ascend"), { signal: signalOption(signal) });
    return r.kvs.length ? entryOut(r.kvs[0], bytes) : undefined;
  }

  /**
   * The leader and each new proclamation or leader, as an async iterator
   * (etcd's Observe). Ends with Aborted when `signal` aborts; return()
   * (a `break`) ends it at once, a next() waiting meanwhile resolving done.
   */
  observe({ bytes = false, signal } = {}) {
    const ended = new AbortController();
    const gen = this.#observe(bytes, signal, ended.signal);
    return {
      next: () => gen.next(),
      async return(value) {
        ended.abort(closed());
        await gen.return(value);
        return { value, done: true };
      },
      throw: (e) => gen.throw(e),
      [Symbol.asyncIterator]() {
        return this;
      },
      [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
        return this.return();
      },
    };
  }

  async *#observe(bytes, signal, ended) {
    const link = linkSignals([signalOption(signal), this.#client.closed, ended]);
    const s = link.signal;
    const backend = this.#client.backend;
    // A watch whose start was compacted away: read the leader again.
    const compacted = (e) => e instanceof LeaseError && e.code === "Compacted";
    let last = ""; // the leader's key and mod revision last handed out (not again after a re-read)
    try {
      for (;;) {
        if (s.aborted) throw aborted(s);
        const r = await backend.range(byCreate(this.#pfx, "ascend"), { signal: s });
        let kv;
        let rev;
        if (r.kvs.length === 0) {
          // No leader yet: wait for the first candidate's put.
          const w = this.#client.watch(this.#pfx, { prefix: true, startRevision: r.revision, noDelete: true, bytes: true, signal: s });
          try {
            for await (const ev of w) {
              kv = ev;
              rev = ev.modRevision;
              break;
            }
          } catch (e) {
            if (!compacted(e)) throw e;
            continue;
          } finally {
            await w.return();
          }
          if (kv === undefined) throw aborted(s);
        } else {
          kv = r.kvs[0];
          rev = r.revision;
        }
        const seen = `${keyId(kv.key)}@${kv.modRevision}`;
        if (seen !== last) yield entryOut(kv, bytes);
        last = seen;
        // Follow this leader until its key goes.
        const w = this.#client.watch(kv.key, { startRevision: rev + 1, bytes: true, signal: s });
        try {
          for await (const ev of w) {
            if (ev.type === "delete") break;
            last = `${keyId(ev.key)}@${ev.modRevision}`;
            yield entryOut(ev, bytes);
          }
        } catch (e) {
          if (!compacted(e)) throw e;
        } finally {
          await w.return();
        }
      }
    } catch (e) {
      if (!ended.aborted) throw e;
    } finally {
      link.dispose();
    }
  }
}
