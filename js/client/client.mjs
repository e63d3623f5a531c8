// The client: etcd's KV and Lease operations with the engine's names and
// result shapes, watch, and the recipes (sessions, mutexes, elections), all
// over one backend (backend.mjs).

import { keyBytes, leaseBig, leaseHex, rangeOf, toBytes, toText } from "./codec.mjs";
import { deleteRangeOut, entryOut, rangeOut, txnOut } from "./entries.mjs";
import { LeaseError, closed, invalid } from "./errors.mjs";
import { guarded } from "./guard.mjs";
import { Session } from "./session.mjs";
import { linkSignals, signalOption } from "./signals.mjs";
import { Watch } from "./watch.mjs";

const SORT_ORDERS = new Set(["none", "ascend", "descend"]);
const SORT_TARGETS = new Set(["key", "version", "create", "mod", "value"]);
const TARGETS = new Set(["version", "create", "mod", "value", "lease"]);
const RESULTS = new Set(["=", "!=", "<", ">"]);
// How long close() lets sessions being created finish (so that it revokes
// them) before it stops their requests.
const CLOSE_GRACE_MS = 1000;
// How long close() waits for each session's revoke.
const CLOSE_REVOKE_MS = 5000;

function revisionOpt(v, what) {
  if (v === undefined || v === null) return 0;
  if (!Number.isSafeInteger(v) || v < 0) throw invalid(`${what} must be a non-negative integer, got ${v}`);
  return v;
}

function leaseOpt(v) {
  if (v === undefined || v === null || v === 0 || v === 0n) return null;
  return leaseBig(v);
}

function opts(o, what) {
  if (o === undefined || o === null) return {};
  if (typeof o !== "object") throw invalid(`${what} options must be an object`);
  return o;
}

export function rangeReq(o) {
  o = opts(o, "range");
  const [key, rangeEnd] = rangeOf(o.key, o);
  const sortOrder = o.sortOrder ?? "none";
  const sortTarget = o.sortTarget ?? "key";
  if (!SORT_ORDERS.has(sortOrder)) throw invalid(`sortOrder must be one of ${[...SORT_ORDERS]}, got ${sortOrder}`);
  if (!SORT_TARGETS.has(sortTarget)) throw invalid(`sortTarget must be one of ${[...SORT_TARGETS]}, got ${sortTarget}`);
  return {
    key,
    rangeEnd,
    revision: revisionOpt(o.revision, "revision"),
    limit: revisionOpt(o.limit, "limit"),
    sortOrder,
    sortTarget,
    keysOnly: Boolean(o.keysOnly),
    countOnly: Boolean(o.countOnly),
    minModRevision: revisionOpt(o.minModRevision, "minModRevision"),
    maxModRevision: revisionOpt(o.maxModRevision, "maxModRevision"),
    minCreateRevision: revisionOpt(o.minCreateRevision, "minCreateRevision"),
    maxCreateRevision: revisionOpt(o.maxCreateRevision, "maxCreateRevision"),
  };
}

export const putReq = (o) => ({
  key: keyBytes(o.key),
  value: toBytes(o.value ?? "", "value"),
  lease: leaseOpt(o.lease),
  prevKv: Boolean(o.prevKv),
});

export function deleteReq(o) {
  o = opts(o, "deleteRange");
  const [key, rangeEnd] = rangeOf(o.key, o);
  return { key, rangeEnd, prevKv: Boolean(o.prevKv) };
}

function compareReq(c) {
  if (!c || typeof c !== "object") throw invalid("a compare must be an object");
  const target = c.target;
  const result = c.result ?? "=";
  if (!TARGETS.has(target)) throw invalid(`compare target must be one of ${[...TARGETS]}, got ${target}`);
  if (!RESULTS.has(result)) throw invalid(`compare result must be one of ${[...RESULTS]}, got ${result}`);
  const [key, rangeEnd] = rangeOf(c.key, c);
  let value;
  if (target === "value") value = toBytes(c.value ?? "", "compare value");
  else if (target === "lease") value = leaseOpt(c.value) ?? 0n;
  else value = revisionOpt(c.value, `compare ${target}`);
  return { key, rangeEnd, target, result, value };
}

function opReq(op) {
  if (!op || typeof op !== "object") throw invalid("a txn op must be an object");
  if (op.range) return { range: rangeReq(op.range) };
  if (op.put) return { put: putReq(op.put) };
  if (op.deleteRange) return { deleteRange: deleteReq(op.deleteRange) };
  if (op.txn) return { txn: txnReq(op.txn) };
  throw invalid("a txn op is one of { range }, { put }, { deleteRange }, { txn }");
}

export function txnReq(t) {
  t = opts(t, "txn");
  return {
    compare: (t.compare ?? []).map(compareReq),
    success: (t.success ?? []).map(opReq),
    failure: (t.failure ?? []).map(opReq),
  };
}

