// etcd-shaped requests (range, deleteRange, txn, watch): checked, with
// their defaults filled in and names turned into the core's numbers, ready
// for js/codec.js. Keys and values are strings (UTF-8) or bytes.

import { leaseI64 } from "./lease-id.js";
import { bytesOf } from "./codec.js";
import { prefixEnd } from "./prefix.js";
import { checkInt, checkKey, queryBound } from "./checks.js";
import { invalid } from "./errors.js";

const SORT_ORDER = { none: 0, ascend: 1, descend: 2 };
const SORT_TARGET = { key: 0, version: 1, create: 2, mod: 3, value: 4 };
const TARGET = { version: 0, create: 1, mod: 2, value: 3, lease: 4 };
const RESULT = { "=": 0, ">": 1, "<": 2, "!=": 3 };
const NO_BYTES = new Uint8Array(0);

function object(arg, what) {
  if (arg === null || typeof arg !== "object") throw invalid(`${what} must be an object`);
  return arg;
}

function bytes(v, what, max) {
  if (typeof v === "string") {
    checkKey(v, max, what);
    return bytesOf(v);
  }
  if (v instanceof Uint8Array) {
    if (v.length > max) throw invalid(`${what} is longer than ${max} bytes`);
    return v;
  }
  throw invalid(`${what} must be a string or a Uint8Array, got ${v === null ? "null" : typeof v}`);
}

function int(v, what, fallback = 0) {
  if (v === undefined || v === null) return fallback;
  checkInt(v, what);
  // (etcd's are int64s, and the codec carries no more.)
  if (v < -(2 ** 63) || v >= 2 ** 63) throw invalid(`${what} must be within an int64, got ${v}`);
  return v;
}

function name(table, v, what, fallback) {
  if (v === undefined || v === null) return fallback;
  const n = table[v];
  if (n === undefined) throw invalid(`${what} must be one of ${Object.keys(table).join(", ")}, got ${String(v)}`);
  return n;
}


// key plus rangeEnd, or prefix: true. Compared, never stored: bounded by
// queryBound(max).
function keyRange(r, what, maxKey) {
  const max = queryBound(maxKey);
  const key = bytes(r.key, `${what} key`, max);
  if (r.prefix) {
    if (r.rangeEnd !== undefined && r.rangeEnd !== null) throw invalid(`${what}: give prefix or rangeEnd, not both`);
    return { key, rangeEnd: prefixEnd(key) };
  }
  const rangeEnd = r.rangeEnd === undefined || r.rangeEnd === null ? NO_BYTES : bytes(r.rangeEnd, `${what} rangeEnd`, max);
  return { key, rangeEnd };
}

// No object spread of keyRange's result below: V8 builds such an object
// through a slow path when more properties follow (~7 µs for a range
// request, 5% of the server's CPU per Range).
export function rangeRequest(arg, max) {
  const r = object(arg, "range request");
  const { key, rangeEnd } = keyRange(r, "range", max);
  return {
    key,
    rangeEnd,
    revision: int(r.revision, "revision"),
    limit: int(r.limit, "limit"),
    sortOrder: name(SORT_ORDER, r.sortOrder, "sortOrder", 0),
    sortTarget: name(SORT_TARGET, r.sortTarget, "sortTarget", 0),
    keysOnly: Boolean(r.keysOnly),
    countOnly: Boolean(r.countOnly),
    minModRevision: int(r.minModRevision, "minModRevision"),
    maxModRevision: int(r.maxModRevision, "maxModRevision"),
    minCreateRevision: int(r.minCreateRevision, "minCreateRevision"),
    maxCreateRevision: int(r.maxCreateRevision, "maxCreateRevision"),
  };
}

export function putRequest(arg, maxKey, maxValue) {
  const p = object(arg, "put request");
  const text = typeof p.value === "string";
  return {
    key: bytes(p.key, "put key", maxKey),
    value: p.value === undefined && p.ignoreValue ? NO_BYTES : bytes(p.value, "put value", maxValue),
    lease: leaseI64(p.lease),
    prevKv: Boolean(p.prevKv),
    ignoreValue: Boolean(p.ignoreValue),
    ignoreLease: Boolean(p.ignoreLease),
    text,
  };
}

export function deleteRequest(arg, max) {
  const d = object(arg, "deleteRange request");
  const { key, rangeEnd } = keyRange(d, "deleteRange", max);
  return { key, rangeEnd, prevKv: Boolean(d.prevKv) };
}

function compare(arg, maxKey, maxValue) {
  const c = object(arg, "compare");
  const target = name(TARGET, c.target, "compare target", undefined);
  if (target === undefined) throw invalid("compare target is required");
  const result = name(RESULT, c.result, "compare result", undefined);
  if (result === undefined) throw invalid("compare result is required (=, !=, <, >)");
  let value;
  if (target === TARGET.value) value = bytes(c.value ?? "", "compare value", queryBound(maxValue));
  else if (target === TARGET.lease) value = leaseI64(c.value);
  else value = int(c.value, "compare value");
  const { key, rangeEnd } = keyRange(c, "compare", maxKey);
  return { key, rangeEnd, target, result, value };
}

// The engine's codec's limit (crates/wasm/src/codec.rs): past etcd's
// default --max-txn-ops (128), which refuses deeper Txns anyway.
const MAX_TXN_DEPTH = 256;

export function txnRequest(arg, maxKey, maxValue, depth = 0) {
  const t = object(arg, "txn request");
  if (depth > MAX_TXN_DEPTH) throw invalid("transactions nest too deep");
  const list = (v, what) => {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) throw invalid(`${what} must be an array`);
    return v;
  };
  const op = (o) => {
    object(o, "txn op");
    if (o.range) return { range: rangeRequest(o.range, maxKey) };
    if (o.put) return { put: putRequest(o.put, maxKey, maxValue) };
    if (o.deleteRange) return { deleteRange: deleteRequest(o.deleteRange, maxKey) };
    if (o.txn) return { txn: txnRequest(o.txn, maxKey, maxValue, depth + 1) };
    throw invalid("a txn op must have one of range, put, deleteRange, txn");
  };
  return {
    compare: list(t.compare, "compare").map((c) => compare(c, maxKey, maxValue)),
    success: list(t.success, "success").map(op),
    failure: list(t.failure, "failure").map(op),
  };
}

export function watchRequest(arg, max) {
  const q = object(arg, "watch request");
  return {
    ...keyRange(q, "watch", max),
    startRevision: int(q.startRevision, "startRevision"),
    prevKv: Boolean(q.prevKv),
    noPut: Boolean(q.noPut),
    noDelete: Boolean(q.noDelete),
  };
}
