// The JS half of the byte format of crates/wasm/src/codec.rs: etcd-shaped
// requests written here, results read back, one copy each way. Varints
// (zigzag for signed), byte strings as a varint length then the bytes.
// Requests reach this module already checked (js/checks.js). Also the
// storage entries and batches the core hands to stores, with their layout
// (which is also the file store's journal record payload).

import { invalid, LeaseError } from "./errors.js";

const utf8 = new TextEncoder();

/** Bytes of a key or value given as a string (UTF-8) or bytes. */
export function bytesOf(v) {
  return typeof v === "string" ? utf8.encode(v) : v;
}

export class Writer {
  #buf = new Uint8Array(256);
  #at = 0;

  #room(n) {
    if (this.#at + n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#at + n));
    next.set(this.#buf.subarray(0, this.#at));
    this.#buf = next;
  }

  byte(b) {
    this.#room(1);
    this.#buf[this.#at++] = b;
  }

  // A count or length: unsigned (a zigzag int64 takes up to 10 bytes).
  uint(n) {
    this.#room(10);
    while (n >= 128) {
      this.#buf[this.#at++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    this.#buf[this.#at++] = n;
  }

  // A signed whole number up to 2^53 in magnitude (revisions, limits) or a
  // bigint (lease ids), zigzag-encoded.
  int(v) {
    if (typeof v !== "bigint") {
      // 2v is exact for any integer double; -2v-1 is odd, so exact only
      // below 2^53: past it, as a bigint (rounded, it would change sign).
      if (v >= 0) this.uint(v * 2);
      else if (v >= -(2 ** 52)) this.uint(-v * 2 - 1);
      else this.int(BigInt(v));
      return;
    }
    // As two u32 halves: a BigInt operation allocates, so 7 bits at a
    // time on the BigInt was ~30 allocations per id.
    const z = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
    let lo = Number(z & 0xffffffffn);
    let hi = Number(z >> 32n);
    this.#room(10);
    while (hi > 0 || lo >= 128) {
      this.#buf[this.#at++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | ((hi & 127) << 25)) >>> 0;
      hi >>>= 7;
    }
    this.#buf[this.#at++] = lo;
  }

  bytes(b) {
    this.uint(b.length);
    this.#room(b.length);
    this.#buf.set(b, this.#at);
    this.#at += b.length;
  }

  done() {
    return this.#buf.subarray(0, this.#at);
  }

  /** Empty again, for the next request (a buffer grown past 64 KiB is let go). */
  reset() {
    if (this.#buf.length > 1 << 16) this.#buf = new Uint8Array(256);
    this.#at = 0;
    return this;
  }
}

export class Reader {
  #buf;
  #at = 0;

  constructor(buf) {
    this.#buf = buf;
  }

  byte() {
    return this.#buf[this.#at++];
  }

  // A count or length.
  uint() {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.#buf[this.#at++];
      n += (b & 127) * scale;
      if (b < 128) return n;
      scale *= 128;
    }
  }

  // A signed number; exact up to 2^53 (the core's counters stay below).
  int() {
    const n = this.uint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  // A signed 64-bit value (a lease id) as a bigint, exactly.
  bigint() {
    let z = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.#buf[this.#at++];
      z |= BigInt(b & 127) << shift;
      if (b < 128) break;
      shift += 7n;
    }
    return (z >> 1n) ^ -(z & 1n);
  }

  bytes() {
    const n = this.uint();
    const b = this.#buf.slice(this.#at, this.#at + n);
    this.#at += n;
    return b;
  }

  /** Whether bytes are left. */
  more() {
    return this.#at < this.#buf.length;
  }
}

// ---- storage entries and batches ---------------------------------------------
//
// The one JS reader and writer of the layout crates/wasm/src/packed.rs packs
// (`pack_entries`) and reads (`entries`), and the core's storage::Batch keeps
// its records in (`Batch::pack_into`). An entry is a u32
// (little-endian) key length, the key (UTF-8), a u32 value length, the value.
// An entry list (a restore's or a snapshot's entries crossing into or out of
// the core) is entries back to back. A batch (one storage write) is a u32
// count of puts, that many entries, then a u32 count of deletes, each a u32
// length and the key. A batch is also the file store's journal record
// payload (js/stores/file/format.mjs): changing it changes that file format.

const u32 = (buf, at) => (buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)) + buf[at + 3] * 0x1000000;

function writeU32(buf, at, n) {
  buf[at] = n & 0xff;
  buf[at + 1] = (n >>> 8) & 0xff;
  buf[at + 2] = (n >>> 16) & 0xff;
  buf[at + 3] = n >>> 24;
  return at + 4;
}

// Writes `v` (a string, as UTF-8, or bytes) at `at` of `buf` as a u32
// length and its bytes; returns the offset after it. `buf` has room for a
// string's 3 bytes per UTF-16 unit. Without a DataView or a set() per short
// field: this runs once per entry of a restore (200k for 100k leases with a
// key each).
function writePart(buf, at, v) {
  const start = at + 4;
  let end = start;
  if (typeof v === "string") {
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if (c >= 128) {
        // Not ASCII: let the encoder write the rest.
        end += utf8.encodeInto(v.slice(i), buf.subarray(end)).written;
        break;
      }
      buf[end++] = c;
    }
  } else if (v.length <= 32) {
    for (let i = 0; i < v.length; i++) buf[end++] = v[i];
  } else {
    buf.set(v, start);
    end += v.length;
  }
  writeU32(buf, at, end - start);
  return end;
}

