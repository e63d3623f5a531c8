// The JSON gateway's encoding, as etcd 3.4's grpc-gateway (golang/protobuf
// jsonpb, OrigName) does it: int64/uint64 as strings, bytes as base64, enums
// by name, zero values left out (oneof members kept), proto field names out;
// in, proto or lowerCamelCase names, numbers or strings for integers, enum
// names or numbers, unknown fields ignored. Errors carry the Go messages
// clients see from etcd. Web standards only (it runs in workers too).
//
// Inside the server a message is a plain object keyed by proto field names:
// 64-bit integers are decimal strings, bytes are Uint8Arrays, enums are names.
import { messages, enums } from "./proto/schema.mjs";
import { Code, GrpcError } from "./errors.mjs";

const INT64 = new Set(["int64", "uint64", "sint64", "fixed64", "sfixed64"]);
const INT32 = new Set(["int32", "uint32", "sint32", "fixed32", "sfixed32"]);
const MAX_DEPTH = 64;

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// type -> Map(name or camelCase name -> field)
const inputNames = new Map();
function fieldsByName(type) {
  let m = inputNames.get(type);
  if (!m) {
    m = new Map();
    for (const [id, name, t, flags = ""] of messages[type]) {
      const f = { id, name, type: t, repeated: flags.includes("r"), oneof: flags.includes("o") };
      m.set(name, f);
      m.set(camel(name), f);
    }
    inputNames.set(type, m);
  }
  return m;
}

const bad = (message) => new GrpcError(Code.InvalidArgument, message);
const jsonKind = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "object" ? "object" : typeof v === "boolean" ? "bool" : typeof v);
// Go's name for an enum type: etcdserverpb.RangeRequest_SortOrder.
const goEnum = (type) => type.replace(/^([^.]+)\.(.*)$/, (_, pkg, rest) => `${pkg}.${rest.replaceAll(".", "_")}`);

// Bad input named in an error message, at most this long: etcd's body limit
// bounds what Go echoes, but a 1.9 MB number need not come back whole.
const SHOWN_CHARS = 64;
const shown = (text) => (text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text);

