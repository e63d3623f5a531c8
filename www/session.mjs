// The host side of the demo. The lessor never reads a clock: each call asks
// the `now()` it was given, and leases expire only when the host calls
// tick(). Here the page is the host: it owns the clocks, ticks the lessor,
// and runs the timers a real client would (keep-alives, the story's actors).

/** The wall clock. */
export class RealClock {
  kind = "real";
  now() {
    return Date.now();
  }
}

/** A clock the page drives: paused, stepped or sped up. It never goes back. */
export class SimClock {
  kind = "sim";
  paused = false;
  speed = 1;
  #t;

  constructor(start) {
    this.start = start;
    this.#t = start;
  }

  now() {
    return this.#t;
  }

  set(t) {
    if (t > this.#t) this.#t = t;
  }
}

/** One lessor on one clock, and the host timers that act on it. */
export class Session {
  #timers = []; // { at, name, fn }; few enough that a scan beats a heap
  closed = false;
  /** Lease id -> who holds it, for leases the story's actors took. */
  owners = new Map();
  /** Lease ids this host keeps alive. */
  alive = new Set();
  /** Called with errors thrown by timers. */
  onError = (e) => {
    throw e;
  };

  constructor(clock, lessor) {
    this.clock = clock;
    this.lessor = lessor;
    // A lease that is gone needs no keep-alive.
    const forget = (e) => this.keepAlive(e.lease, false);
    lessor.addEventListener("expire", forget);
    lessor.addEventListener("revoke", forget);
  }

  /** Runs `fn` when the clock reaches `at`; a named timer replaces its namesake. */
  at(at, name, fn) {
    if (name !== null) this.cancel(name);
    this.#timers.push({ at, name, fn });
  }

  cancel(name) {
    this.#timers = this.#timers.filter((t) => t.name !== name);
  }

  /** Earliest instant at which something is due: an expiry or a timer. */
  nextDue() {
    let next = this.lessor.nextDeadline() ?? Infinity;
    for (const t of this.#timers) next = Math.min(next, t.at);
    return next;
  }

  /** Does what is due at the clock's current time: expiry first, then timers in time order. */
  runDue() {
    this.lessor.tick();
    for (;;) {
      const now = this.clock.now();
      let first = -1;
      this.#timers.forEach((t, i) => {
        if (t.at <= now && (first < 0 || t.at < this.#timers[first].at)) first = i;
      });
      if (first < 0) return;
      const [timer] = this.#timers.splice(first, 1);
      try {
        timer.fn();
      } catch (e) {
        this.onError(e);
      }
    }
  }

  /**
   * Moves a simulated clock to `target`, stopping at every instant something
   * is due on the way, so a 10 s step behaves exactly like 10 s passing:
   * a renewal due at +3 s happens at +3 s, not at the end of the step.
   */
  advanceTo(target) {
    this.runDue();
    while (this.clock.now() < target) {
      // At least 1 ms per turn: the loop always ends.
      const next = Math.min(target, Math.max(this.nextDue(), this.clock.now() + 1));
      this.clock.set(next);
      this.runDue();
    }
  }

  /**
   * Keeps a lease alive as etcd clients do: renew whenever a third of its
   * TTL has passed, that is when 2/3 of the TTL is left (at once if less is
   * left already). Stops when the lease is gone or `on` is false.
   */
  keepAlive(id, on) {
    const name = `keepalive:${id}`;
    this.cancel(name);
    this.alive.delete(id);
    if (!on) return;
    const arm = () => {
      const t = this.lessor.timeToLive(id);
      if (t.ttl < 0) {
        this.alive.delete(id);
        return;
      }
      this.alive.add(id);
      this.at(this.clock.now() + t.ttlMs - (t.grantedTtl * 2000) / 3, name, beat);
    };
    const beat = () => {
      try {
        this.lessor.renew(id);
        arm();
      } catch (e) {
        this.alive.delete(id);
        this.onError(e);
      }
    };
    arm();
  }

  /** Stops everything and frees the lessor; waits for its storage first. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    this.#timers = [];
    try {
      await this.lessor.flush();
    } finally {
      this.lessor.close();
    }
  }
}
