// The expiry timer: one setTimeout at the lessor's next deadline, which
// calls back to tick. It never keeps a Node process alive.

// setTimeout fires at once for longer delays: wait in steps of at most this.
const MAX_DELAY_MS = 2 ** 31 - 1;
// A tick that failed (a refusing store, a bad clock) is tried again this
// much later, not at its overdue deadline in a tight loop.
const RETRY_MS = 1000;

export class ExpiryTimer {
  #fire;
  #timer = null;
  #at = Infinity;

  constructor(fire) {
    this.#fire = fire;
  }

  /** The deadline the timer is armed for, epoch ms; Infinity when not armed. */
  get at() {
    return this.#at;
  }

  /** Arms the timer for `at` (epoch ms, null: nothing due) unless it already is; `now()` is read only to arm. */
  schedule(at, now) {
    if (at === null) {
      this.clear();
      return;
    }
    if (at === this.#at && this.#timer !== null) return;
    this.#arm(at, Math.min(Math.max(at - now(), 0), MAX_DELAY_MS));
  }

  /** Fires again in a second. Armed "at 0", so any later schedule() replaces it. */
  retry() {
    this.#arm(0, RETRY_MS);
  }

  clear() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#at = Infinity;
  }

  // The one timer: replaces any other.
  #arm(at, delay) {
    this.clear();
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#at = Infinity;
      this.#fire();
    }, delay);
    if (typeof this.#timer === "object" && typeof this.#timer.unref === "function") this.#timer.unref();
  }
}
