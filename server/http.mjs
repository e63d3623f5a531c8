// The HTTP/1.1 side (Node only): adapts node:http to web Requests and
// Responses for the guard, the JSON gateway and the demo page. A malformed
// request target or header gets a 400, never an exception.
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { MALFORMED_HOST, guard, wellFormedHost } from "./guard.mjs";
import { webSocketUpgrades } from "./websocket.mjs";
import { certificateName } from "./tls.mjs";

const GATEWAY = /^\/(v3|v3beta|v3alpha)\/|^\/(version|health|metrics)$/;

function toRequest(req, res) {
  // Origin-form targets only ("/path"); "//[" must not become a host.
  if (!req.url.startsWith("/")) return null;
  // Aborted when the client goes before the answer is sent (a blocked Lock
  // or Campaign then cleans up, as etcd's do when their context ends).
  const ac = new AbortController();
  res.once("close", () => ac.abort());
  // (https on a TLS listener: the guard compares an Origin with it.)
  const url = new URL(`${req.socket?.encrypted ? "https" : "http"}://localhost${req.url}`);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    for (const x of Array.isArray(v) ? v : [v]) headers.append(k, x);
  }
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : Readable.toWeb(req);
  return new Request(url, { method: req.method, headers, body, duplex: "half", signal: ac.signal });
}

// `stallMs`: how long a response may wait for its client to read before
// the connection is dropped (null: as long as it takes).
async function send(res, response, head, stallMs) {
  const headers = { "x-content-type-options": "nosniff", "cache-control": "no-store" };
  response.headers.forEach((v, k) => (headers[k] = v));
  res.writeHead(response.status, headers);
  if (!response.body || head) {
    await response.body?.cancel();
    res.end();
    return;
  }
  const reader = response.body.getReader();
  // A client gone mid-stream stops the stream (a keepalive loop, say).
  res.on("close", () => reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done || res.destroyed) break;
    // In slices, so that each wait for 'drain' is for a slice, and a client
    // that reads slowly but steadily is never taken for one that stopped.
    for (let at = 0; at < value.length; at += SLICE) {
      if (!res.write(value.subarray(at, at + SLICE)) && !(await drained(res, stallMs))) {
        res.destroy(); // (its close cancels the reader above, if still open)
        return;
      }
    }
  }
  res.end();
}

const SLICE = 64 * 1024;

// Whether `res` drained within `ms` (null: whenever it does); false once
// it closed. A pipelined answer waits for the one before it without a
// socket: its clock starts once it has one.
function drained(res, ms) {
  return new Promise((ok) => {
    let timer = null;
    const arm = () => {
      if (ms !== null) timer = setTimeout(no, ms);
    };
    const done = (v) => {
      clearTimeout(timer);
      res.off("drain", yes);
      res.off("close", no);
      res.off("socket", arm);
      ok(v);
    };
    const yes = () => done(true);
    const no = () => done(false);
    res.on("drain", yes);
    res.on("close", no);
    if (res.socket) arm();
    else res.once("socket", arm);
  });
}

// The request a connection is answering, if any (see busy()).
const INFLIGHT = Symbol("inflight");

/**
 * Whether an HTTP/1.1 connection is serving a request: one fully received
 * and not yet answered (a blocked Lock, a stream). One still arriving, or
 * none (keep-alive), is not (listen.mjs may evict it at the cap).
 */
export function busy(socket) {
  const r = socket[INFLIGHT];
  return Boolean(r && r.req.complete);
}

// The gateway's streams, whose request body may carry messages for as long
// as the stream lasts (a keepalive every TTL/3 s): no time limit on it, nor
// on their client's reading (a watch session pauses its watchers while its
// client does not read, as on gRPC).
const STREAMING = /^\/v3(beta)?\/(watch|lease\/keepalive)$/;

// A request target's path, URL-normalised as the Request built from it
// (toRequest), or "" if it has none.
function pathOf(target) {
  try {
    return new URL("http://localhost" + target).pathname;
  } catch {
    return "";
  }
}

