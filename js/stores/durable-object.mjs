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
import { isBatch, joinEntryLists, packBatch, StoredEntries } from "../codec.js";
import { LeaseError } from "../errors.js";

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

// SQLite-backed objects keep the state in a few large rows and what changed
// since in one row per batch (rows of one entry each were one storage read
// per entry on every wake-up: most of its time), under the prefix:
//   ~snapshot               the snapshot's row count, JSON {"chunks": n}
//   ~snapshot/<8 hex>       the snapshot: entry lists (js/codec.js), in order
//   ~journal/<16 hex seq>   one batch (js/codec.js), deletes then puts, in
//                           order after the snapshot
//   v1/...                  one entry per row: the layout before (read
//                           forever; a compaction removes them)
const SNAPSHOT = "~snapshot";
const CHUNK = "~snapshot/";
const JOURNAL = "~journal/";
// A row's bytes, about (SQLite-backed objects take 2 MB of key and value).
const ROW_BYTES = 1 << 20;
// A compaction writes the snapshot again once the journal has this many
// rows, or bytes past an eighth of the snapshot's (at least 256 KiB): a
// wake-up reads at most that many rows beside the snapshot's, and the
// engine keeps each key the journal names until the restore ends.
const COMPACT_ROWS = 2048;
const COMPACT_MIN_BYTES = 256 << 10;
const hex = (n, digits) => n.toString(16).padStart(digits, "0");

// The lessor each object (by `id` and prefix) opened last in this isolate.
// A Durable Object has one live instance: when it opens again here, the
// instance before was evicted or reset, and nothing else frees its
// lessor's share of the engine's memory (one wasm instance per isolate,
// and workerd runs no finalizer for it): each wake-up would keep one more
// copy of the state. It is closed once the new one is restored, off the
// wake-up's path (a close frees every entry), so the engine holds at most
// two states.
const lastOpened = new Map();
// A stored typed array is its whole buffer (structured clone): a view on a
// larger one is stored as a copy of its own bytes.
const own = (u8) => (u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength ? u8 : u8.slice());

/** The rows a batch is journaled in: itself, or pieces of it (its deletes first) of about ROW_BYTES. */
function journalRows(batch) {
  // (packBatch checks the kinds of a plain batch's keys and values.)
  const bytes = batch.bytes ?? packBatch(batch.put, batch.delete);
  if (bytes.length <= ROW_BYTES) return [own(bytes)];
  const rows = [];
  let put = [];
  let del = [];
  let size = 0;
  const flush = () => {
    if (put.length + del.length > 0) rows.push(own(packBatch(put, del)));
    put = [];
    del = [];
    size = 0;
  };
  for (const k of batch.delete) {
    if (size + k.length > ROW_BYTES) flush();
    del.push(k);
    size += 4 + k.length * 3;
  }
  flush();
  for (const e of batch.put) {
    const n = 8 + e[0].length * 3 + (typeof e[1] === "string" ? e[1].length * 3 : e[1].length);
    if (size > 0 && size + n > ROW_BYTES) flush();
    put.push(e);
    size += n;
  }
  flush();
  return rows;
}

