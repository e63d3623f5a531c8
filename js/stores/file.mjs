// A durable store for Node: an append-only journal of batches plus a
// compacted snapshot, in one directory.
//
//   <dir>/journal   magic, then one record per batch
//   <dir>/snapshot  magic, then one record holding every entry (optional)
//
// A record is: u32 payload length, u32 CRC-32 of the payload (both little
// endian), payload. A payload is a batch: u32 count of puts, each
// (u32 key length, key UTF-8, u32 value length, value), then u32 count of
// deletes, each (u32 key length, key UTF-8).
//
// write() appends one record and fsyncs before returning, so the lessor's
// operation returns only once its change is on disk (acknowledged = durable).
// A crash can leave a torn last record: it was never acknowledged, so
// replay drops it. Anything else that does not check out is corruption.

import {
  closeSync,
  existsSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { LeaseError } from "../errors.js";

const MAGIC = Buffer.from("edgelse1");
const HEADER = 8; // length + crc

const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/** CRC-32 (IEEE, as zlib), computed here so the store runs on every Node >= 18. */
export function crc32(bytes) {
  let c = -1;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function encodeBatch(put, del) {
  const keys = (list) => list.map((k) => Buffer.from(k, "utf8"));
  const putKeys = keys(put.map((p) => p[0]));
  const delKeys = keys(del);
  let size = 8;
  for (let i = 0; i < put.length; i++) size += 8 + putKeys[i].length + put[i][1].length;
  for (const k of delKeys) size += 4 + k.length;
  const buf = Buffer.allocUnsafe(HEADER + size);
  let o = HEADER;
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
  buf.writeUInt32LE(size, 0);
  buf.writeUInt32LE(crc32(buf.subarray(HEADER)), 4);
  return buf;
}

function corrupt(file, offset, why) {
  return new LeaseError("CorruptEntry", `${file} is corrupt at byte ${offset}: ${why}`, {
    entry: `${file}@${offset}`,
  });
}

// Applies one payload to `map`; false if it does not parse to its end.
function applyPayload(p, map) {
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
      // Copy: the caller's Uint8Arrays must not pin the whole file buffer.
      puts.push([key, new Uint8Array(bytes(u32()))]);
    }
    const dels = [];
    for (let n = u32(); n > 0; n--) dels.push(bytes(u32()).toString("utf8"));
    if (o !== p.length) return false;
    for (const k of dels) map.delete(k);
    for (const [k, v] of puts) map.set(k, v);
    return true;
  } catch (e) {
    if (e instanceof RangeError) return false;
    throw e;
  }
}

// Replays the records of `buf` into `map`. Returns the length of the valid
// prefix; a bad record that reaches the end of the file is a torn write
// (ignored when `tornOk`), one followed by more data is corruption.
function replay(buf, name, map, tornOk) {
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) {
    if (tornOk && MAGIC.subarray(0, buf.length).equals(buf)) return 0;
    throw corrupt(name, 0, "not an edge-lease store file (bad magic)");
  }
  let o = MAGIC.length;
  while (o < buf.length) {
    const torn = (why) => {
      if (tornOk) return true;
      throw corrupt(name, o, why);
    };
    if (o + HEADER > buf.length) {
      if (torn("truncated record header")) break;
    }
    const len = buf.readUInt32LE(o);
    const end = o + HEADER + len;
    if (end > buf.length) {
      if (torn("record runs past the end of the file")) break;
    }
    const payload = buf.subarray(o + HEADER, end);
    if (crc32(payload) !== buf.readUInt32LE(o + 4)) {
      if (end === buf.length && torn("checksum mismatch")) break;
      throw corrupt(name, o, "checksum mismatch");
    }
    if (!applyPayload(payload, map)) throw corrupt(name, o, "malformed batch");
    o = end;
  }
  return o;
}

function fsyncDir(dir) {
  // Makes a create or rename durable. Some platforms cannot open a
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

function writeAll(fd, buf) {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done);
}

export class FileStore {
  #dir;
  #fd;
  #journalBytes;
  #snapshotBytes;
  #compactFactor;
  #minCompactBytes;
  #opened;
  #broken = null;

  /**
   * Opens (creating if needed) the store in `dir`, replaying it once so a
   * corrupt file fails here and a torn last record is cut off before any
   * new record is appended after it.
   */
  static open(dir, options = {}) {
    return new FileStore(dir, options);
  }

