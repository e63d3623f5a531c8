// Random bytes for the Node bundles (scripts/bundle.mjs puts this in place
// of the wasm glue's globalThis.crypto.getRandomValues, with which the core
// seeds its hash maps and draws lease ids). On Node the first touch of
// globalThis.crypto, or of node:crypto, loads the crypto modules (a few ms,
// a large part of a cold start) for 16 bytes. node:fs is loaded already, and
// the OS's random device is the source both would read in the end. Where
// there is no such device (Windows), webcrypto as before.
//
// The device is read POOL bytes at a time and each byte handed out once:
// the core asks for 8 to 256 bytes a call (a lessor's seeds, then 256 for
// every 32 ids it grants), and an open, read and close per call was a tenth
// of a grant+put loop's time.
import { closeSync, openSync, readSync } from "node:fs";

const POOL = 4096;
/** device -> { bytes, at }: what was read ahead and not handed out yet. */
const pools = new Map();

/** Fills `bytes` from `device`; false if it cannot be opened. */
function readDevice(bytes, device) {
  let fd;
  try {
    fd = openSync(device, "r");
  } catch {
    return false;
  }
  try {
    for (let at = 0; at < bytes.length; ) {
      const n = readSync(fd, bytes, at, bytes.length - at, null);
      if (n <= 0) throw new Error(`${device}: no more bytes`);
      at += n;
    }
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Fills `bytes` with random bytes from `device`, or from webcrypto without one. */
export function fillRandom(bytes, device = "/dev/urandom") {
  if (bytes.length > POOL) return readDevice(bytes, device) ? bytes : globalThis.crypto.getRandomValues(bytes);
  let pool = pools.get(device);
  if (!pool || POOL - pool.at < bytes.length) {
    const fresh = new Uint8Array(POOL);
    if (!readDevice(fresh, device)) return globalThis.crypto.getRandomValues(bytes);
    pool = { bytes: fresh, at: 0 };
    pools.set(device, pool);
  }
  const end = pool.at + bytes.length;
  bytes.set(pool.bytes.subarray(pool.at, end));
  // Handed out: not kept.
  pool.bytes.fill(0, pool.at, end);
  pool.at = end;
  return bytes;
}
