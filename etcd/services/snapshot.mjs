// etcd's snapshot file: its backend as etcd 3.4 keeps it, a bbolt database
// (go.etcd.io/bbolt 1.3), so that `etcdctl snapshot save` gets a file
// `etcdctl snapshot status` reads and `etcdctl snapshot restore` turns into
// a real etcd's data directory (a way onto an etcd cluster). The engine gives
// the key bucket (history in etcd's layout); the rest is built here.
//
// bbolt's layout, written whole: pages of PAGE bytes; pages 0 and 1 are the
// meta pages (the root bucket's page, the freelist's, the page count, a
// checksum), page 2 an empty freelist, then each bucket's B+tree (leaf pages
// of sorted records, branch pages above them naming each child's first
// key), then the root bucket's tree, whose records are the buckets. A page
// whose records do not fit spans more pages (its "overflow"). Nothing is
// free and every page is reachable, as bbolt's consistency check requires.

import { alarmNumber } from "./alarms.mjs";
import { authBuckets } from "../auth/buckets.mjs";
import { leaseInt64 } from "edge-lease/lease-id";

const PAGE = 4096;
const HEADER = 16; // id u64, flags u16, count u16, overflow u32
const ELEMENT = 16; // leaf: flags, pos, ksize, vsize (u32); branch: pos, ksize (u32), pgid (u64)
const BRANCH = 0x01;
const LEAF = 0x02;
const META = 0x04;
const FREELIST = 0x10;
const BUCKET_LEAF = 0x01; // a leaf element that is a bucket
const MAGIC = 0xed0cdaed;
// What the key bucket is read from the engine in.
const PIECE = 1 << 20;

const encoder = new TextEncoder();
const bytes = (s) => encoder.encode(s);

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

// FNV-1a, 64 bits: bbolt's meta checksum.
function fnv64a(b) {
  let h = 0xcbf29ce484222325n;
  for (const x of b) h = BigInt.asUintN(64, (h ^ BigInt(x)) * 0x100000001b3n);
  return h;
}

/** Protobuf varint field `field` (left out when 0), as gogoproto writes int64s. */
function varint(out, field, v) {
  let n = BigInt.asUintN(64, BigInt(v));
  if (n === 0n) return;
  out.push(field << 3);
  for (; n >= 0x80n; n >>= 7n) out.push(Number(n & 0x7fn) | 0x80);
  out.push(Number(n));
}

// A bucket's records, sorted by key, as the pages are laid out and then
// filled: `heads` (bytes, with `hv` their DataView) give each record's key
// and value length for the layout, with the value itself when `values`;
// `next()` then gives the records in order, each as the offset in `rb`
// (with `rv` its DataView) of a u32 LE length, the key, a u32 LE length,
// the value.

// Records held packed in one buffer (heads and records at once). `of`
// packs [key, value] pairs, sorting them.
class Packed {
  constructor(buf) {
    this.hb = this.rb = buf;
    this.hv = this.rv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.values = true;
    this.at = 0;
  }
  static of(unsorted) {
    const pairs = [...unsorted].sort((a, b) => compareBytes(a[0], b[0]));
    let size = 0;
    for (const [k, v] of pairs) size += 8 + k.length + v.length;
    const b = new Uint8Array(size);
    const view = new DataView(b.buffer);
    let at = 0;
    for (const [k, v] of pairs) {
      view.setUint32(at, k.length, true);
      b.set(k, at + 4);
      at += 4 + k.length;
      view.setUint32(at, v.length, true);
      b.set(v, at + 4);
      at += 4 + v.length;
    }
    return new Packed(b);
  }
  next() {
    const at = this.at;
    const k = this.rv.getUint32(at, true);
    this.at += 8 + k + this.rv.getUint32(at + 4 + k, true);
    return at;
  }
}

// The engine's key bucket, read a piece at a time as the pages are filled
// (Lessor.etcdKeyBucket), so the whole history is never copied at once;
// the reader is closed once the last record is read.
class Streamed {
  constructor(reader) {
    this.reader = reader;
    this.hb = reader.heads;
    this.hv = new DataView(this.hb.buffer, this.hb.byteOffset, this.hb.byteLength);
    this.values = false;
    this.head = 0;
    this.rb = new Uint8Array(0);
    this.at = 0;
    if (this.hb.length === 0) reader.close();
  }
  next() {
    if (this.at >= this.rb.length) {
      this.rb = this.reader.next(PIECE);
      this.rv = new DataView(this.rb.buffer, this.rb.byteOffset, this.rb.byteLength);
      this.at = 0;
    }
    const at = this.at;
    const k = this.rb.length ? this.rv.getUint32(at, true) : -1;
    const n = this.rb.length ? this.rv.getUint32(at + 4 + k, true) : -1;
    // (The layout was made from the heads: a record that differs would
    // corrupt the file.)
    const hk = this.hv.getUint32(this.head, true);
    if (k !== hk || n !== this.hv.getUint32(this.head + 4 + hk, true)) {
      this.reader.close();
      throw new Error("edge-lease: the key bucket's records differ from its heads");
    }
    this.head += 8 + hk;
    this.at += 8 + k + n;
    if (this.head === this.hb.length) this.reader.close();
    return at;
  }
}

