// The gateway's streams over WebSockets, as etcd's gateway serves them
// through its websocket proxy: each text message a client sends is written
// to the stream's request body (a newline after it), and each line of the
// stream's answer goes back as one text message. A browser (or any client
// whose HTTP cannot stream a request body) can then keep a watch or renew
// leases on one connection. `ws` does the protocol (handshake, framing,
// masking, ping); the stream itself is the gateway's, unchanged.

import { WebSocketServer } from "ws";
import { MAX_STREAM_MESSAGE_BYTES } from "../etcd/limits.mjs";

const NEWLINE = new Uint8Array([10]);

/**
 * The `upgrade` handler for `/v3/watch` and `/v3/lease/keepalive` (etcd's
 * proxy takes any /v3 path, but only a stream can answer before its body
 * ends). `toRequest(req)` builds the web Request the gateway takes (its
 * Host and Origin already checked: null refuses with 403), `hold(socket,
 * on)` marks the connection busy while the stream lasts.
 */
export function webSocketUpgrades({ gateway, toRequest, hold }) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_STREAM_MESSAGE_BYTES, perMessageDeflate: false });
  return (req, socket, head) => {
    const request = toRequest(req);
    if (!request) {
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      hold(socket, true);
      proxy(ws, request, gateway)
        .catch(() => ws.terminate())
        .finally(() => hold(socket, false));
    });
  };
}

async function proxy(ws, request, gateway) {
  // The request body: the client's messages, each ended by a newline. A
  // client that sends faster than the stream reads is paused (TCP's window
  // then holds it), not buffered.
  let controller;
  const body = new ReadableStream(
    {
      start(c) {
        controller = c;
      },
      pull() {
        ws.resume();
      },
      cancel() {
        ws.close(1000);
      },
    },
    { highWaterMark: 16 },
  );
  ws.on("message", (data) => {
    try {
      controller.enqueue(new Uint8Array(data));
      controller.enqueue(NEWLINE);
      if (controller.desiredSize <= 0) ws.pause();
    } catch {} // (the stream has ended)
  });
  const ended = new Promise((resolve) => ws.once("close", resolve));
  ended.then(() => {
    try {
      controller.close();
    } catch {}
  });
  const response = await gateway(new Request(request.url, { method: "POST", headers: request.headers, body, duplex: "half" }));
  if (!response.body) {
    ws.close(1000);
    return;
  }
  // Each line of the answer as a message, the next read once the last one
  // went out: a client that does not read holds the stream, whose watchers
  // then wait as etcd's slow ones do.
  const reader = response.body.getReader();
  ended.then(() => reader.cancel().catch(() => {}));
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim() !== "") await send(ws, line);
    }
  }
  if (pending.trim() !== "") await send(ws, pending);
  ws.close(1000);
}

const send = (ws, text) =>
  new Promise((resolve, reject) => {
    if (ws.readyState !== ws.OPEN) return reject(new Error("closed"));
    ws.send(text, (e) => (e ? reject(e) : resolve()));
  });
