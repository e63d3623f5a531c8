// The endpoint set: one backend (backend.mjs) over the members of a
// cluster, each reached through its own GatewayBackend, as etcd's clientv3
// 3.4 does with several `Endpoints`: calls are spread round-robin over the
// members it believes healthy, and a call that fails with Unavailable is
// tried on the next member where clientv3 would retry it (RETRY_POLICY).
//
// Health is learnt from failures: an attempt that fails with Unavailable
// (refused, reset, timed out, or the member answering "no leader" and the
// like) marks its member unhealthy, and a probe then asks that member's
// Maintenance/Status, backing off from 100 ms to 2 s, until it answers with
// a leader; any successful call marks its member healthy too. Unhealthy
// members are tried only after every healthy one.
//
// With one URL nothing is retried and nothing probed: a call goes to the
// one server and its error surfaces, as a single-URL client always did.

import { LeaseError, closed, invalid, unavailable } from "./errors.mjs";
import { GatewayBackend } from "./gateway.mjs";
import { sleep } from "./signals.mjs";

/** Retried on the next member after Unavailable, whatever the attempt did: reads, and calls that are safe to repeat. */
export const REPEATABLE = "repeatable";
/**
 * Tried again only when the failed attempt's request never left (the
 * connection was refused, the name did not resolve): otherwise its outcome
 * is unknown and the error surfaces, with its cause (write at most once).
 */
export const AT_MOST_ONCE = "at-most-once";
/** A stream: watch.mjs opens it again on the next member from the last revision it delivered. */
export const RESUMED = "resumed";

/**
 * The retry policy of each backend method: clientv3 3.4's retry.go (Range,
 * LeaseGrant, LeaseRevoke, LeaseKeepAlive, LeaseTimeToLive, LeaseLeases and
 * Status are `repeatable`; Put, DeleteRange, Txn and Compact are not). A
 * call made with `{ idempotent: true }` is repeatable whatever its method:
 * the recipes' unlock, resign and withdrawal delete a key this session
 * created, and deleting it twice is harmless.
 */
export const RETRY_POLICY = Object.freeze({
  range: REPEATABLE,
  grant: REPEATABLE,
  revoke: REPEATABLE,
  keepAlive: REPEATABLE,
  timeToLive: REPEATABLE,
  leases: REPEATABLE,
  status: REPEATABLE,
  put: AT_MOST_ONCE,
  deleteRange: AT_MOST_ONCE,
  txn: AT_MOST_ONCE,
  compact: AT_MOST_ONCE,
  watch: RESUMED,
});

// Between rounds over a quorum of members, clientv3's backoff (25 ms ±10%).
const BACKOFF_MS = 25;
const PROBE_MIN_MS = 100;
const PROBE_MAX_MS = 2000;

// The codes of a connection that was never made: the request did not leave.
const NEVER_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** Whether `e` (through its causes) says the request never reached the server. */
export function neverSent(e) {
  for (let c = e, depth = 0; c && depth < 6; c = c.cause, depth++) {
    if (typeof c.code === "string" && NEVER_SENT.has(c.code)) return true;
    // Several addresses tried (localhost as ::1 and 127.0.0.1): all refused.
    if (Array.isArray(c.errors) && c.errors.length && c.errors.every((x) => NEVER_SENT.has(x?.code))) return true;
  }
  return false;
}

const transient = (e) => e instanceof LeaseError && e.code === "Unavailable";
const now = () => performance.now();

/** `connect()`'s target as a list of URLs: one URL, an array, or etcdctl's comma-separated `--endpoints`. */
export function endpointList(target) {
  const list = Array.isArray(target) ? target : target instanceof URL ? [target] : String(target).split(",");
  const urls = [];
  for (const x of list) {
    if (typeof x !== "string" && !(x instanceof URL)) throw invalid(`an endpoint is a URL string or a URL, got ${typeof x}`);
    const s = String(x).trim();
    if (s) urls.push(s);
  }
  if (urls.length === 0) throw invalid("connect() needs at least one endpoint URL");
  return urls;
}

export class EndpointSet {
  #members = []; // { backend, healthy, lastError, probing }
  #next = 0; // round-robin position
  #closer = new AbortController();

  /** `urls`: the members' client URLs; `options`: GatewayBackend's, for each. */
  constructor(urls, options = {}) {
    const seen = new Set();
    for (const u of urls) {
      const backend = new GatewayBackend(u, options);
      if (seen.has(backend.url)) continue;
      seen.add(backend.url);
      this.#members.push({ backend, healthy: true, lastError: null, probing: false });
    }
  }

  /** Each member as the client sees it now: its URL, whether it is believed healthy, and the last error it gave. */
  get endpoints() {
    return this.#members.map((m) => ({ url: m.backend.url, healthy: m.healthy, lastError: m.lastError }));
  }

  // The next member for an attempt: round-robin over the healthy members
  // this call has not tried, then the unhealthy ones; null once all are tried.
  #pick(tried) {
    const n = this.#members.length;
    let fallback = -1;
    for (let i = 0; i < n; i++) {
      const at = (this.#next + i) % n;
      const m = this.#members[at];
      if (tried.has(m)) continue;
      if (m.healthy) {
        this.#next = (at + 1) % n;
        return m;
      }
      if (fallback < 0) fallback = at;
    }
    if (fallback < 0) return null;
    this.#next = (fallback + 1) % n;
    return this.#members[fallback];
  }

