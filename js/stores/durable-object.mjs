// Cloudflare Durable Objects: the lessor's state in the object's storage,
// expiry through the object's one alarm.
//
//   export class Leases {
//     constructor(ctx, env) {
//       ctx.blockConcurrencyWhile(async () => {
//         this.dl = await DurableLessor.open(ctx.storage);
//       });
//     }
//     async fetch(request) {
//       const { id } = this.dl.lessor.grant(30);
//       await this.dl.sync(); // durable, and the alarm is set
//       return Response.json({ id });
//     }
//     async alarm() {
//       await this.dl.alarm();
//     }
//   }

//
// With `outputGate: true` (what edge-lease/worker's LeaseNamespace uses) a
// handler need not await anything before answering:
//
//     const { id } = this.dl.lessor.grant(30);
//     this.dl.arm();                 // the alarm, if the lease needs one
//     return Response.json({ id });  // held by the output gate until durable
//
// Each batch's put()/delete() calls are issued at once, in the same turn as
// the operation and without an await between them, so the storage commits
// them as one atomic write (write coalescing on KV-backed objects, the
// implicit transaction on SQLite-backed ones), and the object's output gate
// holds every response and outgoing message sent after them until that write
// is confirmed. A failed write breaks the output gate: the runtime resets the
// object, nothing sent after the write leaves, and the next event opens the
// lessor from storage again. (The default mode, one explicit transaction per
// batch written one after another, needs `await sync()` before answering:
// a batch queued behind another is not yet issued when the response goes,
// so the output gate would not wait for it.)

import { Lessor } from "../entries/workerd.mjs";

// The storage API takes at most 128 keys per put() or delete() call.
const MAX_KEYS_PER_CALL = 128;
// A stored value is at most 128 KiB (KV-backed objects); a key's record is
// its value plus a header of about 80 bytes.
const DEFAULT_MAX_VALUE_BYTES = 128 * 1024 - 1024;

// KV-backed objects' limits: a key of 2 KiB (UTF-8), a value of 128 KiB
// (as serialized: a few bytes more than a byte array's length).
const KV_MAX_KEY_BYTES = 2048;
const KV_MAX_VALUE_BYTES = 128 * 1024 - 64;
// The engine's key limit that keeps a stored key within it: the key
// percent-encoded (up to 3 bytes a byte) after a prefix of ~35 bytes.
export const KV_MAX_ENGINE_KEY_BYTES = 640;
const utf8 = new TextEncoder();

function checkKvSizes(key, value) {
  const keyBytes = utf8.encode(key).length;
  if (keyBytes > KV_MAX_KEY_BYTES) throw new RangeError(`a stored key of ${keyBytes} bytes is past the storage's ${KV_MAX_KEY_BYTES}`);
  const size = typeof value === "string" ? utf8.encode(value).length : value.byteLength;
  if (size > KV_MAX_VALUE_BYTES) throw new RangeError(`a stored value of ${size} bytes is past the storage's ${KV_MAX_VALUE_BYTES}`);
}

/**
 * SQLite-backed objects have `storage.sql`. On KV-backed ones reading it
 * throws, or (newer workerd) gives an object whose every use throws: so it
 * is used once here, for its size.
 */
export function sqliteBacked(storage) {
  try {
    return typeof storage.sql?.databaseSize === "number";
  } catch {
    return false;
  }
}

/** `storage.kv` (SQLite-backed objects' synchronous API), or null. */
function syncKv(storage) {
  try {
    return typeof storage.kv?.list === "function" ? storage.kv : null;
  } catch {
    return null; // KV-backed objects throw on it
  }
}

/**
 * A `Storage` for the lessor on `ctx.storage`: each batch is one storage
 * transaction (all or nothing), split into calls of at most 128 keys.
 * Entries live under `prefix`, so the object can keep its own keys too.
 */
export class DurableObjectStore {
  #storage;
  #prefix;
  #gated;
  #kv; // storage.kv, or null
  #sqlite;
  // Output-gate mode: writes issued and not yet confirmed, and the first
  // failure (after which every write is refused).
  #pending = new Set();
  #failed = null;

  /**
   * `options.outputGate`: issue each batch's calls at once and return
   * nothing (the lessor sees a synchronous store; the output gate makes
   * answers wait for the write); default: one transaction per batch, as a
   * promise.
   */
  constructor(storage, prefix = "edge-lease/", options = {}) {
    this.#storage = storage;
    this.#prefix = prefix;
    this.#gated = Boolean(options.outputGate);
    // What kind of storage it is, found once (KV-backed objects throw on the
    // probes): not on every write. Only SQLite-backed objects have a working
    // storage.kv: on KV-backed ones workerd has the object, whose calls throw.
    this.#sqlite = sqliteBacked(storage);
    this.#kv = this.#sqlite ? syncKv(storage) : null;
  }

  /** Resolves when every write issued so far is confirmed; rejects if one failed. */
  async settled() {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
    if (this.#failed) throw this.#failed;
  }

  /**
   * Every stored entry, without the prefix. SQLite-backed objects have the
   * synchronous `storage.kv`: its list() is read as the lessor takes each
   * entry, so a restore never holds the state twice (once in JS, once in
   * the engine) within the isolate's 128 MB. Otherwise read in pages.
   */
  async entries() {
    const prefix = this.#prefix;
    const kv = this.#kv;
    if (kv) {
      return {
        *[Symbol.iterator]() {
          for (const [k, v] of kv.list({ prefix })) yield [k.slice(prefix.length), v];
        },
      };
    }
    const out = [];
    let startAfter;
    for (;;) {
      const page = await this.#storage.list({ prefix, startAfter, limit: 1000 });
      for (const [k, v] of page) out.push([k.slice(prefix.length), v]);
      if (page.size < 1000) return out;
      startAfter = [...page.keys()].pop();
    }
  }

  write(batch) {
    const p = this.#prefix;
    if (this.#gated) return this.#issue(batch);
    return this.#storage.transaction(async (txn) => {
      for (let i = 0; i < batch.delete.length; i += MAX_KEYS_PER_CALL) {
        await txn.delete(batch.delete.slice(i, i + MAX_KEYS_PER_CALL).map((k) => p + k));
      }
      for (let i = 0; i < batch.put.length; i += MAX_KEYS_PER_CALL) {
        const chunk = {};
        for (const [k, v] of batch.put.slice(i, i + MAX_KEYS_PER_CALL)) chunk[p + k] = v;
        await txn.put(chunk);
      }
    });
  }

