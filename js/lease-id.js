// Lease ids, one home for every form they take: the API's 16 lowercase hex
// digits (as etcdctl prints them), the core's signed 64-bit integer (etcd's
// int64), which crosses into wasm as two u32 halves, the wire's decimal
// int64, and Go's `%x` that etcd's recipes put in keys. The binding, the
// client and the etcd API all convert here. No wasm in this module's graph.
import { invalid } from "./errors.js";

// Hex digit values by char code; -1 for anything else (uppercase included:
// ids are lowercase, as etcdctl prints them).
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE["0123456789abcdef".charCodeAt(i)] = i;

// A loop over char codes: a regex plus two parseInt calls cost a fifth of
// a renew in profiles.
function hexHalf(s, from) {
  let v = 0;
  for (let i = from; i < from + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c < 128 ? HEX_VALUE[c] : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

function badId(id, what) {
  return typeof id === "string"
    ? invalid(`${what} must be 16 lowercase hex digits, got ${JSON.stringify(id.slice(0, 40))}`)
    : invalid(`${what} must be a 16-digit hex string or a bigint, got ${typeof id}`);
}

const MIN_ID = -(2n ** 63n);
const ID_END = 2n ** 64n;

function bigId(id, what) {
  if (typeof id !== "bigint") throw badId(id, what);
  if (id < MIN_ID || id >= ID_END) throw invalid(`${what} ${id} is outside 64 bits`);
  return BigInt.asUintN(64, id);
}

// An id crosses into wasm as two u32 halves, each from its own function: no
// pair allocated per call, and nothing kept between calls.
/** The high u32 of a lease id (16 hex digits or a bigint); InvalidArgument otherwise. */
export function high(id, what) {
  if (typeof id !== "string") return Number(bigId(id, what) >> 32n);
  const h = id.length === 16 ? hexHalf(id, 0) : -1;
  if (h < 0) throw badId(id, what);
  return h;
}

/** The low u32 of a lease id (16 hex digits or a bigint); InvalidArgument otherwise. */
export function low(id, what) {
  if (typeof id !== "string") return Number(bigId(id, what) & 0xffffffffn);
  const l = id.length === 16 ? hexHalf(id, 8) : -1;
  if (l < 0) throw badId(id, what);
  return l;
}

// Each hex digit's character code. An id is made in one fromCharCode call:
// Number#toString(16) + padStart was the top cost of get and grant in
// profiles, and joining 2-digit strings from a table made a string per
// join (165 ns an id in Node 20, against ~100 this way).
const DIGIT = Array.from("0123456789abcdef", (c) => c.charCodeAt(0));

/** A lease id's u32 halves as its 16 hex digits. */
export function hexId(hi, lo) {
  const d = DIGIT;
  return String.fromCharCode(
    d[hi >>> 28], d[(hi >>> 24) & 15], d[(hi >>> 20) & 15], d[(hi >>> 16) & 15],
    d[(hi >>> 12) & 15], d[(hi >>> 8) & 15], d[(hi >>> 4) & 15], d[hi & 15],
    d[lo >>> 28], d[(lo >>> 24) & 15], d[(lo >>> 20) & 15], d[(lo >>> 16) & 15],
    d[(lo >>> 12) & 15], d[(lo >>> 8) & 15], d[(lo >>> 4) & 15], d[lo & 15],
  );
}

/**
 * A lease id from elsewhere (etcdctl's 16 hex digits, or a bigint) as the
 * id the API returns; throws InvalidArgument for anything else.
 */
export function leaseId(id) {
  const hi = high(id, "lease id");
  const lo = low(id, "lease id");
  return typeof id === "string" ? id : hexId(hi, lo);
}

/** A lease id (hex or bigint, or null for none) as the signed 64-bit value the core keeps. */
export function leaseI64(id, what = "lease") {
  if (id === undefined || id === null) return 0n;
  // A bigint (the etcd API's, from the wire) needs no halves.
  if (typeof id === "bigint") return BigInt.asIntN(64, bigId(id, what));
  const hi = high(id, what);
  const lo = low(id, what);
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
}

/** The core's signed 64-bit lease id as the API's hex id, or null for 0. */
export function hexOfI64(v) {
  if (v === 0n) return null;
  const u = BigInt.asUintN(64, v);
  return hexId(Number(u >> 32n), Number(u & 0xffffffffn));
}

const SHORT_HEX = /^[0-9a-f]{1,16}$/;

/**
 * A lease id as a client takes it (1 to 16 hex digits, or a bigint) as a
 * signed 64-bit bigint, etcd's int64.
 */
export function leaseBig(id, what = "lease id") {
  if (typeof id === "bigint") return BigInt.asIntN(64, bigId(id, what));
  if (typeof id === "string" && SHORT_HEX.test(id)) return BigInt.asIntN(64, BigInt("0x" + id));
  throw invalid(`${what} must be lowercase hex digits (as etcdctl prints it) or a bigint, got ${JSON.stringify(String(id)).slice(0, 40)}`);
}

/** etcd's int64 (number, bigint or decimal string) as 16 lowercase hex digits. */
export function leaseHex(v) {
  return BigInt.asUintN(64, BigInt(v)).toString(16).padStart(16, "0");
}

/** The API's hex id as the signed int64 the wire carries (a bigint). */
export function leaseInt64(hex) {
  return BigInt.asIntN(64, BigInt("0x" + hex));
}

/** Go's `%x` of an int64 lease id (a bigint): the suffix etcd's concurrency recipes put on their keys. */
export function leaseGoHex(id) {
  return id.toString(16);
}