function integer(v, type) {
  const bits = INT64.has(type) ? 64 : 32;
  const unsigned = type.startsWith("u") || type.startsWith("fixed");
  const goType = `${unsigned ? "uint" : "int"}${bits}`;
  let text;
  if (typeof v === "number") text = Number.isInteger(v) ? BigInt(v).toString() : String(v);
  else if (typeof v === "string") {
    // jsonpb parses a quoted number's content as a JSON number.
    const t = v.trim();
    if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(t)) {
      const c = t === "" ? "" : t[0];
      throw bad(c === "" ? "unexpected end of JSON input" : `invalid character '${c}' looking for beginning of value`);
    }
    text = /^-?\d+$/.test(t) ? t : String(Number(t));
  } else throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type ${goType}`);
  if (!/^-?\d+$/.test(text)) throw bad(`json: cannot unmarshal number ${shown(text)} into Go value of type ${goType}`);
  // Past 21 digits no 64-bit value fits: no need to parse it.
  if (text.replace("-", "").length > 21) throw bad(`json: cannot unmarshal number ${shown(text)} into Go value of type ${goType}`);
  const n = BigInt(text);
  const min = unsigned ? 0n : -(1n << BigInt(bits - 1));
  const max = unsigned ? (1n << BigInt(bits)) - 1n : (1n << BigInt(bits - 1)) - 1n;
  if (n < min || n > max) throw bad(`json: cannot unmarshal number ${shown(text)} into Go value of type ${goType}`);
  return bits === 64 ? n.toString() : Number(n);
}

const B64 = /^[A-Za-z0-9+/]*$/;

/** Go's base64.StdEncoding: padding required, \r and \n skipped. */
export function decodeBase64(s) {
  const t = s.replace(/[\r\n]/g, "");
  const body = t.replace(/={1,2}$/, "");
  const badChar = [...body].findIndex((c) => !B64.test(c));
  if (badChar >= 0) throw bad(`illegal base64 data at input byte ${badChar}`);
  if (t.length % 4 !== 0 || (t.length - body.length === 2 && body.length % 4 !== 2) || (t.length - body.length === 1 && body.length % 4 !== 3)) {
    throw bad(`illegal base64 data at input byte ${t.length - (t.length % 4 || 4)}`);
  }
  const bin = atob(t);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const ALPHABET = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
const ascii = new TextDecoder();

/** Standard base64 with padding: the runtime's encoder when it has one, else a table. */
export function encodeBase64(bytes) {
  if (typeof bytes.toBase64 === "function") return bytes.toBase64();
  if (globalThis.Buffer) return globalThis.Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("base64");
  const n = bytes.length;
  const out = new Uint8Array(Math.ceil(n / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out[o++] = ALPHABET[v >> 18];
    out[o++] = ALPHABET[(v >> 12) & 63];
    out[o++] = ALPHABET[(v >> 6) & 63];
    out[o++] = ALPHABET[v & 63];
  }
  if (i < n) {
    const v = (bytes[i] << 16) | ((i + 1 < n ? bytes[i + 1] : 0) << 8);
    out[o++] = ALPHABET[v >> 18];
    out[o++] = ALPHABET[(v >> 12) & 63];
    out[o++] = i + 1 < n ? ALPHABET[(v >> 6) & 63] : 61;
    out[o++] = 61;
  }
  return ascii.decode(out);
}

function value(f, v, depth) {
  const t = f.type;
  if (messages[t]) return message(t, v, depth + 1);
  if (enums[t]) {
    if (typeof v === "string") {
      if (!(v in enums[t])) throw bad(`unknown value ${shown(JSON.stringify(v))} for enum ${goEnum(t)}`);
      return v;
    }
    const n = integer(v, "int32");
    return Object.keys(enums[t]).find((k) => enums[t][k] === n) ?? n;
  }
  if (INT64.has(t) || INT32.has(t)) return integer(v, t);
  if (t === "bool") {
    if (typeof v !== "boolean") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type bool`);
    return v;
  }
  if (t === "string") {
    if (typeof v !== "string") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type string`);
    return v;
  }
  if (t === "bytes") {
    if (typeof v !== "string") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type []uint8`);
    return decodeBase64(v);
  }
  throw bad(`unsupported field type ${t}`);
}

