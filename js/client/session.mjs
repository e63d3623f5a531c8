// A session (etcd's concurrency.Session): a lease kept alive every TTL/3.
// `signal` aborts at the lease's deadline as the client last knew it (the
// time the last successful keepalive was sent, plus the TTL it granted) as
// soon as keepalives stop succeeding, not when the server says so later;
// a `lost` event goes with it. A keepalive answered with TTL 0 (the lease
// is gone) ends the session at once. `close()` revokes the lease.
//
// The deadline timer can run late, and after other timers: a process frozen
// past its deadline runs its overdue timers in due order, so a holder's own
// shorter sleep ends first. So reading `signal` or `lost` reads the clock
// too, and ends the session then if the deadline has passed: what a lock's
// `held` says right after such a sleep is already the truth.
//
// In-process (connect(lessor)) the deadline is known exactly: a backend
// with `trackLease` gives the lease's time left by the engine's own clock,
// and says when the lessor expires or revokes it; the session ends at that
// moment.
//
// Over the JSON gateway each keepalive is one short POST to
// /v3/lease/keepalive (etcd's gateway answers a keepalive stream only once
// its request body has ended, and browsers cannot stream request bodies over
// HTTP/1.1), sent one at a time by one loop per session.

import { keyId, leaseBig, leaseHex } from "./codec.mjs";
import { leaseGoHex } from "../lease-id.js";
import { LeaseError } from "./errors.mjs";
import { Election } from "./election.mjs";
import { Mutex } from "./mutex.mjs";
import { linkSignals, signalOption } from "./signals.mjs";

const DEFAULT_TTL = 60; // etcd's concurrency.NewSession default
const RETRY_MS = 500; // after a failed keepalive, as clientv3 retries its stream

const now = () => performance.now();
// setTimeout's longest delay; a longer one fires at once (after 1 ms).
const MAX_DELAY = 2 ** 31 - 1;
const delay = (ms) => Math.min(MAX_DELAY, Math.max(0, ms));

export class Session extends EventTarget {
  #client;
  #backend;
  #id;
  #big;
  #ttl;
  #deadline; // performance.now() ms
  #deadlineEpoch; // the same instant in epoch ms, fixed when it is set
  #ctl = new AbortController();
  #keepTimer = null;
  #deadTimer = null;
  #lost = false;
  #closing = null;
  #tracker = null; // the backend's view of the lease, when it has one (in-process)
  // The keys this session's mutexes and candidates hold or are taking, with
  // how many use each: a key created by a request whose answer was lost is
  // removed only if nothing else of this session uses it by then.
  #claims = new Map();

  /** Use `client.session()`. */
  constructor(client, id, ttl, deadline) {
    super();
    this.#client = client;
    this.#backend = client.backend;
    this.#id = id;
    this.#big = leaseBig(id);
    this.#ttl = ttl;
    this.#tracker = this.#backend.trackLease?.(this.#big, (why) => this.#lose(why)) ?? null;
    this.#setDeadline(this.#exact() ?? deadline);
    this.#schedule((ttl * 1000) / 3);
  }