  // Every call of the batch, issued in this turn with no await between them:
  // one atomic write for the storage, covered by the output gate.
  // SQLite-backed objects write it in one synchronous transaction, so a
  // call that throws (a size limit) rolls back those before it and the
  // operation fails having changed nothing; otherwise the sizes are checked
  // before any call is issued.
  #issue(batch) {
    if (this.#failed) throw this.#failed; // the operation fails: StorageFailed
    const s = this.#storage;
    const p = this.#prefix;
    const kv = this.#kv;
    if (kv && typeof s.transactionSync === "function") {
      s.transactionSync(() => {
        for (const k of batch.delete) kv.delete(p + k);
        for (const [k, v] of batch.put) kv.put(p + k, v);
      });
      return;
    }
    if (!this.#sqlite) for (const [k, v] of batch.put) checkKvSizes(p + k, v);
    const calls = [];
    for (let i = 0; i < batch.delete.length; i += MAX_KEYS_PER_CALL) {
      calls.push(s.delete(batch.delete.slice(i, i + MAX_KEYS_PER_CALL).map((k) => p + k)));
    }
    for (let i = 0; i < batch.put.length; i += MAX_KEYS_PER_CALL) {
      const chunk = {};
      for (const [k, v] of batch.put.slice(i, i + MAX_KEYS_PER_CALL)) chunk[p + k] = v;
      calls.push(s.put(chunk));
    }
    const done = Promise.all(calls).then(
      () => {},
      (e) => {
        this.#failed ??= e instanceof Error ? e : new Error(String(e));
      },
    );
    this.#pending.add(done);
    done.then(() => this.#pending.delete(done));
  }
}

/**
 * A lessor restored from a Durable Object's storage, writing every change
 * back to it and expiring leases from the object's alarm. It owns the
 * object's alarm: do not set other alarms on the same object.
 */
export class DurableLessor {
  #storage;
  #store = null;
  /** The alarm time this object has set, or null. */
  #alarmAt = null;

  /**
   * Loads the lessor from `storage` (`ctx.storage`). `options` are the
   * Lessor's (`now`, `minTtl`, ...; `autoTick` is always false here: the
   * alarm ticks) plus `prefix` for the stored keys (default "edge-lease/").
   * `maxValueBytes` defaults to 127 KiB to fit a stored value, and on
   * KV-backed objects `maxKeyBytes` to 640 to fit a stored key. `Lessor`:
   * the class to build (a host's own build of the engine), else this
   * package's.
   */
  static async open(storage, options = {}) {
    const { prefix, outputGate, Lessor: LessorClass = Lessor, ...rest } = options;
    const store = new DurableObjectStore(storage, prefix, { outputGate });
    const lessor = new LessorClass({
      maxValueBytes: DEFAULT_MAX_VALUE_BYTES,
      ...(sqliteBacked(storage) ? {} : { maxKeyBytes: KV_MAX_ENGINE_KEY_BYTES }),
      ...rest,
      autoTick: false,
      storage: store,
      restore: await store.entries(),
    });
    const dl = new DurableLessor(storage, lessor);
    dl.#store = store;
    dl.#alarmAt = await storage.getAlarm();
    await dl.sync();
    return dl;
  }

  constructor(storage, lessor) {
    this.#storage = storage;
    /** The Lessor: call it freely, then `await sync()` before answering. */
    this.lessor = lessor;
  }

  /**
   * Waits until every change so far is durable, then makes sure the alarm
   * fires no later than the next deadline. Renewals only move deadlines
   * later, so the alarm is only ever moved earlier here: an early alarm
   * just ticks nothing and sets the next one. Rejects with StorageFailed if
   * a write failed (the lessor then refuses changes: open it again).
   */
  async sync() {
    await this.lessor.flush();
    await this.#store?.settled();
    const next = this.lessor.nextDeadline();
    if (next !== null && (this.#alarmAt === null || next < this.#alarmAt)) {
      await this.#storage.setAlarm(next);
      this.#alarmAt = next;
    }
  }

  /**
   * Output-gate mode: sets the alarm, without waiting, if the next deadline
   * is earlier than it. Call it after a change and before answering: the
   * output gate holds the answer until the alarm is stored too.
   */
  arm() {
    const next = this.lessor.nextDeadline();
    if (next !== null && (this.#alarmAt === null || next < this.#alarmAt)) {
      this.#alarmAt = next;
      this.#storage.setAlarm(next).catch(() => {
        // The output gate is broken and the object reset: nothing to keep.
      });
    }
  }

  /**
   * Call from the object's `alarm()` handler. Alarms are delivered at least
   * once, so this is idempotent: it expires what is due now (nothing, on a
   * repeat), waits for that to be durable, and sets the next alarm.
   */
  async alarm() {
    // The alarm that fired is spent (workerd clears it before the handler).
    this.#alarmAt = null;
    this.lessor.tick();
    await this.sync();
  }
}
