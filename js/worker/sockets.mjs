// The client's streams over WebSockets, with hibernation: an object whose
// only open connections are these sockets can be evicted from memory while
// they stay open (the runtime keeps them), so an idle namespace is not
// pinned by its clients' streams. A message wakes the object (restored from
// storage) and is answered as the gateway's stream would answer it.
//
// `GET <namespace URL>/v3/lease/keepalive` with `Upgrade: websocket`: each
// text message holds one or more LeaseKeepAliveRequest JSON values
// (`{"ID":"<int64>"}`, as the gateway's stream body); each is answered, in
// order, by one text message `{"result":{"header":...,"ID":...,"TTL":...}}`,
// TTL 0 for a lease that is gone (etcd's answer; the socket stays open). A
// message that does not parse is answered `{"error":{"code":3,"message":...}}`
// and the socket is closed with 1007.
import { services as schema } from "../../server/proto/schema.mjs";
import { fromJson, parseValue, scanValue, toJson } from "../../server/json.mjs";
import { Code, GrpcError } from "../../server/errors.mjs";

const KEEPALIVE = "etcdserverpb.Lease/LeaseKeepAlive";
// A message is one WebSocket frame: bounded like one stream message.
const MAX_MESSAGE_BYTES = 64 * 1024;

function method(name) {
  const [service, rpc] = name.split("/");
  const [request, response] = schema[service][rpc];
  return { request, response };
}

/** The JSON values of one message, in order. */
function valuesOf(text) {
  const out = [];
  let i = 0;
  for (;;) {
    const span = scanValue(text, i, true);
    if (span === null) return out;
    if (span === "partial") throw new GrpcError(Code.InvalidArgument, "edge-lease: a message ends inside a JSON value");
    out.push(parseValue(text.slice(span[0], span[1])));
    i = span[1];
  }
}

export class Sockets {
  #ctx;
  #services;
  #named;

  constructor({ ctx, services, named }) {
    this.#ctx = ctx;
    this.#services = services;
    this.#named = named;
  }

  /** Accepts a WebSocket for `path`, or answers why not. */
  accept(request, path, name, url) {
    if (request.method !== "GET") return new Response("Method Not Allowed\n", { status: 405 });
    const kind = /^\/v3[^/]*\/lease\/keepalive$/.test(path) ? "keepalive" : null;
    if (!kind) {
      return new Response(`edge-lease: no WebSocket endpoint at ${path} (WebSockets: /v3/lease/keepalive)\n`, {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    const [client, server] = Object.values(new WebSocketPair());
    this.#ctx.acceptWebSocket(server, [kind]);
    // What a woken object needs to go on with this socket.
    server.serializeAttachment({ kind, name, url });
    return new Response(null, { status: 101, webSocket: client });
  }

  async message(ws, message) {
    const a = ws.deserializeAttachment() ?? {};
    this.#named(a.name, a.url);
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    if (a.kind === "keepalive") this.#keepalive(ws, text);
  }

  #keepalive(ws, text) {
    const m = method(KEEPALIVE);
    const handler = this.#services.get(KEEPALIVE);
    let out = [];
    try {
      if (text.length > MAX_MESSAGE_BYTES) throw new GrpcError(Code.InvalidArgument, "edge-lease: stream message too large");
      for (const v of valuesOf(text)) out.push(JSON.stringify({ result: toJson(m.response, handler.each(fromJson(m.request, v))) }));
    } catch (e) {
      // The answers so far go first, as on the gateway's stream.
      for (const o of out) ws.send(o);
      out = [];
      const code = e instanceof GrpcError ? e.code : Code.Unknown;
      ws.send(JSON.stringify({ error: { code, message: e?.message ?? String(e) } }));
      ws.close(1007, "bad message");
      return;
    }
    // Renewals that must be stored were issued above: the output gate holds
    // these frames until they are confirmed.
    for (const o of out) ws.send(o);
  }

  closed(ws, code, reason) {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }
}