export class Client {
  #backend;
  #closer = new AbortController();
  #sessions = new Set();
  #creating = new Set(); // sessions being created: close() waits for them
  #closing = null;
  #closingCtl = new AbortController(); // aborts the requests that create sessions

  constructor(backend) {
    this.#backend = backend;
  }

  /** The backend (gateway or in-process); for the recipes. */
  get backend() {
    return this.#backend;
  }

  /**
   * The endpoints (a URL client's members: `{ url, healthy, lastError }`
   * each, as last learnt); empty for a backend without them.
   */
  get endpoints() {
    return this.#backend.endpoints ?? [];
  }

  /** Aborts when close() is called. */
  get closed() {
    return this.#closer.signal;
  }

  #check() {
    if (this.#closer.signal.aborted) throw closed();
  }

  #checkOpen() {
    if (this.#closing !== null) throw closed();
  }

  // ---- KV --------------------------------------------------------------------

  async get(key, o = {}) {
    this.#check();
    const { bytes = false, signal } = opts(o, "get");
    const r = await this.#backend.range(rangeReq({ key, revision: o.revision }), { signal: signalOption(signal) });
    return r.kvs.length ? entryOut(r.kvs[0], bytes) : undefined;
  }

  async range(o) {
    this.#check();
    const r = await this.#backend.range(rangeReq(o), { signal: signalOption(o?.signal) });
    return rangeOut(r, Boolean(o?.bytes));
  }

