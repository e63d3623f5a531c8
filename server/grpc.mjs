// The gRPC transport (Node only): @grpc/grpc-js serves every method of the
// protos, (de)serialising with protobufjs into the service layer's plain
// messages (64-bit integers as decimal strings, enums as names, bytes as
// Buffers). Methods the service layer lacks answer Unimplemented.
import * as grpc from "@grpc/grpc-js";
import { loadRoot } from "./proto/load.mjs";
import { services as schema } from "./proto/schema.mjs";
import { Code, GrpcError, tooLargeMessage, unimplemented } from "./errors.mjs";
import { MAX_MESSAGE_BYTES } from "./gateway.mjs";

const SIZE = Symbol("size");
const FAILED = Symbol("failed");

// proto3 leaves zero values off the wire (protobufjs would write the ones
// set explicitly, enums named by their zero value too); oneof members are
// kept, as Go sends them.
function zeroless(T, obj) {
  const out = {};
  for (const f of T.fieldsArray) {
    const v = obj[f.name];
    if (v === undefined || v === null) continue;
    if (f.repeated) {
      if (v.length) out[f.name] = f.resolvedType?.fieldsArray ? v.map((x) => zeroless(f.resolvedType, x)) : v;
    } else if (f.resolvedType?.fieldsArray) out[f.name] = zeroless(f.resolvedType, v);
    else if (f.partOf || !(v === 0 || v === "0" || v === false || v === "" || (v instanceof Uint8Array && v.length === 0) || f.resolvedType?.values?.[v] === 0)) out[f.name] = v;
  }
  return out;
}

function codec(root, typeName) {
  const T = root.lookupType(typeName);
  return {
    serialize: (obj) => Buffer.from(T.encode(T.fromObject(zeroless(T, obj))).finish()),
    deserialize(buf) {
      // A bad message becomes the call's error (etcd's codes), not a crash.
      if (buf.length > MAX_MESSAGE_BYTES) return { [FAILED]: tooLargeMessage(buf.length, MAX_MESSAGE_BYTES) };
      try {
        const msg = T.toObject(T.decode(buf), { longs: String, enums: String });
        msg[SIZE] = buf.length;
        return msg;
      } catch (e) {
        return { [FAILED]: new GrpcError(Code.InvalidArgument, `grpc: error unmarshalling request: ${e.message}`) };
      }
    },
  };
}

const status = (e) =>
  e instanceof GrpcError ? { code: e.code, details: e.message } : (console.error(e), { code: Code.Unknown, details: String(e?.message ?? e) });

/** An AbortSignal that fires when the client cancels or its deadline passes. */
function cancelSignal(call) {
  const ac = new AbortController();
  if (call.cancelled) ac.abort();
  else call.once("cancelled", () => ac.abort());
  return ac.signal;
}

function unary(handler) {
  return async (call, callback) => {
    const req = call.request;
    if (req[FAILED]) return callback(status(req[FAILED]));
    let ac = null;
    const onCancel = () => ac.abort();
    const ctx = {
      size: req[SIZE],
      // Made on first use, and let go once answered (grpc-js then emits
      // "cancelled" anyway): most calls never look, and each abort costs a
      // DOMException.
      get signal() {
        if (!ac) {
          ac = new AbortController();
          if (call.cancelled) ac.abort();
          else call.once("cancelled", onCancel);
        }
        return ac.signal;
      },
    };
    try {
      callback(null, await handler(req, ctx));
    } catch (e) {
      callback(status(e));
    } finally {
      if (ac) call.off("cancelled", onCancel);
    }
  };
}

// A server stream: the handler's async iterable, one message per value,
// ended OK when it is done; a cancel aborts the signal it was given.
function serverStream(handler) {
  return async (call) => {
    const req = call.request;
    call.on("error", () => {});
    try {
      if (req[FAILED]) throw req[FAILED];
      const signal = cancelSignal(call);
      for await (const res of handler.stream(req, { size: req[SIZE], signal })) {
        if (signal.aborted) return;
        if (!call.write(res)) await new Promise((ok) => (call.once("drain", ok), signal.addEventListener("abort", ok)));
      }
      if (!signal.aborted) call.end();
    } catch (e) {
      if (!call.cancelled) call.emit("error", status(e));
    }
  };
}

// One answer per request; the stream ends OK when the client half-closes
// (etcd3's keepaliveOnce waits for that).
function each(handler) {
  return (call) => {
    call.on("data", (req) => {
      if (call.cancelled || call.destroyed) return;
      try {
        if (req[FAILED]) throw req[FAILED];
        call.write(handler.each(req));
      } catch (e) {
        call.emit("error", status(e));
      }
    });
    call.on("end", () => call.end());
    call.on("error", () => {}); // a reset by the client (etcdctl keep-alive --once)
  };
}

