// The backend over an in-process Lessor (`connect(lessor)`): the same
// interface as gateway.mjs, with no network. The engine's range, txn,
// deleteRange, compact and watch already speak etcd (bytes, revisions, the
// same result fields), so this is mostly renaming; what it adds:
//
// - Every call is checked against the caller's signal and the client's
//   close() first (Aborted, Closed); engine errors keep their codes
//   (LeaseNotFound, Compacted with compactRevision, FutureRevision,
//   DuplicateKey, TooManyOps, NoSpace...), except NotPrimary (a standby
//   lessor), which is Unavailable as a server without a leader would be.
// - Writes resolve once the lessor's storage has them (`lessor.flush()`),
//   as etcd answers once its write is committed: a fencing token handed out
//   is never lost to a crash that the store would not survive.
// - keepAlive is `renew`; `trackLease` lets a session learn a lease's end
//   exactly: its remaining time by the engine's own clock, and the moment
//   the lessor expires or revokes it.
// - watch is `lessor.watch` as an async iterator that honors `signal`; a
//   compacted start is a canceled response with `compactRevision`, first.
//
// The Lessor stays the caller's: close() stops this backend's watches and
// listeners, not the lessor.

import { leaseHex } from "./codec.mjs";
import { LeaseError, aborted, asLeaseError, closed } from "./errors.mjs";
import { linkSignals } from "./signals.mjs";

const NO_BYTES = new Uint8Array(0);

export function isLessor(x) {
  return (
    x !== null &&
    typeof x === "object" &&
    typeof x.renew === "function" &&
    typeof x.grant === "function" &&
    typeof x.txn === "function" &&
    typeof x.watch === "function"
  );
}

/** An engine error as the client's: the same codes, but a standby's NotPrimary is Unavailable. */
function engineError(e) {
  const err = asLeaseError(e);
  if (err.code === "NotPrimary") return new LeaseError("Unavailable", `the lessor is a standby: ${err.message}`, { cause: err });
  return err;
}

// ---- requests to the engine ------------------------------------------------

// The backend's rangeEnd is null for one key; the engine's is omitted.
const end = (rangeEnd) => (rangeEnd && rangeEnd.length ? rangeEnd : undefined);

const rangeReq = (r) => ({
  key: r.key,
  rangeEnd: end(r.rangeEnd),
  revision: r.revision || 0,
  limit: r.limit || 0,
  sortOrder: r.sortOrder ?? "none",
  sortTarget: r.sortTarget ?? "key",
  keysOnly: Boolean(r.keysOnly),
  countOnly: Boolean(r.countOnly),
  minModRevision: r.minModRevision || 0,
  maxModRevision: r.maxModRevision || 0,
  minCreateRevision: r.minCreateRevision || 0,
  maxCreateRevision: r.maxCreateRevision || 0,
});

const putReq = (p) => ({ key: p.key, value: p.value ?? NO_BYTES, lease: p.lease ?? null, prevKv: Boolean(p.prevKv) });

const deleteReq = (d) => ({ key: d.key, rangeEnd: end(d.rangeEnd), prevKv: Boolean(d.prevKv) });

const compareReq = (c) => ({ key: c.key, rangeEnd: end(c.rangeEnd), target: c.target, result: c.result, value: c.value });

function opReq(op) {
  if (op.range) return { range: rangeReq(op.range) };
  if (op.put) return { put: putReq(op.put) };
  if (op.deleteRange) return { deleteRange: deleteReq(op.deleteRange) };
  return { txn: txnReq(op.txn) };
}

const txnReq = (t) => ({ compare: t.compare.map(compareReq), success: t.success.map(opReq), failure: t.failure.map(opReq) });

// ---- results from the engine -----------------------------------------------

// A delete event's kv carries its key and revision; the rest as etcd zeroes it.
const kvIn = (kv) => ({
  key: kv.key,
  value: kv.value ?? NO_BYTES,
  createRevision: kv.createRevision ?? 0,
  modRevision: kv.modRevision ?? 0,
  version: kv.version ?? 0,
  lease: kv.lease ?? null,
});

const rangeIn = (r, revision = r.revision) => ({ kvs: r.kvs.map(kvIn), more: r.more, count: r.count, revision });

const deleteIn = (r, revision = r.revision) => ({ deleted: r.deleted, revision, prev: (r.prevKvs ?? []).map(kvIn) });