function message(type, v, depth) {
  if (depth > MAX_DEPTH) throw bad("edge-lease: request nested too deeply");
  if (v === null) return {};
  if (jsonKind(v) !== "object") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type map[string]json.RawMessage`);
  const names = fieldsByName(type);
  const out = {};
  for (const [k, raw] of Object.entries(v)) {
    const f = names.get(k);
    if (!f || raw === null) continue;
    if (f.repeated) {
      if (!Array.isArray(raw)) throw bad(`json: cannot unmarshal ${jsonKind(raw)} into Go value of type []json.RawMessage`);
      out[f.name] = raw.map((x) => value(f, x, depth));
    } else {
      out[f.name] = value(f, raw, depth);
    }
  }
  return out;
}

/** A parsed JSON value (or undefined for an empty body) -> a `type` message. */
export function fromJson(type, v) {
  return v === undefined ? {} : message(type, v, 0);
}

function isZero(f, v) {
  if (v === undefined || v === null) return true;
  if (f.oneof) return false;
  if (f.repeated) return v.length === 0;
  if (messages[f.type]) return false;
  if (enums[f.type]) return v === 0 || enums[f.type][v] === 0;
  if (typeof v === "string") return v === "" || (INT64.has(f.type) && BigInt(v) === 0n);
  if (v instanceof Uint8Array) return v.length === 0;
  return v === 0 || v === false;
}

function out(f, v) {
  const t = f.type;
  if (messages[t]) return toJson(t, v);
  if (enums[t]) return typeof v === "number" ? (Object.keys(enums[t]).find((k) => enums[t][k] === v) ?? v) : v;
  if (INT64.has(t)) return BigInt(v).toString();
  if (t === "bytes") return encodeBase64(v);
  return v;
}

/**
 * JSON.stringify(toJson(type, msg)) in pieces: each element of a repeated
 * message field is its own piece, so a big answer (a Range of every key)
 * can go out as it is encoded instead of as one giant string.
 */
export function* toJsonPieces(type, msg) {
  let sep = "{";
  for (const [id, name, t, flags = ""] of messages[type]) {
    const f = { id, name, type: t, repeated: flags.includes("r"), oneof: flags.includes("o") };
    const v = msg[name];
    if (isZero(f, v)) continue;
    if (f.repeated && messages[t]) {
      yield `${sep}${JSON.stringify(name)}:[`;
      for (let i = 0; i < v.length; i++) yield (i ? "," : "") + JSON.stringify(toJson(t, v[i]));
      yield "]";
    } else {
      yield `${sep}${JSON.stringify(name)}:${JSON.stringify(f.repeated ? v.map((x) => out(f, x)) : out(f, v))}`;
    }
    sep = ",";
  }
  yield sep === "{" ? "{}" : "}";
}

/** A `type` message -> the object etcd's gateway would print. */
export function toJson(type, msg) {
  const o = {};
  for (const [id, name, t, flags = ""] of messages[type]) {
    const f = { id, name, type: t, repeated: flags.includes("r"), oneof: flags.includes("o") };
    const v = msg[name];
    if (isZero(f, v)) continue;
    o[name] = f.repeated ? v.map((x) => out(f, x)) : out(f, v);
  }
  return o;
}

// Reading JSON text. Go decodes one value from the body and ignores what
// follows; the streaming endpoints read values one after another,
// concatenated or whitespace-separated.

const WS = new Set([" ", "\t", "\n", "\r"]);

/**
 * The end offset of the JSON value starting at or after `i` in `text`, as
 * [start, end]; null if only whitespace is left; "partial" if the value is
 * not complete yet (with `final`, the text is all there is, so a literal
 * may end it). Only finds the boundaries: parseValue checks the syntax.
 */
export function scanValue(text, i = 0, final = false) {
  while (i < text.length && WS.has(text[i])) i++;
  if (i >= text.length) return null;
  const start = i;
  const c = text[i];
  if (c !== "{" && c !== "[" && c !== '"') {
    // A bare literal ends at whitespace or a structural character.
    while (i < text.length && !WS.has(text[i]) && !"{}[],:\"".includes(text[i])) i++;
    if (i === start) return [start, start + 1];
    return i < text.length || final ? [start, i] : "partial";
  }
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') {
        inString = false;
        if (depth === 0) return [start, i + 1];
      }
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth <= 0) return [start, i + 1];
    }
  }
  return "partial";
}

// Integers past 2^53 lose precision in JSON.parse: quote long numbers
// (outside strings) first. Every integer field accepts a quoted number.
function quoteLongNumbers(text) {
  if (!/\d{16}/.test(text)) return text;
  let out = "";
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "-" || (ch >= "0" && ch <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9]/.test(text[j])) j++;
      if (j - i > 15 && !/[.eE]/.test(text[j] ?? "")) {
        out += text.slice(last, i) + '"' + text.slice(i, j) + '"';
        last = j;
      }
      i = j - 1;
    }
  }
  return out + text.slice(last);
}

/** Parses one JSON value's text, with Go's message for the common errors. */
export function parseValue(text) {
  try {
    return JSON.parse(quoteLongNumbers(text));
  } catch {
    const c = text.trim()[0];
    if (c !== undefined && !'{["-0123456789tfn'.includes(c)) {
      throw bad(`invalid character '${c}' looking for beginning of value`);
    }
    throw bad(`invalid JSON: ${text.length > 64 ? text.slice(0, 64) + "..." : text}`);
  }
}

/** The first JSON value of a request body (undefined if the body is empty). */
export function parseBody(text) {
  const span = scanValue(text, 0, true);
  if (span === null) return undefined;
  if (span === "partial") throw bad("unexpected EOF");
  return parseValue(text.slice(span[0], span[1]));
}
