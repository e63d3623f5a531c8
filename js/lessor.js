// The JS face of edge-lease: defaults, input checks, hex lease ids, events,
// the expiry timer and async storage. Everything about leases themselves is
// in the Rust core; this file only adds what JS users expect.

import { RangeRow, RawLessor, RevokedRow, Slot } from "../pkg/edge_lease.js";

// Result positions, named in src/wasm.rs; read once so hot paths index by constants.
const {
  IdHi: ID_HI,
  IdLo: ID_LO,
  CreateRevision: CREATE_REVISION,
  ModRevision: MOD_REVISION,
  Version: VERSION,
  ValuePtr: VALUE_PTR,
  ValueLen: VALUE_LEN,
  Text: TEXT,
  Created: CREATED,
  Deleted: DELETED,
  HasPrev: HAS_PREV,
  Ttl: TTL,
  TtlMs: TTL_MS,
  GrantedTtl: GRANTED_TTL,
} = Slot;

const MAX_TIMER_MS = 2 ** 31 - 1;
const RETRY_MS = 1000;
const MAX_EPOCH_MS = 8.64e15;
// The longest a lease can last (MAX_LEASE_TTL in ms). Bounds promote's
// extension and checkpoints: larger values would saturate deadlines in the
// core to i64::MAX, which it reads as "no deadline" (a standby lease).
const MAX_TTL_MS = 9_000_000_000_000;

let ready = false;

/** Called by each entry point once the wasm module is instantiated. */
export function markReady() {
  ready = true;
}

/** An error from edge-lease; `code` is stable (LeaseNotFound, InvalidArgument, ...). */
export class LeaseError extends Error {
  constructor(code, message, extra) {
    super(message);
    this.name = "LeaseError";
    this.code = code;
    if (extra) Object.assign(this, extra);
  }
}

/** The event every lessor dispatches: grant, renew, revoke, expire, put, delete. */
export class LeaseEvent extends Event {
  constructor(type, init = {}) {
    super(type);
    this.lease = init.lease ?? null;
    this.key = init.key ?? null;
    this.keys = init.keys ?? [];
    this.revision = init.revision ?? 0;
    this.ttl = init.ttl ?? 0;
  }
}

function invalid(message) {
  return new LeaseError("InvalidArgument", message);
}

// Errors thrown by the binding are plain Errors with a code; rethrow them as
// LeaseError so `instanceof` works for every error this package throws.
function rethrow(e) {
  if (e instanceof LeaseError) throw e;
  if (e && typeof e.code === "string") {
    throw new LeaseError(e.code, e.message, e.entry ? { entry: e.entry } : undefined);
  }
  throw new LeaseError("Internal", `edge-lease internal error: ${e && e.message ? e.message : e}`);
}

// Hex digit values by char code; -1 for anything else (uppercase included:
// ids are lowercase, as etcdctl prints them).
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE["0123456789abcdef".charCodeAt(i)] = i;