// The most bytes writePart writes for `v`.
const partRoom = (v) => 4 + (typeof v === "string" ? v.length * 3 : v.length);

/**
 * Stored `[key, value]` entries (strings or bytes) as entry lists of about
 * `bytes` each (at least one entry), handed to `add` in order. Each list is
 * a view of one buffer written again for the next: `add` copies what it
 * keeps. `entries` is read once, in one pass, and no entry is held after
 * its list: a source that lets its entries go as it hands them out (the
 * file store's) is never in memory whole beside what the lists became.
 */
export function packEntryParts(entries, bytes, add) {
  let buf = new Uint8Array(bytes + (bytes >> 2));
  let at = 0;
  for (const entry of entries) {
    const k = entry[0];
    const v = entry[1];
    const room = partRoom(k) + partRoom(v);
    if (at + room > buf.length) {
      if (at > 0) add(buf.subarray(0, at));
      at = 0;
      if (room > buf.length) buf = new Uint8Array(room);
    }
    at = writePart(buf, writePart(buf, at, k), v);
    if (at >= bytes) {
      add(buf.subarray(0, at));
      at = 0;
    }
  }
  if (at > 0) add(buf.subarray(0, at));
}

/** `[key, value]` entries as one entry list. */
export function packEntries(list) {
  let size = 0;
  for (const [k, v] of list) size += partRoom(k) + partRoom(v);
  const buf = new Uint8Array(size);
  let at = 0;
  for (const [k, v] of list) at = writePart(buf, writePart(buf, at, k), v);
  return buf.subarray(0, at);
}

/**
 * The batch of `put` (`[key, value]`, the value a string or bytes) and
 * `del` (keys), after `reserve` bytes left free for the caller (a record
 * header). A key that is not a string or a value that is neither a string
 * nor bytes is an InvalidArgument, thrown before anything is written.
 */
export function packBatch(put, del, reserve = 0) {
  let size = reserve + 8;
  for (const entry of put) {
    const [k, v] = entry;
    if (typeof k !== "string" || (typeof v !== "string" && !(v instanceof Uint8Array))) {
      throw invalid("a batch's put is [key, value]: a string key and a string or Uint8Array value");
    }
    size += partRoom(k) + partRoom(v);
  }
  for (const k of del) {
    if (typeof k !== "string") throw invalid("a batch's delete is a list of string keys");
    size += partRoom(k);
  }
  const buf = new Uint8Array(size);
  let at = writeU32(buf, reserve, put.length);
  for (const [k, v] of put) at = writePart(buf, writePart(buf, at, k), v);
  at = writeU32(buf, at, del.length);
  for (const k of del) at = writePart(buf, at, k);
  return buf.subarray(0, at);
}

