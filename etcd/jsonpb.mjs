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
import { MAX_MESSAGE_DEPTH } from "./limits.mjs";
import { scanValue } from "./json-values.mjs";
import { decodeBase64, encodeBase64 } from "edge-lease/base64";

const INT64 = new Set(["int64", "uint64", "sint64", "fixed64", "sfixed64"]);
const INT32 = new Set(["int32", "uint32", "sint32", "fixed32", "sfixed32"]);

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// type -> its fields in the order jsonpb reads them: the message's fields as
// declared, then the oneof members (Go keeps a oneof in one struct field,
// which jsonpb reads after the others), each with its two accepted names.
const inputFields = new Map();
function fieldsInOrder(type) {
  let list = inputFields.get(type);
  if (!list) {
    list = messages[type].map(([id, name, t, flags = ""]) => ({ id, name, camel: camel(name), type: t, repeated: flags.includes("r"), oneof: flags.includes("o") }));
    list = [...list.filter((f) => !f.oneof), ...list.filter((f) => f.oneof)];
    inputFields.set(type, list);
  }
  return list;
}

const bad = (message) => new GrpcError(Code.InvalidArgument, message);

// A number written as other than a plain integer (1.5, 1e2) reaches the
// decoder as { [NUMBER]: its text } (parseValue): Go decodes no integer from
// it, and names it as it was written.
const NUMBER = "\u0000n";
const isMarker = (v, key) => v !== null && typeof v === "object" && Object.hasOwn(v, key);
const numberText = (v) => (isMarker(v, NUMBER) && typeof v[NUMBER] === "string" ? v[NUMBER] : null);
// A string value written with escapes reaches it as { [ESCAPED]: its
// value, [RAW]: its text between the quotes } (parseValue): jsonpb reads a
// quoted number or an enum's name as written, escapes and all.
const ESCAPED = "\u0000s";
const RAW = "\u0000r";
const rawText = (v) => (isMarker(v, RAW) && typeof v[RAW] === "string" ? v[RAW] : null);
/** A string value (written with escapes or not), or null. */
const stringOf = (v) => (typeof v === "string" ? v : rawText(v) !== null ? v[ESCAPED] : null);
const jsonKind = (v) =>
  v === null
    ? "null"
    : Array.isArray(v)
      ? "array"
      : numberText(v) !== null
        ? "number"
        : rawText(v) !== null
          ? "string"
          : typeof v === "object"
            ? "object"
            : typeof v === "boolean"
              ? "bool"
              : typeof v;
// Go's name for an enum type: etcdserverpb.RangeRequest_SortOrder.
const goEnum = (type) => type.replace(/^([^.]+)\.(.*)$/, (_, pkg, rest) => `${pkg}.${rest.replaceAll(".", "_")}`);

// Bad input named in an error message, at most this long: etcd's body limit
// bounds what Go echoes, but a 1.9 MB number need not come back whole.
const SHOWN_CHARS = 64;
const shown = (text) => (text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text);

