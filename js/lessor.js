// The Lessor: what JS users call. Leases themselves are the Rust core's
// (reached through ./binding.js); each method here orders one call: argument
// checks, the host clock, the core, then events and the expiry timer.

import { Binding, defaults, memoryBytes } from "./binding.js";
import { leaseId } from "./lease-id.js";
import { checkInt, checkKey, checkMs, checkValue, epochMs, lessorOptions, options } from "./checks.js";
import { deleteRequest, putRequest, rangeRequest, txnRequest, watchRequest } from "./requests.js";
import { LeaseError, invalid } from "./errors.js";
import { Events } from "./events.js";
import { SWEEP_STEP, Sweeper } from "./sweep.js";
import { ExpiryTimer } from "./timer.js";
import { WriteQueue } from "./write-queue.js";

// What a catching-up watcher gets per turn of the event loop (#deliver).
const DELIVER_TURN_EVENTS = 5_000;
const DELIVER_TURN_ROUNDS = 50;
const DELIVER_TURN_BYTES = 2 * 1024 * 1024;

export { leaseId } from "./lease-id.js";
export { LeaseError } from "./errors.js";
export { LeaseEvent } from "./events.js";

/**
 * True at the global scope of a Cloudflare Worker (workerd), where
 * crypto.getRandomValues throws ("Disallowed operation called within global
 * scope"). Elsewhere false, so the core is made (and a missing crypto is
 * NoEntropy, a bad restore CorruptEntry) in the constructor, as always.
 */
function atWorkerGlobalScope() {
  if (globalThis.navigator?.userAgent !== "Cloudflare-Workers") return false;
  const c = globalThis.crypto;
  if (typeof c?.getRandomValues !== "function") return false;
  try {
    c.getRandomValues(new Uint8Array(1));
    return false;
  } catch {
    return true;
  }
}

// The engine (a wasm-bindgen module of crates/wasm) a Lessor builds its
// core with: the package's entry sets the default, the lean build; a host
// that brings its own build (edge-lease-etcd's) binds a subclass to it.
let defaultEngine = null;
const ENGINES = new WeakMap();

/** Called by the package's entry point with the build it loaded. */
export function setDefaultEngine(engine) {
  defaultEngine = engine;
}

/** A Lessor class whose cores `engine` builds, whatever the default. */
export function bindEngine(engine) {
  const bound = class extends Lessor {};
  Object.defineProperty(bound, "name", { value: "Lessor" });
  ENGINES.set(bound, engine);
  return bound;
}

function engineOf(cls) {
  for (let c = cls; c !== Lessor; c = Object.getPrototypeOf(c)) {
    const engine = ENGINES.get(c);
    if (engine) return engine;
  }
  return defaultEngine;
}

/**
 * An etcd-style lessor: leases with TTLs, keys attached to them, revisions,
 * and expiry driven by the host's clock.
 */
export class Lessor extends EventTarget {
  #engine;
  #b = null;
  #now;
  #closed = false;
  #maxKey;
  #maxValue;
  #autoTick;
  #events = new Events(this);
  #timer = new ExpiryTimer(() => this.#fire());
  #sweeper = new Sweeper(() => this.#sweepStep());
  #clock = () => this.#time();
  #writes = null;
  // Set while the core's creation waits for the first call (a Worker's
  // global scope, where workerd allows no random values): makes the core.
  #create = null;
  // Watchers by id, and whether their changes are being handed out.
  #watchers = new Map();
  // The parts of a batch the core hands out over several polls (a revision
  // of many changes), by watcher id, until its last part: a listener gets
  // a revision's changes in one call, as etcd sends them in one response.
  #parts = new Map();
  #delivering = false;
  #deliverTimer = null;
  #turn = null;

