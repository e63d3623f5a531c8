// Reading a store back: its files replayed into entries, checked record by
// record; a torn last write (never acknowledged) is told apart from damage
// (isTornTail), which is CorruptEntry.

import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { readBatch } from "../../codec.js";
import {
  BATCH,
  corrupt,
  crc32,
  END,
  FILE_HEADER,
  gens,
  isZero,
  JOURNAL,
  MAGIC,
  REC_HEADER,
  REC_MAGIC,
  REC_MAGIC_BYTES,
  SEAL,
  SECTOR,
  SNAPSHOT,
} from "./format.mjs";
import { closeAll, DEFER_BYTES, handOver, Stored } from "./hand-over.mjs";

// Applies one BATCH payload to `map`; returns the number of puts, or -1 if
// it does not parse to its end. With `from` (`{ fd, pos }`: where `p` is
// in an open file that stays open until the entries are handed over), long
// values are left there (Stored).
export function applyPayload(p, map, from = null) {
  // Values copied: the payload is a view of the reader's reused buffer.
  const batch = readBatch(p, (at, end) =>
    from && end - at >= DEFER_BYTES ? new Stored(from.fd, from.pos + at, p.subarray(at, end)) : new Uint8Array(p.subarray(at, end)),
  );
  if (batch === null) return -1;
  for (const k of batch.delete) map.delete(k);
  for (const [k, v] of batch.put) map.set(k, v);
  return batch.put.length;
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
export function openPart(dir, kind, gen, size = null) {
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


/**
 * Reads the whole store in `dir` without changing anything. Returns the
 * entries and what open needs to repair: the live journal (and its torn
 * tail, if any) and the files no longer needed. With `keep` (an array):
 * long values are left in the files, whose fds it gets (the caller closes
 * them once the entries are handed over; on a throw they are closed here).
 */
export function readStore(dir, names, keep = null) {
  try {
    return readStoreFiles(dir, names, keep);
  } catch (e) {
    if (keep) closeAll(keep);
    throw e;
  }
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
