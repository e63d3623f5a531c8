// The JS half of the byte format of src/wasm/codec.rs: etcd-shaped
// requests written here, results read back, one copy each way. Varints
// (zigzag for signed), byte strings as a varint length then the bytes.
// Requests reach this module already checked (js/checks.js).

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
}

/**
 * Stored `[key, value]` entries packed for the binding's restore, in parts
 * of about `bytes` each (at least one entry), in order: each string or
 * bytes as a u32 (little-endian) length, then its UTF-8 or bytes. Written in
 * place: a restore packs hundreds of thousands of them. `entries` is read
 * once, a part at a time, and no entry is held after its part: a source
 * that lets its entries go as it hands them out (the file store's) is never
 * in memory whole beside what the parts became.
 */
export function* packEntryParts(entries, bytes) {
  let list = [];
  let size = 0;
  for (const entry of entries) {
    list.push(entry);
    size += 8 + entry[0].length + entry[1].length;
    if (size >= bytes) {
      yield packList(list);
      list = [];
      size = 0;
    }
  }
  if (list.length > 0) yield packList(list);
}

function packList(list) {
  // One buffer, sized up front (a string takes at most 3 bytes per UTF-16
  // unit), written without a DataView or a set() per short field: this runs
  // once per entry of a restore (200k for 100k leases with a key each).
  let size = 0;
  for (const [k, v] of list) {
    size += 8 + k.length * 3 + (typeof v === "string" ? v.length * 3 : v.length);
  }
  const buf = new Uint8Array(size);
  let at = 0;
  const put = (v) => {
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
    const n = end - start;
    buf[at] = n & 0xff;
    buf[at + 1] = (n >>> 8) & 0xff;
    buf[at + 2] = (n >>> 16) & 0xff;
    buf[at + 3] = n >>> 24;
    at = end;
  };
  for (const [k, v] of list) {
    put(k);
    put(v);
  }
  return buf.subarray(0, at);
}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

const u32 = (buf, at) => (buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)) + buf[at + 3] * 0x1000000;

// A stored name (a key of the store) of n bytes at `at`. They are short and
// ASCII: built directly, not decoded.
function name(buf, at, n) {
  if (n > 64) return utf8Decoder.decode(buf.subarray(at, at + n));
  let key = "";
  for (let i = at; i < at + n; i++) {
    if (buf[i] >= 128) return utf8Decoder.decode(buf.subarray(at, at + n));
    key += String.fromCharCode(buf[i]);
  }
  return key;
}

/**
 * The `[key, Uint8Array]` entries of a buffer packed as packEntryParts packs
 * them (the core's snapshot steps come so), appended to `out`. Values are
 * views on `buf`, which the caller owns.
 */
export function unpackEntries(buf, out = []) {
  for (let at = 0; at < buf.length; ) {
    const kn = u32(buf, at);
    const key = name(buf, at + 4, kn);
    const vs = at + 8 + kn;
    const vn = u32(buf, vs - 4);
    out.push([key, buf.subarray(vs, vs + vn)]);
    at = vs + vn;
  }
  return out;
}

/**
 * One storage write as the core hands it over (src/wasm/codec.rs
 * `pack_batch`): `bytes` is the whole batch in one buffer, which the file
 * store appends as it is; `put` and `delete` are read from it when first
 * asked for, with each value in its own copy (stores that keep values, as
 * IndexedDB does, must not keep the whole batch with each).
 */
export class Batch {
  #put = null;
  #delete = null;

  constructor(bytes) {
    this.bytes = bytes;
  }

  get put() {
    if (this.#put === null) this.#read();
    return this.#put;
  }

  get delete() {
    if (this.#delete === null) this.#read();
    return this.#delete;
  }

  #read() {
    const b = this.bytes;
    const put = new Array(u32(b, 0));
    let at = 4;
    for (let i = 0; i < put.length; i++) {
      const kn = u32(b, at);
      const key = name(b, at + 4, kn);
      const vs = at + 8 + kn;
      const vn = u32(b, vs - 4);
      put[i] = [key, b.slice(vs, vs + vn)];
      at = vs + vn;
    }
    const del = new Array(u32(b, at));
    at += 4;
    for (let i = 0; i < del.length; i++) {
      const n = u32(b, at);
      del[i] = name(b, at + 4, n);
      at += 4 + n;
    }
    this.#put = put;
    this.#delete = del;
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
 * `[{ id, compactRevision, revision, events }]`; a delete's kv has only key
 * and modRevision. An event several watchers get is one object, shared.
 */
export function readWatchBatches(r, lease) {
  const events = new Array(r.uint());
  for (let j = 0; j < events.length; j++) {
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
    events[j] = ev;
  }
  const out = new Array(r.uint());
  for (let i = 0; i < out.length; i++) {
    const id = r.int();
    const compactRevision = r.int();
    const revision = r.int();
    const mine = new Array(r.uint());
    for (let j = 0; j < mine.length; j++) mine[j] = events[r.uint()];
    out[i] = { id, compactRevision, revision, events: mine };
  }
  return out;
}
