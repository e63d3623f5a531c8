// The server side of the dashboard: what an etcd server (edge-lease's, or
// any with the JSON gateway) holds, as the page can know it through
// edge-lease/client. Keys are exact and instant: one range, then a watch on
// every key. Leases are not: etcd has no lease watch, so the lease list and
// each lease's TTL are polled every second, and what happened in between is
// inferred: a new id is a grant, a deadline that moved later a renewal, an
// id gone before its deadline a revoke, at its deadline an expiry.

import { connect } from "edge-lease/client";

export const POLL_MS = 1000;
const MAX_LEASES = 200; // leases polled per round (timeToLive each)
const KEY_LIMIT = 2000; // keys read at the start; the watch adds the rest
const RETRY_MS = 1000;

/**
 * Where a lease's deadline lies, from whole-second TTLs: a poll sent at
 * `send` and answered at `recv` with `ttl` (remaining seconds, rounded
 * down) puts the deadline in [send + ttl s, recv + (ttl + 1) s). Polls of
 * the same deadline narrow the interval; one that does not overlap it says
 * the deadline moved.
 */
export function placeDeadline(known, send, recv, ttl) {
  const lo = send + ttl * 1000;
  const hi = recv + (ttl + 1) * 1000;
  if (!known) return { lo, hi, moved: 0 };
  if (lo > known.hi) return { lo, hi, moved: 1 };
  if (hi < known.lo) return { lo, hi, moved: -1 };
  return { lo: Math.max(lo, known.lo), hi: Math.min(hi, known.hi), moved: 0 };
}

export class ServerSource {
  kind = "server";
  closed = false;
  revision = 0;
  /** key -> entry, as range and watch tell it */
  entries = new Map();
  /** More keys than were read at the start (the watch still adds new ones). */
  truncated = false;
  /** lease id -> { id, grantedTtl, lo, hi } */
  leases = new Map();
  /** lease id -> { start, startKind, renewals: [ms], end, endKind, ttl }: the timeline */
  history = new Map();
  /** Lease ids this page keeps alive (one keepAliveOnce every TTL/3). */
  alive = new Map();
  owners = new Map(); // the page engine's names for leases; none here
  /** Whether the last poll reached the server. */
  reachable = null;
  clock = { kind: "real", now: () => Date.now() };

  #abort = new AbortController();
  #polled = false;
  #wake = null;
  #again = false; // poked while a poll was running: poll once more at once

  /**
   * `origin`: the server's URL. `on`: { log(kind, text, revision), error(e),
   * reach(ok, e) } called as things happen.
   */
  constructor(origin, on) {
    this.origin = origin;
    this.on = on;
    this.client = connect(origin, { timeout: 5000 });
    this.#pollLoop();
    this.#watchLoop();
  }

  now() {
    return Date.now();
  }

  /** The deadline's best estimate: the middle of what the polls allow. */
  deadline(l) {
    return (l.lo + l.hi) / 2;
  }

  /** Polls again now (after an action, or when a watch saw a lease's keys go). */
  poke() {
    this.#again = true;
    this.#wake?.();
  }

  #sleep(ms) {
    if (this.#again) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.#wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  async #pollLoop() {
    while (!this.closed) {
      try {
        await this.poll();
        if (this.reachable !== true) this.on.reach(true);
        this.reachable = true;
      } catch (e) {
        if (this.closed) return;
        if (this.reachable !== false) this.on.reach(false, e);
        this.reachable = false;
      }
      await this.#sleep(POLL_MS);
    }
  }