  async put(key, value, o = {}) {
    this.#check();
    const { bytes = false, signal, ifAbsent = false, ifHeld } = opts(o, "put");
    const req = putReq({ key, value, lease: o.lease, prevKv: o.prevKv });
    signalOption(signal);
    if (!ifAbsent) {
      const r = await this.#write({ put: req }, ifHeld, signal);
      const out = { revision: r.revision };
      if (req.prevKv) out.created = r.prev === null;
      if (r.prev) out.prev = entryOut(r.prev, bytes);
      return out;
    }
    // Create-only, as the engine's ifAbsent: a refused put returns the holder.
    const t = await this.#write(
      {
        txn: {
          compare: [{ key: req.key, rangeEnd: null, target: "create", result: "=", value: 0 }],
          success: [{ put: { ...req, prevKv: false } }],
          failure: [{ range: rangeReq({ key: req.key }) }],
        },
      },
      ifHeld,
      signal,
    );
    const r = { revision: t.revision, created: t.succeeded };
    if (!t.succeeded && t.responses[0].range.kvs.length) r.prev = entryOut(t.responses[0].range.kvs[0], bytes);
    return r;
  }

  async delete(key, o = {}) {
    this.#check();
    const { bytes = false, signal, prevKv = false, ifHeld } = opts(o, "delete");
    const r = await this.#write({ deleteRange: deleteReq({ key, prevKv }) }, ifHeld, signalOption(signal));
    const out = { deleted: r.deleted > 0, revision: r.revision };
    if (r.prev.length) out.prev = entryOut(r.prev[0], bytes);
    return out;
  }

  async deleteRange(o) {
    this.#check();
    const r = await this.#write({ deleteRange: deleteReq(o) }, o?.ifHeld, signalOption(o?.signal));
    return deleteRangeOut(r, Boolean(o?.bytes));
  }

  async txn(t) {
    this.#check();
    const r = await this.#write({ txn: txnReq(t) }, t?.ifHeld, signalOption(t?.signal));
    return txnOut(r, Boolean(t?.bytes));
  }

  // One write (a backend txn op), alone or under `ifHeld`'s guard: the
  // op's response, with the write's revision (a txn's nested answers carry
  // the outer one).
  async #write(op, ifHeld, signal) {
    if (ifHeld === undefined || ifHeld === null) {
      if (op.put) return this.#backend.put(op.put, { signal });
      if (op.deleteRange) return this.#backend.deleteRange(op.deleteRange, { signal });
      return this.#backend.txn(op.txn, { signal });
    }
    const { response } = await guarded(this.#backend, ifHeld, op, signal);
    return response.put ?? response.deleteRange ?? response.txn;
  }

  async compact(revision, o = {}) {
    this.#check();
    const { physical = false, signal } = opts(o, "compact");
    if (!Number.isSafeInteger(revision) || revision < 1) throw invalid(`revision must be a positive integer, got ${revision}`);
    await this.#backend.compact(revision, { physical: Boolean(physical), signal: signalOption(signal) });
  }

  // ---- leases ----------------------------------------------------------------

  async grant(ttl, o = {}) {
    this.#check();
    const { id, signal } = opts(o, "grant");
    if (!Number.isSafeInteger(ttl)) throw invalid(`ttl must be an integer number of seconds, got ${ttl}`);
    return this.#backend.grant(ttl, id === undefined || id === null ? null : leaseBig(id), { signal: signalOption(signal) });
  }

  /** One keepalive: the granted TTL; LeaseNotFound if the lease is gone. */
  async keepAliveOnce(id, o = {}) {
    this.#check();
    const lease = leaseBig(id);
    const ttl = await this.#backend.keepAlive(lease, { signal: signalOption(opts(o, "keepAliveOnce").signal) });
    if (ttl <= 0) throw new LeaseError("LeaseNotFound", `lease ${leaseHex(lease)} not found`);
    return ttl;
  }

  async revoke(id, o = {}) {
    this.#check();
    const lease = leaseBig(id);
    const r = await this.#backend.revoke(lease, { signal: signalOption(opts(o, "revoke").signal) });
    return { id: leaseHex(lease), revision: r.revision };
  }

  async timeToLive(id, o = {}) {
    this.#check();
    const { keys = false, bytes = false, signal } = opts(o, "timeToLive");
    const lease = leaseBig(id);
    const r = await this.#backend.timeToLive(lease, Boolean(keys), { signal: signalOption(signal) });
    return {
      id: leaseHex(lease),
      ttl: r.ttl,
      grantedTtl: r.grantedTtl,
      keys: r.keys.map((k) => (bytes ? k : toText(k))),
    };
  }

  async leases(o = {}) {
    this.#check();
    return this.#backend.leases({ signal: signalOption(opts(o, "leases").signal) });
  }

  // ---- watch -----------------------------------------------------------------

  watch(key, o = {}) {
    this.#check();
    o = opts(o, "watch");
    const [k, rangeEnd] = rangeOf(key, o);
    const req = {
      key: k,
      rangeEnd,
      startRevision: revisionOpt(o.startRevision, "startRevision"),
      prevKv: Boolean(o.prevKv),
      noPut: Boolean(o.noPut),
      noDelete: Boolean(o.noDelete),
    };
    return new Watch(this.#backend, req, { bytes: Boolean(o.bytes), signal: signalOption(o.signal) }, this.#closer.signal);
  }

  // ---- recipes ---------------------------------------------------------------

  async session(o = {}) {
    this.#checkOpen();
    const o2 = opts(o, "session");
    // close() stops a creation still waiting for the server after a
    // moment (a grant it applied anyway then ends with its TTL).
    const link = linkSignals([signalOption(o2.signal), this.#closingCtl.signal]);
    const creating = Session.create(this, { ...o2, signal: link.signal });
    this.#creating.add(creating);
    let s;
    try {
      s = await creating;
    } catch (e) {
      if (this.#closing !== null) throw closed();
      throw e;
    } finally {
      this.#creating.delete(creating);
      link.dispose();
    }
    this.#sessions.add(s);
    s.signal.addEventListener("abort", () => this.#sessions.delete(s), { once: true });
    // close() began meanwhile: it closes this session too, with the others
    // (it looks once every creation has settled, so it finds this one
    // here), and revokes its lease before the backend goes.
    if (this.#closing !== null) {
      await this.#closing;
      throw closed();
    }
    return s;
  }

  /**
   * A session, a mutex on `name`, `fn(lock)`, then unlock and close the
   * session, even when fn throws. Rejects with the session's loss reason if
   * the lock was lost while fn ran.
   */
  async withLock(name, o, fn) {
    if (typeof o === "function") [o, fn] = [{}, o];
    if (typeof fn !== "function") throw new TypeError("withLock(name, options, fn): fn must be a function");
    const { ttl, signal } = opts(o, "withLock");
    const session = await this.session({ ttl, signal });
    try {
      const lock = session.mutex(name);
      await lock.lock({ signal });
      let result;
      try {
        result = await fn(lock);
      } finally {
        await lock.unlock().catch(() => {});
      }
      if (session.lost) throw session.signal.reason;
      return result;
    } finally {
      await session.close();
    }
  }

  /** Closes open sessions (revoking their leases), then stops every request and watch. */
  close() {
    this.#closing ??= (async () => {
      // Sessions being created get a moment to be (and then be revoked
      // with the others); past it, their requests are stopped.
      const creating = Promise.allSettled([...this.#creating]);
      let timer;
      await Promise.race([creating, new Promise((ok) => (timer = setTimeout(ok, CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      this.#closingCtl.abort(closed());
      await creating;
      // (A revoke the server does not answer is given up after a while: the
      // lease then ends with its TTL.)
      await Promise.allSettled([...this.#sessions].map((s) => s.close({ waitMs: CLOSE_REVOKE_MS })));
      this.#closer.abort(closed());
      await this.#backend.close();
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
    return this.close();
  }
}


export { keyBytes, toText };