// Walks `n` items of `b` from `at`, each a key and (with `values`) a
// value, calling each(keyAt, keyEnd, valueAt, valueEnd); returns the
// offset after them, or -1 if one runs past the end of `b`.
function walk(b, at, n, values, each) {
  for (let i = 0; i < n; i++) {
    if (at + 4 > b.length) return -1;
    const ks = at + 4;
    const ke = ks + u32(b, at);
    if (ke > b.length) return -1;
    at = ke;
    let vs = 0;
    if (values) {
      if (at + 4 > b.length) return -1;
      vs = at + 4;
      at = vs + u32(b, at);
      if (at > b.length) return -1;
    }
    each?.(ks, ke, vs, at);
  }
  return at;
}

// Walks the batch `b` (walk's `each` for its puts, then for its deletes);
// returns whether it is one whole batch, by its counts and lengths.
function walkBatch(b, onPut, onDelete) {
  if (b.length < 4) return false;
  const at = walk(b, 4, u32(b, 0), true, onPut);
  if (at < 0 || at + 4 > b.length) return false;
  return walk(b, at + 4, u32(b, at), false, onDelete) === b.length;
}

/** Whether `b` is one whole batch (its counts and lengths check out; keys are not decoded). */
export function isBatch(b) {
  return walkBatch(b, null, null);
}

const utf8Decoder = new TextDecoder();

// A stored key (bytes [at, end) of `buf`); bytes that are not UTF-8 become
// U+FFFD. Decoded, not built a character at a time: past 12 characters V8
// makes each `+=` a rope, and a 24-byte key cost ~690 ns to build and ~190
// to read back, against ~150 and ~45 decoded (200k keys, Node 20).
function key(buf, at, end) {
  return utf8Decoder.decode(buf.subarray(at, end));
}

/**
 * The batch `b` as `{ put: [[key, value]], delete: [key] }`, or null if it
 * is not one whole batch. `value(at, end)` makes each put's value from
 * bytes [at, end) of `b`; by default a copy (`b` may be a reused buffer,
 * and a store that keeps values must not keep the whole batch with each).
 */
export function readBatch(b, value = (at, end) => new Uint8Array(b.subarray(at, end))) {
  const put = [];
  const del = [];
  const whole = walkBatch(
    b,
    (ks, ke, vs, ve) => put.push([key(b, ks, ke), value(vs, ve)]),
    (ks, ke) => del.push(key(b, ks, ke)),
  );
  return whole ? { put, delete: del } : null;
}

/**
 * The `[key, Uint8Array]` entries of an entry list (the core's snapshot
 * steps come so), appended to `out`. Values are views on `buf`, which the
 * caller owns. A list that does not parse is an Internal error: the core
 * wrote it.
 */
export function unpackEntries(buf, out = []) {
  for (let at = 0; at < buf.length; ) {
    at = walk(buf, at, 1, true, (ks, ke, vs, ve) => out.push([key(buf, ks, ke), buf.subarray(vs, ve)]));
    if (at < 0) throw new LeaseError("Internal", "edge-lease internal error: the core handed over entries that do not parse");
  }
  return out;
}

/**
 * Entry lists of whole entries from `lists`, each about `bytes` (more for
 * one entry larger than that alone): consecutive lists joined, a larger
 * one cut between its entries. What a store keeps in records of a bounded
 * size (a Durable Object's snapshot rows).
 */
export function* joinEntryLists(lists, bytes) {
  let held = [];
  let size = 0;
  const out = () => {
    const joined = held.length === 1 ? held[0] : new Uint8Array(size);
    if (held.length > 1) held.reduce((at, l) => (joined.set(l, at), at + l.length), 0);
    held = [];
    size = 0;
    return joined;
  };
  for (const list of lists) {
    for (let at = 0; at < list.length; ) {
      // As many whole entries as fit, at least one.
      let end = at;
      while (end < list.length && (end === at || size + (end - at) < bytes)) {
        const next = walk(list, end, 1, true);
        if (next < 0) throw new LeaseError("Internal", "edge-lease internal error: an entry list that does not parse");
        if (end > at && size + (next - at) > bytes) break;
        end = next;
      }
      if (size > 0 && size + (end - at) > bytes) yield out();
      held.push(list.subarray(at, end));
      size += end - at;
      at = end;
      if (size >= bytes) yield out();
    }
  }
  if (size > 0) yield out();
}

