// A streaming endpoint over a WebSocket instead of a held HTTP request: the
// request as one text message, each `{"result":...}` answer as one message.
// The Worker serves its watch stream this way on hibernatable sockets, so a
// watch (and with it a lock or election wait) pins no request and an idle
// Durable Object can be evicted while its waiters stay connected; etcd's
// gateway serves the same through its websocket proxy. A server that does
// not upgrade is told apart (`NotOpened`) so the caller falls back to HTTP.

import { aborted, serverError, unavailable } from "./errors.mjs";

/** The socket never opened: the runtime or the server has no WebSocket for it. */
export class NotOpened extends Error {}

/** `ws:`/`wss:` for an `http:`/`https:` URL. */
export const socketUrl = (httpUrl) => httpUrl.replace(/^http/, "ws");

// A subprotocol is an HTTP token (RFC 6455): a token with other characters
// cannot travel that way.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The Worker's token, when `headers` hold it and nothing else: its
 * `X-Edge-Lease-Token`, or an `Authorization: Bearer`. A runtime whose
 * WebSocket takes no headers (a browser's) can then send it as the
 * subprotocols `Bearer, <token>`, which the Worker reads as etcd's gateway
 * websocket proxy does. Null otherwise.
 */
export function bearerToken(headers) {
  const entries = Object.entries(headers);
  if (entries.length !== 1) return null;
  const [name, value] = entries[0];
  const n = name.toLowerCase();
  const token = n === "x-edge-lease-token" ? String(value) : n === "authorization" && /^Bearer /.test(value) ? String(value).slice(7) : null;
  return token !== null && TOKEN.test(token) ? token : null;
}

// The socket, with `headers` on its upgrade where the runtime takes them,
// else with the Worker's token as subprotocols, else without them where
// there are none: NotOpened when it cannot be made.
function open(WebSocket, url, headers) {
  if (Object.keys(headers).length === 0) return new WebSocket(url);
  try {
    return new WebSocket(url, { headers });
  } catch (e) {
    // (A browser's: it takes subprotocols only, and throws a SyntaxError for an object.)
    const token = bearerToken(headers);
    if (token === null) throw e;
    return new WebSocket(url, ["Bearer", token]);
  }
}

/**
 * The answers to `body` on `url`, as they come. Ends only by throwing:
 * NotOpened before the socket opened, Unavailable once it closes, the
 * signal's reason when it aborts, a server error it sends.
 * `WebSocket` is the constructor; `headers` go with the upgrade where the
 * runtime's WebSocket takes them (Node's does; a browser's cannot: there
 * the Worker's token goes as subprotocols, and other headers not at all).
 */
export async function* socketStream(WebSocket, url, headers, body, signal) {
  if (signal?.aborted) throw aborted(signal);
  let ws;
  try {
    ws = open(WebSocket, url, headers);
  } catch (e) {
    throw new NotOpened(`no WebSocket to ${url}: ${e?.message ?? e}`, { cause: e });
  }
  const queue = [];
  let opened = false;
  let end = null; // the error that ends the stream once the queue is read
  let wake = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  ws.onopen = () => {
    opened = true;
    ws.send(JSON.stringify(body));
  };
  ws.onmessage = (ev) => {
    queue.push(ev.data);
    poke();
  };
  ws.onclose = (ev) => {
    end ??= opened ? unavailable(`${url}: the socket closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ""})`) : new NotOpened(`${url}: no upgrade`);
    poke();
  };
  ws.onerror = () => {}; // a close follows, and says which
  const onAbort = () => {
    end = aborted(signal);
    poke();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      while (queue.length > 0) {
        const data = queue.shift();
        let m;
        try {
          m = JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data));
        } catch (e) {
          throw unavailable(`${url}: a broken message on the socket`, e);
        }
        if (m.error !== undefined) throw serverError(m, 200);
        yield m.result ?? {};
      }
      if (end) throw end;
      await new Promise((r) => (wake = r));
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (ws.readyState === 0 || ws.readyState === 1) ws.close(1000);
  }
}
