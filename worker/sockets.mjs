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
//
// `GET <namespace URL>/v3/watch` with `Upgrade: websocket` (once the server
// has its Watch service): each text message holds one or more WatchRequest
// JSON values, as the gateway's /v3/watch body; every WatchResponse comes as
// one text message `{"result":{...}}`, etcd's sequencing (created, events,
// cancels, progress). The socket's attachment records each watcher's create
// request and the revision it has been sent up to, and the stream's next
// watcher id, so an object woken from hibernation re-creates the watchers
// from the engine's history: nothing is lost or sent twice, a watcher whose
// revision was compacted meanwhile is canceled with `compact_revision`, as
// etcd does, and no id is handed out twice. An attachment holds at
// most 2 KiB: a create that would not fit is created and at once canceled
// (it could not be resumed); open another socket for more watchers.
import { services as schema } from "../etcd/proto/schema.mjs";
import { fromJson, parseValue, toJson } from "../etcd/jsonpb.mjs";
import { scanValue } from "../etcd/json-values.mjs";
import { tokenOf } from "../etcd/gateway.mjs";
import { Code, GrpcError } from "../etcd/errors.mjs";
import { MAX_STREAM_MESSAGE_BYTES } from "../etcd/limits.mjs";

const KEEPALIVE = "etcdserverpb.Lease/LeaseKeepAlive";
const WATCH = "etcdserverpb.Watch/Watch";
// serializeAttachment's limit, less room for the kind, name and URL.
const MAX_ATTACHMENT_BYTES = 2048;
// Keepalive answers at most that wait on one socket (#send).
const MAX_WAITING = 1024;

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
  // Watch sessions of this instance's sockets (rebuilt after a wake-up).
  #sessions = new Map();
  // Keepalive sockets with answers still to come (a renewal waiting for an
  // alarm to clear): the chain the next answers go out after.
  #waiting = new WeakMap();

  constructor({ ctx, services, named }) {
    this.#ctx = ctx;
    this.#services = services;
    this.#named = named;
    // Woken from hibernation (or restarted): the watch sockets are still
    // open; their watchers go on from where their attachments say.
    if (this.#watchService()) {
      for (const ws of ctx.getWebSockets("watch")) {
        try {
          this.#session(ws);
        } catch {
          ws.close(1011, "cannot resume the watchers");
        }
      }
    }
  }

  #watchService() {
    return this.#services.get(WATCH)?.open ? this.#services.get(WATCH) : null;
  }

  /** Accepts a WebSocket for `path`, or answers why not. */
  accept(request, path, name, url) {
    if (request.method !== "GET") return new Response("Method Not Allowed\n", { status: 405 });
    const watch = this.#watchService() !== null;
    const kind = /^\/v3[^/]*\/lease\/keepalive$/.test(path)
      ? "keepalive"
      : watch && /^\/v3[^/]*\/watch$/.test(path)
        ? "watch"
        : null;
    if (!kind) {
      const where = watch ? "/v3/lease/keepalive, /v3/watch" : "/v3/lease/keepalive";
      return new Response(`edge-lease: no WebSocket endpoint at ${path} (WebSockets: ${where})\n`, {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    const [client, server] = Object.values(new WebSocketPair());
    this.#ctx.acceptWebSocket(server, [kind]);
    // What a woken object needs to go on with this socket (a watch: the
    // etcd token its upgrade carried, which checks each create).
    server.serializeAttachment(kind === "watch" ? { kind, name, url, token: tokenOf(request) ?? null, watches: {} } : { kind, name, url });
    if (kind === "watch") this.#session(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  async message(ws, message) {
    const a = ws.deserializeAttachment() ?? {};
    this.#named(a.name, a.url);
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    if (a.kind === "keepalive") this.#keepalive(ws, text);
    else if (a.kind === "watch") this.#watch(ws, text);
  }

  // ---- watch -------------------------------------------------------------

  // The socket's session: made on accept, or after a wake-up from its
  // attachment (each watcher re-created at the revision after the last one
  // sent, its `created` not sent again).
  #session(ws) {
    let s = this.#sessions.get(ws);
    if (s) return s;
    const m = method(WATCH);
    const a = ws.deserializeAttachment();
    const state = { a, pending: null, replaying: null };
    const send = (msg) => {
      const id = Number(msg.watch_id ?? 0);
      const w = state.a.watches;
      if (state.replaying !== null && id === state.replaying && msg.created && !msg.canceled) return true;
      // (-1 marks a create that was refused; any other id, negative ones
      // included, is a watcher etcd lets a client name.)
      if (id !== -1) {
        if (msg.created && !msg.canceled && state.pending) {
          // (A negative start that was not compacted follows from now, as 0.)
          const start = Number(state.pending.start_revision ?? 0);
          const next = start > 0 ? start : Number(msg.header?.revision ?? 0) + 1;
          w[id] = { c: state.pending, n: next };
          // The stream's next id, so that a woken stream does not hand out
          // again the id of a watcher canceled before it slept.
          state.a.next = s.session.nextId;
          if (JSON.stringify(state.a).length > MAX_ATTACHMENT_BYTES) {
            delete w[id];
            state.tooBig = id;
          }
        } else if (msg.events?.length && w[id]) {
          w[id].n = Number(msg.events[msg.events.length - 1].kv.mod_revision) + 1;
        } else if ((msg.canceled || "compact_revision" in msg) && w[id]) {
          // (A compacted start ends the watcher: etcd marks the answer
          // canceled only when the compaction point is not 0.)
          delete w[id];
        }
      }
      ws.serializeAttachment(state.a);
      ws.send(JSON.stringify({ result: toJson(m.response, msg) }));
      return true;
    };
    s = { session: this.#watchService().open(send, { token: a.token ?? undefined }), state };
    this.#sessions.set(ws, s);
    // Resume: each recorded watcher from where it was (watcher 0 first, as
    // object keys that are small integers come in order, so that asking for
    // id 0, which means "any", gives it 0 again), then the ids from where
    // they were.
    for (const [id, w] of Object.entries({ ...a.watches })) {
      state.replaying = Number(id);
      state.pending = w.c;
      s.session.request(fromJson(m.request, { create_request: { ...w.c, watch_id: id, start_revision: String(w.n) } }), { resumed: true });
    }
    state.replaying = null;
    state.pending = null;
    s.session.nextId = Math.max(s.session.nextId, a.next ?? 0);
    return s;
  }

  #watch(ws, text) {
    const m = method(WATCH);
    const { session, state } = this.#session(ws);
    let values;
    try {
      if (text.length > MAX_STREAM_MESSAGE_BYTES) throw new GrpcError(Code.InvalidArgument, "edge-lease: stream message too large");
      values = valuesOf(text);
    } catch (e) {
      ws.send(JSON.stringify({ error: { code: e instanceof GrpcError ? e.code : Code.Unknown, message: e?.message ?? String(e) } }));
      this.#drop(ws);
      ws.close(1007, "bad message");
      return;
    }
    for (const v of values) {
      let msg;
      try {
        msg = fromJson(m.request, v);
      } catch (e) {
        ws.send(JSON.stringify({ error: { code: e instanceof GrpcError ? e.code : Code.Unknown, message: e?.message ?? String(e) } }));
        continue;
      }
      // Recorded as the gateway prints it (one spelling of each field).
      state.pending = msg.create_request ? toJson(m.request, msg).create_request : null;
      state.tooBig = undefined;
      session.request(msg);
      state.pending = null;
      if (state.tooBig !== undefined) {
        // Not recorded, so it could not be resumed: cancel it now.
        const id = state.tooBig;
        state.tooBig = undefined;
        session.request(fromJson(m.request, { cancel_request: { watch_id: String(id) } }));
      }
    }
  }

  #drop(ws) {
    this.#sessions.get(ws)?.session.close();
    this.#sessions.delete(ws);
  }

  #keepalive(ws, text) {
    const m = method(KEEPALIVE);
    const handler = this.#services.get(KEEPALIVE);
    const frame = (res) => JSON.stringify({ result: toJson(m.response, res) });
    const refuse = (e) => {
      const code = e instanceof GrpcError ? e.code : Code.Unknown;
      try {
        ws.send(JSON.stringify({ error: { code, message: e?.message ?? String(e) } }));
        ws.close(1007, "bad message");
      } catch {
        // (Closed meanwhile.)
      }
    };
    let out = [];
    let later = false;
    try {
      if (text.length > MAX_STREAM_MESSAGE_BYTES) throw new GrpcError(Code.InvalidArgument, "edge-lease: stream message too large");
      for (const v of valuesOf(text)) {
        const res = handler.each(fromJson(m.request, v));
        later ||= typeof res?.then === "function";
        out.push(res);
      }
    } catch (e) {
      // The answers so far go first, as on the gateway's stream.
      if (!later && !this.#waiting.has(ws)) {
        for (const o of out) ws.send(frame(o));
        refuse(e);
      } else this.#send(ws, out, frame).then(() => refuse(e), refuse);
      return;
    }
    // Renewals that must be stored were issued above: the output gate holds
    // these frames until they are confirmed.
    if (!later && !this.#waiting.has(ws)) for (const o of out) ws.send(frame(o));
    else this.#send(ws, out, frame).catch(refuse);
  }

  // Sends `answers` (some promises) in order, after those still to come
  // (at most MAX_WAITING of them; the socket may close meanwhile). Answers
  // waiting when the object hibernates are lost with it, and the client's
  // next keepalive is answered instead.
  #send(ws, answers, frame) {
    for (const a of answers) if (typeof a?.then === "function") a.catch(() => {}); // (handled in turn)
    const w = this.#waiting.get(ws) ?? { chain: Promise.resolve(), count: 0 };
    if (w.count + answers.length > MAX_WAITING) {
      return Promise.reject(new GrpcError(Code.ResourceExhausted, "edge-lease: too many keepalives waiting on this socket"));
    }
    w.count += answers.length;
    const mine = w.chain.then(async () => {
      for (const a of answers) {
        const res = await a;
        w.count--;
        try {
          ws.send(frame(res));
        } catch {
          // (Closed meanwhile.)
        }
      }
    });
    w.chain = mine.catch(() => {}).then(() => {
      if (w.count === 0 && this.#waiting.get(ws) === w) this.#waiting.delete(ws);
    });
    this.#waiting.set(ws, w);
    return mine;
  }

  closed(ws, code, reason) {
    this.#drop(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }
}
