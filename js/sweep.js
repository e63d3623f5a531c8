// The compaction's sweep: compact() moves the compaction point at once, and
// the versions it left unreadable are dropped afterwards a step at a time
// (one storage batch each, a few milliseconds), with a timer between steps
// so that other calls are served meanwhile. It keeps a Node process alive
// only while someone waits for it (whenCompacted): a sweep cut short is
// picked up after a restart.

// Versions dropped per step: ~3-5 ms of wasm, and a storage batch of as
// many deletes.
export const SWEEP_STEP = 10_000;
// A step that failed (a refusing store) is tried again this much later.
const RETRY_MS = 1000;

export class Sweeper {
  #step;
  #timer = null;
  #waiters = [];
  #stopped = false;

  /** `step()` runs one step and returns how many changes are left (0: done); it throws if it failed. */
  constructor(step) {
    this.#step = step;
  }

  /** Runs the steps: on timers, or (`now`) all before returning. */
  run(now) {
    if (this.#stopped) return;
    if (now) {
      while (this.#once() > 0);
    } else if (this.#timer === null) {
      this.#arm(0);
    }
  }

  /** Resolves once nothing is left to sweep (`left`: what is left now). */
  done(left) {
    if (left === 0) return Promise.resolve();
    const done = new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
    this.#timer?.ref?.();
    return done;
  }

  /** Fails every waiter (the lessor closed, its store failed) and stops for good. */
  fail(err) {
    this.#stopped = true;
    this.clear();
    for (const w of this.#waiters.splice(0)) w.reject(err);
  }

  clear() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  // One step; resolves the waiters once nothing is left.
  #once() {
    const left = this.#step();
    if (left === 0) for (const w of this.#waiters.splice(0)) w.resolve();
    return left;
  }

  #arm(delay) {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      let left;
      try {
        left = this.#once();
      } catch {
        // (The step reported it, and stopped this if it was for good.)
        if (!this.#stopped && this.#timer === null) this.#arm(RETRY_MS);
        return;
      }
      // (A listener of the step may have armed the next one already.)
      if (left > 0 && this.#timer === null) this.#arm(0);
    }, delay);
    if (this.#waiters.length === 0) this.#timer?.unref?.();
  }
}
