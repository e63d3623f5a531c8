// The file store's on-disk format: file names, headers, record framing,
// CRC-32, and the encoding of batches and snapshots.
//
// Files (format version 2; <g> is a generation number, decimal):
//   lock          {"pid","host","boot","nonce"} of the process that holds the store
//   journal-<g>   file header, then one BATCH record per write; a compaction
//                 ends it with a SEAL record and continues in journal-<g+1>
//   snapshot-<g>  file header, BATCH records (puts only) holding the whole
//                 state as of the start of journal-<g>, then an END record
//   *.tmp         a file being written, renamed into place once complete
//
// A store is the highest snapshot-<S> plus journal-<S>, <S+1>, ... up to the
// first one that is not sealed: the live journal (with no snapshot, the
// chain starts at journal-1). So every file the restore needs is named by
// another one: the snapshot names its journal, a sealed journal the next,
// and a journal-<g> with g > 1 its snapshot. A missing file is CorruptEntry,
// not a smaller state.
//
// File header (24 bytes): "edgelse2", u32 kind (1 journal, 2 snapshot),
// u64 generation, u32 CRC-32 of the 20 bytes before it.
// Record: u32 magic, u32 type, u32 payload length, u32 CRC-32 of the payload,
// u32 CRC-32 of these 16 header bytes, then the payload. All little endian.
// BATCH payload: u32 count of puts, each (u32 key length, key UTF-8, u32
// value length, value), then u32 count of deletes, each (u32 key length,
// key UTF-8). SEAL: empty. END: u64 number of entries in the snapshot.
//
// The live journal is extended ahead of its records (JOURNAL_STEP at a time,
// with ftruncate: a sparse reserve, where etcd preallocates its WAL
// segments): the space past the last record reads as zeros, which a reader
// takes as the journal's end (a torn tail, cut off on open), and close()
// trims it. A write within the file's size needs only fdatasync, not a file
// size update: ~40% less time per sync here.
//
// write() appends one record and syncs before returning, so the lessor's
// operation returns only once its change is on disk (acknowledged = durable).
// With { groupCommit: true } write() queues the record and returns a promise
// instead: at the end of the event-loop turn (or when the running fsync
// ends) the queued records are appended with one write and covered by one
// fsync, off the event loop (a server answers once the promise resolves).
// A crash can leave a torn last record: it was never acknowledged, so
// open drops it. Anything else that does not check out is CorruptEntry
// (isTornTail draws the line).
//
// Version 1 stores (files `journal` and `snapshot`, magic "edgelse1") are
// converted to version 2 on their first open.
//
// Where each part lives (js/stores/file/): this module the format; replay.mjs
// reading it back (torn tails included), hand-over.mjs the entries handed
// to a restore; journal.mjs the live journal's appends, reserve and group
// commit; compaction.mjs snapshots and generations; migrate-v1.mjs version
// 1; lock.mjs the directory lock; durable-fs.mjs durable file writes.

import * as zlib from "node:zlib";
import { LeaseError } from "../../errors.js";

export const MAGIC = Buffer.from("edgelse2");
export const MAGIC_V1 = Buffer.from("edgelse1");
export const FILE_HEADER = 24;
export const JOURNAL = 1;
export const SNAPSHOT = 2;

export const REC_MAGIC = 0x3263_6572; // "rec2"
export const REC_MAGIC_BYTES = Buffer.from("rec2");
export const REC_HEADER = 20;
export const BATCH = 1;
export const SEAL = 2;
export const END = 3;

// Snapshot records hold about this much each: reading one back needs one
// record in memory, and writing one is the longest stretch without yielding.
const SNAPSHOT_RECORD_BYTES = 128 << 10;
// How far the live journal's file is extended past its records at a time.
export const JOURNAL_STEP = 4 << 20;
// Disks write whole sectors: a part of a file that never reached the disk
// reads back as zeros in whole 512-byte blocks.
export const SECTOR = 512;

const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/** CRC-32 (IEEE, as zlib): zlib's own where Node has it (>= 20.15), else computed here. */
export const crc32 = zlib.crc32 ? (bytes) => zlib.crc32(bytes) : crc32js;

