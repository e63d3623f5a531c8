// A durable store for Node: an append-only journal of batches plus a
// compacted snapshot, in one directory that one process holds at a time.
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
// converted to version 2 on their first open (see migrateV1).

import {
  closeSync,
  fstatSync,
  fdatasync as fdatasyncCallback,
  fdatasyncSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { open as openAsync, readdir as readdirAsync, rename as renameAsync, unlink as unlinkAsync } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { LeaseError } from "../errors.js";

const MAGIC = Buffer.from("edgelse2");
const MAGIC_V1 = Buffer.from("edgelse1");
const FILE_HEADER = 24;
const JOURNAL = 1;
const SNAPSHOT = 2;

const REC_MAGIC = 0x3263_6572; // "rec2"
const REC_MAGIC_BYTES = Buffer.from("rec2");
const REC_HEADER = 20;
const BATCH = 1;
const SEAL = 2;
const END = 3;

// Snapshot records hold about this much each: reading one back needs one
// record in memory, and writing one is the longest stretch without yielding.
const SNAPSHOT_RECORD_BYTES = 128 << 10;
// How far the live journal's file is extended past its records at a time.
const JOURNAL_STEP = 4 << 20;
// Disks write whole sectors: a part of a file that never reached the disk
// reads back as zeros in whole 512-byte blocks.
const SECTOR = 512;

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

function fileHeader(kind, gen) {
  const b = Buffer.alloc(FILE_HEADER);
  MAGIC.copy(b, 0);
  b.writeUInt32LE(kind, 8);
  b.writeBigUInt64LE(BigInt(gen), 12);
  b.writeUInt32LE(crc32(b.subarray(0, 20)), 20);
  return b;
}

function batchSize(putKeys, put, delKeys) {
  let size = 8;
  for (let i = 0; i < put.length; i++) size += 8 + putKeys[i].length + put[i][1].length;
  for (const k of delKeys) size += 4 + k.length;
  return size;
}

// One record (header and payload) of `type`, with `size` payload bytes
// filled in by `fill(buf, offset)`.
function record(type, size, fill) {
  const buf = Buffer.allocUnsafe(REC_HEADER + size);
  buf.writeUInt32LE(REC_MAGIC, 0);
  buf.writeUInt32LE(type, 4);
  buf.writeUInt32LE(size, 8);
  if (fill) fill(buf, REC_HEADER);
  buf.writeUInt32LE(crc32(buf.subarray(REC_HEADER)), 12);
  buf.writeUInt32LE(crc32(buf.subarray(0, 16)), 16);
  return buf;
}

function encodeBatch(put, del) {
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

// The snapshot of `entries` as a sequence of buffers of about
// SNAPSHOT_RECORD_BYTES each, encoded one at a time as they are asked for.
function* encodeSnapshot(entries, gen) {
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

function corrupt(entry, why) {
  return new LeaseError("CorruptEntry", `${entry}: ${why}`, { entry });
}

// Whether `p` is a whole BATCH payload, by its counts and lengths alone: a
// batch handed over packed (the core packs its own so, js/codec.js Batch)
// is appended as it is, once it checks out.
function isPayload(p) {
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

// Values this long or longer are not copied out of a file being replayed
// for a restore: the entry says where the value is (`Stored`), and it is
// read once the entry is handed over (handOver). So a restore holds each
// large value once, in the engine, rather than here as well.
const DEFER_BYTES = 4096;

// A value left in a store file: `len` bytes at `pos` of the open `fd`,
// with their CRC-32, so that a file changed or closed (its fd reused)
// before the value is read is an error, never another value.
class Stored {
  constructor(fd, pos, bytes) {
    this.fd = fd;
    this.pos = pos;
    this.len = bytes.length;
    this.crc = crc32(bytes);
  }

  read() {
    const b = new Uint8Array(this.len);
    let got = 0;
    try {
      while (got < b.length) {
        const n = readSync(this.fd, b, got, b.length - got, this.pos + got);
        if (n === 0) break;
        got += n;
      }
    } catch (e) {
      if (e?.code === "EBADF") throw new LeaseError("Closed", "the store's files were closed before its entries were read", { cause: e });
      throw e;
    }
    if (got < b.length || crc32(b) !== this.crc) {
      throw corrupt(`fd ${this.fd}@${this.pos}`, "a value changed in its file after the store was read");
    }
    return b;
  }
}

// Applies one BATCH payload to `map`; returns the number of puts, or -1 if
// it does not parse to its end. With `from` (`{ fd, pos }`: where `p` is
// in an open file that stays open until the entries are handed over), long
// values are left there (Stored).
function applyPayload(p, map, from = null) {
  let o = 0;
  const u32 = () => {
    if (o + 4 > p.length) throw new RangeError("short");
    const v = p.readUInt32LE(o);
    o += 4;
    return v;
  };
  const bytes = (n) => {
    if (o + n > p.length) throw new RangeError("short");
    const b = p.subarray(o, o + n);
    o += n;
    return b;
  };
  try {
    const puts = [];
    for (let n = u32(); n > 0; n--) {
      const key = bytes(u32()).toString("utf8");
      const len = u32();
      const at = o;
      const b = bytes(len);
      // Copy: the payload is a view of the reader's reused buffer.
      puts.push([key, from && len >= DEFER_BYTES ? new Stored(from.fd, from.pos + at, b) : new Uint8Array(b)]);
    }
    const dels = [];
    for (let n = u32(); n > 0; n--) dels.push(bytes(u32()).toString("utf8"));
    if (o !== p.length) return -1;
    for (const k of dels) map.delete(k);
    for (const [k, v] of puts) map.set(k, v);
    return puts.length;
  } catch (e) {
    if (e instanceof RangeError) return -1;
    throw e;
  }
}

// Reads a file front to back through one reused buffer, so memory stays
// bounded by the largest record whatever the size of the file.
class Reader {
  #fd;
  #buf = Buffer.allocUnsafe(1 << 20);
  #start = 0;
  #end = 0;

  constructor(fd) {
    this.#fd = fd;
  }

  /** Bytes [pos, pos + n) of the file (fewer at its end); valid until the next call. */
  bytes(pos, n) {
    if (pos < this.#start || pos + n > this.#end) {
      if (n > this.#buf.length) this.#buf = Buffer.allocUnsafe(n);
      let got = 0;
      for (let r; got < this.#buf.length; got += r) {
        r = readSync(this.#fd, this.#buf, got, this.#buf.length - got, pos + got);
        if (r === 0) break;
      }
      this.#start = pos;
      this.#end = pos + got;
    }
    return this.#buf.subarray(pos - this.#start, Math.min(pos + n, this.#end) - this.#start);
  }
}

function readHeader(r, name, kind, gen) {
  const h = r.bytes(0, FILE_HEADER);
  if (h.length < FILE_HEADER || !h.subarray(0, 8).equals(MAGIC) || crc32(h.subarray(0, 20)) !== h.readUInt32LE(20)) {
    throw corrupt(`${name}@0`, "not an edge-lease version 2 file (bad file header)");
  }
  if (h.readUInt32LE(8) !== kind || Number(h.readBigUInt64LE(12)) !== gen) {
    throw corrupt(`${name}@0`, `the file header says kind ${h.readUInt32LE(8)}, generation ${h.readBigUInt64LE(12)}`);
  }
}

// The record header at `o` if it is one (magic and CRC check out), else null.
function headerAt(r, o, size) {
  if (o + REC_HEADER > size) return null;
  const h = r.bytes(o, REC_HEADER);
  if (h.readUInt32LE(0) !== REC_MAGIC || crc32(h.subarray(0, 16)) !== h.readUInt32LE(16)) return null;
  return { type: h.readUInt32LE(4), len: h.readUInt32LE(8), crc: h.readUInt32LE(12) };
}

function isZero(b) {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

// Whether the bad record at `o` is a torn last write (never acknowledged)
// rather than damage to acknowledged data. Writes are appended one at a
// time and each is fsync'd before the next, so only the last record can be
// torn, and a torn record is cut short by the end of the file or has blocks
// that never reached the disk (zeros). So: torn if no record header follows
// it anywhere, and either the file ends inside it or it holds a zero block.
// A damaged length, type or payload with records after it, or a last record
// with a flipped bit, is corruption. Only the record's own bytes count: the
// live journal's reserve after it is zeros anyway.
function isTornTail(r, o, size, h) {
  for (let p = o + 1; p + REC_HEADER <= size; ) {
    const win = r.bytes(p, Math.min(1 << 20, size - p));
    const i = win.indexOf(REC_MAGIC_BYTES);
    if (i < 0) {
      p += Math.max(1, win.length - 3); // a magic may straddle the window's end
      continue;
    }
    if (headerAt(r, p + i, size)) return false;
    p += i + 1;
  }
  if (o + REC_HEADER > size || (h && o + REC_HEADER + h.len > size)) return true;
  if (!h) {
    // A header that never (wholly) reached the disk: zeros from its start,
    // or from a sector boundary inside it, to that sector's end. A real
    // header starts with the magic, and a flipped bit zeroes no sector.
    for (let b = o; b < o + REC_HEADER; b = b - (b % SECTOR) + SECTOR) {
      const e = Math.min(b - (b % SECTOR) + SECTOR, size);
      if (isZero(r.bytes(b, e - b))) return true;
    }
    return false;
  }
  const end = o + REC_HEADER + h.len;
  // A whole header before a payload of zeros that fails its checksum: the
  // payload never reached the disk.
  if (isZero(r.bytes(o + REC_HEADER, h.len))) return true;
  for (let b = o - (o % SECTOR); b < end; b += SECTOR) {
    const s = Math.max(b, o);
    const e = Math.min(b + SECTOR, end);
    // At least a header's worth: the last bytes of a batch are often zeros.
    if (e - s >= REC_HEADER && isZero(r.bytes(s, e - s))) return true;
  }
  return false;
}

// Opens `<kind>-<gen>` in `dir`: { kind, gen, fd, size }, `size` the
// file's unless given (the bytes of it that count).
function openPart(dir, kind, gen, size = null) {
  const fd = openSync(join(dir, `${kind}-${gen}`), "r");
  try {
    return { kind, gen, fd, size: size ?? fstatSync(fd).size };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

// replay(part, map) of `<kind>-<gen>` in `dir`, which it then closes; or,
// with `keep` (an array), leaves open for the long values it left there
// (Stored), adding its fd to `keep`.
function readPart(dir, kind, gen, replay, map, keep = null) {
  const part = openPart(dir, kind, gen);
  let result;
  try {
    result = replay(part, map, keep !== null);
  } catch (e) {
    closeSync(part.fd);
    throw e;
  }
  if (keep) keep.push(part.fd);
  else closeSync(part.fd);
  return result;
}

// Replays journal-<gen> into `map`. Returns { sealed, good, size }: good is
// the length of the valid prefix (less than size if the tail is torn).
function readJournal(dir, gen, map, keep) {
  return readPart(dir, "journal", gen, replayJournal, map, keep);
}

// readJournal of an open part (openPart): its first `size` bytes; with
// `defer`, long values are left in it (applyPayload).
function replayJournal({ fd, size, gen }, map, defer = false) {
  const name = `journal-${gen}`;
  const r = new Reader(fd);
  readHeader(r, name, JOURNAL, gen);
  let o = FILE_HEADER;
  while (o < size) {
    const h = headerAt(r, o, size);
    const ok = h && o + REC_HEADER + h.len <= size && crc32(r.bytes(o + REC_HEADER, h.len)) === h.crc;
    if (!ok) {
      if (isTornTail(r, o, size, h)) return { sealed: false, good: o, size };
      throw corrupt(`${name}@${o}`, h ? "record checksum mismatch" : "bad record header");
    }
    const end = o + REC_HEADER + h.len;
    if (h.type === SEAL && h.len === 0) {
      // Zeros after it: space the journal was extended by, not yet trimmed.
      if (end !== size && !isZero(r.bytes(end, size - end))) throw corrupt(`${name}@${end}`, "data after the journal was sealed");
      return { sealed: true, good: end, size };
    }
    if (h.type !== BATCH || applyPayload(r.bytes(o + REC_HEADER, h.len), map, defer ? { fd, pos: o + REC_HEADER } : null) < 0) {
      throw corrupt(`${name}@${o}`, "malformed record");
    }
    o = end;
  }
  return { sealed: false, good: o, size };
}

// Reads snapshot-<gen> into `map`. Snapshots are renamed into place only
// once complete, so any defect, a missing END included, is corruption.
function readSnapshot(dir, gen, map, keep) {
  return readPart(dir, "snapshot", gen, replaySnapshot, map, keep);
}

// readSnapshot of an open part (openPart) of `size` bytes (`defer`: as
// replayJournal's).
function replaySnapshot({ fd, size, gen }, map, defer = false) {
  const name = `snapshot-${gen}`;
  const r = new Reader(fd);
  readHeader(r, name, SNAPSHOT, gen);
  let entries = 0;
  for (let o = FILE_HEADER; ; ) {
    const h = headerAt(r, o, size);
    if (!h) throw corrupt(`${name}@${o}`, o === size ? "ends without its END record" : "bad record header");
    const end = o + REC_HEADER + h.len;
    if (end > size) throw corrupt(`${name}@${o}`, "record runs past the end of the file");
    const p = r.bytes(o + REC_HEADER, h.len);
    if (crc32(p) !== h.crc) throw corrupt(`${name}@${o}`, "record checksum mismatch");
    if (h.type === END && h.len === 8) {
      if (Number(p.readBigUInt64LE(0)) !== entries) throw corrupt(`${name}@${o}`, "entry count mismatch");
      if (end !== size) throw corrupt(`${name}@${end}`, "data after the END record");
      return size;
    }
    const n = h.type === BATCH ? applyPayload(p, map, defer ? { fd, pos: o + REC_HEADER } : null) : -1;
    if (n < 0) throw corrupt(`${name}@${o}`, "malformed record");
    entries += n;
    o = end;
  }
}

// The generations of the files named `${prefix}-<g>` in `names`, ascending.
function gens(names, prefix) {
  const re = new RegExp(`^${prefix}-(\\d+)$`);
  return names.flatMap((n) => (re.test(n) ? [Number(n.match(re)[1])] : [])).sort((a, b) => a - b);
}

/**
 * Reads the whole store in `dir` without changing anything. Returns the
 * entries and what open needs to repair: the live journal (and its torn
 * tail, if any) and the files no longer needed. With `keep` (an array):
 * long values are left in the files, whose fds it gets (the caller closes
 * them once the entries are handed over; on a throw they are closed here).
 */
function readStore(dir, names, keep = null) {
  try {
    return readStoreFiles(dir, names, keep);
  } catch (e) {
    if (keep) closeAll(keep);
    throw e;
  }
}

function closeAll(fds) {
  for (const fd of fds.splice(0)) closeSync(fd);
}

function readStoreFiles(dir, names, keep) {
  const journals = gens(names, "journal");
  const snapshots = gens(names, "snapshot");
  const map = new Map();
  const S = snapshots.at(-1) ?? 0;
  const result = { map, live: null, snapshotBytes: 0, obsolete: [] };
  if (S > 0) result.snapshotBytes = readSnapshot(dir, S, map, keep);
  for (const g of snapshots) if (g < S) result.obsolete.push(`snapshot-${g}`);
  for (const g of journals) if (g < Math.max(S, 1)) result.obsolete.push(`journal-${g}`);
  if (S === 0 && journals.length === 0) return result; // a new store
  let g = Math.max(S, 1);
  if (!journals.includes(g)) {
    if (S > 0) throw corrupt(`journal-${g}`, `missing: snapshot-${g} is continued in it`);
    throw corrupt(`snapshot-${journals[0]}`, `missing: journal-${journals[0]} starts from it`);
  }
  for (;;) {
    const j = readJournal(dir, g, map, keep);
    if (!j.sealed) {
      result.live = { gen: g, ...j };
      break;
    }
    if (!journals.includes(g + 1)) throw corrupt(`journal-${g + 1}`, `missing: journal-${g} is continued in it`);
    g++;
  }
  // A journal after the live one: a compaction that created it and died
  // before sealing the live one, so it must be empty.
  for (const k of journals) {
    if (k <= g) continue;
    if (statSync(join(dir, `journal-${k}`)).size > FILE_HEADER) {
      throw corrupt(`journal-${k}`, `has records, but journal-${g} before it was never sealed`);
    }
    result.obsolete.push(`journal-${k}`);
  }
  return result;
}

// `list`'s entries handed out once, each let go as it is read (a value
// left in its file read then): a restore from them never holds the whole
// state twice (here and in the engine). They are let go, and `fds` (the
// files those values are in) closed, once all are read, or when the reader
// stops early or fails, or its owner lets them go (`return()`); `onRelease`
// hears it. Read once: reading them again is an error, never an empty
// store.
function handOver(list, fds = [], onRelease = null) {
  const n = list.length;
  let i = 0;
  let begun = false;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    list.length = 0;
    closeAll(fds);
    onRelease?.();
  };
  return {
    [Symbol.iterator]() {
      if (begun) throw new LeaseError("InvalidArgument", "a store's entries are read once, and these were read already");
      begun = true;
      return this;
    },
    next() {
      begun = true;
      if (i >= n) {
        release();
        return { value: undefined, done: true };
      }
      // (Let go early: an fd may be another file's now.)
      if (released) {
        throw new LeaseError("Closed", "the store's entries were let go (the store closed, or their reader stopped) before they were read");
      }
      const entry = list[i];
      list[i++] = undefined;
      if (entry[1] instanceof Stored) {
        try {
          entry[1] = entry[1].read();
        } catch (e) {
          release();
          throw e;
        }
      }
      return { value: entry, done: false };
    },
    return() {
      release();
      return { value: undefined, done: true };
    },
  };
}

/**
 * The entries of a store view (`FileStore.view().files`), as `entries()`
 * gives them; reads the open files (long values only as each entry is
 * read: keep the view open until then), never closes them.
 */
export function readView(files) {
  const map = new Map();
  files.forEach((f, i) => {
    if (f.kind === "snapshot") return void replaySnapshot(f, map, true);
    const j = replayJournal(f, map, true);
    const last = i === files.length - 1;
    if (last ? j.good !== f.size : !j.sealed) throw corrupt(`journal-${f.gen}@${j.good}`, last ? "the view ends inside a record" : "not sealed, yet continued");
  });
  return handOver([...map]);
}

function fsyncDir(dir) {
  // Makes a create, rename or unlink durable. Some platforms cannot open a
  // directory for fsync (Windows): there the rename is as durable as it gets.
  let fd;
  try {
    fd = openSync(dir, "r");
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // EISDIR/EINVAL on filesystems without directory fsync.
  } finally {
    closeSync(fd);
  }
}

async function fsyncDirAsync(dir) {
  let fh;
  try {
    fh = await openAsync(dir, "r");
  } catch {
    return;
  }
  try {
    await fh.sync();
  } catch {
    // as in fsyncDir
  } finally {
    await fh.close();
  }
}

function writeAll(fd, buf, pos) {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, pos + done);
}

// Writes `path` whole: a temp file, fsync, rename, fsync of the directory.
function createFile(dir, name, buf) {
  const tmp = join(dir, `${name}.tmp`);
  const fd = openSync(tmp, "w");
  try {
    writeAll(fd, buf, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, name));
  fsyncDir(dir);
}

// ---- version 1 ----------------------------------------------------------------

// Replays a version 1 file (magic, then records of u32 length, u32 CRC-32,
// payload): its own rules, which cannot tell a damaged length from a torn
// tail, except that a zero-filled tail is torn rather than malformed.
function replayV1(buf, name, map, tornOk) {
  if (buf.length < MAGIC_V1.length || !buf.subarray(0, MAGIC_V1.length).equals(MAGIC_V1)) {
    throw corrupt(`${name}@0`, "not an edge-lease version 1 file (bad magic)");
  }
  for (let o = MAGIC_V1.length; o < buf.length; ) {
    const torn = (why) => {
      if (tornOk) return true;
      throw corrupt(`${name}@${o}`, why);
    };
    if (tornOk && isZero(buf.subarray(o))) break;
    if (o + 8 > buf.length && torn("truncated record header")) break;
    const end = o + 8 + buf.readUInt32LE(o);
    if (end > buf.length && torn("record runs past the end of the file")) break;
    const payload = buf.subarray(o + 8, end);
    if (crc32(payload) !== buf.readUInt32LE(o + 4)) {
      if (end === buf.length && torn("checksum mismatch")) break;
      throw corrupt(`${name}@${o}`, "checksum mismatch");
    }
    if (applyPayload(payload, map) < 0) throw corrupt(`${name}@${o}`, "malformed batch");
    o = end;
  }
}

// Converts a version 1 store in place: snapshot-2 holds its state and
// journal-2 continues it; the version 1 files are removed last. A crash
// before snapshot-2 is renamed into place leaves the version 1 files, and
// the next open converts again.
function migrateV1(dir, names) {
  for (const n of names) {
    if (/^(journal|snapshot)-\d+$/.test(n) && (n !== "journal-2" || statSync(join(dir, n)).size > FILE_HEADER)) {
      throw corrupt(n, "a version 1 store (journal) next to version 2 files");
    }
  }
  const map = new Map();
  if (names.includes("snapshot")) replayV1(readFileSync(join(dir, "snapshot")), "snapshot", map, false);
  replayV1(readFileSync(join(dir, "journal")), "journal", map, true);
  createFile(dir, "journal-2", fileHeader(JOURNAL, 2));
  createFile(dir, "snapshot-2", Buffer.concat([...encodeSnapshot([...map], 2)]));
  for (const n of ["journal", "snapshot"]) if (names.includes(n)) unlinkSync(join(dir, n));
  fsyncDir(dir);
}

// ---- lock -----------------------------------------------------------------------

// Lock files this process holds, so a second open in the same process is
// refused as well (its pid is alive: ours).
const held = new Set();

function bootId() {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null; // not Linux: a lock from before a reboot is judged by its pid alone
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM"; // exists, owned by someone else
  }
}

function locked(dir, holder, why) {
  return new LeaseError(
    "Locked",
    `${dir} is in use by ${holder ? `process ${holder.pid} on ${holder.host}` : "another process"}${why ? ` (${why})` : ""}`,
    { pid: holder?.pid },
  );
}

// Whether the lock text `text` belongs to a process that may still run.
function holderOf(text) {
  try {
    const h = JSON.parse(text);
    return typeof h.pid === "number" ? h : null;
  } catch {
    return null;
  }
}

function isStale(h) {
  if (h.host !== hostname()) return false; // cannot ask another machine
  const boot = bootId();
  if (boot !== null && h.boot !== boot) return true; // from before a reboot
  if (h.pid === process.pid) return !held.has(h.nonce); // our pid, reused (a container's pid 1)
  return !alive(h.pid);
}

/**
 * Takes `<dir>/lock` (created whole by link(2), which fails if it exists),
 * breaking it if its holder is gone. Returns the text written, to release
 * it later.
 */
function acquireLock(dir) {
  const path = join(dir, "lock");
  const nonce = randomUUID();
  const mine = JSON.stringify({ pid: process.pid, host: hostname(), boot: bootId(), nonce });
  const tmp = `${path}.${nonce}.tmp`;
  // Not fsync'd: a power loss ends every holder anyway, and a lock it left
  // empty or zero-filled is judged stale below.
  const fd = openSync(tmp, "w");
  try {
    writeAll(fd, Buffer.from(mine), 0);
  } finally {
    closeSync(fd);
  }
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        linkSync(tmp, path);
        held.add(nonce);
        return { path, text: mine, nonce };
      } catch (e) {
        if (e.code !== "EEXIST") throw e;
      }
      let text;
      try {
        text = readFileSync(path, "utf8");
      } catch (e) {
        if (e.code === "ENOENT") continue; // released meanwhile
        throw e;
      }
      const h = holderOf(text);
      // Empty or zeros: left by a power loss (a live holder's lock is
      // linked into place already written). Anything else is not guessed at.
      const lost = /^\0*$/.test(text);
      if (!h && !lost) throw locked(dir, null, `unreadable ${path}: remove it if no process uses the store`);
      if (h && !isStale(h)) throw locked(dir, h);
      // Its holder is gone. Move it aside (atomic: of two processes breaking
      // it at once, one gets it) and check that what moved is what was
      // judged stale, not a lock just taken by a live process.
      const aside = `${path}.${nonce}.stale`;
      try {
        renameSync(path, aside);
      } catch (e) {
        if (e.code === "ENOENT") continue;
        throw e;
      }
      const moved = readFileSync(aside, "utf8");
      if (moved !== text) {
        try {
          linkSync(aside, path); // give it back
        } finally {
          unlinkSync(aside);
        }
        throw locked(dir, holderOf(moved));
      }
      unlinkSync(aside);
    }
    throw locked(dir, null, "the lock kept changing hands");
  } finally {
    unlinkSync(tmp);
  }
}

function releaseLock(lock) {
  held.delete(lock.nonce);
  try {
    if (readFileSync(lock.path, "utf8") === lock.text) unlinkSync(lock.path);
  } catch {
    // Gone already: nothing to release.
  }
}

// The longest fsync that may run on the event loop (FileStore.#sync).
const LOOP_SYNC_MAX_MS = 2;

// ---- the store --------------------------------------------------------------------

export class FileStore {
  #dir;
  #lock;
  #fd = null;
  #gen;
  #journalBytes;
  // The live journal's bytes an fsync has covered (a record boundary).
  #durableBytes;
  // The live journal file's size: its records and the space reserved after them.
  #allocated;
  #snapshotBytes;
  #compactFactor;
  #minCompactBytes;
  #maxJournalBytes;
  // The entries read by open (a handOver), until entries() hands them over.
  #opened;
  // Entries not yet all read (handOvers), which hold files open: let go by
  // close() at the latest.
  #handing = new Set();
  #broken = null;
  #closed = false;
  // The snapshot writes in progress (a promise), or null.
  #compacting = null;
  // Group commit: whether an fsync runs now, who waits for the one after it,
  // and journal fds to close once the running fsync is done with them.
  #group;
  #syncing = false;
  #scheduled = false;
  // How many writes the last fsync covered.
  #lastRound = 0;
  // The last fsync took longer than a sync on the event loop may (below).
  #slowSync = false;
  #loopSyncMaxMs;
  // Hears how long each journal sync took (ms), for a server's metrics.
  #onSync;
  #written = 0; // bytes appended to journals since open
  // Records written and not yet appended (this turn's), and who waits.
  #pending = [];
  #waiting = [];
  #retired = [];

  /**
   * Opens (creating if needed) the store in `dir` and takes its lock,
   * replaying it once so a corrupt or incomplete store fails here and a torn
   * last record is cut off before any new record is appended after it.
   */
  static open(dir, options = {}) {
    return new FileStore(dir, options);
  }

  constructor(dir, options = {}) {
    if (typeof dir !== "string" || dir === "") throw new TypeError("FileStore.open(dir): dir must be a path");
    this.#dir = dir;
    this.#compactFactor = options.compactFactor ?? 4;
    this.#minCompactBytes = options.minCompactBytes ?? 1 << 20;
    this.#maxJournalBytes = options.maxJournalBytes ?? 256 << 20;
    this.#group = Boolean(options.groupCommit);
    this.#loopSyncMaxMs = options.loopSyncMaxMs ?? LOOP_SYNC_MAX_MS;
    this.#onSync = options.onSync ?? null;
    mkdirSync(dir, { recursive: true });
    this.#lock = acquireLock(dir);
    try {
      this.#open();
    } catch (e) {
      if (this.#fd !== null) closeSync(this.#fd);
      this.#fd = null;
      this.#closeHanding();
      releaseLock(this.#lock);
      throw e;
    }
  }

  #open() {
    const dir = this.#dir;
    let names = readdirSync(dir);
    let changed = false;
    for (const n of names) {
      // A file some crash left half-written, never renamed into place.
      if (n.endsWith(".tmp") && !n.startsWith("lock.")) {
        unlinkSync(join(dir, n));
        changed = true;
      }
    }
    if (names.includes("journal")) {
      if (gens(names, "snapshot").length === 0) migrateV1(dir, names);
      else for (const n of ["journal", "snapshot"]) if (names.includes(n)) unlinkSync(join(dir, n)); // migrated already
      names = readdirSync(dir);
      changed = true;
    }
    const fds = [];
    const s = readStore(dir, names, fds);
    this.#opened = this.#handOver([...s.map], fds);
    for (const n of s.obsolete) unlinkSync(join(dir, n));
    if (s.live === null) {
      createFile(dir, "journal-1", fileHeader(JOURNAL, 1));
      s.live = { gen: 1, good: FILE_HEADER, size: FILE_HEADER };
    }
    this.#gen = s.live.gen;
    this.#fd = openSync(join(dir, `journal-${this.#gen}`), "r+");
    if (s.live.good < s.live.size) {
      ftruncateSync(this.#fd, s.live.good);
      fsyncSync(this.#fd);
    }
    if (changed || s.obsolete.length > 0) fsyncDir(dir);
    this.#journalBytes = s.live.good;
    this.#durableBytes = s.live.good;
    this.#allocated = s.live.good;
    this.#snapshotBytes = s.snapshotBytes;
  }

  // Entries to hand over once, their files kept open until they are read.
  #handOver(list, fds) {
    const entries = handOver(list, fds, () => this.#handing.delete(entries));
    this.#handing.add(entries);
    return entries;
  }

  #closeHanding() {
    for (const entries of [...this.#handing]) entries.return();
  }

  /**
   * The stored `[key, Uint8Array]` entries, for `new Lessor({ restore })`:
   * to be read once, each let go as it is read.
   */
  entries() {
    if (this.#opened) {
      const entries = this.#opened;
      this.#opened = null; // the lessor now holds the state: do not keep a copy
      return entries;
    }
    this.#check();
    const fds = [];
    return this.#handOver([...readStore(this.#dir, readdirSync(this.#dir), fds).map], fds);
  }

  // What open read, never asked for: let go (its files may be compacted away).
  #dropOpened() {
    this.#opened?.return();
    this.#opened = null;
  }

  /**
   * Appends the batch and fsyncs: when this returns, it is durable. With
   * groupCommit, returns at once with a promise that resolves when the
   * batch is appended and an fsync has made it durable (a failed append or
   * fsync rejects it and fails the store).
   */
  write(batch) {
    this.#check();
    const packed = batch.bytes;
    const rec =
      packed instanceof Uint8Array && isPayload(packed)
        ? record(BATCH, packed.length, (buf, o) => buf.set(packed, o))
        : encodeBatch(batch.put, batch.delete);
    if (!this.#group) return this.#append(rec);
    this.#pending.push(rec);
    return this.#nextRound();
  }

  // A waiter in the next round. The round starts once this turn's writes
  // are in: they share one append and one fsync.
  #nextRound() {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#syncing && !this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          if (!this.#syncing && this.#waiting.length > 0 && this.#fd !== null) this.#sync();
        });
      }
    });
  }

  // Resolves once every record handed in so far is durable (with
  // groupCommit: a waiter with no record of its own in the next round).
  #durableSoFar() {
    if (this.#fd === null) return Promise.reject(new LeaseError("Closed", "the file store is closed"));
    if (!this.#group || (this.#pending.length === 0 && this.#waiting.length === 0 && !this.#syncing)) return Promise.resolve();
    return this.#nextRound();
  }

  /** Bytes of records appended to the journal since the store was opened (a server's metrics). */
  get bytesWritten() {
    return this.#written;
  }

  /** With groupCommit: batches may come before earlier ones are durable (the journal keeps their order). */
  get pipelined() {
    return this.#group;
  }

  // One fsync for everything appended so far; records appended meanwhile
  // wait for the next one. It runs on libuv's pool, off the event loop, so
  // the next writes' work overlaps it; but a lone write after a lone write
  // (one writer at a time) is synced on the event loop: the pool's round
  // trip (a thread's wake-up, the completion's way back) was most of its
  // latency and all of its tail (measured under load: p50 0.26 -> 0.16 ms,
  // p99 1.8 -> 0.5 ms). Only while syncs are fast: a stalled disk must not
  // stall the loop (keepalives, reads, the expiry timer), so after a sync
  // slower than loopSyncMaxMs they all go to the pool until one is fast again.
  #sync() {
    if (!this.#appendPending()) return;
    const round = this.#waiting;
    this.#waiting = [];
    const lone = round.length === 1 && this.#lastRound === 1 && !this.#slowSync;
    this.#lastRound = round.length;
    const start = performance.now();
    const covers = { gen: this.#gen, bytes: this.#journalBytes };
    if (lone) {
      let err = null;
      try {
        fdatasyncSync(this.#fd);
      } catch (e) {
        err = e;
      }
      this.#timed(start);
      return this.#synced(round, err, covers);
    }
    this.#syncing = true;
    fdatasyncCallback(this.#fd, (err) => {
      this.#syncing = false;
      this.#timed(start);
      this.#synced(round, err, covers);
    });
  }

  // The journal synced on the event loop, its time told to onSync.
  #syncNow() {
    const start = performance.now();
    fdatasyncSync(this.#fd);
    this.#onSync?.(performance.now() - start);
  }

  // A journal sync that began at `start` is over.
  #timed(start) {
    const ms = performance.now() - start;
    this.#slowSync = ms > this.#loopSyncMaxMs;
    this.#onSync?.(ms);
  }

  // `covers`: the journal and its length the fsync began with.
  #synced(round, err, covers) {
    for (const fd of this.#retired.splice(0)) closeSync(fd);
    if (!err && covers.gen === this.#gen) this.#durableBytes = covers.bytes;
    if (err) {
      // What the failed fsync covered may or may not be on disk: nothing
      // after it can be trusted to be, so the store takes no more writes.
      this.#broken ??= err;
      for (const w of [...round, ...this.#waiting.splice(0)]) w.reject(err);
      return;
    }
    for (const w of round) w.resolve();
    if (this.#waiting.length > 0 && this.#fd !== null) this.#sync();
  }

  // A journal fd is closed only once no fsync is running on it.
  #retire(fd) {
    if (this.#syncing) this.#retired.push(fd);
    else closeSync(fd);
  }

  // The records appended but not yet covered by an fsync are made durable
  // now, synchronously (before the journal is sealed or closed).
  #syncWaiting() {
    if (this.#waiting.length === 0 || !this.#appendPending()) return;
    const round = this.#waiting.splice(0);
    this.#lastRound = round.length;
    try {
      this.#syncNow();
    } catch (e) {
      this.#broken ??= e;
      for (const w of round) w.reject(e);
      return;
    }
    this.#durableBytes = this.#journalBytes;
    for (const w of round) w.resolve();
  }

  // With groupCommit: the records written since the last round, in one
  // write. A failure fails the store (the lessor has applied them already)
  // and every write waiting; returns whether they were appended.
  #appendPending() {
    if (this.#pending.length === 0) return true;
    const recs = this.#pending.length === 1 ? this.#pending[0] : Buffer.concat(this.#pending);
    this.#pending = [];
    try {
      this.#append(recs, false);
      return true;
    } catch (e) {
      this.#broken ??= e;
      for (const w of this.#waiting.splice(0)) w.reject(e);
      return false;
    }
  }

  #append(rec, sync = true) {
    try {
      const end = this.#journalBytes + rec.length;
      if (end > this.#allocated) {
        // The next sync covers the new size (fdatasync syncs a size change).
        const size = Math.ceil((end + 1) / JOURNAL_STEP) * JOURNAL_STEP;
        ftruncateSync(this.#fd, size);
        this.#allocated = size;
      }
      writeAll(this.#fd, rec, this.#journalBytes);
      this.#written += rec.length;
      if (sync) this.#syncNow();
    } catch (e) {
      // Cut off whatever part of the record got written, so the failed
      // batch is not half-applied later and the next record is not stuck
      // behind garbage. If even that fails the journal's tail is unknown:
      // refuse further writes (reopening repairs or reports it).
      try {
        ftruncateSync(this.#fd, this.#journalBytes);
        this.#allocated = this.#journalBytes;
        fsyncSync(this.#fd);
      } catch (e2) {
        this.#broken = e2;
      }
      throw e;
    }
    this.#journalBytes += rec.length;
    if (sync) this.#durableBytes = this.#journalBytes;
  }

  // Gives back the space reserved after the live journal's records. Best
  // effort: zeros after the records (or a SEAL) read as the journal's end.
  #trim() {
    if (this.#allocated === this.#journalBytes || this.#broken) return;
    try {
      ftruncateSync(this.#fd, this.#journalBytes);
      this.#allocated = this.#journalBytes;
    } catch {
      // The reserve stays.
    }
  }

  /**
   * The store's durable state now, to be read elsewhere (`readView`, in a
   * worker thread, say): its files, opened, so that a compaction removing
   * them meanwhile takes nothing away, and the live journal only up to its
   * last record an fsync has covered. That is the lessor's state after some
   * write, every acknowledged one included (writes whose fsync is still to
   * come are not in it). `close()` it once read; `files` is plain data a
   * worker can be given.
   */
  view() {
    this.#check();
    const dir = this.#dir;
    for (let attempt = 0; ; attempt++) {
      const S = gens(readdirSync(dir), "snapshot").at(-1) ?? 0;
      const files = [];
      try {
        if (S > 0) files.push(openPart(dir, "snapshot", S));
        for (let g = Math.max(S, 1); g < this.#gen; g++) files.push(openPart(dir, "journal", g));
        files.push(openPart(dir, "journal", this.#gen, this.#durableBytes));
      } catch (e) {
        for (const f of files) closeSync(f.fd);
        // A compaction finished between the listing and the opens.
        if (e.code === "ENOENT" && attempt < 3) continue;
        throw e;
      }
      let open = true;
      const close = () => {
        if (open) for (const f of files) closeSync(f.fd);
        open = false;
      };
      return { files, close };
    }
  }

  /** Bytes in the live journal and in the snapshot (file headers included), and a file header's. */
  get sizes() {
    return { journal: this.#journalBytes, snapshot: this.#snapshotBytes, header: FILE_HEADER };
  }

  /** The generation of the live journal (1 for a new store, +1 per compaction). */
  get generation() {
    return this.#gen;
  }

  /**
   * Replaces everything with `entries`: an array that includes every write
   * made so far (`lessor.snapshot()`), or a fresh `lessor.snapshotEntries()`,
   * read only as the snapshot is written (the writes made meanwhile are in
   * the new journal, which a restore applies over it). At once
   * (synchronously) new writes go to a new journal; the snapshot is then
   * written in chunks without blocking the event loop, fsync'd and renamed
   * into place, and the old journal and snapshot are removed. The promise
   * resolves when that is done. A crash or failure at any point leaves a
   * store that restores to the same data; a failed compaction is simply
   * redone by the next one.
   */
  compact(entries) {
    const gen = this.#gen + 1;
    let list;
    try {
      this.#check();
      this.#dropOpened();
      if (typeof entries?.[Symbol.iterator] !== "function") throw new TypeError("compact(entries): entries must be an array or an iterable");
      list = entries;
      this.#switchJournal(gen);
    } catch (e) {
      return Promise.reject(e);
    }
    // One snapshot written at a time, in order: each removes the files
    // older than itself.
    const run = (this.#compacting ?? Promise.resolve())
      .catch(() => {})
      .then(() => this.#writeSnapshot(gen, list))
      .finally(() => {
        if (this.#compacting === run) this.#compacting = null;
        if (this.#closed && this.#compacting === null) releaseLock(this.#lock);
      });
    this.#compacting = run;
    return run;
  }

  // Continues in journal-<gen>: created whole, then the live journal is
  // sealed (naming it as its continuation) and closed.
  #switchJournal(gen) {
    const name = `journal-${gen}`;
    createFile(this.#dir, name, fileHeader(JOURNAL, gen));
    let fd;
    try {
      fd = openSync(join(this.#dir, name), "r+");
      if (!this.#appendPending()) throw this.#broken;
      this.#append(record(SEAL, 0)); // its sync covers the records before it
    } catch (e) {
      if (fd !== undefined) closeSync(fd);
      unlinkSync(join(this.#dir, name)); // unsealed: an empty journal after it is just ignored
      throw e;
    }
    for (const w of this.#waiting.splice(0)) w.resolve();
    this.#trim(); // the sealed journal then ends at its SEAL
    this.#retire(this.#fd);
    this.#fd = fd;
    this.#gen = gen;
    this.#journalBytes = FILE_HEADER;
    this.#durableBytes = FILE_HEADER;
    this.#allocated = FILE_HEADER;
  }

  async #writeSnapshot(gen, entries) {
    const dir = this.#dir;
    const tmp = join(dir, `snapshot-${gen}.tmp`);
    const stop = () => {
      if (this.#closed) throw new LeaseError("Closed", "the file store was closed during a compaction");
      // The lessor may hold changes whose records the journal lost: no
      // snapshot of them replaces the files.
      if (this.#broken) throw new LeaseError("StorageFailed", `the journal failed during a compaction: ${this.#broken.message}`);
    };
    stop();
    const fh = await openAsync(tmp, "w");
    let size = 0;
    try {
      for (const chunk of encodeSnapshot(entries, gen)) {
        stop();
        await fh.write(chunk, 0, chunk.length, size);
        size += chunk.length;
      }
      await fh.sync();
    } catch (e) {
      await fh.close();
      await unlinkAsync(tmp).catch(() => {});
      throw e;
    }
    await fh.close();
    try {
      // Entries read as it went may hold writes whose records are not yet
      // durable: they are before it replaces the old files.
      stop();
      if (!Array.isArray(entries)) await this.#durableSoFar();
      stop();
    } catch (e) {
      await unlinkAsync(tmp).catch(() => {});
      throw e;
    }
    await renameAsync(tmp, join(dir, `snapshot-${gen}`));
    await fsyncDirAsync(dir);
    this.#snapshotBytes = size;
    // Older generations are covered by the new snapshot now.
    stop();
    const names = await readdirAsync(dir);
    for (const g of gens(names, "journal")) if (g < gen) await unlinkAsync(join(dir, `journal-${g}`));
    for (const g of gens(names, "snapshot")) if (g < gen) await unlinkAsync(join(dir, `snapshot-${g}`));
    await fsyncDirAsync(dir);
  }

  /**
   * Compacts from `lessor.snapshotEntries()` (read as it is written) when
   * the journal has grown past `minCompactBytes` (default 1 MiB) and either
   * past `compactFactor` (default 4) times the snapshot or past
   * `maxJournalBytes` (default 256 MiB), or always with `{ force: true }`.
   * Call it between operations, not from inside one. Resolves to whether it
   * compacted; while a compaction is still being written, an unforced call
   * does nothing.
   */
  async compactFrom(lessor, { force = false } = {}) {
    const j = this.#journalBytes - FILE_HEADER;
    if (!force) {
      if (this.#compacting || j < this.#minCompactBytes) return false;
      if (j < this.#compactFactor * this.#snapshotBytes && j < this.#maxJournalBytes) return false;
    }
    // Read as it is written: a large snapshot does not stop the server.
    await this.compact(typeof lessor.snapshotEntries === "function" ? lessor.snapshotEntries() : lessor.snapshot());
    return true;
  }

  /**
   * Closes the journal at once (later writes throw Closed). Resolves when
   * the lock is released: at once, or once a compaction in progress has
   * stopped (the store it leaves restores to the same data).
   */
  close() {
    if (this.#closed) return this.#compacting ?? Promise.resolve();
    this.#closed = true;
    this.#opened = null;
    this.#closeHanding();
    this.#syncWaiting();
    this.#trim();
    this.#retire(this.#fd);
    this.#fd = null;
    if (this.#compacting) return this.#compacting.catch(() => {});
    releaseLock(this.#lock);
    return Promise.resolve();
  }

  #check() {
    if (this.#closed) throw new LeaseError("Closed", "the file store is closed");
    if (this.#broken) {
      throw new LeaseError("StorageFailed", `the journal could not be repaired after a failed write: ${this.#broken.message}`);
    }
  }
}
