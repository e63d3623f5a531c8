// The protobuf-encoded size of a message (jsonpb.mjs's representation),
// so the gateway applies etcd's size limits to what the gRPC request would be.
import { messages, enums } from "./proto/schema.mjs";

const varint = (n) => {
  let v = BigInt.asUintN(64, BigInt(n));
  let s = 1;
  while (v >= 128n) {
    v >>= 7n;
    s++;
  }
  return s;
};
/** Bytes of the varint length prefix in front of `n` bytes (n below 2^35). */
export const lengthSize = (n) => (n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : n < 268435456 ? 4 : 5);

const FIXED = { fixed32: 4, sfixed32: 4, float: 4, fixed64: 8, sfixed64: 8, double: 8 };
const utf8 = new TextEncoder();

function valueSize(type, v) {
  if (messages[type]) {
    const n = encodedSize(type, v);
    return varint(n) + n;
  }
  if (enums[type]) return varint(typeof v === "number" ? v : enums[type][v] ?? 0);
  if (type === "bytes") return varint(v.length) + v.length;
  if (type === "string") {
    const n = utf8.encode(v).length;
    return varint(n) + n;
  }
  if (type === "bool") return 1;
  return FIXED[type] ?? varint(v);
}

// proto3 writes no field at its default value, except a oneof member.
function isDefault(t, v) {
  if (messages[t]) return false;
  if (enums[t]) return v === 0 || enums[t][v] === 0;
  if (t === "string" || t === "bytes") return v.length === 0;
  if (typeof v === "string") return BigInt(v) === 0n; // a 64-bit integer in decimal
  return v === 0 || v === 0n || v === false;
}

export function encodedSize(type, msg) {
  let size = 0;
  for (const [id, name, t, flags = ""] of messages[type]) {
    const v = msg[name];
    if (v === undefined || v === null) continue;
    const tag = varint(id << 3);
    if (!flags) {
      if (!isDefault(t, v)) size += tag + valueSize(t, v);
    } else if (!flags.includes("r")) size += tag + valueSize(t, v);
    else if (messages[t] || t === "string" || t === "bytes") for (const x of v) size += tag + valueSize(t, x);
    else if (v.length > 0) {
      // Repeated numbers are packed: one tag, one length.
      let n = 0;
      for (const x of v) n += valueSize(t, x);
      size += tag + lengthSize(n) + n;
    }
  }
  return size;
}
