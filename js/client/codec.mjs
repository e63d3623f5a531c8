// Conversions shared by the client's modules: keys and values (strings or
// bytes in, bytes inside, strings or bytes out), lease ids (16 hex digits,
// as the engine and etcdctl print them, to and from etcd's int64), etcd's
// prefix end, and base64 for the JSON gateway. Web standards only.

import { prefixEnd } from "../prefix.js";
import { invalid } from "./errors.mjs";

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

const HEX = /^[0-9a-f]{1,16}$/;

/** A lease id (hex string or bigint) as a signed 64-bit bigint, etcd's int64. */
export function leaseBig(id, what = "lease id") {
  if (typeof id === "bigint") {
    if (id < -(2n ** 63n) || id >= 2n ** 64n) throw invalid(`${what} ${id} is outside 64 bits`);
    return BigInt.asIntN(64, id);
  }
  if (typeof id === "string" && HEX.test(id)) return BigInt.asIntN(64, BigInt("0x" + id));
  throw invalid(`${what} must be lowercase hex digits (as etcdctl prints it) or a bigint, got ${JSON.stringify(String(id)).slice(0, 40)}`);
}

/** etcd's int64 (number, bigint or decimal string) as 16 lowercase hex digits. */
export function leaseHex(v) {
  return BigInt.asUintN(64, BigInt(v)).toString(16).padStart(16, "0");
}

/** Go's `%x` of the int64 lease id: the suffix etcd's concurrency package puts on its keys. */
export function leaseGoHex(id) {
  return leaseBig(id).toString(16);
}

/** etcd's int64 fields as a JS number (revisions, versions, counts, TTLs). */
export function int(v) {
  return v === undefined || v === null ? 0 : Number(v);
}

// ---- base64 (the gateway's bytes) ------------------------------------------

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64_VALUE[B64.charCodeAt(i)] = i;
B64_VALUE["-".charCodeAt(0)] = 62; // URL-safe input too
B64_VALUE["_".charCodeAt(0)] = 63;

export function b64encode(bytes) {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
  }
  if (i < bytes.length) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8);
    out += B64[n >> 18] + B64[(n >> 12) & 63];
    out += i + 1 < bytes.length ? B64[(n >> 6) & 63] + "=" : "==";
  }
  return out;
}

export function b64decode(s) {
  if (!s) return new Uint8Array(0);
  let len = s.length;
  while (len > 0 && s[len - 1] === "=") len--;
  const out = new Uint8Array(Math.floor((len * 3) / 4));
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? B64_VALUE[c] : -1;
    if (v < 0) throw new Error(`invalid base64 from the server: ${JSON.stringify(s.slice(0, 40))}`);
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

/** A lease id from elsewhere (etcdctl's hex, a bigint) as the 16 hex digits the API uses. */
export function leaseId(id) {
  return leaseHex(leaseBig(id));
}

export { prefixEnd };