// A loop over char codes: a regex plus two parseInt calls cost a fifth of
// a renew in profiles.
function hexHalf(s, from) {
  let v = 0;
  for (let i = from; i < from + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c < 128 ? HEX_VALUE[c] : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The last id formatted (or parsed from a string), as text and halves: reads
// of keys on one lease format the same id over and over, and the id just
// returned is the one most often passed back next. null until then.
let lastHi = 0;
let lastLo = 0;
let lastId = null;

function badId(id, what) {
  return typeof id === "string"
    ? invalid(`${what} must be 16 lowercase hex digits, got ${JSON.stringify(id.slice(0, 40))}`)
    : invalid(`${what} must be a 16-digit hex string or a bigint, got ${typeof id}`);
}

// An id crosses into wasm as two u32 halves, each returned by its own
// function: no pair allocated per call, and nothing kept between calls (a
// clock that calls another lessor in between cannot swap the id).
function idHigh(id, what = "lease id") {
  if (typeof id === "string") {
    // The id most recently formatted (a grant, a get) is the one most often
    // passed back next (put with that lease, renew of that holder).
    if (id === lastId) return lastHi;
    const h = id.length === 16 ? hexHalf(id, 0) : -1;
    if (h < 0) throw badId(id, what);
    return h;
  }
  return Number(BigInt.asUintN(64, bigId(id, what)) >> 32n);
}

function idLow(id, what = "lease id") {
  if (typeof id === "string") {
    if (id === lastId) return lastLo;
    const l = id.length === 16 ? hexHalf(id, 8) : -1;
    if (l < 0) throw badId(id, what);
    return l;
  }
  return Number(BigInt.asUintN(64, bigId(id, what)) & 0xffffffffn);
}

function bigId(id, what) {
  if (typeof id !== "bigint") throw badId(id, what);
  if (id < -(2n ** 63n) || id >= 2n ** 64n) throw invalid(`${what} ${id} is outside 64 bits`);
  return id;
}

// Number#toString(16) + padStart showed up as the top cost of get/grant in
// profiles; a byte table is several times faster.
const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

// Values are read in place from wasm memory (see RawLessor::get).
let memory = null;
let bytes = new Uint8Array(0);
const utf8 = new TextDecoder();

function readValue(ptr, len, text) {
  // A view empties when memory grows (its buffer is detached): renew it then.
  // (Comparing buffers would call the slow Memory#buffer getter every time.)
  if (bytes.byteLength === 0) {
    memory ??= RawLessor.memory();
    bytes = new Uint8Array(memory.buffer);
  }
  if (!text) return bytes.slice(ptr, ptr + len);
  // Short ASCII (ids, addresses, "alive") is cheaper to build here than
  // through TextDecoder.
  if (len <= 32) {
    let s = "";
    for (let i = ptr, end = ptr + len; i < end; i++) {
      const c = bytes[i];
      if (c > 127) return utf8.decode(bytes.subarray(ptr, ptr + len));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return utf8.decode(bytes.subarray(ptr, ptr + len));
}

function hex8(n) {
  return HEX_BYTE[n >>> 24] + HEX_BYTE[(n >>> 16) & 255] + HEX_BYTE[(n >>> 8) & 255] + HEX_BYTE[n & 255];
}


function formatId(hi, lo) {
  if (hi !== lastHi || lo !== lastLo) {
    lastHi = hi;
    lastLo = lo;
    lastId = hex8(hi) + hex8(lo);
  }
  return lastId;
}

// Revoked/expired leases arrive as flat RevokedRows plus all their keys in
// one string (see src/wasm.rs).
function unflatten(meta, keys) {
  const out = [];
  let off = 0;
  for (let p = 0; p < meta.length; ) {
    const id = formatId(meta[p + RevokedRow.IdHi], meta[p + RevokedRow.IdLo]);
    const revision = meta[p + RevokedRow.Revision];
    const n = meta[p + RevokedRow.KeyCount];
    p += RevokedRow.KeyLengths;
    const list = new Array(n);
    for (let i = 0; i < n; i++) {
      const len = meta[p++];
      list[i] = keys.slice(off, off + len);
      off += len;
    }
    out.push({ id, keys: list, revision });
  }
  return out;
}

function leaseOrNull(hi, lo) {
  return hi === 0 && lo === 0 ? null : formatId(hi, lo);
}

// A lone surrogate has no UTF-8 form: it would be stored as U+FFFD, so
// "\uD800" and "\uFFFD" would be one key, and a value would not come back
// as it was given. isWellFormed is missing before Node 20.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed =
  typeof String.prototype.isWellFormed === "function"
    ? (s) => s.isWellFormed()
    : (s) => !LONE_SURROGATE.test(s);

function checkText(s, what) {
  if (!wellFormed(s)) throw invalid(`${what} has a lone surrogate (not valid Unicode)`);
}

function checkKey(key, max, what = "key") {
  if (typeof key !== "string") throw invalid(`${what} must be a string, got ${typeof key}`);
  // UTF-8 is never shorter than the UTF-16 length: refuse huge keys before copying them.
  if (key.length > max) throw invalid(`${what} is longer than ${max} bytes`);
  checkText(key, what);
}

function checkInt(value, what) {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw invalid(`${what} must be a whole number, got ${typeof value === "number" ? value : typeof value}`);
  }
}

function checkMs(value, what) {
  checkInt(value, what);
  if (value > MAX_TTL_MS) throw invalid(`${what} must be at most ${MAX_TTL_MS} ms`);
}

function checkLimit(options, name, fallback, max) {
  const v = options[name] ?? fallback;
  checkInt(v, name);
  if (v < 1 || v > max) throw invalid(`${name} must be between 1 and ${max}`);
  return v;
}

function options(arg, what) {
  if (arg === undefined || arg === null) return {};
  if (typeof arg !== "object") throw invalid(`${what} options must be an object`);
  return arg;
}

/**
 * An etcd-style lessor: leases with TTLs, keys attached to them, revisions,
 * and expiry driven by the host's clock.
 */
export class Lessor extends EventTarget {
  #raw;
  #now;
  #scratch;
  #closed = false;
  #busy = false;
  #maxKey;
  #maxValue;
  #wants = Object.create(null);
  // Expiry timer.
  #autoTick;
  #timer = null;
  #timerAt = Infinity;
  // Storage.
  #storage = null;
  #queue = [];
  #inFlight = false;
  #failed = null;
  #idle = [];

  constructor(opts = {}) {
    super();
    if (!ready) {
      throw new LeaseError(
        "NotInitialized",
        "edge-lease is not initialized: in a browser, `await init()` first",
      );
    }
    opts = options(opts, "Lessor");
    const now = opts.now ?? Date.now;
    if (typeof now !== "function") throw invalid("now must be a function returning epoch milliseconds");
    this.#now = now;
    const minTtl = checkLimit(opts, "minTtl", 1, 9_000_000_000);
    const revokeRate = checkLimit(opts, "revokeRate", 1000, 2 ** 32 - 1);
    this.#maxKey = checkLimit(opts, "maxKeyBytes", 4096, 2 ** 31);
    this.#maxValue = checkLimit(opts, "maxValueBytes", 1 << 20, 2 ** 31);
    const maxKeys = checkLimit(opts, "maxKeysPerLease", 10_000, 2 ** 31);
    this.#autoTick = opts.autoTick ?? true;
    const config = [minTtl, revokeRate, this.#maxKey, this.#maxValue, maxKeys];

    if (opts.storage !== undefined && opts.storage !== null) {
      if (typeof opts.storage.write !== "function") throw invalid("storage must have a write(batch) method");
      this.#storage = opts.storage;
    }
    if (opts.restore !== undefined || this.#storage) {
      const entries = [];
      if (opts.restore !== undefined && opts.restore !== null) {
        if (typeof opts.restore[Symbol.iterator] !== "function") {
          throw invalid("restore must be an iterable of [key, value] entries");
        }
        for (const entry of opts.restore) {
          if (!Array.isArray(entry) || typeof entry[0] !== "string" ||
              !(typeof entry[1] === "string" || entry[1] instanceof Uint8Array)) {
            throw invalid("restore entries must be [string, Uint8Array | string] pairs");
          }
          entries.push(entry);
        }
      }
      const write = this.#storage ? (batch) => this.#write(batch) : undefined;
      try {
        this.#raw = RawLessor.restore(...config, entries, this.#time(), write);
      } catch (e) {
        rethrow(e);
      }
    } else {
      try {
        this.#raw = new RawLessor(...config);
      } catch (e) {
        rethrow(e);
      }
    }
    this.#scratch = this.#raw.scratch();
    this.#schedule();
  }

  // Only dispatch events someone listens for: building them costs more than
  // the operation itself.
  addEventListener(type, listener, opts) {
    this.#wants[type] = true;
    super.addEventListener(type, listener, opts);
  }

  #emit(type, init) {
    if (this.#wants[type]) this.dispatchEvent(new LeaseEvent(type, init));
  }

  #time() {
    const t = this.#now();
    if (typeof t !== "number" || !Number.isFinite(t) || Math.abs(t) > MAX_EPOCH_MS) {
      throw invalid(`the clock returned ${String(t)}, not epoch milliseconds`);
    }
    return Math.floor(t);
  }

  #enter() {
    if (this.#closed) throw new LeaseError("Closed", "the lessor is closed");
    if (this.#busy) {
      throw new LeaseError("Reentrant", "the lessor was called from inside its own storage callback");
    }
  }

  #enterWrite() {
    this.#enter();
    if (this.#failed) {
      throw new LeaseError("StorageFailed", `an earlier storage write failed: ${this.#failed.message}`);
    }
  }

  #s() {
    // The view empties when wasm memory grows; ask for a fresh one.
    if (this.#scratch.length === 0) this.#scratch = this.#raw.scratch();
    return this.#scratch;
  }

  /** Grants a lease of `ttl` whole seconds. Returns `{ id, ttl }`. */
  grant(ttl, opts) {
    this.#enterWrite();
    checkInt(ttl, "ttl");
    const o = options(opts, "grant");
    const none = o.id === undefined || o.id === null;
    const hi = none ? 0 : idHigh(o.id);
    const lo = none ? 0 : idLow(o.id);
    const now = this.#time();
    let granted;
    this.#busy = true;
    try {
      granted = this.#raw.grant(now, ttl, hi, lo);
    } finally {
      this.#busy = false;
    }
    // NaN says the call failed (see RawLessor::fail).
    if (granted !== granted) rethrow(this.#raw.take_error());
    const s = this.#s();
    const id = formatId(s[ID_HI], s[ID_LO]);
    if (now + granted * 1000 < this.#timerAt) this.#schedule();
    this.#emit("grant", { lease: id, ttl: granted });
    return { id, ttl: granted };
  }

  /** Renews a lease: its deadline becomes now + its TTL. Returns the TTL. */
  renew(id) {
    this.#enterWrite();
    const hi = idHigh(id);
    const lo = idLow(id);
    const now = this.#time();
    let ttl;
    this.#busy = true;
    try {
      ttl = this.#raw.renew(now, hi, lo);
    } finally {
      this.#busy = false;
    }
    if (ttl !== ttl) rethrow(this.#raw.take_error());
    if (this.#wants.renew) this.#emit("renew", { lease: formatId(hi, lo), ttl });
    return ttl;
  }

  /** Revokes a lease and deletes its keys. Returns `{ id, keys, revision }`. */
  revoke(id) {
    this.#enterWrite();
    const hi = idHigh(id);
    const lo = idLow(id);
    const now = this.#time();
    let r;
    this.#busy = true;
    try {
      r = this.#raw.revoke(now, hi, lo);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const out = unflatten(r, this.#raw.take_keys())[0];
    this.#emit("revoke", { lease: out.id, keys: out.keys, revision: out.revision });
    return out;
  }

  /** `{ id, ttl, ttlMs, grantedTtl, keys }`; ttl is -1 if the lease is gone. */
  timeToLive(id, opts) {
    this.#enter();
    const hi = idHigh(id);
    const lo = idLow(id);
    // Always the hex form, also for a bigint id.
    id = formatId(hi, lo);
    const withKeys = Boolean(options(opts, "timeToLive").keys);
    const keys = this.#raw.time_to_live(this.#time(), hi, lo, withKeys);
    if (keys === undefined) return { id, ttl: -1, ttlMs: -1, grantedTtl: 0, keys: [] };
    const s = this.#s();
    return { id, ttl: s[TTL], ttlMs: s[TTL_MS], grantedTtl: s[GRANTED_TTL], keys };
  }

  /** Live lease ids, soonest deadline first. */
  leases() {
    this.#enter();
    const flat = this.#raw.leases(this.#time());
    const ids = new Array(flat.length / 2);
    for (let i = 0; i < ids.length; i++) ids[i] = formatId(flat[2 * i], flat[2 * i + 1]);
    return ids;
  }

  /**
   * Writes a key. Options: `lease` (attach to it; omitted detaches),
   * `ifAbsent` (create-only: the lock pattern), `prevKv` (return the previous entry).
   * Returns `{ revision, created, prev? }`; a refused `ifAbsent` put returns the holder as `prev`.
   */
  put(key, value, opts) {
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const o = options(opts, "put");
    const text = typeof value === "string";
    if (!text && !(value instanceof Uint8Array)) {
      throw invalid(`value must be a string or a Uint8Array, got ${typeof value}`);
    }
    if (value.length > this.#maxValue) throw invalid(`value is longer than ${this.#maxValue} bytes`);
    if (text) checkText(value, "value");
    const none = o.lease === undefined || o.lease === null;
    const hi = none ? 0 : idHigh(o.lease, "lease");
    const lo = none ? 0 : idLow(o.lease, "lease");
    const ifAbsent = Boolean(o.ifAbsent);
    const prevKv = Boolean(o.prevKv);
    const now = this.#time();
    let revision;
    this.#busy = true;
    try {
      revision = text
        ? this.#raw.put_str(now, key, value, hi, lo, ifAbsent, prevKv)
        : this.#raw.put_bytes(now, key, value, hi, lo, ifAbsent, prevKv);
    } finally {
      this.#busy = false;
    }
    if (revision !== revision) rethrow(this.#raw.take_error());
    const s = this.#s();
    const created = s[CREATED] === 1;
    // The core gives the previous entry when asked, and the holder when an
    // ifAbsent put is refused.
    const prev = s[HAS_PREV] === 1 ? this.#shown(key) : undefined;
    if (ifAbsent && !created) return { revision, created, prev };
    // The lease as hex whatever form it was given in (a bigint, too).
    if (this.#wants.put) this.#emit("put", { key, lease: none ? null : formatId(hi, lo), keys: [key], revision });
    return o.prevKv ? { revision, created, prev } : { revision, created };
  }

  #entry(now, key) {
    return this.#raw.get(now, key) ? this.#shown(key) : undefined;
  }

  // The entry in the scratch slots, its value read in place: right after the call that set them.
  #shown(key) {
    const s = this.#s();
    return {
      key,
      value: readValue(s[VALUE_PTR], s[VALUE_LEN], s[TEXT] === 1),
      lease: leaseOrNull(s[ID_HI], s[ID_LO]),
      createRevision: s[CREATE_REVISION],
      modRevision: s[MOD_REVISION],
      version: s[VERSION],
    };
  }

  /** `{ key, value, lease, createRevision, modRevision, version }`, or undefined. */
  get(key) {
    this.#enter();
    checkKey(key, this.#maxKey);
    return this.#entry(this.#time(), key);
  }

  /** Live entries whose key starts with `prefix`, sorted; `range("")` is everything. */
  range(prefix = "") {
    this.#enter();
    checkKey(prefix, this.#maxKey, "prefix");
    const rows = this.#raw.range(this.#time(), prefix);
    return rows.map((r) => ({
      key: r[RangeRow.Key],
      value: r[RangeRow.Value],
      lease: leaseOrNull(r[RangeRow.LeaseHi], r[RangeRow.LeaseLo]),
      createRevision: r[RangeRow.CreateRevision],
      modRevision: r[RangeRow.ModRevision],
      version: r[RangeRow.Version],
    }));
  }

  /** Deletes a key. Returns `{ deleted, revision, prev? }`. */
  delete(key, opts) {
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const o = options(opts, "delete");
    const now = this.#time();
    let revision;
    this.#busy = true;
    try {
      revision = this.#raw.delete(now, key);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const s = this.#s();
    const deleted = s[DELETED] === 1;
    // The core always gives the deleted entry: its lease is the event's.
    const lease = deleted ? leaseOrNull(s[ID_HI], s[ID_LO]) : null;
    const prev = o.prevKv && deleted ? this.#shown(key) : undefined;
    if (deleted) this.#emit("delete", { key, lease, keys: [key], revision });
    return o.prevKv ? { deleted, revision, prev } : { deleted, revision };
  }

  /** Expires what is due now (rate-limited). Returns `[{ id, keys, revision }]`. */
  tick() {
    this.#enterWrite();
    const now = this.#time();
    let rows;
    let error;
    this.#busy = true;
    try {
      rows = this.#raw.tick(now);
      error = this.#raw.take_error();
    } finally {
      this.#busy = false;
    }
    const out = rows.length === 0 ? [] : unflatten(rows, this.#raw.take_keys());
    for (const e of out) this.#emit("expire", { lease: e.id, keys: e.keys, revision: e.revision });
    if (error !== undefined) {
      // Storage stopped the tick part-way: what did expire is on the error.
      // Arming the timer at the (overdue) deadline would retry at once, in
      // a loop; wait a little instead.
      this.#retryLater();
      throw new LeaseError(error.code, error.message, { expired: out });
    }
    this.#schedule();
    return out;
  }

  /** Epoch ms at which `tick` next has work, or null. */
  nextDeadline() {
    this.#enter();
    const d = this.#raw.next_deadline();
    return Number.isNaN(d) ? null : d;
  }

  /** Becomes primary: every lease gets now + extendMs + its remaining time. */
  promote(extendMs = 0) {
    this.#enterWrite();
    checkMs(extendMs, "extendMs");
    const now = this.#time();
    this.#busy = true;
    try {
      this.#raw.promote(now, extendMs);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    this.#schedule();
  }

  /** Becomes standby: no expiry, renew fails with NotPrimary. */
  demote() {
    this.#enterWrite();
    this.#raw.demote(this.#time());
    this.#schedule();
  }

  /** Records a lease's remaining time for the next promotion (etcd's checkpoint). */
  checkpoint(id, remainingMs) {
    this.#enterWrite();
    const hi = idHigh(id);
    const lo = idLow(id);
    checkMs(remainingMs, "remainingMs");
    const now = this.#time();
    this.#busy = true;
    try {
      this.#raw.checkpoint(now, hi, lo, remainingMs);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
  }

  /** The revision of the last change. */
  get revision() {
    this.#enter();
    return this.#raw.revision();
  }

  get isPrimary() {
    this.#enter();
    return this.#raw.is_primary();
  }

  /** Everything this lessor holds, as the `[key, Uint8Array]` entries storage would. */
  snapshot() {
    this.#enter();
    return this.#raw.snapshot();
  }

  /** Bytes of wasm linear memory (shared by every lessor in this module): a diagnostic. */
  memoryBytes() {
    return RawLessor.memory_bytes();
  }

  /** Resolves when every storage write so far is durable; rejects if one failed. */
  flush() {
    if (this.#failed) return Promise.reject(this.#storageError());
    if (!this.#inFlight && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idle.push({ resolve, reject }));
  }

  /** Stops the timer and frees the wasm memory. Later calls throw code "Closed". */
  close() {
    if (this.#closed) return;
    // Freeing the wasm object while the core is inside an operation fails
    // half-way (and would leak it): refuse, like every other re-entrant call.
    if (this.#busy) {
      throw new LeaseError("Reentrant", "the lessor was closed from inside its own storage callback");
    }
    this.#closed = true;
    this.#clearTimer();
    this.#raw.free();
    this.#raw = null;
  }

  // ---- storage -----------------------------------------------------------

  #storageError() {
    return new LeaseError("StorageFailed", `storage write failed: ${this.#failed.message ?? this.#failed}`);
  }

  // Called from inside wasm with one batch per operation. A synchronous throw
  // fails the operation (the core changes nothing). A promise is chained:
  // batches go to storage one at a time, in order.
  #write(batch) {
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
    this.#clearTimer();
    const err = this.#storageError();
    for (const w of this.#idle.splice(0)) w.reject(err);
  }

  // ---- expiry timer ------------------------------------------------------

  #clearTimer() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Infinity;
  }

  // One timer at the next deadline. Renew and revoke only move deadlines
  // later, so they never reschedule: an early wake-up just ticks nothing and
  // sets the timer again.
  #schedule() {
    if (!this.#autoTick || this.#closed || this.#failed) return;
    const at = this.#raw.next_deadline();
    if (Number.isNaN(at)) {
      this.#clearTimer();
      return;
    }
    if (at === this.#timerAt && this.#timer !== null) return;
    const delay = Math.min(Math.max(at - this.#time(), 0), MAX_TIMER_MS);
    this.#arm(at, delay);
  }

  // The one timer: replaces any other, and never keeps a Node process alive.
  #arm(at, delay) {
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#fire(), delay);
    if (typeof this.#timer === "object" && typeof this.#timer.unref === "function") this.#timer.unref();
  }

  #fire() {
    this.#timer = null;
    this.#timerAt = Infinity;
    if (this.#closed || this.#failed) return;
    try {
      this.tick();
    } catch (e) {
      // A failing clock or store: surface it as an event instead of an
      // uncaught exception in a timer, and try again a little later (a store
      // that refused one write may take the next). A failed async store
      // stops it for good.
      this.dispatchEvent(Object.assign(new Event("error"), { error: e }));
      this.#retryLater();
    }
  }

  #retryLater() {
    if (!this.#autoTick || this.#closed || this.#failed) return;
    this.#arm(0, RETRY_MS); // at 0: any later schedule() replaces the retry
  }
}