// As over the gateway: every op of a txn happened at the txn's revision
// (the engine, like etcd, gives a nested txn revision 0).
function txnIn(r, revision = r.revision) {
  return {
    succeeded: r.succeeded,
    revision,
    responses: r.responses.map((x) => {
      if (x.range) return { range: rangeIn(x.range, revision) };
      if (x.put) return { put: { revision, prev: x.put.prevKv ? kvIn(x.put.prevKv) : null } };
      if (x.deleteRange) return { deleteRange: deleteIn(x.deleteRange, revision) };
      return { txn: txnIn(x.txn, revision) };
    }),
  };
}

const eventIn = (e) => ({ type: e.type, kv: kvIn(e.kv), prev: e.prevKv ? kvIn(e.prevKv) : null });

export class LocalBackend {
  #lessor;
  #closer = new AbortController();
  // Lease hex id -> the callbacks of sessions tracking it.
  #tracked = new Map();
  #onGone = (ev) => {
    const fns = this.#tracked.get(ev.lease);
    if (!fns) return;
    const why = ev.type === "expire" ? "the lessor expired the lease" : "the lease was revoked";
    // After the lessor's call has returned: a session's abort handlers then
    // run outside the engine's operation.
    for (const fn of [...fns]) queueMicrotask(() => fn(why));
  };
  #listening = false;

  constructor(lessor) {
    this.#lessor = lessor;
  }

  /** The Lessor this backend runs on. */
  get lessor() {
    return this.#lessor;
  }

  #check(signal) {
    if (this.#closer.signal.aborted) throw closed();
    if (signal?.aborted) throw aborted(signal);
  }

  /** A read: the engine's answer, or its error as the client's. */
  #read(signal, fn) {
    this.#check(signal);
    try {
      return fn(this.#lessor);
    } catch (e) {
      throw engineError(e);
    }
  }

  /** A write: resolves once the lessor's storage has it. */
  async #write(signal, fn) {
    const r = this.#read(signal, fn);
    try {
      await this.#lessor.flush();
    } catch (e) {
      throw new LeaseError("StorageFailed", `the lessor's storage failed: ${e?.message ?? e}`, { cause: e });
    }
    return r;
  }

  async range(req, { signal } = {}) {
    return rangeIn(this.#read(signal, (l) => l.range(rangeReq(req))));
  }

  async put(req, { signal } = {}) {
    // A one-op txn: keys are bytes (the Lessor's put takes strings only).
    const t = await this.#write(signal, (l) => l.txn({ success: [{ put: putReq(req) }] }));
    const p = t.responses[0].put;
    return { revision: t.revision, prev: p.prevKv ? kvIn(p.prevKv) : null };
  }

  async deleteRange(req, { signal } = {}) {
    return deleteIn(await this.#write(signal, (l) => l.deleteRange(deleteReq(req))));
  }

  async txn(req, { signal } = {}) {
    return txnIn(await this.#write(signal, (l) => l.txn(txnReq(req))));
  }

  async compact(revision, { physical = false, signal } = {}) {
    const r = await this.#write(signal, (l) => l.compact(revision));
    // `physical`: once what it left unreadable is swept and on disk, as
    // etcd's waits for its backend's deletes.
    if (physical) {
      await this.#read(signal, (l) => l.whenCompacted()).catch((e) => {
        throw engineError(e);
      });
      await this.#write(signal, () => null);
    }
    return r;
  }

  async grant(ttl, id, { signal } = {}) {
    const g = await this.#write(signal, (l) => l.grant(ttl, id === null || id === undefined || id === 0n ? {} : { id }));
    return { id: g.id, ttl: g.ttl };
  }

  /** A renew: the granted TTL, 0 if the lease is gone (as etcd's keepalive answers). */
  async keepAlive(id, { signal } = {}) {
    try {
      return this.#read(signal, (l) => l.renew(id));
    } catch (e) {
      if (e instanceof LeaseError && e.code === "LeaseNotFound") return 0;
      throw e;
    }
  }

  async revoke(id, { signal } = {}) {
    const r = await this.#write(signal, (l) => l.revoke(id));
    return { revision: r.revision };
  }

  async timeToLive(id, keys, { signal } = {}) {
    const r = this.#read(signal, (l) => l.timeToLive(id, { keys, bytes: true }));
    return { ttl: r.ttl, grantedTtl: r.grantedTtl, keys: r.keys };
  }

  async leases({ signal } = {}) {
    return this.#read(signal, (l) => l.leases());
  }

  /**
   * For a session: `onGone(why)` is called (in a microtask) when the lessor
   * expires or revokes lease `id`; `remainingMs()` is its time left by the
   * engine's clock (-1 once gone or if the lessor is closed; NaN while the
   * engine cannot be asked, inside a change of its own, when nothing is
   * known to have changed). `stop()` ends it.
   */
  trackLease(id, onGone) {
    const hex = leaseHex(id);
    if (!this.#listening && !this.#closer.signal.aborted) {
      this.#lessor.addEventListener("expire", this.#onGone);
      this.#lessor.addEventListener("revoke", this.#onGone);
      this.#listening = true;
    }
    let fns = this.#tracked.get(hex);
    if (!fns) this.#tracked.set(hex, (fns = new Set()));
    fns.add(onGone);
    return {
      remainingMs: () => {
        if (this.#closer.signal.aborted) return -1;
        try {
          return this.#lessor.timeToLive(id).ttlMs;
        } catch (e) {
          // Asked from the lessor's own storage write: unknown, not gone.
          if (e?.code === "Reentrant") return NaN;
          return -1; // the lessor was closed: its leases are gone
        }
      },
      stop: () => {
        fns.delete(onGone);
        if (fns.size === 0 && this.#tracked.get(hex) === fns) this.#tracked.delete(hex);
      },
    };
  }

  /**
   * `lessor.watch` as an async iterable of responses: `created` first, then
   * one per batch the engine hands out, until `signal` aborts, the client
   * closes or the start was compacted (one canceled response).
   */
  async *watch(req, { signal } = {}) {
    this.#check(signal);
    const lessor = this.#lessor;
    const link = linkSignals([this.#closer.signal, signal]);
    const queue = [];
    let wake = null;
    let watcher = null;
    // An abort lets the engine's watcher go at once, even while this
    // generator waits at a yield nobody resumes.
    const cancel = () => {
      try {
        watcher?.cancel();
      } catch {
        // the lessor was closed
      }
      watcher = null;
    };
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const onAbort = () => (cancel(), notify());
    link.signal.addEventListener("abort", onAbort, { once: true });
    try {
      let created;
      try {
        const compactRevision = req.startRevision ? lessor.compactRevision : 0;
        if (req.startRevision && req.startRevision < compactRevision) {
          // As etcd answers it: created, then canceled with the compaction.
          const revision = lessor.revision;
          yield { revision, created: true, canceled: false, compactRevision: 0, cancelReason: "", events: [] };
          yield { revision, created: false, canceled: true, compactRevision, cancelReason: "", events: [] };
          return;
        }
        watcher = lessor.watch(
          {
            key: req.key,
            rangeEnd: end(req.rangeEnd),
            startRevision: req.startRevision || undefined,
            prevKv: Boolean(req.prevKv),
            noPut: Boolean(req.noPut),
            noDelete: Boolean(req.noDelete),
          },
          (b) => {
            if (b.compactRevision) {
              queue.push({ revision: b.revision, created: false, canceled: true, compactRevision: b.compactRevision, cancelReason: "", events: [] });
            } else if (b.events.length) {
              queue.push({ revision: b.revision, created: false, canceled: false, compactRevision: 0, cancelReason: "", events: b.events.map(eventIn) });
            }
            notify();
          },
        );
        created = lessor.revision;
      } catch (e) {
        throw engineError(e);
      }
      if (link.signal.aborted) cancel();
      yield { revision: created, created: true, canceled: false, compactRevision: 0, cancelReason: "", events: [] };
      for (;;) {
        while (queue.length) {
          const m = queue.shift();
          yield m;
          if (m.canceled) return;
        }
        if (link.signal.aborted) throw this.#closer.signal.aborted ? closed() : aborted(link.signal);
        await new Promise((resolve) => (wake = resolve));
      }
    } finally {
      link.signal.removeEventListener("abort", onAbort);
      link.dispose();
      cancel();
    }
  }

  close() {
    if (this.#closer.signal.aborted) return;
    this.#closer.abort(closed());
    if (this.#listening) {
      this.#lessor.removeEventListener("expire", this.#onGone);
      this.#lessor.removeEventListener("revoke", this.#onGone);
    }
    this.#tracked.clear();
  }
}