  async poll() {
    const signal = this.#abort.signal;
    this.#again = false;
    const ids = await this.client.leases({ signal });
    const polled = await Promise.all(
      ids.slice(0, MAX_LEASES).map(async (id) => {
        const send = Date.now();
        const t = await this.client.timeToLive(id, { signal });
        return { id, t, send, recv: Date.now() };
      }),
    );
    if (this.closed) return;
    this.leaseCount = ids.length;
    const now = Date.now();
    const seen = new Set();
    for (const { id, t, send, recv } of polled) {
      if (t.ttl < 0) continue; // gone between the list and its TTL
      seen.add(id);
      const known = this.leases.get(id);
      const placed = placeDeadline(known, send, recv, t.ttl);
      const l = { id, grantedTtl: t.grantedTtl, lo: placed.lo, hi: placed.hi };
      this.leases.set(id, l);
      const mid = this.deadline(l);
      if (!known) {
        // Granted (or last renewed) one TTL before its deadline. Leases there
        // before the first poll were granted at some unknown time.
        const startKind = this.#polled ? "grant" : "seen";
        this.history.set(id, { start: mid - t.grantedTtl * 1000, startKind, renewals: [], end: null, endKind: null, ttl: t.grantedTtl });
        if (this.#polled) this.on.log("grant", `lease ${id} granted, TTL ${t.grantedTtl} s`);
        else this.on.log("note", `lease ${id} is live: ${t.ttl} s left of ${t.grantedTtl} s`);
      } else if (placed.moved > 0) {
        this.history.get(id)?.renewals.push(mid - t.grantedTtl * 1000);
        this.on.log("renew", `lease ${id} renewed, TTL ${t.grantedTtl} s (its deadline moved ${((mid - this.deadline(known)) / 1000).toFixed(1)} s later)`);
      }
    }
    for (const [id, l] of this.leases) {
      if (seen.has(id)) continue;
      if (ids.length > MAX_LEASES && ids.includes(id)) continue; // not polled this round
      this.leases.delete(id);
      this.#stopKeepAlive(id);
      // Gone within a second of its deadline: expired; earlier: revoked.
      const expired = now >= l.lo - 1000;
      const h = this.history.get(id);
      if (h) {
        h.end = expired ? Math.min(now, this.deadline(l)) : now;
        h.endKind = expired ? "expire" : "revoke";
      }
      this.on.log(expired ? "expire" : "revoke", `lease ${id} ${expired ? "expired" : "revoked"}`);
    }
    this.#polled = true;
  }

  async #watchLoop() {
    const signal = this.#abort.signal;
    while (!this.closed) {
      try {
        const r = await this.client.range({ key: "", prefix: true, limit: KEY_LIMIT, signal });
        this.entries = new Map(r.kvs.map((e) => [e.key, e]));
        this.truncated = r.more;
        this.revision = Math.max(this.revision, r.revision);
        for await (const ev of this.client.watch("", { prefix: true, startRevision: r.revision + 1, signal })) {
          this.#apply(ev);
        }
      } catch (e) {
        if (this.closed) return;
        // Compacted past our start, or the server went away mid-read: read
        // everything again in a moment (the watch resumes a dropped stream
        // by itself; this is for what it cannot resume).
        if (e?.code !== "Unavailable") this.on.error(e);
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }

  #apply(ev) {
    this.revision = Math.max(this.revision, ev.modRevision);
    if (ev.type === "put") {
      const { key, value, lease, createRevision, modRevision, version } = ev;
      this.entries.set(key, { key, value, lease, createRevision, modRevision, version });
      this.on.log("put", `${key} written${lease ? ` on lease ${lease}` : " (no lease)"}`, ev.modRevision);
      if (lease && !this.leases.has(lease)) this.poke();
    } else {
      const had = this.entries.get(ev.key);
      this.entries.delete(ev.key);
      this.on.log("delete", `${ev.key} deleted`, ev.modRevision);
      // A leased key going is often its lease going: look now.
      if (had?.lease) this.poke();
    }
  }

  // ---- what the page's controls do -----------------------------------------

  async grant(ttl) {
    const r = await this.client.grant(ttl);
    this.poke();
    return r;
  }

  async put(key, value, { lease, ifAbsent }) {
    const r = await this.client.put(key, value, { lease, ifAbsent });
    return r;
  }

  async renew(id) {
    await this.client.keepAliveOnce(id);
    this.poke();
  }

  async revoke(id) {
    this.#stopKeepAlive(id);
    await this.client.revoke(id);
    this.poke();
  }

  async delete(key) {
    await this.client.delete(key);
  }

  /** Keeps a lease alive as etcd clients do: a keepalive every third of its TTL. */
  keepAlive(id, on) {
    this.#stopKeepAlive(id);
    if (!on) return;
    const l = this.leases.get(id);
    const every = Math.max(500, ((l?.grantedTtl ?? 3) * 1000) / 3);
    const beat = () =>
      this.client.keepAliveOnce(id).then(
        () => this.poke(),
        (e) => {
          this.#stopKeepAlive(id);
          if (!this.closed) this.on.error(e);
        },
      );
    this.alive.set(id, setInterval(beat, every));
    beat();
  }

  #stopKeepAlive(id) {
    clearInterval(this.alive.get(id));
    this.alive.delete(id);
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.alive.keys()]) this.#stopKeepAlive(id);
    this.#abort.abort();
    this.poke();
    await this.client.close();
  }
}
