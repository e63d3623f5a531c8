// The entries a restore is handed: each handed out once and let go as it
// is read, long values read from their file only then (Stored), so that a
// restore never holds the state twice (here and in the engine).

import { closeSync, readSync } from "node:fs";
import { LeaseError } from "../../errors.js";
import { corrupt, crc32 } from "./format.mjs";

// Values this long or longer are not copied out of a file being replayed
// for a restore: the entry says where the value is (`Stored`), and it is
// read once the entry is handed over (handOver). So a restore holds each
// large value once, in the engine, rather than here as well.
export const DEFER_BYTES = 4096;


// A value left in a store file: `len` bytes at `pos` of the open `fd`,
// with their CRC-32, so that a file changed or closed (its fd reused)
// before the value is read is an error, never another value.
export class Stored {
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


export function closeAll(fds) {
  for (const fd of fds.splice(0)) closeSync(fd);
}


// `list`'s entries handed out once, each let go as it is read (a value
// left in its file read then): a restore from them never holds the whole
// state twice (here and in the engine). They are let go, and `fds` (the
// files those values are in) closed, once all are read, or when the reader
// stops early or fails, or its owner lets them go (`return()`); `onRelease`
// hears it. Read once: reading them again is an error, never an empty
// store.
export function handOver(list, fds = [], onRelease = null) {
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