  constructor(dir, options = {}) {
    if (typeof dir !== "string" || dir === "") throw new TypeError("FileStore.open(dir): dir must be a path");
    this.#dir = dir;
    this.#compactFactor = options.compactFactor ?? 4;
    this.#minCompactBytes = options.minCompactBytes ?? 1 << 20;
    mkdirSync(dir, { recursive: true });
    const map = new Map();
    const snapPath = join(dir, "snapshot");
    this.#snapshotBytes = 0;
    if (existsSync(snapPath)) {
      const buf = readFileSync(snapPath);
      // Written whole and renamed into place: no torn snapshot is possible.
      replay(buf, "snapshot", map, false);
      this.#snapshotBytes = buf.length;
    }
    const journalPath = join(dir, "journal");
    const created = !existsSync(journalPath);
    this.#fd = openSync(journalPath, "a+");
    try {
      const buf = readFileSync(journalPath);
      // Replaying the whole journal over the snapshot is correct even if a
      // crash hit compaction between renaming the snapshot and emptying the
      // journal: every batch holds whole values, so the last write to each
      // key wins either way.
      const good = replay(buf, "journal", map, true);
      if (good < MAGIC.length) {
        ftruncateSync(this.#fd, 0);
        writeAll(this.#fd, MAGIC);
        fsyncSync(this.#fd);
        this.#journalBytes = MAGIC.length;
      } else {
        if (good < buf.length) {
          ftruncateSync(this.#fd, good);
          fsyncSync(this.#fd);
        }
        this.#journalBytes = good;
      }
      if (created) fsyncDir(dir);
    } catch (e) {
      closeSync(this.#fd);
      throw e;
    }
    this.#opened = [...map];
  }

  /** The stored `[key, Uint8Array]` entries, for `new Lessor({ restore })`. */
  entries() {
    if (this.#opened) {
      const e = this.#opened;
      this.#opened = null; // the lessor now holds the state: do not keep a copy
      return e;
    }
    this.#check();
    const map = new Map();
    const snapPath = join(this.#dir, "snapshot");
    if (existsSync(snapPath)) replay(readFileSync(snapPath), "snapshot", map, false);
    replay(readFileSync(join(this.#dir, "journal")), "journal", map, false);
    return [...map];
  }

  /** Appends the batch and fsyncs: when this returns, it is durable. */
  write(batch) {
    this.#check();
    const rec = encodeBatch(batch.put, batch.delete);
    try {
      writeAll(this.#fd, rec);
      fsyncSync(this.#fd);
    } catch (e) {
      // Cut off whatever part of the record got written, so the failed
      // batch is not half-applied later and the next record is not stuck
      // behind garbage. If even that fails the journal's tail is unknown:
      // refuse further writes (reopening repairs or reports it).
      try {
        ftruncateSync(this.#fd, this.#journalBytes);
        fsyncSync(this.#fd);
      } catch (e2) {
        this.#broken = e2;
      }
      throw e;
    }
    this.#journalBytes += rec.length;
  }

  /** Bytes in the journal and in the snapshot. */
  get sizes() {
    return { journal: this.#journalBytes, snapshot: this.#snapshotBytes };
  }

  /**
   * Replaces everything with `entries` (e.g. `lessor.snapshot()`): writes a
   * new snapshot (temp file, fsync, rename, fsync dir), then empties the
   * journal. Pass only a state that includes every write made so far.
   */
  compact(entries) {
    this.#check();
    const map = new Map(entries);
    const rec = encodeBatch([...map], []);
    const tmp = join(this.#dir, "snapshot.tmp");
    const fd = openSync(tmp, "w");
    try {
      writeAll(fd, Buffer.concat([MAGIC, rec]));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.#dir, "snapshot"));
    fsyncDir(this.#dir);
    this.#snapshotBytes = MAGIC.length + rec.length;
    ftruncateSync(this.#fd, MAGIC.length);
    fsyncSync(this.#fd);
    this.#journalBytes = MAGIC.length;
  }

  /**
   * Compacts from `lessor.snapshot()` when the journal has grown past
   * `compactFactor` (default 4) times the snapshot and past
   * `minCompactBytes` (default 1 MiB), or always with `{ force: true }`.
   * Call it between operations, not from inside one. Returns whether it did.
   */
  compactFrom(lessor, { force = false } = {}) {
    const j = this.#journalBytes - MAGIC.length;
    if (!force && (j < this.#minCompactBytes || j < this.#compactFactor * this.#snapshotBytes)) return false;
    this.compact(lessor.snapshot());
    return true;
  }

  close() {
    if (this.#fd === null) return;
    closeSync(this.#fd);
    this.#fd = null;
  }

  #check() {
    if (this.#fd === null) throw new LeaseError("Closed", "the file store is closed");
    if (this.#broken) {
      throw new LeaseError("StorageFailed", `the journal could not be repaired after a failed write: ${this.#broken.message}`);
    }
  }
}