// A session stream (Watch): requests and responses are independent; the
// session says what to send, and hears when the stream can take more and
// when it is gone. A client's half-close leaves it open, as etcd's does.
function session(handler) {
  return (call) => {
    let closed = false;
    const s = handler.open((msg) => (closed ? false : call.write(msg)));
    const close = () => {
      if (closed) return;
      closed = true;
      s.close();
    };
    call.on("drain", () => s.drain?.());
    call.on("data", (req) => {
      if (closed) return;
      try {
        if (req[FAILED]) throw req[FAILED];
        s.request(req);
      } catch (e) {
        close();
        call.emit("error", status(e));
      }
    });
    call.on("end", () => s.end?.());
    call.on("cancelled", close);
    call.on("close", close);
    call.on("error", close);
  };
}

function missing(name, streaming) {
  const err = status(unimplemented(name));
  if (!streaming) return (_call, callback) => callback(err);
  return (call) => call.emit("error", err);
}

// Calls in progress per connection: a connection with none may be evicted
// when connections run out (listen.mjs). The count lives in a box on the
// socket, so a call that ends after its session let go of the socket still
// counts itself down.
const CALLS = Symbol("calls");

/** How many calls `connection` (the socket listen.mjs handed us) has in progress. */
export function activeCalls(connection) {
  return connection?.[CALLS]?.n ?? 0;
}

// The count box of the connection a call came on. grpc-js keeps the HTTP/2
// stream on the call it wraps, and node:http2's session.socket stands for
// the net.Socket listen.mjs handed over (it forwards property reads and
// writes, and throws once the session is closed). Both are internals:
// should they move, calls go uncounted (their connections then look idle
// at the cap) and tests/server/slow-clients.test.mjs fails.
function callsOf(call) {
  try {
    const socket = call.call?.stream?.session?.socket;
    if (!socket) return null;
    return (socket[CALLS] ??= { n: 0 });
  } catch {
    return null;
  }
}

// Counts the call until its HTTP/2 stream closes (grpc-js then emits
// "cancelled" on every call, finished or not).
function tracked(fn) {
  return (call, callback) => {
    const calls = callsOf(call);
    if (calls) {
      calls.n++;
      call.once("cancelled", () => calls.n--);
    }
    return fn(call, callback);
  };
}

/**
 * A grpc-js Server with every service of the protos, backed by `services`.
 * `maxConcurrentStreams`: calls one connection may have open at once (the
 * HTTP/2 setting; clients queue the rest), etcd's --max-concurrent-streams.
 */
export function createGrpcServer(services, { maxConcurrentStreams } = {}) {
  const root = loadRoot();
  const server = new grpc.Server({
    // Above etcd's 2 MiB, so deserialize() can answer with etcd's message.
    "grpc.max_receive_message_length": 2 * MAX_MESSAGE_BYTES,
    // A connection with no call for this long is closed (clients reconnect).
    "grpc.max_connection_idle_ms": 5 * 60 * 1000,
    ...(maxConcurrentStreams ? { "grpc.max_concurrent_streams": maxConcurrentStreams } : {}),
  });
  for (const [service, methods] of Object.entries(schema)) {
    const definition = {};
    const implementation = {};
    for (const [rpc, [reqType, resType, streaming]] of Object.entries(methods)) {
      const req = codec(root, reqType);
      const res = codec(root, resType);
      definition[rpc] = {
        path: `/${service}/${rpc}`,
        requestStream: streaming.includes("c"),
        responseStream: streaming.includes("s"),
        requestSerialize: req.serialize,
        requestDeserialize: req.deserialize,
        responseSerialize: res.serialize,
        responseDeserialize: res.deserialize,
      };
      const name = `${service}/${rpc}`;
      const handler = services.get(name);
      if (!handler) implementation[rpc] = missing(name, streaming !== "");
      else if (handler.each) implementation[rpc] = each(handler);
      else if (handler.stream) implementation[rpc] = serverStream(handler);
      else if (handler.open) implementation[rpc] = session(handler);
      else implementation[rpc] = unary(handler);
    }
    for (const rpc of Object.keys(implementation)) implementation[rpc] = tracked(implementation[rpc]);
    server.addService(definition, implementation);
  }
  return server;
}

export function connectionInjector(server) {
  return server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
}