function corruptRow(key, why) {
  return new LeaseError("CorruptEntry", `edge-lease: stored row ${key}: ${why}`, { entry: key });
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
  // SQLite-backed: the journal's rows [#firstSeq, #nextSeq) and bytes, the
  // snapshot's rows and bytes, whether rows of one entry each (the layout
  // before) are there, and the lessor to compact from (`compactFrom`).
  #journaled = false;
  #firstSeq = 0;
  #nextSeq = 0;
  #journalBytes = 0;
  #chunks = 0;
  #snapshotBytes = 0;
  #entryRows = false;
  #compactRows = COMPACT_ROWS;
  #inflight = 0;

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
    this.#journaled = Boolean(this.#kv && typeof storage.transactionSync === "function");
    if (options.compactRows !== undefined) this.#compactRows = options.compactRows;
  }

  /** Resolves when every write issued so far is confirmed; rejects if one failed. */
  async settled() {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
    if (this.#failed) throw this.#failed;
  }

  /**
   * Every stored entry, without the prefix. SQLite-backed objects have the
   * synchronous `storage.kv`: the journal's rows and the snapshot's go to
   * the engine as they are (a `StoredEntries`: the engine applies the
   * journal over the snapshot), rows of one entry each as the lessor takes
   * each one, so a restore never holds the state twice (once in JS, once
   * in the engine) within the isolate's 128 MB, nor makes a JS object of an
   * entry it did not have to. Otherwise read in pages.
   */
  async entries() {
    const prefix = this.#prefix;
    const kv = this.#kv;
    if (this.#journaled) return this.#stored();
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

  #stored() {
    const p = this.#prefix;
    const kv = this.#kv;
    // The journal's batches, in order (checked whole here, so that a bad
    // row is named).
    const journal = [];
    let bytes = 0;
    let next = 0;
    for (const [k, v] of kv.list({ prefix: p + JOURNAL })) {
      const seq = k.slice(p.length + JOURNAL.length);
      if (!/^[0-9a-f]{16}$/.test(seq) || !(v instanceof Uint8Array) || !isBatch(v)) throw corruptRow(k, "not a journal row");
      if (journal.length === 0) this.#firstSeq = parseInt(seq, 16);
      next = parseInt(seq, 16) + 1;
      journal.push(v);
      bytes += v.length;
    }
    const rows = journal.length;
    if (rows === 0) this.#firstSeq = 0;
    this.#nextSeq = rows === 0 ? 0 : next;
    this.#journalBytes = bytes;
    const meta = kv.get(p + SNAPSHOT);
    let chunks = 0;
    if (meta !== undefined) {
      chunks = typeof meta === "string" ? JSON.parse(meta).chunks : NaN;
      if (!Number.isSafeInteger(chunks) || chunks < 0) throw corruptRow(p + SNAPSHOT, "not a snapshot's row count");
    }
    this.#chunks = chunks;
    const store = this;
    return new StoredEntries(function* () {
      let i = 0;
      let size = 0;
      if (meta !== undefined) {
        for (const [k, v] of kv.list({ prefix: p + CHUNK })) {
          if (k !== p + CHUNK + hex(i, 8) || !(v instanceof Uint8Array)) throw corruptRow(k, "not the snapshot's next row");
          i++;
          size += v.length;
          yield v;
        }
        if (i !== chunks) throw corruptRow(p + CHUNK + hex(i, 8), "missing");
      }
      store.#snapshotBytes = size;
      // Rows of one entry each (and anything else under the prefix, which
      // the restore names as corrupt).
      let entryRows = false;
      for (const [k, v] of kv.list({ prefix: p, end: p + "~" })) {
        entryRows = true;
        yield [k.slice(p.length), v];
      }
      store.#entryRows = entryRows;
    }, journal);
  }

  /**
   * SQLite-backed objects: whether the journal has grown enough for a
   * compaction (`compactFrom`), or rows of one entry each are still there.
   */
  get compactionDue() {
    if (!this.#journaled || this.#inflight > 0 || this.#compactRows === Infinity) return false;
    const rows = this.#nextSeq - this.#firstSeq;
    return this.#entryRows || rows >= this.#compactRows || (rows > 0 && this.#journalBytes >= Math.max(COMPACT_MIN_BYTES, this.#snapshotBytes / 8));
  }

  /**
   * SQLite-backed objects: writes `lessor`'s state as the snapshot's rows
   * and removes the journal and any rows of one entry each, in one
   * synchronous transaction (all or nothing). Only while every write is
   * stored (no write in flight): the lessor's state is then the stored one.
   */
  compactFrom(lessor) {
    if (!this.#journaled || this.#failed) return;
    if (this.#inflight > 0 || lessor.pendingWrites > 0) return;
    const p = this.#prefix;
    const kv = this.#kv;
    // (Keys only: each row's value is let go as it is listed.)
    const entryRows = [];
    if (this.#entryRows) for (const [k] of kv.list({ prefix: p + "v1/" })) entryRows.push(k);
    // Each row is stored as it is made (the state is never in JS whole).
    let chunks = 0;
    let bytes = 0;
    this.#storage.transactionSync(() => {
      for (let seq = this.#firstSeq; seq < this.#nextSeq; seq++) kv.delete(p + JOURNAL + hex(seq, 16));
      for (const k of entryRows) kv.delete(k);
      for (const row of joinEntryLists(lessor.snapshotPacked(256), ROW_BYTES)) {
        kv.put(p + CHUNK + hex(chunks++, 8), own(row));
        bytes += row.length;
      }
      for (let i = chunks; i < this.#chunks; i++) kv.delete(p + CHUNK + hex(i, 8));
      kv.put(p + SNAPSHOT, JSON.stringify({ chunks }));
    });
    this.#firstSeq = this.#nextSeq;
    this.#journalBytes = 0;
    this.#chunks = chunks;
    this.#snapshotBytes = bytes;
    this.#entryRows = false;
  }

  write(batch) {
    const p = this.#prefix;
    if (this.#gated) return this.#issue(batch);
    if (this.#journaled) {
      const rows = journalRows(batch);
      const first = this.#nextSeq;
      this.#nextSeq += rows.length;
      this.#journalBytes += rows.reduce((n, r) => n + r.length, 0);
      this.#inflight++;
      const done = () => this.#inflight--;
      return this.#storage
        .transaction(async (txn) => {
          for (let i = 0; i < rows.length; i += MAX_KEYS_PER_CALL) {
            const chunk = {};
            rows.slice(i, i + MAX_KEYS_PER_CALL).forEach((row, j) => (chunk[p + JOURNAL + hex(first + i + j, 16)] = row));
            await txn.put(chunk);
          }
        })
        .finally(done);
    }
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
    if (this.#journaled) {
      const rows = journalRows(batch);
      const first = this.#nextSeq;
      s.transactionSync(() => rows.forEach((row, i) => kv.put(p + JOURNAL + hex(first + i, 16), row)));
      this.#nextSeq += rows.length;
      this.#journalBytes += rows.reduce((n, r) => n + r.length, 0);
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
  #compactFailed = false;

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
    const { prefix, outputGate, compactRows, id, Lessor: LessorClass = Lessor, ...rest } = options;
    const mine = id === undefined ? null : `${id}\0${prefix ?? ""}`;
    const previous = mine === null ? undefined : lastOpened.get(mine);
    const store = new DurableObjectStore(storage, prefix, { outputGate, compactRows });
    const lessor = new LessorClass({
      maxValueBytes: DEFAULT_MAX_VALUE_BYTES,
      ...(sqliteBacked(storage) ? {} : { maxKeyBytes: KV_MAX_ENGINE_KEY_BYTES }),
      ...rest,
      autoTick: false,
      storage: store,
      restore: await store.entries(),
    });
    if (mine !== null) lastOpened.set(mine, lessor);
    if (previous) {
      setTimeout(() => {
        try {
          previous.close();
        } catch {
          // (A lessor left inside an operation by a trap: its memory stays.)
        }
      }, 0);
    }
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
    this.#compact();
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
    this.#compact();
    const next = this.lessor.nextDeadline();
    if (next !== null && (this.#alarmAt === null || next < this.#alarmAt)) {
      this.#alarmAt = next;
      this.#storage.setAlarm(next).catch(() => {
        // The output gate is broken and the object reset: nothing to keep.
      });
    }
  }

  // SQLite-backed objects: the snapshot written again when the journal has
  // grown (or the rows are in the layout before). A compaction that fails
  // changes nothing; it is not tried again by this instance (the journal
  // goes on, read back as well, only slower).
  #compact() {
    const store = this.#store;
    if (!store || this.#compactFailed || !store.compactionDue) return;
    try {
      store.compactFrom(this.lessor);
    } catch (e) {
      this.#compactFailed = true;
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
