// The JS half of the wasm binding (crates/wasm is the other half): lease
// ids as two u32 halves and as hex, the named scratch slots and rows, values
// read in place from wasm memory, and the binding's errors as LeaseErrors.
// The engine is a build of crates/wasm, its wasm-bindgen module handed over
// by the entry that instantiated it: the lean one the edge loads, or the
// etcd server's, which adds what only an etcd server needs (HashKV, etcd's
// snapshot file). A Binding (one per lessor) holds its own caches; what is at
// module level is set when the first engine is ready and is the same for
// every build.

import { LeaseError, leaseError } from "./errors.js";
import { hexId, hexOfI64, high, low } from "./lease-id.js";
import {
  Batch,
  packEntryParts,
  StoredEntries,
  unpackEntries,
  Reader,
  Writer,
  readDelete,
  readPut,
  readRange,
  readTxn,
  readWatchBatches,
  writeDelete,
  writePut,
  writeRange,
  writeTxn,
  writeWatch,
} from "./codec.js";

// Engines (wasm-bindgen modules) whose wasm is instantiated.
const ready = new WeakSet();

// Scratch positions and row layouts, named in crates/wasm: taken from the
// first engine, so hot paths index by plain numbers. Every build has the
// same ones (markReady checks).
let ID_HI, ID_LO, CREATE_REVISION, MOD_REVISION, VERSION, VALUE_PTR, VALUE_LEN, TEXT, CREATED, DELETED, HAS_PREV, TTL, TTL_MS, GRANTED_TTL;
let RangeRow = null;
let RevokedRow = null;
let layout = null;

/** Called by each entry point once `engine`'s wasm is instantiated. */
export function markReady(engine) {
  const own = JSON.stringify([engine.Slot, engine.RangeRow, engine.RevokedRow]);
  if (layout !== null && own !== layout) {
    throw new LeaseError("Internal", "edge-lease internal error: two builds of the engine with different binding layouts in one realm");
  }
  if (layout === null) {
    layout = own;
    ({
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
    } = engine.Slot);
    ({ RangeRow, RevokedRow } = engine);
  }
  ready.add(engine);
}

/** Bytes of `engine`'s wasm linear memory (shared by every lessor it built). */
export function memoryBytes(engine) {
  return engine.RawLessor.memory_bytes();
}

/** The core's option defaults (`Config::default()`): `{ minTtl, revokeRate, ... }`. */
export function defaults(engine) {
  if (!engine || !ready.has(engine)) {
    throw new LeaseError("NotInitialized", "edge-lease is not initialized: in a browser, `await init()` first");
  }
  return engine.defaults();
}

// ---- values ------------------------------------------------------------------

const utf8 = new TextDecoder();
const NO_BYTES = new Uint8Array(0);

// ---- one lessor's binding ----------------------------------------------------

// A restore handed its entries a piece at a time, so that they are never in
// wasm memory whole beside the engine built from them (which keeps that
// high-water mark).
const RESTORE_PART_BYTES = 1 << 20;

function restoreRaw(engine, config, { entries, now, write }) {
  const r = new engine.RawRestore();
  try {
    if (entries instanceof StoredEntries) addStored(r, entries);
    else packEntryParts(entries, RESTORE_PART_BYTES, (part) => r.add(part));
  } catch (e) {
    r.free();
    throw e;
  }
  // (The restore is consumed, on success or not.)
  return engine.RawLessor.restore(config, r, now, write && ((bytes) => write(new Batch(bytes))));
}

// A store's journal and entry lists go in as they are (the core applies
// the journal over the entries); the pairs between the lists are packed as
// usual, in order.
function addStored(r, entries) {
  for (const batch of entries.journal) r.journal(batch);
  let pairs = [];
  const flush = () => {
    packEntryParts(pairs, RESTORE_PART_BYTES, (part) => r.add(part));
    pairs = [];
  };
  for (const item of entries.items()) {
    if (item instanceof Uint8Array) {
      flush();
      r.add(item);
    } else if (pairs.push(item) >= 4096) flush();
  }
  flush();
}

/**
 * One RawLessor, called with JS values: ids as hex or bigint, entries and
 * lists as objects. Every method takes the host time `now` (epoch ms) first.
 */