function crc32js(bytes) {
  let c = -1;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

export function corrupt(entry, why) {
  return new LeaseError("CorruptEntry", `${entry}: ${why}`, { entry });
}

export function fileHeader(kind, gen) {
  const b = Buffer.alloc(FILE_HEADER);
  MAGIC.copy(b, 0);
  b.writeUInt32LE(kind, 8);
  b.writeBigUInt64LE(BigInt(gen), 12);
  b.writeUInt32LE(crc32(b.subarray(0, 20)), 20);
  return b;
}

// The generations of the files named `${prefix}-<g>` in `names`, ascending.
export function gens(names, prefix) {
  const re = new RegExp(`^${prefix}-(\\d+)$`);
  return names.flatMap((n) => (re.test(n) ? [Number(n.match(re)[1])] : [])).sort((a, b) => a - b);
}

function batchSize(putKeys, put, delKeys) {
  let size = 8;
  for (let i = 0; i < put.length; i++) size += 8 + putKeys[i].length + put[i][1].length;
  for (const k of delKeys) size += 4 + k.length;
  return size;
}

// One record (header and payload) of `type`, with `size` payload bytes
// filled in by `fill(buf, offset)`.
export function record(type, size, fill) {
  const buf = Buffer.allocUnsafe(REC_HEADER + size);
  buf.writeUInt32LE(REC_MAGIC, 0);
  buf.writeUInt32LE(type, 4);
  buf.writeUInt32LE(size, 8);
  if (fill) fill(buf, REC_HEADER);
  buf.writeUInt32LE(crc32(buf.subarray(REC_HEADER)), 12);
  buf.writeUInt32LE(crc32(buf.subarray(0, 16)), 16);
  return buf;
}

export function encodeBatch(put, del) {
  const keys = (list) => list.map((k) => Buffer.from(k, "utf8"));
  const putKeys = keys(put.map((p) => p[0]));
  const delKeys = keys(del);
  return record(BATCH, batchSize(putKeys, put, delKeys), (buf, o) => {
    o = buf.writeUInt32LE(put.length, o);
    for (let i = 0; i < put.length; i++) {
      o = buf.writeUInt32LE(putKeys[i].length, o);
      o += putKeys[i].copy(buf, o);
      const v = put[i][1];
      o = buf.writeUInt32LE(v.length, o);
      buf.set(v, o);
      o += v.length;
    }
    o = buf.writeUInt32LE(delKeys.length, o);
    for (const k of delKeys) {
      o = buf.writeUInt32LE(k.length, o);
      o += k.copy(buf, o);
    }
  });
}

// Whether `p` is a whole BATCH payload, by its counts and lengths alone: a
// batch handed over packed (the core packs its own so, js/codec.js Batch)
// is appended as it is, once it checks out.
export function isPayload(p) {
  const u32 = (o) => (p[o] | (p[o + 1] << 8) | (p[o + 2] << 16)) + p[o + 3] * 0x1000000;
  let o = 0;
  for (let part = 0; part < 2; part++) {
    if (o + 4 > p.length) return false;
    const n = u32(o) * (2 - part); // puts have a key and a value, deletes a key
    o += 4;
    for (let i = 0; i < n; i++) {
      if (o + 4 > p.length) return false;
      o += 4 + u32(o);
    }
  }
  return o === p.length;
}

// The snapshot of `entries` as a sequence of buffers of about
// SNAPSHOT_RECORD_BYTES each, encoded one at a time as they are asked for.
export function* encodeSnapshot(entries, gen) {
  yield fileHeader(SNAPSHOT, gen);
  let batch = [];
  let bytes = 0;
  let count = 0;
  for (const e of entries) {
    count++;
    batch.push(e);
    bytes += 8 + e[0].length * 3 + e[1].length; // UTF-8 is at most 3 bytes per UTF-16 unit
    if (bytes >= SNAPSHOT_RECORD_BYTES) {
      yield encodeBatch(batch, []);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) yield encodeBatch(batch, []);
  yield record(END, 8, (buf, o) => buf.writeBigUInt64LE(BigInt(count), o));
}

export function isZero(b) {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}
