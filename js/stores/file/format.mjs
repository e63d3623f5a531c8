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
// key UTF-8): the engine's storage batch as it hands it over, whose one JS
// reader and writer are in js/codec.js. SEAL: empty. END: u64 number of
// entries in the snapshot.
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
import { packBatch } from "../../codec.js";
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

/**
 * CRC-32 (IEEE, as zlib): zlib's own where Node has it (>= 20.15), else
 * computed here. `prev`: the CRC of the bytes before these (a buffer
 * checked in parts).
 */
export const crc32 = zlib.crc32 ? (bytes, prev = 0) => zlib.crc32(bytes, prev) : crc32js;

function crc32js(bytes, prev = 0) {
  let c = prev ^ -1;
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

// The header of a record of `type` written into the first REC_HEADER bytes
// of `buf`, whose payload follows them.
function frame(type, buf) {
  return recordHeader(type, buf.length - REC_HEADER, crc32(buf.subarray(REC_HEADER)), buf);
}

/**
 * A record's header alone, for a payload of `size` bytes whose CRC-32 is
 * `payloadCrc` (the journal writes a large payload in place, in parts,
 * and its header once the whole payload is written).
 */
export function recordHeader(type, size, payloadCrc, buf = Buffer.allocUnsafe(REC_HEADER)) {
  buf.writeUInt32LE(REC_MAGIC, 0);
  buf.writeUInt32LE(type, 4);
  buf.writeUInt32LE(size, 8);
  buf.writeUInt32LE(payloadCrc, 12);
  buf.writeUInt32LE(crc32(buf.subarray(0, 16)), 16);
  return buf;
}

// One record (header and payload) of `type`, with `size` payload bytes
// filled in by `fill(buf, offset)`.
export function record(type, size, fill) {
  const buf = Buffer.allocUnsafe(REC_HEADER + size);
  if (fill) fill(buf, REC_HEADER);
  return frame(type, buf);
}

// A BATCH record of `put` and `del`, the payload written in place after
// its header (js/codec.js packBatch: the layout's one writer).
export function batchRecord(put, del) {
  const b = packBatch(put, del, REC_HEADER);
  return frame(BATCH, Buffer.from(b.buffer, b.byteOffset, b.length));
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
      yield batchRecord(batch, []);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) yield batchRecord(batch, []);
  yield record(END, 8, (buf, o) => buf.writeBigUInt64LE(BigInt(count), o));
}

export function isZero(b) {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}
