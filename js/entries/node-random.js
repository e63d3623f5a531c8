// Random bytes for the Node bundles (scripts/bundle.mjs puts this in place
// of the wasm glue's globalThis.crypto.getRandomValues, with which the core
// seeds its hash maps). On Node the first touch of globalThis.crypto, or
// of node:crypto, loads the crypto modules (a few ms, a large part of a
// cold start) for 16 bytes. node:fs is loaded already, and the OS's random device is
// the source both would read in the end. Where there is no such device
// (Windows), webcrypto as before.
import { closeSync, openSync, readSync } from "node:fs";

/** Fills `bytes` with random bytes from `device`, or from webcrypto without one. */
export function fillRandom(bytes, device = "/dev/urandom") {
  let fd;
  try {
    fd = openSync(device, "r");
  } catch {
    return globalThis.crypto.getRandomValues(bytes);
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
  return bytes;
}
