// What etcd 3.4's generated Unmarshal (gogoproto) refuses in a request
// message, in its words: etcd answers a message it cannot read with
// Internal "grpc: error unmarshalling request: <these words>". protobufjs
// reads by field number whatever the wire type says, so it would take some
// of these messages (and read nonsense from them); the server checks a
// request with this first. Only etcd's own packages are gogo-generated
// (grpc-go's health messages are not: server/grpc.mjs).
import { messages, enums } from "./schema.mjs";

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

const checked = new Map(); // type -> { name, fields: Map(number -> { goName, wire, message, packable }) }
function plan(type) {
  let p = checked.get(type);
  if (!p) {
    const fields = new Map();
    for (const [id, name, t, flags = ""] of messages[type]) {
      const numeric = VARINT.has(t) || Boolean(enums[t]);
      fields.set(id, { goName: goName(name), wire: numeric ? 0 : 2, message: messages[t] ? t : null, packable: numeric && flags.includes("r") });
    }
    p = { name: type.slice(type.lastIndexOf(".") + 1), fields };
    checked.set(type, p);
  }
  return p;
}

// A varint at `at`: [value, next offset], or an error string. Go's loop
// takes at most ten bytes and keeps the low 64 bits. The value is a Number
// up to seven bytes, past that a BigInt (exact: a tag's number, a length's
// sign).
function varint(b, at, end) {
  let v = 0;
  for (let shift = 0; shift < 49; shift += 7) {
    if (at >= end) return EOF;
    const x = b[at++];
    v += (x & 0x7f) * 2 ** shift;
    if (x < 0x80) return [v, at];
  }
  let big = BigInt(v);
  for (let shift = 49n; ; shift += 7n) {
    if (shift >= 64n) return OVERFLOW;
    if (at >= end) return EOF;
    const x = b[at++];
    big = BigInt.asUintN(64, big | (BigInt(x & 0x7f) << shift));
    if (x < 0x80) return [big, at];
  }
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
  at = tag[1];
  switch (wireOf(tag[0])) {
    case 0: {
      const v = varint(b, at, end);
      return typeof v === "string" ? v : v[1] - start;
    }
    case 1:
      return at + 8 - start;
    case 2: {
      const n = varint(b, at, end);
      if (typeof n === "string") return n;
      const len = length(n[0]);
      return typeof len === "string" ? len : n[1] + len - start;
    }
    case 3:
      // A group: fields until its end.
      for (;;) {
        const inner = varint(b, at, end);
        if (typeof inner === "string") return inner;
        if (wireOf(inner[0]) === 4) return inner[1] - start;
        const n = skip(b, at, end);
        if (typeof n === "string") return n;
        at += n;
      }
    case 4:
      return at - start;
    case 5:
      return at + 4 - start;
    default:
      return `proto: illegal wireType ${wireOf(tag[0])}`;
  }
}

/** The error etcd's Unmarshal of `type` gives for `b` (bytes start..end), or null. */
export function unmarshalError(type, b, start = 0, end = b.length) {
  const { name, fields } = plan(type);
  let at = start;
  while (at < end) {
    const tag = varint(b, at, end);
    if (typeof tag === "string") return tag;
    const wireType = wireOf(tag[0]);
    if (wireType === 4) return `proto: ${name}: wiretype end group for non-group`;
    // (Go prints the whole tag varint as the "wire type".)
    const num = fieldOf(tag[0]);
    if (num <= 0) return `proto: ${name}: illegal tag ${num} (wire type ${tag[0]})`;
    const f = fields.get(num);
    if (!f) {
      const n = skip(b, at, end);
      if (typeof n === "string") return n;
      if (at + n > end) return EOF;
      at += n;
      continue;
    }
    at = tag[1];
    if (f.packable && wireType === 2) {
      const n = varint(b, at, end);
      if (typeof n === "string") return n;
      const len = length(n[0]);
      if (typeof len === "string") return len;
      const stop = n[1] + len;
      if (stop > end) return EOF;
      for (at = n[1]; at < stop; ) {
        const v = varint(b, at, end);
        if (typeof v === "string") return v;
        at = v[1];
      }
      continue;
    }
    if (wireType !== f.wire) return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
    const v = varint(b, at, end);
    if (typeof v === "string") return v;
    if (f.wire === 0) {
      at = v[1];
      continue;
    }
    const len = length(v[0]);
    if (typeof len === "string") return len;
    const stop = v[1] + len;
    if (stop > end) return EOF;
    if (f.message) {
      const inner = unmarshalError(f.message, b, v[1], stop);
      if (inner) return inner;
    }
    at = stop;
  }
  return at > end ? EOF : null;
}