export class Binding {
  #engine;
  #raw;
  #scratch;
  // A view of wasm memory for reading values; it empties when memory grows.
  #bytes = NO_BYTES;
  // The core's inbox (RawLessor::inbox): get's key, put's key and value,
  // written here rather than passed as strings (each an allocation in
  // wasm, a copy and a free). Empties when memory grows, as #bytes.
  #in = NO_BYTES;
  #busy = false;
  // One request writer, reused: the bytes are copied into wasm at each call.
  #writer = new Writer();
  // The last id formatted, as text and halves: reads of keys on one lease
  // format the same id over and over, and the id just returned is the one
  // most often passed back next (put with that lease, renew of that holder).
  #lastHi = 0;
  #lastLo = 0;
  #lastId = null;

  /**
   * A core with `config` (`{ minTtl, revokeRate, maxKeyBytes, maxValueBytes,
   * maxKeysPerLease }`); with `restore` (`{ entries, now, write }`) rebuilt
   * from stored entries, handing every later change to `write` first.
   */
  constructor(engine, config, restore) {
    this.#engine = engine;
    try {
      this.#raw = restore ? restoreRaw(engine, config, restore) : new engine.RawLessor(config);
    } catch (e) {
      throw leaseError(e);
    }
    this.#scratch = this.#raw.scratch();
  }

  // ---- etcd's KV requests, normalized by js/requests.js; one byte buffer
  // each way (js/codec.js), through one call (`kv`), the request's kind
  // first: 0 range, 1 put, 2 delete, 3 txn ---------------------------------