// Lays a bbolt file out, then writes it in pieces: each page is planned
// (its id, its size in pages, and how to fill it from the records it holds)
// before any is written, since the meta pages at the front name the root
// and the page count.
class Writer {
  constructor() {
    this.pages = []; // [id, pages, fill(page bytes, their DataView)], in id order
    this.next = 3; // 0, 1: meta; 2: freelist
  }

  // Plans a page (with its overflow) of `size` bytes; its id. `fill` writes
  // what follows the header.
  alloc(size, flags, count, fill) {
    const n = Math.ceil(size / PAGE);
    const id = this.next;
    this.next += n;
    this.pages.push([
      id,
      n,
      (p, v) => {
        v.setBigUint64(0, BigInt(id), true);
        v.setUint16(8, flags, true);
        v.setUint16(10, count, true);
        v.setUint32(12, n - 1, true);
        fill(p, v);
      },
    ]);
    return id;
  }

  // A leaf page of the next `count` records of `src`, whose heads start at
  // byte `from` (`flags` on each element); [its id, its first key].
  leaf(src, from, count, size, flags) {
    const id = this.alloc(size, LEAF, count, (p, v) => {
      let data = HEADER + count * ELEMENT;
      for (let i = 0; i < count; i++) {
        const at = src.next();
        const [b, rv] = [src.rb, src.rv];
        const e = HEADER + i * ELEMENT;
        const k = rv.getUint32(at, true);
        const n = rv.getUint32(at + 4 + k, true);
        v.setUint32(e, flags, true);
        v.setUint32(e + 4, data - e, true);
        v.setUint32(e + 8, k, true);
        v.setUint32(e + 12, n, true);
        p.set(b.subarray(at + 4, at + 4 + k), data);
        p.set(b.subarray(at + 8 + k, at + 8 + k + n), data + k);
        data += k + n;
      }
    });
    const k = count ? src.hv.getUint32(from, true) : 0;
    return [id, src.hb.subarray(from + 4, from + 4 + k)];
  }

  // A branch page over `children` ([pgid, first key]); its id.
  branch(children) {
    let size = HEADER + children.length * ELEMENT;
    for (const [, key] of children) size += key.length;
    return this.alloc(size, BRANCH, children.length, (p, v) => {
      let data = HEADER + children.length * ELEMENT;
      children.forEach(([pgid, key], i) => {
        const e = HEADER + i * ELEMENT;
        v.setUint32(e, data - e, true);
        v.setUint32(e + 4, key.length, true);
        v.setBigUint64(e + 8, BigInt(pgid), true);
        p.set(key, data);
        data += key.length;
      });
    });
  }

  // The B+tree of the records of `src` (Packed or Streamed): its root
  // page's id. Leaves are filled in order; each level of branches names
  // the first key of each page below, until one page is left.
  tree(src, flags = 0) {
    let level = [];
    let from = 0;
    let count = 0;
    let size = HEADER;
    for (let at = 0; at < src.hb.length; ) {
      const k = src.hv.getUint32(at, true);
      const n = src.hv.getUint32(at + 4 + k, true);
      const grow = ELEMENT + k + n;
      if (count > 0 && size + grow > PAGE) {
        level.push(this.leaf(src, from, count, size, flags));
        [from, count, size] = [at, 0, HEADER];
      }
      count++;
      size += grow;
      at += 8 + k + (src.values ? n : 0);
    }
    if (count > 0 || level.length === 0) level.push(this.leaf(src, from, count, size, flags));
    while (level.length > 1) {
      const above = [];
      let page = [];
      let bytes = HEADER;
      for (const child of level) {
        const grow = ELEMENT + child[1].length;
        if (page.length > 0 && bytes + grow > PAGE) {
          above.push([this.branch(page), page[0][1]]);
          [page, bytes] = [[], HEADER];
        }
        page.push(child);
        bytes += grow;
      }
      above.push([this.branch(page), page[0][1]]);
      level = above;
    }
    return level[0][0];
  }

