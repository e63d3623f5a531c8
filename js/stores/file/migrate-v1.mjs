// Version 1 stores (files `journal` and `snapshot`, magic "edgelse1"),
// converted to version 2 on their first open.

import { readFileSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { createFile, fsyncDir } from "./durable-fs.mjs";
import { corrupt, crc32, encodeSnapshot, FILE_HEADER, fileHeader, isZero, JOURNAL, MAGIC_V1 } from "./format.mjs";
import { applyPayload } from "./replay.mjs";

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
export function migrateV1(dir, names) {
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