/**
 * Stored entries as a store kept them (a Durable Object's): entry lists
 * and a journal of the batches written after them, which a restore hands
 * to the core as they are, without a JS object per entry. `source()` gives
 * the items, each a `[key, value]` pair or an entry list (Uint8Array);
 * `journal` holds the batches (Uint8Array, `Batch`'s layout), in order.
 * Each key a batch names has the state the last of them gave it (none, for
 * a delete), whatever the items say. Iterated, it is the entries as pairs,
 * as any store's.
 */
export class StoredEntries {
  #source;

  constructor(source, journal = []) {
    this.#source = source;
    /** The batches written after the items, in order. */
    this.journal = journal;
  }

  items() {
    return this.#source();
  }

  *[Symbol.iterator]() {
    const last = new Map();
    for (const b of this.journal) {
      const batch = readBatch(b);
      if (!batch) throw invalid("a journal batch that is not one whole batch");
      for (const k of batch.delete) last.set(k, null);
      for (const [k, v] of batch.put) last.set(k, v);
    }
    for (const item of this.#source()) {
      if (!(item instanceof Uint8Array)) {
        if (!last.has(item[0])) yield item;
      } else for (const e of unpackEntries(item)) if (!last.has(e[0])) yield e;
    }
    for (const [k, v] of last) if (v !== null) yield [k, v];
  }
}

/**
 * One storage write as the core hands it over (crates/core/src/storage
 * `Batch::pack_into`): `bytes` is the whole batch in one buffer, which the file
 * store appends as it is; `put` and `delete` are read from it when first
 * asked for, with each value in its own copy.
 */
export class Batch {
  #read = null;

  constructor(bytes) {
    this.bytes = bytes;
  }

  get put() {
    return this.#entries().put;
  }

  get delete() {
    return this.#entries().delete;
  }

  #entries() {
    this.#read ??= readBatch(this.bytes);
    if (this.#read === null) throw new LeaseError("Internal", "edge-lease internal error: the core handed over a storage batch that does not parse");
    return this.#read;
  }

  // What JSON.stringify and console.log show: the entries, as before.
  toJSON() {
    return { put: this.put, delete: this.delete };
  }
}

// ---- requests (already checked and normalized by js/requests.js) ----------

export function writeRange(w, r) {
  w.bytes(r.key);
  w.bytes(r.rangeEnd);
  w.int(r.revision);
  w.int(r.limit);
  w.byte(r.sortOrder);
  w.byte(r.sortTarget);
  w.byte((r.keysOnly ? 1 : 0) | (r.countOnly ? 2 : 0));
  w.int(r.minModRevision);
  w.int(r.maxModRevision);
  w.int(r.minCreateRevision);
  w.int(r.maxCreateRevision);
}

export function writePut(w, p) {
  w.bytes(p.key);
  w.bytes(p.value);
  w.int(p.lease);
  w.byte((p.prevKv ? 1 : 0) | (p.ignoreValue ? 2 : 0) | (p.ignoreLease ? 4 : 0) | (p.text ? 8 : 0));
}

export function writeDelete(w, d) {
  w.bytes(d.key);
  w.bytes(d.rangeEnd);
  w.byte(d.prevKv ? 1 : 0);
}

export function writeTxn(w, t) {
  w.uint(t.compare.length);
  for (const c of t.compare) {
    w.bytes(c.key);
    w.bytes(c.rangeEnd);
    w.byte(c.target);
    if (c.target === 3) w.bytes(c.value);
    else w.int(c.value);
    w.byte(c.result);
  }
  for (const ops of [t.success, t.failure]) {
    w.uint(ops.length);
    for (const op of ops) {
      if (op.range) {
        w.byte(0);
        writeRange(w, op.range);
      } else if (op.put) {
        w.byte(1);
        writePut(w, op.put);
      } else if (op.deleteRange) {
        w.byte(2);
        writeDelete(w, op.deleteRange);
      } else {
        w.byte(3);
        writeTxn(w, op.txn);
      }
    }
  }
}

