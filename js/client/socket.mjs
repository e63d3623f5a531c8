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

/**
 * The answers to `body` on `url`, as they come. Ends only by throwing:
 * NotOpened before the socket opened, Unavailable once it closes, the
 * signal's reason when it aborts, a server error it sends.
 * `WebSocket` is the constructor; `headers` go with the upgrade where the
 * runtime's WebSocket takes them (Node's does; a browser's cannot).
 */
export async function* socketStream(WebSocket, url, headers, body, signal) {
  if (signal?.aborted) throw aborted(signal);
  let ws;
  try {
    ws = Object.keys(headers).length ? new WebSocket(url, { headers }) : new WebSocket(url);
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
