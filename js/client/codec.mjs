// Conversions shared by the client's modules: keys and values (strings or
// bytes in, bytes inside, strings or bytes out), lease ids (16 hex digits,
// as the engine and etcdctl print them, to and from etcd's int64), etcd's
// prefix end, and base64 for the JSON gateway. Web standards only.

import { prefixEnd } from "../prefix.js";
import { invalid } from "./errors.mjs";
import { leaseBig, leaseHex } from "../lease-id.js";
import { decodeBase64 } from "../base64.js";

export { leaseBig, leaseHex };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A key or value as bytes: strings are UTF-8. */
export function toBytes(v, what = "key") {
  if (typeof v === "string") return encoder.encode(v);
  if (v instanceof Uint8Array) return v;
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw invalid(`${what} must be a string or a Uint8Array, got ${v === null ? "null" : typeof v}`);
}

/** Bytes as text (UTF-8; invalid sequences become U+FFFD). */
/** A key's bytes as a Map key. */
export const keyId = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

export function toText(bytes) {
  return decoder.decode(bytes);
}

/** A non-empty key as bytes. */
export function keyBytes(key) {
  const b = toBytes(key, "key");
  if (b.length === 0) throw invalid("key must not be empty");
  return b;
}


/**
 * `[key, rangeEnd]` for a range request: `prefix` (an empty key with prefix
 * is every key: etcd's "\0".."\0"), `fromKey` (rangeEnd "\0") or an explicit
 * `rangeEnd`.
 */
export function rangeOf(key, { prefix, fromKey, rangeEnd } = {}) {
  let k = toBytes(key ?? "", "key");
  let end = null;
  if (prefix) {
    if (k.length === 0) {
      k = Uint8Array.of(0);
      end = Uint8Array.of(0);
    } else end = prefixEnd(k);
  } else if (fromKey) {
    if (k.length === 0) k = Uint8Array.of(0);
    end = Uint8Array.of(0);
  } else if (rangeEnd !== undefined && rangeEnd !== null) {
    end = toBytes(rangeEnd, "rangeEnd");
  }
  if (k.length === 0) throw invalid("key must not be empty (use { prefix: true } for every key)");
  return [k, end];
}

// ---- lease ids -------------------------------------------------------------

/** etcd's int64 fields as a JS number (revisions, versions, counts, TTLs). */
export function int(v) {
  return v === undefined || v === null ? 0 : Number(v);
}

// ---- base64 (the gateway's bytes) ------------------------------------------

/** Bytes from the gateway (none: empty). */
export function b64decode(s) {
  if (!s) return new Uint8Array(0);
  return decodeBase64(s, () => new Error(`invalid base64 from the server: ${JSON.stringify(s.slice(0, 40))}`));
}

/** A lease id from elsewhere (etcdctl's hex, a bigint) as the 16 hex digits the API uses. */
export function leaseId(id) {
  return leaseHex(leaseBig(id));
}

export { prefixEnd };