  /** `{ kvs, more, count, revision }`. */
  rangeKv(now, req) {
    const w = this.#writer.reset();
    w.byte(0);
    writeRange(w, req);
    return readRange(new Reader(this.#call(() => this.#raw.kv(now, w.done()))), hexOfI64);
  }

  /** `{ revision, prevKv? }`. */
  putKv(now, req) {
    const w = this.#writer.reset();
    w.byte(1);
    writePut(w, req);
    return readPut(new Reader(this.#call(() => this.#raw.kv(now, w.done()))), hexOfI64);
  }

  /** etcd's counts (crates/core/src/counts.rs), in its field order. */
  counts() {
    return this.#raw.counts();
  }

  /** `{ deleted, revision, prevKvs }`. */
  deleteRange(now, req) {
    const w = this.#writer.reset();
    w.byte(2);
    writeDelete(w, req);
    return readDelete(new Reader(this.#call(() => this.#raw.kv(now, w.done()))), hexOfI64);
  }

  /** `{ succeeded, revision, responses }`. */
  txn(now, req) {
    const w = this.#writer.reset();
    w.byte(3);
    writeTxn(w, req);
    return readTxn(new Reader(this.#call(() => this.#raw.kv(now, w.done()))), hexOfI64);
  }

  /** The current revision. */
  compact(revision) {
    return this.#call(() => this.#raw.compact(revision));
  }

  /** One step of the compaction's sweep, of about `max` versions: the changes left to visit. */
  compactStep(max) {
    return this.#call(() => this.#raw.compact_step(max));
  }

  compactionPending() {
    return this.#raw.compaction_pending();
  }

  /** The key bucket in pieces: `etcdKeyBucketNext(cursor, max)` until it gives none; then `cursor.free()`. */
  etcdKeyBucketCursor() {
    this.#etcd("etcdKeyBucket");
    return this.#raw.etcd_key_bucket_cursor();
  }

  etcdKeyBucketNext(cursor, max) {
    return this.#call(() => this.#raw.etcd_key_bucket_next(cursor, max));
  }

  hostEntry(name) {
    return this.#raw.host_entry(name);
  }

  setHostEntry(name, value) {
    this.#call(() => this.#raw.set_host_entry(name, value));
  }

  compacted() {
    return this.#raw.compacted();
  }

  hashKv(upto) {
    this.#etcd("hashKv");
    return this.#call(() => this.#raw.hash_kv(upto));
  }

  sizeBytes() {
    return this.#raw.size_bytes();
  }

  /** A watcher's id. */
  watch(req) {
    const w = this.#writer.reset();
    writeWatch(w, req);
    return this.#call(() => this.#raw.watch(w.done()));
  }

  cancelWatch(id) {
    return this.#raw.cancel_watch(id);
  }

  pauseWatch(id, paused) {
    return this.#raw.pause_watch(id, paused);
  }

  watchCaughtUp(id) {
    return this.#raw.watch_caught_up(id);
  }

  /**
   * `{ batches: [{ id, compactRevision, revision, events, partial }], bytes }`:
   * `bytes`, what the engine handed over for them.
   */
  pollWatches() {
    const chunks = [];
    const rest = this.#raw.poll_watches((chunk) => void chunks.push(chunk));
    const bytes = chunks.reduce((n, c) => n + c.length, rest.length);
    return { batches: readWatchBatches(new Reader(rest), hexOfI64, chunks), bytes };
  }

  watchesPending() {
    return this.#raw.watches_pending();
  }

  /** Calls into a change of the core, with its errors as LeaseErrors. */
  #call(f) {
    this.#busy = true;
    try {
      return f();
    } catch (e) {
      throw leaseError(e);
    } finally {
      this.#busy = false;
    }
  }

  // What only the etcd server's build has (crates/wasm's `etcd` feature).
  #etcd(what) {
    if (typeof this.#raw.hash_kv !== "function") {
      throw new LeaseError("Unimplemented", `${what} is in the etcd server's build of the engine (edge-lease-etcd), not in this one`);
    }
  }

  /** True while the core is inside a change, which is when it calls storage. */
  get busy() {
    return this.#busy;
  }

  /** `{ id, ttl }`; `id` null or undefined picks a random one. */
  grant(now, ttl, id) {
    const none = id === undefined || id === null;
    const hi = none ? 0 : this.#high(id, "lease id");
    const lo = none ? 0 : this.#low(id, "lease id");
    let granted;
    this.#busy = true;
    try {
      granted = this.#raw.grant(now, ttl, hi, lo);
    } finally {
      this.#busy = false;
    }
    // NaN says the call failed (see RawLessor::fail).
    if (granted !== granted) throw leaseError(this.#raw.take_error());
    const s = this.#s();
    return { id: this.#format(s[ID_HI], s[ID_LO]), ttl: granted };
  }

  /** The lease's TTL. */
  renew(now, id) {
    const hi = this.#high(id, "lease id");
    const lo = this.#low(id, "lease id");
    let ttl;
    this.#busy = true;
    try {
      ttl = this.#raw.renew(now, hi, lo);
    } finally {
      this.#busy = false;
    }
    if (ttl !== ttl) throw leaseError(this.#raw.take_error());
    return ttl;
  }

  /** `{ id, keys, revision }`. */
  revoke(now, id) {
    const hi = this.#high(id, "lease id");
    const lo = this.#low(id, "lease id");
    let rows;
    this.#busy = true;
    try {
      rows = this.#raw.revoke(now, hi, lo);
    } catch (e) {
      throw leaseError(e);
    } finally {
      this.#busy = false;
    }
    return this.#unflatten(rows)[0];
  }

  /**
   * `{ id, ttl, ttlMs, grantedTtl, keys }`, ttl -1 if the lease is gone; `id`
   * always as hex; keys as strings, or as bytes with `bytes`.
   */
  timeToLive(now, id, withKeys, bytes = false) {
    const hi = this.#high(id, "lease id");
    const lo = this.#low(id, "lease id");
    const keys = this.#raw.time_to_live(now, hi, lo, withKeys, bytes);
    const hex = this.#format(hi, lo);
    if (keys === undefined) return { id: hex, ttl: -1, ttlMs: -1, grantedTtl: 0, keys: [] };
    const s = this.#s();
    return { id: hex, ttl: s[TTL], ttlMs: s[TTL_MS], grantedTtl: s[GRANTED_TTL], keys };
  }

  leases(now) {
    const flat = this.#raw.leases(now);
    const ids = new Array(flat.length / 2);
    for (let i = 0; i < ids.length; i++) ids[i] = this.#format(flat[2 * i], flat[2 * i + 1]);
    return ids;
  }

  /**
   * `{ revision, created, prev? }`: `prev` if `prevKv` asked for it, and the
   * holder when an ifAbsent put is refused. `lease` null or undefined detaches.
   */
  put(now, key, value, lease, ifAbsent, prevKv) {
    const none = lease === undefined || lease === null;
    const hi = none ? 0 : this.#high(lease, "lease");
    const lo = none ? 0 : this.#low(lease, "lease");
    let revision;
    this.#busy = true;
    try {
      if (typeof value === "string") {
        const k = this.#ascii(key, 0);
        const v = k < 0 ? -1 : this.#ascii(value, k);
        revision = v < 0
          ? this.#raw.put_str(now, key, value, hi, lo, ifAbsent, prevKv)
          : this.#raw.put_in(now, k, v - k, hi, lo, ifAbsent, prevKv);
      } else revision = this.#raw.put_bytes(now, key, value, hi, lo, ifAbsent, prevKv);
    } finally {
      this.#busy = false;
    }
    if (revision !== revision) throw leaseError(this.#raw.take_error());
    const s = this.#s();
    const created = s[CREATED] === 1;
    if (s[HAS_PREV] === 1) return { revision, created, prev: this.#shown(key) };
    return prevKv ? { revision, created, prev: undefined } : { revision, created };
  }

  /** The live entry, or undefined. */
  get(now, key) {
    const n = this.#ascii(key, 0);
    if (!(n < 0 ? this.#raw.get(now, key) : this.#raw.get_in(now, n))) return undefined;
    // #shown's body, inlined by hand: one call level less lets V8 inline
    // the whole of Lessor#get (5-8% faster in benches/run-one.mjs's get).
    const s = this.#s();
    return {
      key,
      value: this.#value(s[VALUE_PTR], s[VALUE_LEN], s[TEXT] === 1),
      lease: this.#leaseOrNull(s[ID_HI], s[ID_LO]),
      createRevision: s[CREATE_REVISION],
      modRevision: s[MOD_REVISION],
      version: s[VERSION],
    };
  }

  range(now, prefix) {
    return this.#raw.range(now, prefix).map((r) => ({
      key: r[RangeRow.Key],
      value: r[RangeRow.Value],
      lease: this.#leaseOrNull(r[RangeRow.LeaseHi], r[RangeRow.LeaseLo]),
      createRevision: r[RangeRow.CreateRevision],
      modRevision: r[RangeRow.ModRevision],
      version: r[RangeRow.Version],
    }));
  }

  /**
   * `{ deleted, revision, prev, lease }`: `prev` the deleted entry if
   * `prevKv` asked for it, `lease` its lease either way (or null).
   */
  delete(now, key, prevKv) {
    let revision;
    this.#busy = true;
    try {
      revision = this.#raw.delete(now, key);
    } catch (e) {
      throw leaseError(e);
    } finally {
      this.#busy = false;
    }
    const s = this.#s();
    const deleted = s[DELETED] === 1;
    return {
      deleted,
      revision,
      prev: deleted && prevKv ? this.#shown(key) : undefined,
      lease: deleted ? this.#leaseOrNull(s[ID_HI], s[ID_LO]) : null,
    };
  }

  /** `{ expired: [{ id, keys, revision }], error }`: `error` if storage stopped the tick part-way. */
  tick(now) {
    let rows;
    let error;
    this.#busy = true;
    try {
      rows = this.#raw.tick(now);
      error = this.#raw.take_error();
    } finally {
      this.#busy = false;
    }
    return {
      expired: rows.length === 0 ? [] : this.#unflatten(rows),
      error: error === undefined ? undefined : leaseError(error),
    };
  }

  /** Epoch ms, or null when nothing is due. */
  nextDeadline() {
    const d = this.#raw.next_deadline();
    return d !== d ? null : d;
  }

  promote(now, extendMs) {
    this.#busy = true;
    try {
      this.#raw.promote(now, extendMs);
    } catch (e) {
      throw leaseError(e);
    } finally {
      this.#busy = false;
    }
  }

  demote(now) {
    this.#raw.demote(now);
  }

  holdExpiry(held, since) {
    this.#raw.hold_expiry(held, since);
  }

  /** Epoch ms, or null. */
  expiryHeldSince() {
    return this.#raw.expiry_held_since() ?? null;
  }

  checkpoint(now, id, remainingMs) {
    const hi = this.#high(id, "lease id");
    const lo = this.#low(id, "lease id");
    this.#busy = true;
    try {
      this.#raw.checkpoint(now, hi, lo, remainingMs);
    } catch (e) {
      throw leaseError(e);
    } finally {
      this.#busy = false;
    }
  }

  revision() {
    return this.#raw.revision();
  }

  keyCount() {
    return this.#raw.key_count();
  }

  isPrimary() {
    return this.#raw.is_primary();
  }

  snapshot(now) {
    const cursor = this.#raw.snapshot_cursor(now);
    try {
      const out = [];
      for (;;) {
        const part = this.#raw.snapshot_next(cursor, 0xffffffff);
        if (part.length === 0) return out;
        unpackEntries(part, out);
      }
    } finally {
      cursor.free();
    }
  }

  /** A snapshot in steps: `snapshotNext(cursor, max)` until it gives none; then `cursor.free()`. */
  snapshotCursor(now) {
    return this.#raw.snapshot_cursor(now);
  }

  snapshotNext(cursor, max) {
    return unpackEntries(this.#raw.snapshot_next(cursor, max));
  }

  /** The same step as one entry list, as the core packed it. */
  snapshotNextPacked(cursor, max) {
    return this.#raw.snapshot_next(cursor, max);
  }

  free() {
    this.#raw.free();
    this.#raw = null;
  }

  #s() {
    // The view empties when wasm memory grows; ask for a fresh one.
    if (this.#scratch.length === 0) this.#scratch = this.#raw.scratch();
    return this.#scratch;
  }

  // Writes `s` into the inbox from `at` if it is ASCII and fits, returning
  // where it ends; -1 (the caller passes the string instead) otherwise.
  #ascii(s, at) {
    let v = this.#in;
    if (v.length === 0) v = this.#in = this.#raw.inbox();
    const n = s.length;
    if (at + n > v.length) return -1;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 127) return -1;
      v[at + i] = c;
    }
    return at + n;
  }

  // The last id formatted needs no parsing (null until there is one).
  #high(id, what) {
    return id === this.#lastId && id !== null ? this.#lastHi : high(id, what);
  }

  #low(id, what) {
    return id === this.#lastId && id !== null ? this.#lastLo : low(id, what);
  }

  #format(hi, lo) {
    if (hi !== this.#lastHi || lo !== this.#lastLo || this.#lastId === null) {
      this.#lastHi = hi;
      this.#lastLo = lo;
      this.#lastId = hexId(hi, lo);
    }
    return this.#lastId;
  }

  #leaseOrNull(hi, lo) {
    return hi === 0 && lo === 0 ? null : this.#format(hi, lo);
  }

  // The entry in the scratch slots, right after the call that set them.
  #shown(key) {
    const s = this.#s();
    return {
      key,
      value: this.#value(s[VALUE_PTR], s[VALUE_LEN], s[TEXT] === 1),
      lease: this.#leaseOrNull(s[ID_HI], s[ID_LO]),
      createRevision: s[CREATE_REVISION],
      modRevision: s[MOD_REVISION],
      version: s[VERSION],
    };
  }

  // A value read in place from wasm memory (see RawLessor::get).
  #value(ptr, len, text) {
    // A view empties when memory grows (its buffer is detached): renew it then.
    // (Comparing buffers would call the slow Memory#buffer getter every time.)
    if (this.#bytes.byteLength === 0) this.#bytes = new Uint8Array(this.#engine.RawLessor.memory().buffer);
    const bytes = this.#bytes;
    if (!text) return bytes.slice(ptr, ptr + len);
    // Short ASCII (ids, addresses, "alive") is cheaper to build here than
    // through TextDecoder (~200 ns whatever the length), 8 characters a
    // fromCharCode: a character at a time made a string per character
    // (Node 20, 8 characters: 112 ns against 63).
    if (len <= 32) {
      const end = ptr + len;
      let any = 0;
      for (let i = ptr; i < end; i++) any |= bytes[i];
      if (any > 127) return utf8.decode(bytes.subarray(ptr, end));
      const b = bytes;
      let s = "";
      let i = ptr;
      for (; i + 8 <= end; i += 8) s += String.fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]);
      if (i + 4 <= end) {
        s += String.fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3]);
        i += 4;
      }
      for (; i < end; i++) s += String.fromCharCode(b[i]);
      return s;
    }
    return utf8.decode(bytes.subarray(ptr, ptr + len));
  }

  // Revoked/expired leases arrive as flat RevokedRows plus all their keys in
  // one string.
  #unflatten(rows) {
    const keys = this.#raw.take_keys();
    const out = [];
    let off = 0;
    for (let p = 0; p < rows.length; ) {
      const id = this.#format(rows[p + RevokedRow.IdHi], rows[p + RevokedRow.IdLo]);
      const revision = rows[p + RevokedRow.Revision];
      const n = rows[p + RevokedRow.KeyCount];
      p += RevokedRow.KeyLengths;
      const list = new Array(n);
      for (let i = 0; i < n; i++) {
        const len = rows[p++];
        list[i] = keys.slice(off, off + len);
        off += len;
      }
      out.push({ id, keys: list, revision });
    }
    return out;
  }
}
