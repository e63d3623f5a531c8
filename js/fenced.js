// A fenced resource: remembers the highest fencing token it accepted and
// refuses writes with a lower one, so that a lock holder paused past its
// lease (whose lock another took since, with a higher token) cannot write
// late. Fencing must happen at the resource: the holder cannot know it was
// paused. Kept where the resource's state is kept:
//   - a Map (in memory, for a resource that lives in this process),
//   - a Lessor (as the key `name`; durable through its store: the file
//     store, IndexedDB, a Durable Object's),
//   - a Durable Object's `state.storage` (as the storage key `name`).
// Writes to one fence run one at a time, token check, record and `fn`
// together, so that a write never overtakes a later one with a higher
// token. The token is recorded (durably) before `fn` runs: a write that
// fails halfway still raises the fence.

import { LeaseError } from "./errors.js";

// Per store, per name: the tail of the writes' queue.
const queues = new WeakMap();

function kindOf(store) {
  if (store instanceof Map) return "map";
  if (store && typeof store.txn === "function" && typeof store.setHostEntry === "function") return "lessor";
  if (store && typeof store.get === "function" && typeof store.put === "function" && typeof store.transaction === "function") return "storage";
  throw new LeaseError("InvalidArgument", "fenced() takes a Map, a Lessor or a Durable Object's storage");
}

const asToken = (v) => {
  if (v === undefined || v === null) return 0;
  const n = typeof v === "number" ? v : Number(typeof v === "string" ? v : new TextDecoder().decode(v));
  return Number.isSafeInteger(n) && n >= 0 ? n : NaN;
};

// The three stores' reads and writes of the highest token.
const STORES = {
  map: {
    read: (m, name) => asToken(m.get(name)),
    write: (m, name, token) => void m.set(name, token),
  },
  lessor: {
    read: (l, name) => asToken(l.get(name)?.value),
    // The lessor's writes are synchronous; flush() waits for an async store.
    write: (l, name, token) => {
      l.put(name, String(token));
      return l.flush();
    },
  },
  storage: {
    read: async (s, name) => asToken(await s.get(name)),
    write: (s, name, token) => s.put(name, token),
  },
};

class Fence {
  #store;
  #name;
  #ops;

  constructor(store, name) {
    this.#ops = STORES[kindOf(store)];
    if (typeof name !== "string" || name === "") throw new LeaseError("InvalidArgument", "a fence's name must be a non-empty string");
    this.#store = store;
    this.#name = name;
  }

  get name() {
    return this.#name;
  }

  /** The highest token accepted so far; 0 before the first write. */
  async highest() {
    return this.#checked(await this.#ops.read(this.#store, this.#name));
  }

  /**
   * Runs `fn(token)` if `token` is at least the highest accepted so far,
   * having recorded it as the highest; otherwise rejects with StaleToken
   * (with `token` and `highest`) and runs nothing.
   */
  write(token, fn) {
    if (!Number.isSafeInteger(token) || token < 1) {
      return Promise.reject(new LeaseError("InvalidArgument", `a fencing token is a positive integer, got ${token}`));
    }
    if (typeof fn !== "function") return Promise.reject(new TypeError("fence.write(token, fn): fn must be a function"));
    return this.#queued(async () => {
      const highest = await this.highest();
      if (token < highest) {
        throw new LeaseError("StaleToken", `fence ${this.#name}: token ${token} is below ${highest}, already accepted`, { token, highest });
      }
      if (token > highest) await this.#ops.write(this.#store, this.#name, token);
      return fn(token);
    });
  }

  #checked(n) {
    if (Number.isNaN(n)) throw new LeaseError("CorruptEntry", `fence ${this.#name}: the stored token is not a non-negative integer`, { entry: this.#name });
    return n;
  }

  // One write at a time per store and name, whichever Fence object runs it.
  #queued(run) {
    let names = queues.get(this.#store);
    if (!names) queues.set(this.#store, (names = new Map()));
    const prev = names.get(this.#name) ?? Promise.resolve();
    const result = prev.then(run);
    const tail = result.then(
      () => {},
      () => {},
    );
    names.set(this.#name, tail);
    tail.then(() => {
      if (names.get(this.#name) === tail) names.delete(this.#name);
    });
    return result;
  }
}

/** The fence `name` kept in `store` (a Map, a Lessor, or a Durable Object's storage). */
export function fenced(store, name) {
  return new Fence(store, name);
}

export { Fence };