  #succeeded(m) {
    m.healthy = true;
  }

  #failed(m, e) {
    m.lastError = e;
    m.healthy = false;
    if (this.#members.length > 1 && !m.probing) this.#probe(m);
  }

  // Asks an unhealthy member's Status until it answers with a leader (or
  // answers at all, if it has no Status), or a call finds it healthy.
  async #probe(m) {
    m.probing = true;
    const signal = this.#closer.signal;
    let delay = PROBE_MIN_MS;
    try {
      while (!m.healthy) {
        await sleep(delay, signal);
        delay = Math.min(delay * 2, PROBE_MAX_MS);
        try {
          const s = await m.backend.status({ signal });
          if (s.leader !== "0") m.healthy = true;
          else m.lastError = unavailable(`${m.backend.url}: the member has no leader`);
        } catch (e) {
          if (signal.aborted) return;
          if (transient(e)) m.lastError = e;
          else m.healthy = true; // it answered
        }
      }
    } catch {
      // closed
    } finally {
      m.probing = false;
    }
  }

  /**
   * One call: `run(backend, opts)` on a member, then on the next ones while
   * it fails with Unavailable and its policy lets it be tried again, with
   * clientv3's short backoff after each quorum of attempts; until every
   * member was tried twice and one request timeout has gone by (members
   * that answer "no leader" at once are asked again until an election can
   * have ended). `opts.timeout`, when given, bounds the whole call (each
   * attempt: the member's request timeout, or what is left of it).
   */
  async #call(method, opts = {}, run) {
    const n = this.#members.length;
    if (n === 1) return this.#once(this.#members[0], opts, run);
    const policy = opts.idempotent ? REPEATABLE : RETRY_POLICY[method];
    const quorum = Math.floor(n / 2) + 1;
    const start = now();
    const end = opts.timeout === undefined ? Infinity : start + opts.timeout;
    const tried = new Set();
    let last;
    for (let attempt = 0; ; attempt++) {
      if (attempt >= 2 * n && now() - start >= this.#members[0].backend.timeout) break;
      if (attempt > 0 && attempt % quorum === 0) await sleep(BACKOFF_MS * (1 + 0.1 * Math.random()), opts.signal);
      let m = this.#pick(tried);
      if (m === null) {
        tried.clear();
        m = this.#pick(tried);
      }
      tried.add(m);
      const left = end - now();
      if (attempt > 0 && left <= 0) break;
      try {
        return await this.#once(m, { ...opts, timeout: Math.max(1, Math.min(m.backend.timeout, left)) }, run);
      } catch (e) {
        if (!transient(e) || opts.signal?.aborted || this.#closer.signal.aborted) throw e;
        e.endpoint ??= m.backend.url;
        last = e;
        // Sent, and the answer lost: applied or not, nobody knows.
        if (policy !== REPEATABLE && !neverSent(e)) throw e;
      }
    }
    throw last;
  }

  async #once(m, opts, run) {
    if (this.#closer.signal.aborted) throw closed();
    try {
      const r = await run(m.backend, opts);
      this.#succeeded(m);
      return r;
    } catch (e) {
      if (transient(e) && !opts.signal?.aborted && !this.#closer.signal.aborted) this.#failed(m, e);
      throw e;
    }
  }

  range(req, opts) {
    return this.#call("range", opts, (b, o) => b.range(req, o));
  }

  put(req, opts) {
    return this.#call("put", opts, (b, o) => b.put(req, o));
  }

  deleteRange(req, opts) {
    return this.#call("deleteRange", opts, (b, o) => b.deleteRange(req, o));
  }

  txn(req, opts) {
    return this.#call("txn", opts, (b, o) => b.txn(req, o));
  }

  compact(revision, opts) {
    return this.#call("compact", opts, (b, o) => b.compact(revision, o));
  }

  grant(ttl, id, opts) {
    return this.#call("grant", opts, (b, o) => b.grant(ttl, id, o));
  }

  keepAlive(id, opts) {
    return this.#call("keepAlive", opts, (b, o) => b.keepAlive(id, o));
  }

  revoke(id, opts) {
    return this.#call("revoke", opts, (b, o) => b.revoke(id, o));
  }

  timeToLive(id, keys, opts) {
    return this.#call("timeToLive", opts, (b, o) => b.timeToLive(id, keys, o));
  }

  leases(opts) {
    return this.#call("leases", opts, (b, o) => b.leases(o));
  }

  status(opts) {
    return this.#call("status", opts, (b, o) => b.status(o));
  }

  /**
   * One watch stream, on the next member; a stream that fails marks its
   * member unhealthy, so watch.mjs's next stream (from the revision after
   * the last it delivered) goes to another.
   */
  async *watch(req, opts = {}) {
    if (this.#closer.signal.aborted) throw closed();
    const m = this.#pick(new Set());
    let first = true;
    try {
      for await (const x of m.backend.watch(req, opts)) {
        if (first) this.#succeeded(m);
        first = false;
        yield x;
      }
    } catch (e) {
      if (transient(e) && !opts.signal?.aborted && !this.#closer.signal.aborted) {
        this.#failed(m, e);
        if (this.#members.length > 1) e.endpoint ??= m.backend.url;
      }
      throw e;
    }
  }

  /** Stops every member's requests and the probes. */
  close() {
    this.#closer.abort(closed());
    for (const m of this.#members) m.backend.close();
  }
}