  constructor(opts = {}) {
    super();
    const engine = engineOf(new.target);
    this.#engine = engine;
    const o = lessorOptions(opts, defaults(engine));
    this.#now = o.now;
    this.#maxKey = o.config.maxKeyBytes;
    this.#maxValue = o.config.maxValueBytes;
    this.#autoTick = o.autoTick;
    if (o.storage) this.#writes = new WriteQueue(o.storage, () => this.#timer.clear());
    const write = this.#writes ? (batch) => this.#writes.write(batch) : undefined;
    const create = () => new Binding(engine, o.config, o.restore && { entries: o.restore, now: this.#time(), write });
    if (atWorkerGlobalScope()) {
      // The core seeds its hash maps from the OS's randomness, and workerd
      // refuses random values (and timers) at a Worker's global scope: make
      // it on the first call instead, inside a handler. Never a fixed seed.
      // The entries are read now, as they are otherwise (and kept, should
      // that first call fail and a later one try again).
      if (o.restore) o.restore = [...o.restore];
      this.#create = create;
      return;
    }
    this.#b = create();
    this.#schedule();
    this.#sweepLater();
  }

  // The core, made on the first call when its creation was deferred. A
  // failure (NoEntropy, a restore's CorruptEntry) is thrown by that call and
  // by each later one until the core can be made.
  #open() {
    try {
      this.#b = this.#create();
    } catch (e) {
      if (e?.code === "NoEntropy" && atWorkerGlobalScope()) {
        throw new LeaseError(
          "NoEntropy",
          "no randomness at a Worker's global scope: workerd gives random values only inside a handler " +
            "(fetch, alarm, ...). Constructing a Lessor at module scope is fine; call it from a handler.",
        );
      }
      throw e;
    }
    this.#create = null;
    this.#schedule();
    this.#sweepLater();
  }

  // Events are only built for types someone listens to.
  addEventListener(type, listener, opts) {
    this.#events.listen(type);
    super.addEventListener(type, listener, opts);
  }

  #time() {
    return epochMs(this.#now());
  }

  #enter() {
    if (this.#closed) throw new LeaseError("Closed", "the lessor is closed");
    if (this.#b === null) this.#open();
    if (this.#b.busy) {
      throw new LeaseError("Reentrant", "the lessor was called from inside its own storage callback");
    }
  }

  #enterWrite() {
    this.#enter();
    const failed = this.#writes?.failed;
    if (failed) throw new LeaseError("StorageFailed", `an earlier storage write failed: ${failed.message}`);
  }

  /** Grants a lease of `ttl` whole seconds. Returns `{ id, ttl }`. */
  grant(ttl, opts) {
    this.#enterWrite();
    checkInt(ttl, "ttl");
    const { id } = options(opts, "grant");
    const now = this.#time();
    const granted = this.#b.grant(now, ttl, id);
    if (now + granted.ttl * 1000 < this.#timer.at) this.#schedule();
    if (this.#events.wants("grant")) this.#events.emit("grant", { lease: granted.id, ttl: granted.ttl });
    // Reusing an expired id finishes that lease's expiry first.
    this.#deliver();
    return granted;
  }

  /** Renews a lease: its deadline becomes now + its TTL. Returns the TTL. */
  renew(id) {
    this.#enterWrite();
    const ttl = this.#b.renew(this.#time(), id);
    if (this.#events.wants("renew")) this.#events.emit("renew", { lease: leaseId(id), ttl });
    return ttl;
  }

  /** Revokes a lease and deletes its keys. Returns `{ id, keys, revision }`. */
  revoke(id) {
    this.#enterWrite();
    const r = this.#b.revoke(this.#time(), id);
    this.#events.emit("revoke", { lease: r.id, keys: r.keys, revision: r.revision });
    this.#deliverAfter(r.keys.length);
    return r;
  }

  /** `{ id, ttl, ttlMs, grantedTtl, keys }`; ttl is -1 if the lease is gone. */
  timeToLive(id, opts) {
    this.#enter();
    const o = options(opts, "timeToLive");
    return this.#b.timeToLive(this.#time(), id, Boolean(o.keys), Boolean(o.bytes));
  }

  /** Live lease ids, soonest deadline first. */
  leases() {
    this.#enter();
    return this.#b.leases(this.#time());
  }

  /**
   * Writes a key. Options: `lease` (attach to it; omitted detaches),
   * `ifAbsent` (create-only: the lock pattern), `prevKv` (return the previous entry).
   * Returns `{ revision, created, prev? }`; a refused `ifAbsent` put returns the holder as `prev`.
   * With one object: etcd's Put (`{ key, value, lease, prevKv, ignoreValue,
   * ignoreLease }`, as a txn's put op), returning `{ revision, prevKv? }`;
   * it checks the lease before the key `ignoreValue` needs, as etcd's does.
   */
  put(key, value, opts) {
    if (typeof key !== "string" && value === undefined && opts === undefined) {
      this.#enterWrite();
      const r = this.#b.putKv(this.#time(), putRequest(key, this.#maxKey, this.#maxValue));
      this.#deliver();
      return r;
    }
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const o = options(opts, "put");
    checkValue(value, this.#maxValue);
    const ifAbsent = Boolean(o.ifAbsent);
    const r = this.#b.put(this.#time(), key, value, o.lease, ifAbsent, Boolean(o.prevKv));
    // A refused ifAbsent put changed nothing: no event. The event's lease is
    // hex whatever form it was given in (a bigint, too).
    if ((r.created || !ifAbsent) && this.#events.wants("put")) {
      const lease = o.lease === undefined || o.lease === null ? null : leaseId(o.lease);
      this.#events.emit("put", { key, lease, keys: [key], revision: r.revision });
    }
    this.#deliver();
    return r;
  }

  /** `{ key, value, lease, createRevision, modRevision, version }`, or undefined. */
  get(key) {
    this.#enter();
    checkKey(key, this.#maxKey);
    return this.#b.get(this.#time(), key);
  }

  /**
   * With a string: the live entries whose key starts with it, sorted
   * (`range("")` is everything). With an object: etcd's Range (any range,
   * a past revision, limit, sort, filters), returning `{ kvs, more, count,
   * revision }` with keys and values as bytes.
   */
  range(arg = "") {
    this.#enter();
    if (typeof arg !== "string") return this.#b.rangeKv(this.#time(), rangeRequest(arg, this.#maxKey));
    checkKey(arg, this.#maxKey, "prefix");
    return this.#b.range(this.#time(), arg);
  }

  /** etcd's DeleteRange: the live keys of a range, in one revision. `{ deleted, revision, prevKvs }`. */
  deleteRange(req) {
    this.#enterWrite();
    const r = this.#b.deleteRange(this.#time(), deleteRequest(req, this.#maxKey));
    this.#deliverAfter(r.deleted);
    return r;
  }

  /**
   * etcd's Txn: if every compare holds, the success ops run, else the
   * failure ops; all in one revision, and none if one fails.
   * `{ succeeded, revision, responses }`.
   */
  txn(req) {
    this.#enterWrite();
    const r = this.#b.txn(this.#time(), txnRequest(req, this.#maxKey, this.#maxValue));
    this.#deliver();
    return r;
  }

  /**
   * Forgets history before `revision` (etcd's Compact): reads and watches
   * before it fail with code "Compacted" from now on. `{ revision }`: the
   * current one. The versions it left unreadable are then dropped in steps,
   * each one storage batch of a few milliseconds, on timers, so that a large
   * compaction does not stop other calls; with `autoTick: false` (no
   * timers), all of them before this returns. `whenCompacted()` tells when
   * they are gone.
   */
  compact(revision) {
    this.#enterWrite();
    checkInt(revision, "revision");
    const current = this.#b.compact(revision);
    this.#deliver();
    if (this.#autoTick) this.#sweepLater();
    else {
      try {
        this.#sweeper.run(true);
      } catch (e) {
        // The compaction is done; what a refused step left is swept later
        // (by writes, whenCompacted()).
        this.#events.error(e);
      }
    }
    return { revision: current };
  }

  /**
   * Resolves once the compactions so far have dropped every version they
   * left unreadable, from memory and (once `flush()` resolves) from the
   * store: etcd's physical compaction. With `autoTick: false`, the rest
   * is swept now.
   */
  whenCompacted() {
    try {
      this.#enterWrite();
      if (!this.#autoTick) {
        this.#sweeper.run(true);
        return Promise.resolve();
      }
    } catch (e) {
      return Promise.reject(e);
    }
    const done = this.#sweeper.done(this.#b.compactionPending());
    this.#sweepLater();
    return done;
  }

  /** How many changes the compaction's sweep has yet to visit (0: none). */
  get compactionPending() {
    this.#enter();
    return this.#b.compactionPending();
  }

  // One step of the sweep; a "compaction" event tells what it did.
  #sweepStep() {
    try {
      this.#enterWrite();
      const t0 = performance.now();
      const pending = this.#b.compactStep(SWEEP_STEP);
      this.#events.emitPlain("compaction", { revision: this.#b.compacted(), pending, ms: performance.now() - t0 });
      return pending;
    } catch (e) {
      if (this.#closed || this.#writes?.failed) this.#sweeper.fail(e);
      // (On timers nobody's call can catch it.)
      if (this.#autoTick) this.#events.error(e);
      throw e;
    }
  }

  // Sweeps on timers if a compaction (or a restore of one cut short) left
  // anything.
  #sweepLater() {
    if (this.#autoTick && !this.#closed && this.#b !== null && this.#b.compactionPending() > 0) this.#sweeper.run(false);
  }

  /**
   * The history as etcd 3.4's backend holds it in its key bucket, for a
   * snapshot file etcd can restore (the server's Snapshot), read in pieces
   * so that a large history is never copied whole: `{ heads, next(maxBytes),
   * close() }`. A record's key is its revision ("_" between the revision and
   * the sub-revision, 8 bytes big-endian each; "t" after a deletion's), its
   * value the version's mvccpb.KeyValue; records come in revision order.
   * `heads`: each record's key and its value's length (u32 LE length, key,
   * u32 LE length), to lay a file out before reading it. `next(maxBytes)`:
   * the next records (u32 LE length, key, u32 LE length, value), about
   * `maxBytes` (default 1 MiB) and at least one; empty once done, which
   * frees the reader, as `close()` does. The lessor may change meanwhile (a
   * record is read as its version was); a compaction that drops a record
   * not yet read makes `next` throw code "Compacted".
   */
  etcdKeyBucket() {
    this.#enter();
    const b = this.#b;
    const cursor = b.etcdKeyBucketCursor();
    let open = true;
    const close = () => {
      if (open) {
        open = false;
        cursor.free();
      }
    };
    let heads;
    try {
      heads = cursor.take_heads();
    } catch (e) {
      close();
      throw e;
    }
    const next = (maxBytes = 1 << 20) => {
      if (!open) return new Uint8Array(0);
      try {
        this.#enter();
        const piece = b.etcdKeyBucketNext(cursor, Math.min(Math.max(1, Math.floor(maxBytes) || 1), 0xffffffff));
        if (piece.length === 0) close();
        return piece;
      } catch (e) {
        close();
        throw e;
      }
    };
    return { heads, next, close };
  }

  /**
   * A host entry: a small named record kept in the lessor's store beside
   * its state and restored with it (the server keeps etcd's alarms there).
   * A copy of its bytes, or undefined.
   */
  hostEntry(name) {
    this.#enter();
    if (typeof name !== "string") throw invalid("host entry name must be a string");
    return this.#b.hostEntry(name);
  }

  /**
   * Sets host entry `name` (1 to 64 of A-Z a-z 0-9 . _ -) to `value` (a
   * Uint8Array of at most 1 MiB), or removes it (null or undefined). It
   * goes to the store as a write does: durable once `flush()` resolves.
   */
  setHostEntry(name, value) {
    this.#enterWrite();
    if (typeof name !== "string") throw invalid("host entry name must be a string");
    if (value !== undefined && value !== null && !(value instanceof Uint8Array)) throw invalid("host entry value must be a Uint8Array, null or undefined");
    this.#b.setHostEntry(name, value ?? undefined);
  }

  /** Bytes of keys, values and history as `quotaBytes` counts them (O(1); etcd's dbSize). */
  get sizeBytes() {
    this.#enter();
    return this.#b.sizeBytes();
  }

  /**
   * The compaction point: reads and watches before it fail with
   * `Compacted`. -1 until the first compaction, as etcd's (compacting at 0
   * is one).
   */
  get compactRevision() {
    this.#enter();
    return this.#b.compacted();
  }

  /**
   * etcd's HashKV of the history up to `revision` (0, the default: the
   * current one), a uint32: the same writes hash the same here and on etcd
   * 3.4 (`etcdctl endpoint hashkv`). `Compacted` at or before the
   * compaction point, `FutureRevision` past the current one. It reads
   * every version held, in one pass in the engine.
   */
  hashKv(revision = 0) {
    this.#enter();
    checkInt(revision, "revision");
    return this.#b.hashKv(revision);
  }

  /**
   * Watches a key or range from `startRevision` (default: after the current
   * one). `listener({ events, compactRevision, revision })` gets each
   * revision's changes once, in order, right after the write that made
   * them (history from a past start comes in a microtask; the changes of a
   * write of more than 5,000 over the next turns of the event loop, in one
   * call); a start before
   * the compaction point gets one call with `compactRevision` set, and the
   * watcher ends. Returns `{ id, cancel(), pause(), resume(), caughtUp }`:
   * a paused watcher gets nothing more until resumed (a batch already
   * taken for it in the round of calls under way still comes), then goes
   * on where it was; the history it needs is kept meanwhile, so do not
   * leave one paused for long. `caughtUp` is whether it has had every
   * change so far (false while it catches up on history).
   */
  watch(req, listener) {
    this.#enter();
    const q = watchRequest(req, this.#maxKey);
    if (typeof listener !== "function") throw new LeaseError("InvalidArgument", "watch needs a listener function");
    const id = this.#b.watch(q);
    this.#watchers.set(id, listener);
    queueMicrotask(() => this.#deliver(true));
    const live = () => this.#watchers.has(id) && !this.#closed;
    const caughtUp = () => live() && this.#b.watchCaughtUp(id);
    return {
      id,
      cancel: () => {
        this.#parts.delete(id);
        if (this.#watchers.delete(id) && !this.#closed) this.#b.cancelWatch(id);
      },
      pause: () => {
        if (live()) this.#b.pauseWatch(id, true);
      },
      resume: () => {
        if (!live()) return;
        this.#b.pauseWatch(id, false);
        queueMicrotask(() => this.#deliver(true));
      },
      get caughtUp() {
        return caughtUp();
      },
    };
  }

  // Hands each watcher the changes it has not had. A listener that writes
  // is not re-entered: its changes are picked up by the loop. A watcher
  // catching up on a long history gets it a turn of the event loop at a
  // time (about DELIVER_TURN_EVENTS events, DELIVER_TURN_BYTES of them as
  // the engine hands them over, or DELIVER_TURN_ROUNDS rounds of up to 1000
  // revisions each), so that other work runs in between; so does one
  // revision of many changes, or of large values, whose parts are joined
  // (#parts). The share is the turn's, whoever asks: a write's changes go
  // out at once (a round at least), but a new or resumed watcher waits for
  // the next turn once this one had its share (a host resuming 100 watchers
  // would otherwise start 100 more).
  #deliver(budgeted = false) {
    if (this.#delivering || this.#watchers.size === 0 || this.#closed) return;
    const turn = this.#turnSpent();
    if (budgeted && turn.over()) return this.#deliverLater();
    this.#delivering = true;
    try {
      for (;;) {
        turn.rounds++;
        const poll = this.#b.pollWatches();
        turn.bytes += poll.bytes;
        for (const b of poll.batches) {
          const listener = this.#watchers.get(b.id);
          // The core cancelled a watcher whose start was compacted.
          if (b.compactRevision !== 0) this.#watchers.delete(b.id);
          if (!listener) continue;
          turn.handed += b.events.length;
          let events = b.events;
          const parts = this.#parts.get(b.id);
          if (b.partial) {
            if (parts) parts.push(events);
            else this.#parts.set(b.id, [events]);
            continue;
          }
          if (parts) {
            this.#parts.delete(b.id);
            // (A compaction ends the watcher: what it had not been given is gone.)
            events = b.compactRevision !== 0 ? events : parts.concat([events]).flat();
          }
          if (events.length === 0 && b.compactRevision === 0) continue;
          try {
            listener({ events, compactRevision: b.compactRevision, revision: b.revision });
          } catch (e) {
            this.#events.error(e);
          }
        }
        if (this.#closed || !this.#b.watchesPending()) return;
        if (turn.over()) return this.#deliverLater();
      }
    } finally {
      this.#delivering = false;
    }
  }

  // What #deliver handed out in this turn of the event loop.
  #turnSpent() {
    if (this.#turn === null) {
      const turn = { handed: 0, bytes: 0, rounds: 0 };
      turn.over = () => turn.handed >= DELIVER_TURN_EVENTS || turn.bytes >= DELIVER_TURN_BYTES || turn.rounds >= DELIVER_TURN_ROUNDS;
      this.#turn = turn;
      setTimeout(() => (this.#turn = null), 0);
    }
    return this.#turn;
  }

  #deliverLater() {
    this.#deliverTimer ??= setTimeout(() => {
      this.#deliverTimer = null;
      this.#deliver();
    }, 0);
  }

  // After a write of `changes` changes: a small one's are handed out now; a
  // large one's (a revoke or DeleteRange of many keys) in a later turn of
  // the event loop, so that the write and its hand-out are two turns, not
  // one that holds every other client for both (issue 31). Still in order:
  // a write meanwhile hands them out first.
  #deliverAfter(changes) {
    if (changes <= DELIVER_TURN_EVENTS) return this.#deliver();
    if (this.#watchers.size === 0 || this.#closed) return;
    this.#deliverLater();
  }

  /** Deletes a key. Returns `{ deleted, revision, prev? }`. */
  delete(key, opts) {
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const prevKv = Boolean(options(opts, "delete").prevKv);
    const { deleted, revision, prev, lease } = this.#b.delete(this.#time(), key, prevKv);
    if (deleted) this.#events.emit("delete", { key, lease, keys: [key], revision });
    this.#deliver();
    return prevKv ? { deleted, revision, prev } : { deleted, revision };
  }

  /** Expires what is due now (rate-limited). Returns `[{ id, keys, revision }]`. */
  tick() {
    this.#enterWrite();
    const { expired, error } = this.#b.tick(this.#time());
    for (const e of expired) this.#events.emit("expire", { lease: e.id, keys: e.keys, revision: e.revision });
    this.#deliverAfter(expired.reduce((n, e) => n + e.keys.length, 0));
    if (error) {
      // Storage stopped the tick part-way: what did expire is on the error.
      // Arming the timer at the (overdue) deadline would retry at once, in
      // a loop; wait a little instead.
      this.#retryLater();
      throw Object.assign(error, { expired });
    }
    this.#schedule();
    return expired;
  }

  /** Epoch ms at which `tick` next has work, or null. */
  nextDeadline() {
    this.#enter();
    return this.#b.nextDeadline();
  }

  /** Becomes primary: every lease gets now + extendMs + its remaining time. */
  promote(extendMs = 0) {
    this.#enterWrite();
    checkMs(extendMs, "extendMs");
    this.#b.promote(this.#time(), extendMs);
    this.#schedule();
  }

  /** Becomes standby: no expiry, renew fails with NotPrimary. */
  demote() {
    this.#enterWrite();
    this.#b.demote(this.#time());
    this.#schedule();
  }

  /**
   * Holds expiry (`true`) or lets it go on (`false`): etcd under its
   * CORRUPT alarm, which refuses the revokes expiry makes. While held a
   * lease alive when the hold began (`since`, epoch ms, default now) lives
   * on past its deadline with its keys (timeToLive gives a negative TTL,
   * `leases()` lists it, renew fails with code "ExpiryHeld") and nothing
   * expires; released, those leases expire at once. A hold in place keeps
   * its start. Not stored: a host that holds it holds it again after a
   * restart.
   */
  holdExpiry(held, opts) {
    this.#enter();
    const since = options(opts, "holdExpiry").since ?? this.#time();
    checkInt(since, "since");
    this.#b.holdExpiry(Boolean(held), since);
    this.#schedule();
  }

  /** Whether expiry is held (`holdExpiry`). */
  get expiryHeld() {
    return this.expiryHeldSince !== null;
  }

  /** Since when expiry is held (epoch ms), or null. */
  get expiryHeldSince() {
    this.#enter();
    return this.#b.expiryHeldSince();
  }

  /** Records a lease's remaining time for the next promotion (etcd's checkpoint). */
  checkpoint(id, remainingMs) {
    this.#enterWrite();
    checkMs(remainingMs, "remainingMs");
    this.#b.checkpoint(this.#time(), id, remainingMs);
  }

  /**
   * What this lessor has done since it was made, counted as etcd 3.4
   * counts it in its mvcc and lease metrics: `{ ranges, puts, deletes,
   * txns, putBytes, granted, revoked, renewed, expired, compacted }`
   * (index.d.ts says how).
   */
  get counts() {
    this.#enter();
    const c = this.#b.counts();
    return { ranges: c[0], puts: c[1], deletes: c[2], txns: c[3], putBytes: c[4], granted: c[5], revoked: c[6], renewed: c[7], expired: c[8], compacted: c[9] };
  }

  /** The revision of the last change. */
  get revision() {
    this.#enter();
    return this.#b.revision();
  }

  /** Keys held, O(1) (those of leases past their deadline until the next tick included). */
  get keyCount() {
    this.#enter();
    return this.#b.keyCount();
  }

  get isPrimary() {
    this.#enter();
    return this.#b.isPrimary();
  }

  /**
   * Everything this lessor holds now, as the `[key, Uint8Array]` entries
   * storage would (leases past their deadline left out, tick or no tick).
   */
  snapshot() {
    this.#enter();
    return this.#b.snapshot(this.#time());
  }

  /**
   * The snapshot read from the lessor `step` entries at a time as they are
   * asked for, so a large one is written without stopping everything else
   * (FileStore.compactFrom). Fuzzy, not a point in time: each entry is as it
   * is when read; with every write made since the first read applied over
   * it in order (a journal begun before it), it restores the latest state.
   */
  *snapshotEntries(step = 1024) {
    for (const part of this.#snapshotParts((b, cursor) => b.snapshotNext(cursor, step))) yield* part;
  }

  /**
   * `snapshotEntries` as entry lists (js/codec.js's packed layout: what a
   * restore takes as it is), about `step` entries each: a store that keeps
   * them as they come (a Durable Object's snapshot rows) makes no JS
   * object per entry.
   */
  *snapshotPacked(step = 1024) {
    yield* this.#snapshotParts((b, cursor) => b.snapshotNextPacked(cursor, step));
  }

  // The snapshot's parts as `next(binding, cursor)` reads them, until one is empty.
  *#snapshotParts(next) {
    this.#enter();
    const b = this.#b;
    // (Which leases are past their deadline is judged now, for every step.)
    const cursor = b.snapshotCursor(this.#time());
    try {
      for (;;) {
        // (After a failed write the lessor holds changes the store may not:
        // not a state to persist.)
        this.#enterWrite();
        const part = next(b, cursor);
        if (part.length === 0) return;
        yield part;
      }
    } finally {
      cursor.free();
    }
  }

  /** Bytes of wasm linear memory (shared by every lessor of this engine): a diagnostic. */
  memoryBytes() {
    return memoryBytes(this.#engine);
  }

  /** Resolves when every storage write so far is durable (not later ones); rejects if one failed. */
  flush() {
    return this.#writes ? this.#writes.flush() : Promise.resolve();
  }

  /** Storage writes made but not yet durable (0 with a synchronous store). */
  get pendingWrites() {
    return this.#writes ? this.#writes.pending : 0;
  }

  /** Stops the timer and frees the wasm memory. Later calls throw code "Closed". */
  close() {
    if (this.#closed) return;
    if (this.#b === null) {
      // Never made (a deferred creation that no call reached).
      this.#closed = true;
      this.#create = null;
      return;
    }
    // Freeing the wasm object while the core is inside an operation fails
    // half-way (and would leak it): refuse, like every other re-entrant call.
    if (this.#b.busy) {
      throw new LeaseError("Reentrant", "the lessor was closed from inside its own storage callback");
    }
    this.#closed = true;
    this.#timer.clear();
    if (this.#deliverTimer !== null) clearTimeout(this.#deliverTimer);
    this.#sweeper.fail(new LeaseError("Closed", "the lessor is closed"));
    this.#b.free();
    this.#b = null;
  }

  // ---- expiry timer ------------------------------------------------------

  // One timer at the next deadline. Renew and revoke only move deadlines
  // later, so they never reschedule: an early wake-up just ticks nothing and
  // sets the timer again.
  #schedule() {
    if (this.#autoTick && !this.#closed && this.#b !== null && !this.#writes?.failed) {
      this.#timer.schedule(this.#b.nextDeadline(), this.#clock);
    }
  }

  #fire() {
    if (this.#closed || this.#writes?.failed) return;
    try {
      this.tick();
    } catch (e) {
      // A failing clock or store: surface it as an event instead of an
      // uncaught exception in a timer, and try again a little later (a store
      // that refused one write may take the next). A failed async store
      // stops it for good.
      this.#events.error(e);
      this.#retryLater();
    }
  }

  #retryLater() {
    if (this.#autoTick && !this.#closed && !this.#writes?.failed) this.#timer.retry();
  }
}