/** Answers `status` (if nothing was sent yet) and closes the connection, bounded. */
function refuse(socket, status) {
  if (socket.writable && !socket[INFLIGHT]?.res.headersSent) socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  socket.destroySoon();
  // A peer that reads nothing cannot hold it open.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * `hosts`: the Host names accepted (guard.mjs); `serveFile`: static.mjs's,
 * or null; `headersTimeoutMs`: how long a client has to send a request's
 * headers; `requestTimeoutMs`: then its body (except on the streaming
 * endpoints, whose bodies are bounded by the connection cap instead);
 * `stallMs`: how long any other answer (a Snapshot, an Observe) may wait
 * for its client to read before the connection goes, so that what its
 * handler holds goes too (the gRPC transport's stall time);
 * `refusesCertificateNames`: whether the gateway now refuses clients whose
 * certificate names a user (below).
 */
export function createHttpServer({ gateway, hosts, serveFile, headersTimeoutMs = 5_000, requestTimeoutMs = 30_000, stallMs = 60_000, refusesCertificateNames = () => false }) {
  // etcd's access controller: with --client-cert-auth and auth on, a
  // gateway call cannot be made as the user its certificate names (gRPC
  // calls are), so etcd refuses it rather than run it as someone else.
  const certificateRefusal = (socket, pathname) =>
    /^\/v3(beta)?\//.test(pathname) && certificateName(socket) !== undefined && refusesCertificateNames()
      ? new Response("CommonName of client sending a request against gateway will be ignored and not used as expected\n", { status: 400, headers: { "content-type": "text/plain; charset=utf-8" } })
      : null;
  const server = createServer(
    {
      headersTimeout: headersTimeoutMs,
      // The body's time is checked below, per endpoint.
      requestTimeout: 0,
      // How often Node checks headersTimeout (its default is 30 s).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
    },
    async (req, res) => {
      // A Host Go's server refuses gets its answer (etcd's, before any
      // handler), and the connection goes, as there.
      if (!wellFormedHost(req.headers.host ?? "")) {
        req.resume();
        res.writeHead(400, MALFORMED_HOST.slice(4), { "content-type": "text/plain; charset=utf-8", connection: "close" }).end(MALFORMED_HOST);
        return;
      }
      // (req.socket is null once the response is done: keep it here)
      const socket = req.socket;
      const inflight = { req, res };
      socket[INFLIGHT] = inflight;
      let bodyTimer = null;
      // The path the request is routed by (URL-normalised: "/v3/./watch"
      // is a watch).
      const pathname = pathOf(req.url);
      const streaming = STREAMING.test(pathname);
      if (!req.complete && !streaming) {
        bodyTimer = setTimeout(() => req.complete || refuse(socket, "408 Request Timeout"), requestTimeoutMs);
      }
      res.once("close", () => {
        clearTimeout(bodyTimer);
        if (socket[INFLIGHT] === inflight) socket[INFLIGHT] = null;
      });
      try {
        let request;
        try {
          request = toRequest(req, res);
        } catch {
          request = null;
        }
        if (!request) {
          res.writeHead(400, { "content-type": "text/plain; charset=utf-8" }).end("400 bad request\n");
          req.resume();
          return;
        }
        const refused = guard(request, hosts) ?? certificateRefusal(socket, pathname);
        let response;
        if (refused) response = refused;
        else if (GATEWAY.test(pathname) || !serveFile) response = await gateway(request);
        else if (req.method === "GET" || req.method === "HEAD") response = await serveFile(pathname);
        else response = await gateway(request); // etcd's 404 for the rest
        if (req.readableEnded === false && !GATEWAY.test(pathname)) req.resume();
        await send(res, response, req.method === "HEAD", streaming ? null : stallMs);
      } catch (e) {
        console.error(e);
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end();
      }
    },
  );
  // A malformed request, or headers too slow: a status line if nothing was
  // sent yet, then the connection goes.
  server.on("clientError", (err, socket) => {
    refuse(socket, err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? "408 Request Timeout" : "400 Bad Request");
  });
  // The streams over WebSockets (websocket.mjs), past the same Host and
  // Origin checks; anything else asking for an upgrade is refused.
  const upgrades = webSocketUpgrades({
    gateway,
    toRequest(req) {
      if (!wellFormedHost(req.headers.host ?? "")) return null;
      const request = toRequest(req, { once() {} });
      return request && !guard(request, hosts) && !certificateRefusal(req.socket, pathOf(req.url)) ? request : null;
    },
    hold(socket, on) {
      socket[INFLIGHT] = on ? { req: { complete: true }, res: { headersSent: true } } : null;
    },
  });
  server.on("upgrade", (req, socket, head) => {
    if (!STREAMING.test(pathOf(req.url))) return refuse(socket, "400 Bad Request");
    upgrades(req, socket, head);
  });
  // Node enforces headersTimeout only for servers that emitted "listening"
  // (that starts its connection checks); this one is handed its
  // connections by listen.mjs and never listens itself.
  server.emit("listening");
  return server;
}
