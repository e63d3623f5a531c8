// One port for both transports, as etcd serves them: a TCP server that looks
// at the first bytes of each connection and hands HTTP/2 (the client
// preface, "PRI * HTTP/2.0...") to gRPC and anything else to HTTP/1.1. On
// an https:// listener the bytes looked at are those inside TLS (tls.mjs).
//
// It also caps the connections (issue 13 item 11: slow clients must not
// starve the others). etcd caps its client listener at the file limit less
// 150 and leaves the excess in the kernel's backlog; Node cannot stop
// accepting, so past the cap a new connection evicts the oldest one that is
// not serving anything (still sniffing, an HTTP/1.1 request not yet fully
// received or an idle keep-alive, an HTTP/2 connection with no call in
// progress), and is refused (closed) only when every connection is busy.
// A burst of new connections is not made to evict itself: when they come
// in faster than the event loop reads them (a loaded machine), past the cap
// the connections accepted within the last second that have not yet been
// read may go over it by a bounded burst (half the reserve), standing in
// for the kernel's backlog, before the oldest of them is evicted; as each
// of them is read, an idle connection older than it makes room, so the
// burst does not stay over the cap.
import { createServer } from "node:net";
import { readFileSync } from "node:fs";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
// etcd's reservedInternalFDNum: file descriptors kept for everything else.
const RESERVED_FDS = 150;
// How long a new connection that has not been read counts as part of the
// burst it came in (and is not evicted while the burst has room).
const BURST_MS = 1_000;

/** The soft limit on open files (Linux), or null when unknown or unlimited. */
export function fileLimit() {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

const positive = (v, name) => {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return n;
};

/**
 * The transports' limits: the connection cap (the file limit less etcd's
 * reserve of 150, or half the limit below 300; EDGE_LEASE_MAX_CONNECTIONS
 * lowers it), how far a burst of new connections may go over it (half the
 * reserve, and at most the cap), the time to send a request's headers
 * (also the time to say which protocol a connection speaks) and the time
 * to send a whole HTTP/1.1 request (EDGE_LEASE_HEADERS_TIMEOUT_MS,
 * EDGE_LEASE_REQUEST_TIMEOUT_MS).
 */
export function limitsFrom(env = process.env, files = fileLimit()) {
  const reserve = files ? Math.min(RESERVED_FDS, Math.floor(files / 2)) : Infinity;
  const fromFiles = files ? files - reserve : Infinity;
  const max = positive(env.EDGE_LEASE_MAX_CONNECTIONS, "EDGE_LEASE_MAX_CONNECTIONS") ?? Infinity;
  const maxConnections = Math.min(fromFiles, max);
  return {
    maxConnections,
    burst: Math.min(Math.floor(reserve / 2), maxConnections),
    headersTimeoutMs: positive(env.EDGE_LEASE_HEADERS_TIMEOUT_MS, "EDGE_LEASE_HEADERS_TIMEOUT_MS") ?? 5_000,
    requestTimeoutMs: positive(env.EDGE_LEASE_REQUEST_TIMEOUT_MS, "EDGE_LEASE_REQUEST_TIMEOUT_MS") ?? 30_000,
  };
}

/**
 * The connections of every listener, oldest first, capped at
 * `maxConnections` (and `burst` more that are new and not yet read).
 * `busy(connection)`: whether a connection ({ kind: "sniff"|"http1"|"http2",
 * its TCP socket, and the stream the transport was given: the same socket,
 * or its TLS socket }) is serving something and must not be evicted.
 * `now()`: the clock, in ms.
 */
export function connectionPool({ maxConnections = Infinity, burst = 0, busy = () => false, now = () => performance.now() } = {}) {
  const open = new Map(); // a Map keeps insertion order: oldest first
  const stats = { evicted: 0, refused: 0 };
  // In one pass, oldest first, of the connections not busy (but for
  // `except`): `old`, the first that is not new, and `young`, the first new
  // one (not read since it came, within BURST_MS) before it.
  function candidates(at, except = null) {
    let young = null;
    for (const c of open.values()) {
      if (c === except || (c.kind !== "sniff" && busy(c))) continue;
      if (c.kind !== "sniff" || c.read || at - c.at >= BURST_MS) return { old: c, young };
      young ??= c;
    }
    return { old: null, young };
  }
  function evict(c) {
    open.delete(c.socket);
    c.socket.destroy();
    stats.evicted++;
  }
  return {
    /** The new connection's entry, or null if it was refused (and closed). */
    admit(socket) {
      const at = now();
      if (open.size >= maxConnections) {
        // Past the cap: an old idle connection goes; else, while the burst
        // has room, the newcomer joins the new ones; else the oldest new
        // one goes; and when every connection is busy, the newcomer.
        const { old, young } = candidates(at);
        const c = old ?? (open.size >= maxConnections + burst ? young : null);
        if (c) evict(c);
        else if (!young) {
          stats.refused++;
          socket.destroy();
          return null;
        }
      }
      const conn = { kind: "sniff", socket, stream: null, at, read: false };
      open.set(socket, conn);
      socket.once("close", () => open.delete(socket));
      return conn;
    },
    /**
     * `conn` was read for the first time: no longer part of a burst. Past
     * the cap, other idle connections that are not new go (oldest first)
     * until the pool is back within it or none is left to go.
     */
    heard(conn) {
      conn.read = true;
      while (open.size > maxConnections) {
        const { old } = candidates(now(), conn);
        if (!old) return;
        evict(old);
      }
    },
    /** Open connections, and how many were evicted or refused at the cap. */
    stats: () => ({ open: open.size, ...stats }),
  };
}

/**
 * `http1(socket)`, `http2(stream)`: where a connection goes once sniffed;
 * `pool`: connectionPool()'s, shared by every listener; `tls`: tls.mjs's
 * acceptor for an https:// listener (its handshake has `sniffTimeoutMs`
 * too).
 */
export function sniffingServer({ http1, http2, pool = connectionPool(), sniffTimeoutMs = 5_000, tls = null }) {
  return createServer((socket) => {
    socket.on("error", () => {});
    // As node:http and node:http2 do for their own sockets: without it
    // Nagle's algorithm held small answers behind the client's delayed ACK
    // (40 ms a request) and HTTP/2 window updates too (a second large answer
    // crawled at ~1 MB/s).
    socket.setNoDelay(true);
    const conn = pool.admit(socket);
    if (!conn) return;
    const heard = () => pool.heard(conn);
    if (tls) tls(socket, (secure) => sniff(secure, conn, { http1, http2, sniffTimeoutMs, heard }));
    else sniff(socket, conn, { http1, http2, sniffTimeoutMs, heard });
  });
}

// Hands `socket` to `http1` or `http2` by its first bytes.
function sniff(socket, conn, { http1, http2, sniffTimeoutMs, heard }) {
  socket.on("error", () => {});
  let seen = Buffer.alloc(0);
  // A connection that has not said which protocol it speaks by then is closed.
  socket.setTimeout(sniffTimeoutMs, () => socket.destroy());
  const onData = (chunk) => {
    if (!conn.read) heard();
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const h2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (h2 && seen.length < PREFACE.length) return;
    socket.off("data", onData);
    socket.setTimeout(0);
    // The bytes read go back into the socket, and it is handed on as it is:
    // node:http2 reads them first, then the socket's native handle (a
    // relaying stream would cost every call a trip through JS streams).
    socket.pause();
    socket.unshift(seen);
    conn.stream = socket;
    if (h2) {
      conn.kind = "http2";
      http2(socket);
    } else {
      conn.kind = "http1";
      http1(socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
}
