// Hostile HTTP/2 clients for the isolation tests (issue 31 items 1-3), as
// raw sockets on loopback, and the victim they must not hurt: a grpc-js
// client with a Watch open and unary calls in a loop. Every loop here is
// bounded in count and in time.
import { connect as netConnect } from "node:net";
import { connect, until } from "../etcd/grpc-client.mjs";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const MiB = 1 << 20;
const b = (s) => Buffer.from(s);

export const PREFACE = b("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export function h2frame(type, flags, stream, payload) {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, Buffer.from(payload)]);
}

/** SETTINGS with the given [id, value] pairs. */
export function settings(pairs = []) {
  const p = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([id, v], i) => (p.writeUInt16BE(id, 6 * i), p.writeUInt32BE(v, 6 * i + 2)));
  return h2frame(4, 0, 0, p);
}

// An HPACK integer: `flags` in the first byte's high bits, a `prefix`-bit prefix.
function int(flags, prefix, n) {
  const max = (1 << prefix) - 1;
  if (n < max) return [flags | n];
  const out = [flags | max];
  for (n -= max; n >= 128; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return out;
}
const str = (s) => [...int(0, 7, s.length), ...b(s)];

/**
 * The HPACK bomb of issue 31, as HEADERS frames (each a whole request,
 * END_STREAM) on streams `firstId`, +2, ...: the first block puts :path,
 * content-type and a 1500-byte `x-bomb` into the client's HPACK table; each
 * block after it is 169 bytes, :method, :scheme, the two table entries and
 * 165 one-byte references to `x-bomb`: 254 KB once decoded.
 */
export function bombFrames(count, firstId = 1) {
  const out = [];
  const first = [
    0x83, // :method POST
    0x86, // :scheme http
    ...int(0x40, 6, 4), ...str("/etcdserverpb.KV/Range"), // :path, indexed
    ...int(0x40, 6, 31), ...str("application/grpc"), // content-type, indexed
    0x40, ...str("x-bomb"), ...str("v".repeat(1500)), // indexed: table index 62
  ];
  // Table: 62 x-bomb, 63 content-type, 64 :path.
  const bomb = [0x83, 0x86, 0x80 | 64, 0x80 | 63, ...Array(165).fill(0x80 | 62)];
  for (let i = 0; i < count; i++) out.push(h2frame(1, 0x5, firstId + 2 * i, i === 0 && firstId === 1 ? first : bomb));
  return Buffer.concat(out);
}

/** Decoded size of one bomb block as HPACK counts it (name + value + 32 a field). */
export const BOMB_DECODED = 7 + 4 + 32 + (7 + 4 + 32) + (5 + 22 + 32) + (12 + 16 + 32) + 165 * (6 + 1500 + 32);

/** The frames in `bytes`: { type, flags, stream, payload }. */
export function frames(bytes) {
  const out = [];
  for (let at = 0; at + 9 <= bytes.length; at += 9 + bytes.readUIntBE(at, 3)) {
    const len = bytes.readUIntBE(at, 3);
    out.push({ type: bytes[at + 3], flags: bytes[at + 4], stream: bytes.readUInt32BE(at + 5) & 0x7fffffff, payload: bytes.subarray(at + 9, at + 9 + len) });
  }
  return out;
}

/**
 * A raw connection to `port`: `send(bytes)` resolves once the socket took
 * them (or closed); `received` counts what came back; `goawayCode` is the
 * GOAWAY's error code once one came (null before); `closed` once the
 * server closed it.
 */
export function attacker(t, port, { read = true } = {}) {
  const s = netConnect(port, "127.0.0.1");
  const a = { socket: s, received: 0, closed: false, goawayCode: null };
  let pending = Buffer.alloc(0);
  s.on("error", () => {});
  s.on("close", () => (a.closed = true));
  s.on("data", (d) => {
    a.received += d.length;
    // Frames are parsed as they come for the GOAWAY (a server closes after it).
    pending = pending.length ? Buffer.concat([pending, d]) : d;
    let at = 0;
    while (pending.length - at >= 9 && pending.length - at >= 9 + pending.readUIntBE(at, 3)) {
      const len = pending.readUIntBE(at, 3);
      if (pending[at + 3] === 7 && a.goawayCode === null) a.goawayCode = pending.readUInt32BE(at + 9 + 4);
      at += 9 + len;
    }
    pending = pending.subarray(at);
  });
  if (!read) s.pause();
  a.send = (bytes) =>
    new Promise((ok) => {
      if (a.closed || s.destroyed) return ok(false);
      if (s.write(bytes)) return ok(true);
      const done = () => (s.off("close", done), s.off("drain", done), ok(!a.closed));
      s.once("drain", done);
      s.once("close", done);
    });
  a.connected = new Promise((ok) => (s.once("connect", ok), s.once("close", ok)));
  a.destroy = () => s.destroy();
  t.after(() => s.destroy());
  return a;
}

/** Waits (bounded by `maxMs`) until `a` got nothing more for `quietMs`, or closed. */
export async function settled(a, quietMs = 300, maxMs = 15_000) {
  let last = a.received;
  let since = Date.now();
  const end = Date.now() + maxMs;
  while (!a.closed && Date.now() < end) {
    await sleep(25);
    if (a.received !== last) [last, since] = [a.received, Date.now()];
    else if (Date.now() - since >= quietMs) return;
  }
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? null;

const r1 = (x) => (x === null ? null : Math.round(x * 10) / 10);
function latencies(ms) {
  const sorted = [...ms].sort((x, y) => x - y);
  return { calls: ms.length, p50: r1(percentile(sorted, 50)), p99: r1(percentile(sorted, 99)), max: r1(sorted.at(-1) ?? null) };
}

/**
 * The victim: one grpc-js client (one connection) with a Watch on
 * `victim` open and a Range every `everyMs` until `finish()` (at most
 * 20,000 of them). `lap()`: { calls, p50, p99, max } of the Ranges since
 * the last lap. `finish()` then puts `victim` and waits (5 s at most) for
 * the Watch to have it: { calls, errors, p50, p99, max, watch } of all.
 */
export async function startVictim(t, url, { everyMs = 5 } = {}) {
  const c = connect(t, url);
  const w = c.watch();
  w.write({ create_request: { key: b("victim") } });
  if (!(await until(() => w.messages.some((m) => m.created), 5000))) throw new Error("the victim's watch was not created");
  const ms = [];
  const errors = [];
  let stop = false;
  let lapped = 0;
  const loop = (async () => {
    for (let i = 0; i < 20_000 && !stop; i++) {
      const t0 = performance.now();
      const r = await c.kv("Range", { key: b("victim") });
      ms.push(performance.now() - t0);
      if (r.code !== undefined) errors.push(`${r.code} ${r.details}`);
      await sleep(everyMs);
    }
  })();
  return {
    lap() {
      const out = latencies(ms.slice(lapped));
      lapped = ms.length;
      return out;
    },
    async finish() {
      stop = true;
      await loop;
      const put = await c.kv("Put", { key: b("victim"), value: b("still here") });
      if (put.code !== undefined) errors.push(`put: ${put.code} ${put.details}`);
      const seen = () => w.messages.some((m) => (m.events ?? []).some((e) => Buffer.from(e.kv.value ?? "", "base64").toString() === "still here"));
      const got = await until(seen, 5000);
      return { ...latencies(ms), errors, watch: { open: !w.error && !w.ended, error: w.error, event: got } };
    },
  };
}

export const mib = (n) => `${(n / MiB).toFixed(1)} MiB`;

// An HPACK block of literal fields, never indexed.
const literals = (fields) => Buffer.from(fields.flatMap(([n, v]) => [0x10, ...str(n), ...str(v)]));

/**
 * A client of `streams` Watch streams on one raw connection whose windows
 * start shut (SETTINGS_INITIAL_WINDOW_SIZE 0): each stream sends `create`
 * (a WatchCreateRequest, encoded) and the server can send it nothing.
 * `read()` opens every window as wide as HTTP/2 allows; `responses(id)`
 * are the WatchResponses (decoded by `Res`) stream `id` got so far; `ids`
 * the streams' ids.
 */
export async function zeroWindowWatches(t, port, streams, createBytes, Res) {
  const a = attacker(t, port);
  await a.connected;
  const ids = Array.from({ length: streams }, (_, i) => 1 + 2 * i);
  const head = literals([
    [":method", "POST"],
    [":scheme", "http"],
    [":path", "/etcdserverpb.Watch/Watch"],
    [":authority", "127.0.0.1"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ]);
  const message = Buffer.alloc(5 + createBytes.length);
  message.writeUInt32BE(createBytes.length, 1);
  message.set(createBytes, 5);
  const parts = [PREFACE, settings([[4, 0]])];
  for (const id of ids) parts.push(h2frame(1, 0x4, id, head), h2frame(0, 0, id, message));
  await a.send(Buffer.concat(parts));

  // DATA frames, per stream, parsed into gRPC messages as they come (the
  // pieces joined only once a whole message is in).
  const data = new Map(ids.map((id) => [id, { chunks: [], size: 0, need: 5, responses: [] }]));
  const take = (s, piece) => {
    s.chunks.push(piece);
    s.size += piece.length;
    while (s.size >= s.need) {
      let buf = Buffer.concat(s.chunks);
      if (s.need === 5) s.need = 5 + buf.readUInt32BE(1);
      if (buf.length < s.need) {
        s.chunks = [buf];
        continue;
      }
      s.responses.push(Res.toObject(Res.decode(buf.subarray(5, s.need)), { longs: String }));
      buf = buf.subarray(s.need);
      [s.chunks, s.size, s.need] = [[buf], buf.length, 5];
    }
  };
  let pending = Buffer.alloc(0);
  a.socket.on("data", (d) => {
    pending = pending.length ? Buffer.concat([pending, d]) : d;
    let at = 0;
    while (pending.length - at >= 9 && pending.length - at >= 9 + pending.readUIntBE(at, 3)) {
      const len = pending.readUIntBE(at, 3);
      const id = pending.readUInt32BE(at + 5) & 0x7fffffff;
      const s = data.get(id);
      if (pending[at + 3] === 0 && s) take(s, pending.subarray(at + 9, at + 9 + len));
      at += 9 + len;
    }
    pending = pending.subarray(at);
  });
  const grant = (id, n) => {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(n, 0);
    return h2frame(8, 0, id, p);
  };
  return Object.assign(a, {
    ids,
    responses: (id) => data.get(id).responses,
    // Every window as wide as it goes (2^31 - 1); the connection's started at 65,535.
    read: () => a.send(Buffer.concat([grant(0, 0x7fffffff - 65535), ...ids.map((id) => grant(id, 0x7fffffff))])),
  });
}