  // The two meta pages and the freelist page, then the planned pages in id
  // order, in pieces of whole pages of about `piece` bytes (a bigger page
  // is a piece of its own). Each piece is a fresh buffer.
  *file(root, piece) {
    const head = new Uint8Array(3 * PAGE);
    const v = new DataView(head.buffer);
    for (const txid of [0, 1]) {
      const at = txid * PAGE;
      v.setBigUint64(at, BigInt(txid), true);
      v.setUint16(at + 8, META, true);
      const m = at + HEADER;
      v.setUint32(m, MAGIC, true);
      v.setUint32(m + 4, 2, true); // version
      v.setUint32(m + 8, PAGE, true);
      v.setBigUint64(m + 16, BigInt(root), true); // the root bucket (sequence 0)
      v.setBigUint64(m + 32, 2n, true); // the freelist's page
      v.setBigUint64(m + 40, BigInt(this.next), true); // pages in the file
      v.setBigUint64(m + 48, BigInt(txid), true);
      v.setBigUint64(m + 56, fnv64a(head.subarray(m, m + 56)), true);
    }
    v.setBigUint64(2 * PAGE, 2n, true);
    v.setUint16(2 * PAGE + 8, FREELIST, true);
    yield head;
    const per = Math.max(1, Math.floor(piece / PAGE));
    for (let i = 0; i < this.pages.length; ) {
      let n = 0;
      let j = i;
      do n += this.pages[j++][1];
      while (j < this.pages.length && n + this.pages[j][1] <= per);
      const out = new Uint8Array(n * PAGE);
      for (let at = 0; i < j; i++) {
        const [, pages, fill] = this.pages[i];
        const p = out.subarray(at, at + pages * PAGE);
        fill(p, new DataView(out.buffer, at, pages * PAGE));
        at += pages * PAGE;
      }
      yield out;
    }
  }
}

/**
 * A bbolt database file of `buckets` ({ name: records }, each an array of
 * [key, value] Uint8Arrays, or a key bucket reader (Lessor.etcdKeyBucket),
 * read as the pages are written; keys distinct, sorted in a reader), laid
 * out: `{ size, pieces(bytes) }`, its size and a generator of its bytes in
 * pieces of about `bytes` each (default 1 MiB), in order, taken once (a
 * streamed source is read as the pages are written).
 */
export function boltFile(buckets) {
  const w = new Writer();
  const root = Object.keys(buckets).map((name) => {
    const b = buckets[name];
    const records = Array.isArray(b) ? Packed.of(b) : new Streamed(b);
    const value = new Uint8Array(16); // { root pgid u64, sequence u64 }
    new DataView(value.buffer).setBigUint64(0, BigInt(w.tree(records)), true);
    return [bytes(name), value];
  });
  const top = w.tree(Packed.of(root), BUCKET_LEAF);
  return { size: w.next * PAGE, pieces: (piece = 1 << 20) => w.file(top, piece) };
}

/** The bytes of a laid-out file (`boltFile`, `etcdSnapshot`) in one buffer. */
export function wholeFile(file) {
  const out = new Uint8Array(file.size);
  let at = 0;
  for (const p of file.pieces()) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// A revision as etcd's backend keys it: main and sub, 8 bytes big-endian
// each, with "_" between.
function revisionKey(main) {
  const b = new Uint8Array(17);
  const v = new DataView(b.buffer);
  v.setBigInt64(0, BigInt(main));
  b[8] = 0x5f;
  return b;
}

const u64 = (n) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(n)));
  return b;
};

/**
 * etcd 3.4's backend for what `lessor` holds, as a bbolt file: the key
 * bucket (the history since the compaction point, as etcd's compaction
 * leaves it), the lease bucket (each lease's id and granted TTL), the meta
 * bucket (the compaction point), the alarm bucket (`alarms`: { memberID,
 * alarm } entries), the auth buckets (users and roles: auth/buckets.mjs),
 * and the empty member buckets a restore clears; laid
 * out as `boltFile` gives it. The history is read from the engine a piece
 * at a time as the pages are taken, so `lessor` must stay open (and not be
 * compacted) until the last piece is.
 */
export function etcdSnapshot(lessor, alarms) {
  const lease = [];
  for (const id of lessor.leases()) {
    // (Gone if its deadline passed since leases(); held past it under
    // CORRUPT, it has a negative TTL and stays, as on etcd.)
    const { grantedTtl } = lessor.timeToLive(id);
    if (grantedTtl === 0) continue;
    const n = leaseInt64(id);
    const value = [];
    varint(value, 1, n);
    varint(value, 2, grantedTtl);
    lease.push([u64(n), Uint8Array.from(value)]);
  }
  const meta = [["consistent_index", u64(lessor.revision)]];
  if (lessor.compactRevision >= 0) {
    meta.push(["finishedCompactRev", revisionKey(lessor.compactRevision)], ["scheduledCompactRev", revisionKey(lessor.compactRevision)]);
  }
  // (The entry with no member and no type is an empty key, which bbolt
  // does not store: etcd itself stops on raising it.)
  const alarm = alarms
    .map((a) => {
      const k = [];
      varint(k, 1, BigInt(a.memberID));
      varint(k, 2, alarmNumber(a.alarm));
      return [Uint8Array.from(k), new Uint8Array(0)];
    })
    .filter(([k]) => k.length > 0);
  const reader = lessor.etcdKeyBucket();
  try {
    return boltFile({
      key: reader,
      lease,
      meta: meta.map(([k, v]) => [bytes(k), v]),
      alarm,
      ...authBuckets(lessor),
      members: [],
      members_removed: [],
    });
  } catch (e) {
    reader.close();
    throw e;
  }
}