// An integer field's value (`type`: a proto integer type, or "uint8" for an
// element of bytes given as an array); `goType` names it in errors.
function integer(v, type, goType = null) {
  const bits = INT64.has(type) ? 64 : type === "uint8" ? 8 : 32;
  const unsigned = type.startsWith("u") || type.startsWith("fixed");
  goType ??= `${unsigned ? "uint" : "int"}${bits}`;
  let text = numberText(v);
  if (text !== null) {
    // As written: below, only a plain integer passes.
  } else if (typeof v === "number") text = Number.isInteger(v) ? BigInt(v).toString() : String(v);
  else if (stringOf(v) !== null) {
    // jsonpb parses a quoted number's content, as it was written (escapes
    // and all), as a JSON number.
    const raw = rawText(v) ?? JSON.stringify(v).slice(1, -1);
    const t = raw.trim();
    if (!JSON_NUMBER.test(t)) {
      throw bad(syntaxError(raw, false) ?? `json: cannot unmarshal ${jsonKind(parseValue(t))} into Go value of type ${goType}`);
    }
    text = t;
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

// Bytes given as a JSON array (Go's encoding/json takes one for []byte, an
// element at a time; null leaves an element 0). The first bad element is
// the error.
function bytesOfArray(list) {
  const out = new Uint8Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (x === null) continue;
    // (encoding/json takes no quoted number here, unlike jsonpb's fields.)
    if (stringOf(x) !== null) throw bad("json: cannot unmarshal string into Go value of type uint8");
    out[i] = integer(x, "uint8");
  }
  return out;
}

function value(f, v, depth) {
  const t = f.type;
  if (messages[t]) return message(t, v, depth + 1);
  if (enums[t]) {
    if (stringOf(v) !== null) {
      // (Matched as written: an escaped name is no name.)
      const raw = rawText(v);
      if (raw === null && Object.hasOwn(enums[t], v)) return v;
      throw bad(`unknown value ${shown(JSON.stringify(raw ?? v))} for enum ${goEnum(t)}`);
    }
    const n = integer(v, "int32", goEnum(t));
    return Object.keys(enums[t]).find((k) => enums[t][k] === n) ?? n;
  }
  if (INT64.has(t) || INT32.has(t)) return integer(v, t);
  if (t === "bool") {
    if (typeof v !== "boolean") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type bool`);
    return v;
  }
  if (t === "string") {
    if (stringOf(v) === null) throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type string`);
    return stringOf(v);
  }
  if (t === "bytes") {
    if (Array.isArray(v)) return bytesOfArray(v);
    if (stringOf(v) === null) throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type []uint8`);
    return decodeBase64(stringOf(v), (at) => bad(`illegal base64 data at input byte ${at}`));
  }
  throw bad(`unsupported field type ${t}`);
}

function message(type, v, depth) {
  // (Only a Txn nests: past limits.mjs's depth, etcd's answer for it.)
  if (depth > MAX_MESSAGE_DEPTH) throw bad("etcdserver: too many operations in txn request");
  if (v === null) return {};
  if (jsonKind(v) !== "object") throw bad(`json: cannot unmarshal ${jsonKind(v)} into Go value of type map[string]json.RawMessage`);
  const out = {};
  // The first bad field in jsonpb's order is the error. Given under both
  // names, the camelCase one counts, as in jsonpb.
  for (const f of fieldsInOrder(type)) {
    const raw = Object.hasOwn(v, f.camel) ? v[f.camel] : Object.hasOwn(v, f.name) ? v[f.name] : null;
    if (raw === null) continue;
    if (f.repeated) {
      // (jsonpb looks at a quoted enum value before it sees a list.)
      if (enums[f.type] && stringOf(raw) !== null) {
        const text = rawText(raw);
        throw bad(text === null && Object.hasOwn(enums[f.type], raw) ? `invalid target "slice" for enum ${goEnum(f.type)}` : `unknown value ${shown(JSON.stringify(text ?? raw))} for enum ${goEnum(f.type)}`);
      }
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

// Reading JSON text (where a value ends: json-values.mjs).

// Before JSON.parse, numbers outside strings that it would not give back as
// written (integers past 2^53 lose precision; 1e2 is no integer to Go)
// become { [NUMBER]: text } (numberText), and string values written with
// escapes { [ESCAPED]: the string, [RAW]: its text } (rawText). Their keys
// hold a NUL, which a client can only write as \u0000: in a text without
// that, every marker is the parser's. A text with it (rare) has its markers
// carry a random token of the parse, and a reviver drops the marker keys of
// every object without it: a client's look-alike stays a plain object.
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const TOKEN = "\u0000t";
const jsonKey = (key) => key.replace("\u0000", "\\u0000");
const randomToken = () => Array.from(crypto.getRandomValues(new Uint32Array(4)), (n) => n.toString(36)).join(".");

/** `{ text, token }`: the text with its markers, and their token (null: none needed). */
function markNumbers(text) {
  if (!/\d{16}|\d[.eE]|\\/.test(text)) return { text, token: null };
  const escapes = text.includes("\\");
  const token = escapes && text.includes("\\u0000") ? randomToken() : null;
  const marker = (fields) => (token === null ? `{${fields}}` : `{"${jsonKey(TOKEN)}":"${token}",${fields}}`);
  let out = "";
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      const start = i;
      // Past the string: its closing quote is the first one not escaped.
      for (i = text.indexOf('"', i + 1); i > 0; i = text.indexOf('"', i + 1)) {
        let k = i - 1;
        while (text[k] === "\\") k--;
        if ((i - k) % 2 === 1) break;
      }
      if (i < 0) break;
      if (escapes && text.slice(start, i).includes("\\")) {
        // A value, not an object's key (whose escapes count as decoded).
        let k = i + 1;
        while (text[k] === " " || text[k] === "\t" || text[k] === "\n" || text[k] === "\r") k++;
        if (text[k] !== ":") {
          const literal = text.slice(start, i + 1);
          out += text.slice(last, start) + marker(`"${jsonKey(ESCAPED)}":${literal},"${jsonKey(RAW)}":${JSON.stringify(literal.slice(1, -1))}`);
          last = i + 1;
        }
      }
    } else if (ch === "-" || (ch >= "0" && ch <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j])) j++;
      const literal = text.slice(i, j);
      const plain = /^-?(0|[1-9]\d*)$/.test(literal);
      const long = plain && literal.replace("-", "").length > 15;
      if ((long || !plain) && JSON_NUMBER.test(literal)) {
        out += text.slice(last, i) + marker(`"${jsonKey(NUMBER)}":"${literal}"`);
        last = j;
      }
      // (Not a number at all: JSON.parse says so.)
      i = j - 1;
    }
  }
  return { text: out + text.slice(last), token };
}

/** Parses one JSON value's text; bad syntax is refused in Go's words. */
export function parseValue(text) {
  const m = markNumbers(text);
  try {
    return m.token === null ? JSON.parse(m.text) : JSON.parse(m.text, (_, v) => unforged(v, m.token));
  } catch {
    throw bad(syntaxError(text, true) ?? "unexpected EOF");
  }
}

// A marker of this parse (its token) without the token; the marker keys of
// any other object dropped (a look-alike: fields no message has).
function unforged(v, token) {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  const genuine = Object.hasOwn(v, TOKEN) && v[TOKEN] === token;
  for (const key of [TOKEN, NUMBER, ESCAPED, RAW]) if (Object.hasOwn(v, key) && !(genuine && key !== TOKEN)) delete v[key];
  return v;
}

// Go's encoding/json scanner, for its error messages only: the message for
// the first bad byte of `text`, or for its end ("unexpected EOF" as a
// Decoder reading a request body says it, "unexpected end of JSON input"
// as Unmarshal does); null if the text is one whole value. `stream`: a
// Decoder, which stops after the first value (Unmarshal refuses what follows).
const utf8 = new TextEncoder();
// A byte as Go's scanner names it: strconv.Quote of the byte as a rune.
const GO_ESCAPES = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 39: "\\'", 92: "\\\\" };
function goQuoted(c) {
  if (GO_ESCAPES[c]) return GO_ESCAPES[c];
  if (c < 32 || c === 127) return `\\x${c.toString(16).padStart(2, "0")}`;
  if ((c >= 0x80 && c <= 0xa0) || c === 0xad) return `\\u00${c.toString(16)}`;
  return String.fromCharCode(c);
}
function syntaxError(text, stream) {
  const b = utf8.encode(text);
  const stack = []; // "key" | "value" (in an object) | "array"
  const space = (c) => c === 32 || c === 9 || c === 10 || c === 13;
  const digit = (c) => c >= 48 && c <= 57;
  const hex = (c) => digit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
  const quote = (c) => `'${goQuoted(c)}'`;
  const fail = (c, where) => `invalid character ${quote(c)} ${where}`;
  let state = "begin";
  let literal = "";
  let at = 0;
  // Unmarshal ends the input with a space through the scanner (its eof()),
  // so a value cut short in a number or a literal is named by that space.
  for (; at <= b.length; at++) {
    const c = at < b.length ? b[at] : stream ? -1 : 32;
    if (c === -1) break;
    switch (state) {
      case "begin":
      case "beginOrEmpty":
        if (space(c)) continue;
        if (state === "beginOrEmpty" && c === 93) {
          stack.pop();
          state = "end";
          continue;
        }
        if (c === 123) (stack.push("key"), (state = "keyOrEmpty"));
        else if (c === 91) (stack.push("array"), (state = "beginOrEmpty"));
        else if (c === 34) state = "string";
        else if (c === 45) state = "neg";
        else if (c === 48) state = "zero";
        else if (c >= 49 && c <= 57) state = "int";
        else if (c === 116 || c === 102 || c === 110) ((literal = { 116: "true", 102: "false", 110: "null" }[c]), (state = "literal1"));
        else return fail(c, "looking for beginning of value");
        continue;
      case "keyOrEmpty":
      case "key":
        if (space(c)) continue;
        if (state === "keyOrEmpty" && c === 125) {
          stack.pop();
          state = "end";
        } else if (c === 34) state = "string";
        else return fail(c, "looking for beginning of object key string");
        continue;
      case "string":
        if (c === 34) state = "end";
        else if (c === 92) state = "escape";
        else if (c < 32) return fail(c, "in string literal");
        continue;
      case "escape":
        if ("bfnrt\\/\"".includes(String.fromCharCode(c))) state = "string";
        else if (c === 117) state = "u0";
        else return fail(c, "in string escape code");
        continue;
      case "u0":
      case "u1":
      case "u2":
      case "u3":
        if (!hex(c)) return fail(c, "in \\u hexadecimal character escape");
        state = state === "u3" ? "string" : `u${Number(state[1]) + 1}`;
        continue;
      case "neg":
        if (c === 48) state = "zero";
        else if (c >= 49 && c <= 57) state = "int";
        else return fail(c, "in numeric literal");
        continue;
      case "int":
        if (digit(c)) continue;
      // falls through
      case "zero":
        if (c === 46) state = "dot";
        else if (c === 101 || c === 69) state = "exp";
        else {
          state = "end";
          at--;
        }
        continue;
      case "dot":
        if (!digit(c)) return fail(c, "after decimal point in numeric literal");
        state = "frac";
        continue;
      case "frac":
        if (digit(c)) continue;
        if (c === 101 || c === 69) state = "exp";
        else {
          state = "end";
          at--;
        }
        continue;
      case "exp":
        if (c === 43 || c === 45) {
          state = "expSign";
          continue;
        }
      // falls through
      case "expSign":
        if (!digit(c)) return fail(c, "in exponent of numeric literal");
        state = "expDigits";
        continue;
      case "expDigits":
        if (!digit(c)) {
          state = "end";
          at--;
        }
        continue;
      case "end": {
        if (stack.length === 0) {
          if (stream) return null;
          if (space(c)) continue;
          return fail(c, "after top-level value");
        }
        if (space(c)) continue;
        const top = stack.at(-1);
        if (top === "key") {
          if (c !== 58) return fail(c, "after object key");
          stack[stack.length - 1] = "value";
          state = "begin";
        } else if (top === "value") {
          if (c === 44) ((stack[stack.length - 1] = "key"), (state = "key"));
          else if (c === 125) stack.pop();
          else return fail(c, "after object key:value pair");
        } else if (c === 44) state = "begin";
        else if (c === 93) stack.pop();
        else return fail(c, "after array element");
        continue;
      }
      default: {
        // The letters of true, false or null after the first.
        const n = Number(state.slice(7));
        if (c !== literal.charCodeAt(n)) return fail(c, `in literal ${literal} (expecting ${quote(literal.charCodeAt(n))})`);
        state = n + 1 === literal.length ? "end" : `literal${n + 1}`;
        continue;
      }
    }
  }
  // The end: whole if a value ended (a number may end with the input).
  const whole = stack.length === 0 && ["end", "zero", "int", "frac", "expDigits"].includes(state);
  if (whole) return null;
  return stream ? "unexpected EOF" : "unexpected end of JSON input";
}

/** The first JSON value of a request body (undefined if the body is empty). */
export function parseBody(text) {
  const span = scanValue(text, 0, true);
  if (span === null) return undefined;
  if (span === "partial") throw bad("unexpected EOF");
  return parseValue(text.slice(span[0], span[1]));
}
