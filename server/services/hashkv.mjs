// etcd's HashKV value: CRC-32C over the name of its backend's key bucket,
// then each stored version's backend key and value in revision order
// (mvcc's kvstore.hashByRev). The key is the revision, 8 bytes big-endian,
// "_", the sub-revision the same way, and "t" after a deletion's; the value
// the version's mvccpb.KeyValue as etcd marshals it (fields in number
// order, zero ones left out; a deletion's has the key alone). The same
// history therefore hashes the same on etcd and here, which is what
// `etcdctl endpoint hashkv` compares across members.
//
// Of the versions at or before the compaction point, etcd 3.4 hashes only
// those it finds in `kvindex.Keep(rev)`, taken at the hashed revision, not
// at the compaction point: each key's last version up to `rev` unless that
// is a deletion, and all of them when that set is empty. This does the same.
import { leaseOut } from "./common.mjs";

const BUCKET = new TextEncoder().encode("key");

/**
 * The HashKV of `versions` (`lessor.versions(upto)`, each key's state at the
 * compaction point `compacted` among them), a uint32.
 */
export async function hashKv(versions, compacted) {
  // Loaded on first use: HashKV is rare, and edge workers load this module.
  const { default: CRC32C } = await import("crc-32/crc32c.js");
  let crc = CRC32C.buf(BUCKET, 0);
  const key = new Uint8Array(18);
  const view = new DataView(key.buffer);
  const out = new Writer();
  const last = new Map();
  for (const v of versions) last.set(latin1(v.key), v);
  const keep = new Set([...last.values()].filter((v) => v.kv));
  for (const v of versions) {
    if (v.revision <= compacted && keep.size > 0 && !keep.has(v)) continue;
    view.setBigUint64(0, BigInt(v.revision));
    key[8] = 0x5f; // "_"
    view.setBigUint64(9, BigInt(v.sub));
    key[17] = 0x74; // "t"
    crc = CRC32C.buf(v.kv ? key.subarray(0, 17) : key, crc);
    crc = CRC32C.buf(keyValue(out.reset(), v), crc);
  }
  return crc >>> 0;
}

function latin1(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 4096));
  return s;
}

function keyValue(w, { key, kv }) {
  w.bytes(1, key);
  if (!kv) return w.done();
  w.varint(2, BigInt(kv.createRevision));
  w.varint(3, BigInt(kv.modRevision));
  w.varint(4, BigInt(kv.version));
  w.bytes(5, kv.value);
  w.varint(6, BigInt(leaseOut(kv.lease)));
  return w.done();
}

// Just the protobuf this needs: varint and length-delimited fields, a zero
// or empty one left out (proto3, as gogoproto's Marshal does).
class Writer {
  #buf = new Uint8Array(256);
  #n = 0;
  reset() {
    this.#n = 0;
    return this;
  }
  done() {
    return this.#buf.subarray(0, this.#n);
  }
  #room(n) {
    if (this.#n + n <= this.#buf.length) return;
    const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#n + n));
    grown.set(this.#buf.subarray(0, this.#n));
    this.#buf = grown;
  }
  #uvarint(v) {
    this.#room(10);
    let u = BigInt.asUintN(64, v);
    while (u >= 0x80n) {
      this.#buf[this.#n++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.#buf[this.#n++] = Number(u);
  }
  varint(field, v) {
    if (v === 0n) return;
    this.#uvarint(BigInt(field << 3));
    this.#uvarint(v);
  }
  bytes(field, b) {
    if (b.length === 0) return;
    this.#uvarint(BigInt((field << 3) | 2));
    this.#uvarint(BigInt(b.length));
    this.#room(b.length);
    this.#buf.set(b, this.#n);
    this.#n += b.length;
  }
}
