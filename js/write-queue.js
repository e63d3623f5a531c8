// The write queue for async storage: a store whose write returns a promise
// gets the batches one at a time, in order (or all at once, if it says it is
// `pipelined`: it keeps their order itself and may make many durable with
// one sync); flush() waits for the batches written so far, not for later
// ones; a rejection fails the queue for good (the lessor then refuses changes).

import { LeaseError } from "./errors.js";

export class WriteQueue {
  #storage;
  #onFail;
  #queue = [];
  #inFlight = false;
  #failed = null;
  // Batches handed in, and batches durable: flush() waits for `#done` to
  // reach what `#issued` was when it was called.
  #issued = 0;
  #done = 0;
  #idle = [];

  constructor(storage, onFail) {
    this.#storage = storage;
    this.#onFail = onFail;
  }

  /** The Error that failed the queue, or null. */
  get failed() {
    return this.#failed;
  }

  /** Batches handed in that are not durable yet. */
  get pending() {
    return this.#issued - this.#done;
  }

  // Called from inside wasm with one batch per operation. A synchronous throw
  // fails the operation (the core changes nothing). A promise is chained:
  // batches go to storage one at a time, in order, unless it is pipelined.
  write(batch) {
    if (this.#inFlight) {
      this.#queue.push(batch);
      this.#issued++;
      return;
    }
    const r = this.#storage.write(batch);
    this.#issued++;
    if (!r || typeof r.then !== "function") return this.#durable();
    if (this.#storage.pipelined) {
      r.then(() => this.#durable(), (e) => this.#fail(e));
      return;
    }
    this.#inFlight = true;
    r.then(() => (this.#durable(), this.#drain()), (e) => this.#fail(e));
  }

  /**
   * Resolves when every batch so far is durable; rejects if one failed.
   * Callers between two writes share one promise (a put's answer and each
   * of its watch streams wait for the same sync: 100 streams, 1 promise).
   */
  flush() {
    if (this.#failed) return Promise.reject(this.#error());
    if (this.#done >= this.#issued) return Promise.resolve();
    const last = this.#idle.at(-1);
    if (last?.target === this.#issued) return last.promise;
    const wait = { target: this.#issued, promise: null, resolve: null, reject: null };
    wait.promise = new Promise((resolve, reject) => Object.assign(wait, { resolve, reject }));
    this.#idle.push(wait);
    return wait.promise;
  }

  #durable() {
    this.#done++;
    let n = 0;
    while (n < this.#idle.length && this.#idle[n].target <= this.#done) this.#idle[n++].resolve();
    if (n > 0) this.#idle.splice(0, n);
  }

  #drain() {
    while (this.#queue.length > 0 && !this.#failed) {
      const batch = this.#queue.shift();
      let r;
      try {
        r = this.#storage.write(batch);
      } catch (e) {
        this.#fail(e);
        return;
      }
      if (r && typeof r.then === "function") {
        r.then(() => (this.#durable(), this.#drain()), (e) => this.#fail(e));
        return;
      }
      this.#durable();
    }
    this.#inFlight = false;
  }

  #fail(e) {
    if (this.#failed) return;
    this.#failed = e instanceof Error ? e : new Error(String(e));
    this.#inFlight = false;
    this.#queue.length = 0;
    this.#onFail();
    const err = this.#error();
    for (const w of this.#idle.splice(0)) w.reject(err);
  }

  #error() {
    return new LeaseError("StorageFailed", `storage write failed: ${this.#failed.message ?? this.#failed}`);
  }
}
