// What etcd 3.4's generated Unmarshal (gogoproto) refuses in a request
// message, in its words: etcd answers a message it cannot read with
// Internal "grpc: error unmarshalling request: <these words>". protobufjs
// reads by field number whatever the wire type says, so it would take some
// of these messages (and read nonsense from them); the server checks a
// request with this first. Only etcd's own packages are gogo-generated
// (grpc-go's health messages are not: server/grpc.mjs).
import { messages, enums } from "../etcd/proto/schema.mjs";

const VARINT = new Set(["int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"]);
const EOF = "unexpected EOF";
const OVERFLOW = "proto: integer overflow";
const NEGATIVE = "proto: negative length found during unmarshaling";

// Go's name for a proto field (protoc-gen-gogo's CamelCase): range_end ->
// RangeEnd, peerURLs -> PeerURLs.
function goName(name) {
  let out = name[0] === "_" ? "X" : "";
  for (let i = out ? 1 : 0; i < name.length; i++) {
    let c = name[i];
    if (c === "_" && i + 1 < name.length && /[a-z]/.test(name[i + 1])) continue;
    if (/[a-z]/.test(c)) c = c.toUpperCase();
    out += c;
    while (i + 1 < name.length && /[a-z]/.test(name[i + 1])) out += name[++i];
  }
  return out;
}

const checked = new Map(); // type -> { name, fields: [number] -> { goName, wire, message, packable } }
function plan(type) {
  let p = checked.get(type);
  if (!p) {
    const fields = [];
    for (const [id, name, t, flags = ""] of messages[type]) {
      const numeric = VARINT.has(t) || Boolean(enums[t]);
      fields[id] = { goName: goName(name), wire: numeric ? 0 : 2, message: messages[t] ? t : null, packable: numeric && flags.includes("r") };
    }
    p = { name: type.slice(type.lastIndexOf(".") + 1), fields };
    checked.set(type, p);
  }
  return p;
}

// The offset after the last varint read (varint() returns only the value:
// no array per field on the path every request takes).
let pos = 0;

// The varint at `at` (pos is set past it), or an error string. Go's loop
// takes at most ten bytes and keeps the low 64 bits. The value is a Number
// up to seven bytes, past that a BigInt (exact: a tag's number, a length's
// sign).
function varint(b, at, end) {
  let v = 0;
  for (let shift = 0; shift < 49; shift += 7) {
    if (at >= end) return EOF;
    const x = b[at++];
    v += (x & 0x7f) * 2 ** shift;
    if (x < 0x80) {
      pos = at;
      return v;
    }
  }
  let big = BigInt(v);
  for (let shift = 49n; ; shift += 7n) {
    if (shift >= 64n) return OVERFLOW;
    if (at >= end) return EOF;
    const x = b[at++];
    big = BigInt.asUintN(64, big | (BigInt(x & 0x7f) << shift));
    if (x < 0x80) {
      pos = at;
      return big;
    }
  }
}

// Past the varint at `at` (pos is set past it) without its value: a field's
// value is only checked, and a 64-bit id must not cost a BigInt. null, or
// an error string.
function skipVarint(b, at, end) {
  for (let n = 0; n < 10; n++) {
    if (at >= end) return EOF;
    if (b[at++] < 0x80) {
      pos = at;
      return null;
    }
  }
  return OVERFLOW;
}

// A length: Go reads it into an int, negative from 2^63 (an error); any
// length this long is past the message's end anyway.
function length(v) {
  if (typeof v === "number") return v;
  return BigInt.asIntN(64, v) < 0n ? NEGATIVE : Number.MAX_SAFE_INTEGER;
}
const wireOf = (tag) => (typeof tag === "number" ? tag % 8 : Number(tag & 7n));
// A tag's field number, cut to an int32 as Go's conversion does.
const fieldOf = (tag) => (typeof tag === "number" ? Math.floor(tag / 8) | 0 : Number(BigInt.asIntN(32, tag >> 3n)));

// skipRpc: the length of the unknown field at `at`, or an error string.
function skip(b, at, end) {
  const start = at;
  const tag = varint(b, at, end);
  if (typeof tag === "string") return tag;
  at = pos;
  switch (wireOf(tag)) {
    case 0:
      return skipVarint(b, at, end) ?? pos - start;
    case 1:
      return at + 8 - start;
    case 2: {
      const n = varint(b, at, end);
      if (typeof n === "string") return n;
      const len = length(n);
      return typeof len === "string" ? len : pos + len - start;
    }
    case 3:
      // A group: fields until its end.
      for (;;) {
        const inner = varint(b, at, end);
        if (typeof inner === "string") return inner;
        if (wireOf(inner) === 4) return pos - start;
        const n = skip(b, at, end);
        if (typeof n === "string") return n;
        at += n;
      }
    case 4:
      return at - start;
    case 5:
      return at + 4 - start;
    default:
      return `proto: illegal wireType ${wireOf(tag)}`;
  }
}

/** A checker for `type`: (bytes) => the error etcd's Unmarshal gives for them, or null. */
export function unmarshalChecker(type) {
  let p = null;
  return (b) => check((p ??= plan(type)), b, 0, b.length);
}

function check({ name, fields }, b, start, end) {
  let at = start;
  while (at < end) {
    const tag = varint(b, at, end);
    if (typeof tag === "string") return tag;
    const next = pos;
    const wireType = wireOf(tag);
    if (wireType === 4) return `proto: ${name}: wiretype end group for non-group`;
    // (Go prints the whole tag varint as the "wire type".)
    const num = fieldOf(tag);
    if (num <= 0) return `proto: ${name}: illegal tag ${num} (wire type ${tag})`;
    const f = fields[num];
    if (!f) {
      const n = skip(b, at, end);
      if (typeof n === "string") return n;
      if (at + n > end) return EOF;
      at += n;
      continue;
    }
    at = next;
    if (f.packable && wireType === 2) {
      const n = varint(b, at, end);
      if (typeof n === "string") return n;
      const len = length(n);
      if (typeof len === "string") return len;
      const stop = pos + len;
      if (stop > end) return EOF;
      for (at = pos; at < stop; at = pos) {
        const e = skipVarint(b, at, end);
        if (e) return e;
      }
      continue;
    }
    if (wireType !== f.wire) return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
    if (f.wire === 0) {
      const e = skipVarint(b, at, end);
      if (e) return e;
      at = pos;
      continue;
    }
    const v = varint(b, at, end);
    if (typeof v === "string") return v;
    const len = length(v);
    if (typeof len === "string") return len;
    const from = pos;
    const stop = from + len;
    if (stop > end) return EOF;
    if (f.message) {
      const inner = check(plan(f.message), b, from, stop);
      if (inner) return inner;
    }
    at = stop;
  }
  return at > end ? EOF : null;
}