export function writeWatch(w, q) {
  w.bytes(q.key);
  w.bytes(q.rangeEnd);
  w.int(q.startRevision);
  w.byte((q.prevKv ? 1 : 0) | (q.noPut ? 2 : 0) | (q.noDelete ? 4 : 0));
}

// ---- results: `lease(bigint)` turns a lease id into the API's form -----------

function readKv(r, lease) {
  const key = r.bytes();
  const value = r.bytes();
  const createRevision = r.int();
  const modRevision = r.int();
  const version = r.int();
  const id = lease(r.bigint());
  r.byte(); // text: etcd-level results are bytes either way
  return { key, value, createRevision, modRevision, version, lease: id };
}

function readKvs(r, lease) {
  const n = r.uint();
  const kvs = new Array(n);
  for (let i = 0; i < n; i++) kvs[i] = readKv(r, lease);
  return kvs;
}

function readPrev(r, lease) {
  return r.byte() === 1 ? readKv(r, lease) : undefined;
}

export function readRange(r, lease) {
  const revision = r.int();
  const count = r.int();
  const more = r.byte() === 1;
  return { kvs: readKvs(r, lease), more, count, revision };
}

export function readPut(r, lease) {
  const revision = r.int();
  const prevKv = readPrev(r, lease);
  return prevKv ? { revision, prevKv } : { revision };
}

export function readDelete(r, lease) {
  const revision = r.int();
  const deleted = r.int();
  return { deleted, revision, prevKvs: readKvs(r, lease) };
}

export function readTxn(r, lease) {
  const revision = r.int();
  const succeeded = r.byte() === 1;
  const n = r.uint();
  const responses = new Array(n);
  for (let i = 0; i < n; i++) {
    switch (r.byte()) {
      case 0:
        responses[i] = { range: readRange(r, lease) };
        break;
      case 1:
        responses[i] = { put: readPut(r, lease) };
        break;
      case 2:
        responses[i] = { deleteRange: readDelete(r, lease) };
        break;
      default:
        responses[i] = { txn: readTxn(r, lease) };
    }
  }
  return { succeeded, revision, responses };
}

/**
 * `[{ id, compactRevision, revision, events, partial }]`; a delete's kv
 * has only key and modRevision. An event several watchers get is one
 * object, shared. `partial`: the batch goes on at the next poll.
 */
function readWatchEvent(r, lease) {
  let ev;
  if (r.byte() === 0) {
    ev = { type: "put", kv: readKv(r, lease) };
  } else {
    const key = r.bytes();
    const modRevision = r.int();
    ev = { type: "delete", kv: { key, value: new Uint8Array(0), createRevision: 0, modRevision, version: 0, lease: null } };
  }
  const prevKv = readPrev(r, lease);
  if (prevKv) ev.prevKv = prevKv;
  return ev;
}

/**
 * A poll's batches (crates/wasm's poll_watches): its events are those of
 * `chunks` (each a run of events, handed out while the poll went on), then
 * `r`'s, then its batches.
 */
export function readWatchBatches(r, lease, chunks = []) {
  const events = [];
  for (const chunk of chunks) {
    const c = new Reader(chunk);
    while (c.more()) events.push(readWatchEvent(c, lease));
  }
  for (let n = r.uint(); n > 0; n--) events.push(readWatchEvent(r, lease));
  const out = new Array(r.uint());
  for (let i = 0; i < out.length; i++) {
    const id = r.int();
    const compactRevision = r.int();
    const revision = r.int();
    const partial = r.byte() === 1;
    const mine = new Array(r.uint());
    for (let j = 0; j < mine.length; j++) mine[j] = events[r.uint()];
    out[i] = { id, compactRevision, revision, events: mine, partial };
  }
  return out;
}
