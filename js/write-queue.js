// The write queue for async storage: a store whose write returns a promise
// gets the batches one at a time, in order; flush() waits for them; a
// rejection fails the queue for good (the lessor then refuses changes).

import { LeaseError } from "./errors.js";

export class WriteQueue {
  #storage;
  #onFail;
  #queue = [];
  #inFlight = false;
  #failed = null;
  #idle = [];

  constructor(storage, onFail) {
    this.#storage = storage;
    this.#onFail = onFail;
  }

  /** The Error that failed the queue, or null. */
  get failed() {
    return this.#failed;
  }

  // Called from inside wasm with one batch per operation. A synchronous throw
  // fails the operation (the core changes nothing). A promise is chained:
  // batches go to storage one at a time, in order.
  write(batch) {
    if (this.#inFlight) {
      this.#queue.push(batch);
      return;
    }
    const r = this.#storage.write(batch);
    if (r && typeof r.then === "function") {
      this.#inFlight = true;
      r.then(() => this.#drain(), (e) => this.#fail(e));
    }
  }

  /** Resolves when every batch so far is durable; rejects if one failed. */
  flush() {
    if (this.#failed) return Promise.reject(this.#error());
    if (!this.#inFlight && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idle.push({ resolve, reject }));
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
        r.then(() => this.#drain(), (e) => this.#fail(e));
        return;
      }
    }
    this.#inFlight = false;
    for (const w of this.#idle.splice(0)) w.resolve();
  }

  #fail(e) {
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