  /** The deadline by the backend's own clock (performance.now() ms), if it knows it. */
  #exact() {
    const rem = this.#tracker?.remainingMs();
    if (rem === undefined || Number.isNaN(rem)) return undefined;
    return now() + Math.max(0, rem);
  }

  static async create(client, { ttl = DEFAULT_TTL, lease, signal } = {}) {
    signalOption(signal);
    if (!Number.isSafeInteger(ttl) || ttl < 1) throw new LeaseError("InvalidArgument", `ttl must be a positive integer, got ${ttl}`);
    const sent = now();
    if (lease !== undefined && lease !== null) {
      // An existing lease (etcd's WithLease): learn its TTL with a keepalive.
      const big = leaseBig(lease);
      const granted = await client.backend.keepAlive(big, { signal });
      if (granted <= 0) throw new LeaseError("LeaseNotFound", `lease ${lease} not found`);
      return new Session(client, leaseHex(big), granted, sent + granted * 1000);
    }
    const g = await client.backend.grant(ttl, null, { signal });
    return new Session(client, g.id, g.ttl, sent + g.ttl * 1000);
  }

  /** The lease id (16 hex digits). */
  get lease() {
    return this.#id;
  }

  /** The granted TTL, in seconds. */
  get ttl() {
    return this.#ttl;
  }

  /** The lease's deadline as last known (epoch ms): the last successful keepalive's send time + TTL. */
  get deadline() {
    return this.#deadlineEpoch;
  }

  /**
   * Aborts when the session ends: lost (reason LeaseNotFound, with
   * `deadline`) or closed (reason Closed). Read past the deadline, it has
   * aborted, whether or not the deadline timer has run.
   */
  get signal() {
    this.#checkDeadline();
    return this.#ctl.signal;
  }

  /** Whether the lease was lost (expired or revoked, or its deadline passed), as opposed to closed. */
  get lost() {
    this.#checkDeadline();
    return this.#lost;
  }

  /** The suffix etcd's recipes append to their prefixes: Go's `%x` of the lease id. */
  get keySuffix() {
    return leaseGoHex(this.#big);
  }

  /** @internal */
  get client() {
    return this.#client;
  }

  /** @internal Marks `key` (bytes) as used by one more lock or candidate. */
  claim(key) {
    const id = keyId(key);
    this.#claims.set(id, (this.#claims.get(id) ?? 0) + 1);
  }

  /** @internal One user of `key` fewer; true if nothing of this session uses it now. */
  unclaim(key) {
    const id = keyId(key);
    const n = this.#claims.get(id) ?? 0;
    if (n <= 1) this.#claims.delete(id);
    else this.#claims.set(id, n - 1);
    return n <= 1;
  }

  /**
   * @internal One user of `key` fewer, and the key deleted if nothing of
   * this session uses it now: a key a call did not get (its request failed
   * or was aborted, maybe after the server applied it), unless another lock
   * or candidate found it and holds it or waits with it. `loud`: a failed
   * delete throws (else it is left, as with the client closed).
   */
  async release(key, loud = false) {
    if (!this.unclaim(key)) return;
    const deleting = !loud && this.#client.closed.aborted ? null : this.#backend.deleteRange({ key, rangeEnd: null, prevKv: false }, { idempotent: true });
    await (loud ? deleting : deleting?.catch(() => {}));
  }

  mutex(name) {
    return new Mutex(this, name);
  }

  election(name) {
    return new Election(this, name);
  }

  #schedule(ms) {
    clearTimeout(this.#keepTimer);
    // (A TTL over ~74 days: the keepalive comes after ~24.8 days, early.)
    this.#keepTimer = setTimeout(() => this.#keepAlive(), delay(ms));
  }

  #setDeadline(t) {
    this.#deadline = t;
    this.#deadlineEpoch = Math.round(Date.now() + (t - now()));
    clearTimeout(this.#deadTimer);
    this.#deadTimer = setTimeout(() => this.#onDeadline(), delay(t - now()));
  }

  // Ends the session if its deadline has passed by the clock now (in-process:
  // the engine's), whatever the timers have run.
  #checkDeadline() {
    if (this.#ctl.signal.aborted) return;
    // (NaN, the engine busy inside its own change, is not past.)
    const past = this.#tracker !== null ? this.#tracker.remainingMs() <= 0 : now() >= this.#deadline;
    if (past) this.#lose(this.#pastDeadline());
  }

  #pastDeadline() {
    return `the lease passed its deadline (${new Date(this.deadline).toISOString()}) with no successful keepalive`;
  }

  #onDeadline() {
    // Timers can fire a little early; only the clock says the deadline passed.
    const left = this.#deadline - now();
    if (left > 0) {
      this.#deadTimer = setTimeout(() => this.#onDeadline(), delay(left));
      return;
    }
    // In-process, the engine's clock decides (it may be a simulated one, or
    // the lease renewed by someone else): end only once its lease is gone.
    if (this.#tracker !== null) {
      const rem = this.#tracker.remainingMs();
      if (rem > 0) {
        this.#setDeadline(now() + rem);
        return;
      }
    }
    this.#lose(this.#pastDeadline());
  }

  async #keepAlive() {
    if (this.#ctl.signal.aborted) return;
    const sent = now();
    // A keepalive that cannot arrive before the deadline cannot help.
    const timeout = Math.max(1000, Math.min((this.#ttl * 1000) / 3, this.#deadline - sent));
    try {
      const ttl = await this.#backend.keepAlive(this.#big, { signal: this.#ctl.signal, timeout });
      if (this.#ctl.signal.aborted) return;
      if (ttl <= 0) {
        this.#lose("the lease expired or was revoked (keepalive answered TTL 0)");
        return;
      }
      this.#ttl = ttl;
      this.#setDeadline(this.#exact() ?? sent + ttl * 1000);
      this.#schedule((ttl * 1000) / 3);
    } catch {
      if (this.#ctl.signal.aborted) return;
      // Unreachable for now: retry; the deadline timer ends the session if
      // no keepalive gets through in time.
      this.#schedule(Math.min(RETRY_MS, Math.max(0, this.#deadline - now())));
    }
  }

  #stopTimers() {
    clearTimeout(this.#keepTimer);
    clearTimeout(this.#deadTimer);
    this.#tracker?.stop();
  }

  #lose(why) {
    if (this.#ctl.signal.aborted) return;
    this.#lost = true;
    this.#stopTimers();
    const reason = new LeaseError("LeaseNotFound", `session lease ${this.#id} lost: ${why}`, {
      lease: this.#id,
      deadline: this.deadline,
    });
    this.#ctl.abort(reason);
    const ev = new Event("lost");
    ev.reason = reason;
    this.dispatchEvent(ev);
  }

  /**
   * Stops the keepalives and revokes the lease (its keys go with it).
   * Idempotent. `waitMs` (internal: the client's close) bounds the revoke.
   */
  close({ waitMs } = {}) {
    this.#closing ??= (async () => {
      this.#stopTimers();
      if (!this.#ctl.signal.aborted) this.#ctl.abort(new LeaseError("Closed", `session ${this.#id} is closed`));
      if (this.#client.closed.aborted) return;
      // Also after a loss: the client may have lost touch while the server
      // still has the lease. LeaseNotFound (gone already) and Unavailable
      // (it expires by itself within its TTL) leave nothing to do.
      const bound = linkSignals([], waitMs);
      try {
        await this.#backend.revoke(this.#big, { signal: bound.signal }).catch(() => {});
      } finally {
        bound.dispose();
      }
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
    return this.close();
  }
}
