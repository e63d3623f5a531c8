// Standard base64 (Go's base64.StdEncoding, what etcd's JSON gateway
// speaks), one home for every layer: the client's gateway backend, the etcd
// API's JSON and the Worker's sockets. Web standards only.

const ALPHABET = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
const ascii = new TextDecoder();

/** `bytes` as standard base64 with padding: the runtime's encoder when it has one, else a table. */
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

const CHARS = /^[A-Za-z0-9+/]*$/;

/**
 * Base64 text as bytes, as Go's StdEncoding reads it: padding required, \r
 * and \n skipped. Bad input throws `badAt(offset)`, the offset of the first
 * byte Go names.
 */
export function decodeBase64(s, badAt) {
  const t = s.replace(/[\r\n]/g, "");
  const body = t.replace(/={1,2}$/, "");
  const badChar = [...body].findIndex((c) => !CHARS.test(c));
  if (badChar >= 0) throw badAt(badChar);
  if (t.length % 4 !== 0 || (t.length - body.length === 2 && body.length % 4 !== 2) || (t.length - body.length === 1 && body.length % 4 !== 3)) {
    throw badAt(t.length - (t.length % 4 || 4));
  }
  const bin = atob(t);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
