// The gRPC transport (Node only): HTTP/2 from h2.mjs, messages
// (de)serialised with protobufjs into the service layer's plain messages
// (64-bit integers as decimal strings, enums as names, bytes as Buffers),
// each call run by the kind of handler the service layer has for it.
// Paths the protos lack, and methods the service layer lacks, answer
// Unimplemented as grpc-go does.
import { gunzipSync, inflateSync } from "node:zlib";
import protobuf from "protobufjs";
import { loadRoot } from "../etcd/proto/load.mjs";
import { unmarshalChecker } from "./gogo.mjs";
import { services as schema } from "../etcd/proto/schema.mjs";
import { Code, Etcd, GrpcError, tooLargeMessage, unimplemented } from "../etcd/errors.mjs";
import { deadlineAnswer } from "../etcd/methods.mjs";
import { MAX_MESSAGE_BYTES } from "../etcd/limits.mjs";
import { H2Session, resolved } from "./h2.mjs";
import { certificateName } from "./tls.mjs";
import { eventPieces, watchResponse } from "./watch-wire.mjs";

// A service message as protobufjs's encode takes it, with no fromObject
// (which built a Long for every 64-bit field): proto3 leaves zero values off
// the wire (protobufjs writes every field present, enums named by their
// zero value too); oneof members are kept, as Go sends them; enums become
// their numbers, 64-bit decimal strings numbers (or a Long past 2^53).
function wire(T, obj, skip = null, skip2 = null) {
  const out = {};
  for (const f of T.fieldsArray) {
    if (f.name === skip || f.name === skip2) continue;
    const v = obj[f.name];
    if (v === undefined || v === null) continue;
    const message = f.resolvedType?.fieldsArray;
    if (f.repeated) {
      if (v.length) out[f.name] = message ? v.map((x) => wire(f.resolvedType, x)) : f.long || f.resolvedType ? v.map((x) => scalar(f, x)) : v;
    } else if (message) out[f.name] = wire(f.resolvedType, v);
    else if (f.partOf || !(v === 0 || v === "0" || v === false || v === "" || (v instanceof Uint8Array && v.length === 0) || f.resolvedType?.values?.[v] === 0)) {
      out[f.name] = scalar(f, v);
    }
  }
  return out;
}

function scalar(f, v) {
  if (typeof v !== "string") return v;
  if (f.long) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : long(v, f.type);
  }
  return f.resolvedType?.values ? f.resolvedType.values[v] : v;
}

// 64-bit integers come as decimal strings; protobufjs would parse each one
// again for every message (the cluster and member ids of every header were
// 5% of a call). Parsed once and kept, the last few thousand of them;
// through BigInt, ~3x faster than long.js's fromString (a new lease's id is
// parsed once, by its grant's answer).
const longs = new Map();
const LOW32 = 0xffffffffn;
function long(s, type) {
  const key = type[0] === "u" || type[0] === "f" ? "u" + s : s;
  let l = longs.get(key);
  if (l === undefined) {
    if (longs.size >= 4096) longs.clear();
    const b = BigInt(s);
    l = protobuf.util.Long.fromBits(Number(b & LOW32) | 0, Number((b >> 32n) & LOW32) | 0, key[0] === "u");
    longs.set(key, l);
  }
  return l;
}

const DECOMPRESS = { gzip: gunzipSync, deflate: inflateSync };
// Answers at most that wait on one request stream (function each).
const MAX_WAITING = 1024;

// etcd's own messages are gogo-generated and take any bytes in a string
// field; grpc-go's health messages are decoded by protobuf-go, which refuses
// invalid UTF-8 there. The name of the first such field of `T` in `bytes`
// (top-level fields: the health messages have no others), or null.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
function invalidUtf8Field(T, bytes) {
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    const f = T.fieldsById[tag >>> 3];
    if (f?.type === "string" && (tag & 7) === 2) {
      try {
        strictUtf8.decode(r.bytes());
      } catch {
        return f.fullName.slice(1);
      }
    } else r.skipType(tag & 7);
  }
  return null;
}

// Every response starts with a ResponseHeader (field 1), the same for every
// call between two writes: its bytes are kept by value and put in front of
// the rest, as protobufjs would have written them. Kept per revision (a
// number: no key string to build; watch streams catching up interleave
// revisions), checked against the other fields, which one member never
// changes.
const headers = new Map(); // revision -> { h, b }
let last = null; // the last one asked for: most answers in a row share it
const sameHeader = (p, h) => p.revision === h.revision && p.cluster_id === h.cluster_id && p.member_id === h.member_id && p.raft_term === h.raft_term;
function headerBytes(H, h) {
  if (last !== null && sameHeader(last.h, h)) return last.b;
  let e = headers.get(h.revision);
  if (e === undefined || !sameHeader(e.h, h)) {
    const body = H.encode(wire(H, h)).finish();
    const b = Buffer.concat([Buffer.from([(1 << 3) | 2, body.length]), body]); // a header is < 128 bytes
    e = { h: { revision: h.revision, cluster_id: h.cluster_id, member_id: h.member_id, raft_term: h.raft_term }, b };
    if (headers.size >= 1024) headers.clear();
    headers.set(h.revision, e);
  }
  last = e;
  return e.b;
}

// A WatchResponse that carries events has a header, a watch id and the
// events: the id's bytes are kept per id (a stream's ids are few).
function onlyIdAndEvents(obj) {
  for (const k in obj) if (k !== "header" && k !== "watch_id" && k !== "events" && obj[k] !== undefined) return false;
  return true;
}
const ids = new Map();
function idBytes(T, id) {
  let b = ids.get(id);
  if (b === undefined) {
    b = T.encode(wire(T, { watch_id: id })).finish();
    if (ids.size >= 4096) ids.clear();
    ids.set(id, b);
  }
  return b;
}

function codec(root, typeName, maxMessage = MAX_MESSAGE_BYTES) {
  const T = root.lookupType(typeName);
  const field = T.fields.header;
  const H = field?.id === 1 && field.resolvedType?.fullName === ".etcdserverpb.ResponseHeader" ? field.resolvedType : null;
  const ev = typeName === "etcdserverpb.WatchResponse" ? T.fields.events : null;
  const plain = (obj) => T.encode(wire(T, obj)).finish();
  const utf8Checked = typeName.startsWith("grpc.health.v1.");
  // etcd's own messages are refused as its gogo-generated Unmarshal refuses them.
  const refusal = utf8Checked ? null : unmarshalChecker(typeName);
  return {
    // A WatchResponse's events encoded ahead (the watch service, a turn's
    // worth at a time, while a big response waits for the store's fsync):
    // encode then takes their bytes as they are.
    prepare: ev ? (events) => void events.forEach(eventPieces) : null,
    encode: !H
      ? plain
      : (obj) => {
          if (!obj.header) return plain(obj);
          const head = headerBytes(H, obj.header);
          // Fields in number order, as protobufjs writes them: the header,
          // the rest, then a WatchResponse's events (field 11, the last).
          const rest = ev && onlyIdAndEvents(obj) ? idBytes(T, obj.watch_id) : T.encode(wire(T, obj, "header", ev && "events")).finish();
          if (ev) return watchResponse(head, rest, obj.events ?? []);
          return Buffer.concat([head, rest]);
        },
    /**
     * The message in `bytes` (gRPC's compressed flag and grpc-encoding as
     * given); a bad one throws grpc-go's error (its words differ for a
     * unary call's request and a stream's message).
     */
    decode(bytes, compressed, encoding, stream = false) {
      if (compressed) bytes = decompress(bytes, encoding, maxMessage);
      try {
        const refused = refusal?.(bytes);
        if (refused) throw new Error(refused);
        const obj = T.toObject(T.decode(bytes), { longs: String, enums: String });
        const invalid = utf8Checked && invalidUtf8Field(T, bytes);
        if (invalid) throw new Error(`proto: field "${invalid}" contains invalid UTF-8`);
        return obj;
      } catch (e) {
        // Nested past limits.mjs's depth (only a Txn nests): etcd's answer.
        if (/maximum nesting depth exceeded/.test(e.message)) throw Etcd.tooManyOps();
        // grpc-go's code; a message cut short is Go's "unexpected EOF".
        const why = e instanceof RangeError && /index out of range/.test(e.message) ? "unexpected EOF" : e.message;
        throw new GrpcError(Code.Internal, stream ? `grpc: failed to unmarshal the received message ${why}` : `grpc: error unmarshalling request: ${why}`);
      }
    },
  };
}

// grpc-go's answers for a compressed request message.
function decompress(bytes, encoding, max) {
  if (encoding === "identity") throw new GrpcError(Code.Internal, "grpc: compressed flag set with identity or empty encoding");
  const inflate = DECOMPRESS[encoding];
  if (!inflate) throw new GrpcError(Code.Unimplemented, `grpc: Decompressor is not installed for grpc-encoding "${encoding}"`);
  try {
    return inflate(bytes, { maxOutputLength: max + 1 });
  } catch (e) {
    if (e.code === "ERR_BUFFER_TOO_LARGE") throw tooLargeMessage(`more than ${max}`, max);
    throw new GrpcError(Code.Internal, `grpc: failed to decompress the received message: ${e.message}`);
  }
}

function fail(call, e) {
  if (e instanceof GrpcError) return call.finish(e.code, e.message);
  console.error(e);
  call.finish(Code.Unknown, String(e?.message ?? e));
}

// What every kind of call shares: the request's size, an AbortSignal made
// only when a handler asks (most never do, and each costs a DOMException),
// aborted when the client cancels or the deadline passes.
class Context {
  constructor(call, size) {
    this.call = call;
    this.size = size;
    this.ac = null;
    /** Set while a sender waits for the client to read (onDrain calls it). */
    this.wake = null;
  }
  /**
   * The caller's credential (services/index.mjs): its auth token, else with
   * --client-cert-auth the user its verified certificate names (etcd's
   * AuthInfoFromTLS), else undefined.
   */
  get token() {
    return this.call.token ?? this.call.session.certUser;
  }
  get signal() {
    if (!this.ac) {
      this.ac = new AbortController();
      if (this.call.done) this.ac.abort();
    }
    return this.ac.signal;
  }
  abort() {
    this.ac?.abort();
    this.wake?.();
  }
}

// Starts `call`'s deadline (grpc-timeout): past it, the call ends with
// `answer()` (etcd's for the method, etcd/methods.mjs) and its
// handler's signal aborts; if that is null, the call goes on. Returns a
// stopper, whose `passed()` says whether the deadline has passed. The
// timer is set once the current tick is over, and only for a call still in
// progress then: a call answered at once (a read while no write waits for
// the disk: its request usually comes in the same socket read as its
// headers) never costs one.
function deadline(call, answer, onExpire) {
  if (!(call.timeoutMs >= 0)) return NO_DEADLINE;
  const start = performance.now();
  let timer = null;
  let stopped = false;
  resolved.then(() => {
    if (stopped || call.done) return;
    timer = setTimeout(() => {
      const e = call.done ? null : answer();
      if (!e) return;
      call.finish(e.code, e.message);
      onExpire();
    }, Math.min(Math.max(0, call.timeoutMs - (performance.now() - start)), 2 ** 31 - 1));
  });
  const stop = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  stop.passed = () => performance.now() - start >= call.timeoutMs;
  return stop;
}
const NO_DEADLINE = Object.assign(() => {}, { passed: () => false });

const isPromise = (v) => typeof v?.then === "function";

// For /metrics, as go-grpc-prometheus counts for etcd: a call once its
// handler starts (a unary call's once its request decodes), and each
// request message that decodes.
function started(call, m) {
  if (!m.counts) return;
  call.counts = m.counts;
  m.counts.started++;
  m.counts.client(call.clientVersion);
}
function received(call, bytes) {
  if (!call.counts) return;
  call.counts.received++;
  call.counts.bytesIn += bytes.length;
}

// What a unary call and a server stream share: the first message starts
// `run(request, ctx)`; a call that ends without one gets grpc-go's answer
// (its handler reads io.EOF: Unknown "EOF"); a cancel or the deadline
// aborts ctx (and wakes a sender waiting for the client to read).
function firstRequest(m, run) {
  return (call) => {
    let ctx = null;
    let req;
    const stop = deadline(call, () => m.expired(req), () => ctx?.abort());
    call.onCancel = () => (stop(), ctx?.abort());
    call.onDrain = () => ctx?.wake?.();
    call.onEnd = () => {
      if (!ctx) (stop(), call.finish(Code.Unknown, "EOF"));
    };
    const failed = (e) => {
      if (!call.done) fail(call, e);
      stop();
    };
    call.onMessage = (bytes, compressed) => {
      if (ctx || call.done) return; // (a call past its deadline, or cancelled, never starts)
      // grpc-go reads the request under the call's context: one whose
      // deadline passed before its request came (`grpc-timeout: 1n`) gets
      // DeadlineExceeded and its handler never runs (etcd applies nothing),
      // though the timer above has not fired yet.
      if (stop.passed()) {
        stop();
        const e = m.expired(undefined);
        return call.finish(e.code, e.message);
      }
      ctx = new Context(call, bytes.length);
      let done;
      try {
        req = m.req.decode(bytes, compressed, call.encoding, m.stream);
        started(call, m);
        received(call, bytes);
        done = run(req, ctx);
      } catch (e) {
        return failed(e);
      }
      if (isPromise(done)) done.then(stop, failed);
      else stop();
    };
  };
}

// One request, one answer: at once when the handler has it at once.
const unary = (m) =>
  firstRequest(m, (req, ctx) => {
    const answer = (res) => {
      if (!ctx.call.done) ctx.call.reply(m.res.encode(res));
    };
    const res = m.handler(req, ctx);
    return isPromise(res) ? res.then(answer) : answer(res);
  });

// A server stream (Observe, Snapshot): the handler's async iterable, one
// message per value, ended OK when it is done. A client that stops reading
// for `m.stallMs` is answered Unavailable and the handler stops, so that
// what it holds (a Snapshot's file) goes.
const serverStream = (m) =>
  firstRequest(m, async (req, ctx) => {
    const { call, signal } = ctx;
    for await (const res of m.handler.stream(req, ctx)) {
      if (call.done || signal.aborted) return;
      // (A call that ended inside send() never drains.)
      if (!call.send(m.res.encode(res)) && !call.done) {
        let timer;
        const drained = await new Promise((ok) => {
          ctx.wake = () => ok(true);
          timer = setTimeout(() => ok(false), m.stallMs);
        });
        clearTimeout(timer);
        if (!drained) return call.finish(Code.Unavailable, `edge-lease: the client read nothing for ${m.stallMs / 1000} s`);
      }
      ctx.wake = null;
    }
    if (!call.done) call.finish(Code.OK);
  });

// One answer per request (LeaseKeepAlive), in order; the stream ends OK
// when the client half-closes (etcd3's keepaliveOnce waits for that), after
// the answers still to come. An answer the handler gives later (a promise:
// a renewal waiting for an alarm to clear) holds the ones after it, and an
// error after it waits for it too; at most MAX_WAITING wait (etcd stops
// reading the stream instead).
function each(m) {
  return (call) => {
    started(call, m);
    const stop = deadline(call, m.expired, () => {});
    const failed = (e) => {
      stop();
      fail(call, e);
    };
    // The answers still to come (a chain), and how many.
    let waiting = null;
    let count = 0;
    const queue = (fn) => {
      count++;
      const mine = (waiting ?? Promise.resolve())
        .then(fn)
        .catch((e) => call.done || failed(e))
        .then(() => {
          count--;
          if (waiting === mine) waiting = null;
        });
      waiting = mine;
    };
    call.onCancel = stop;
    call.onMessage = (bytes, compressed) => {
      if (call.done) return;
      let res;
      try {
        const req = m.req.decode(bytes, compressed, call.encoding, true);
        received(call, bytes);
        if (count >= MAX_WAITING) throw new GrpcError(Code.ResourceExhausted, "edge-lease: too many requests waiting on this stream");
        res = m.handler.each(req);
      } catch (e) {
        if (waiting === null) return failed(e);
        return queue(() => {
          throw e;
        });
      }
      if (waiting === null && typeof res?.then !== "function") return call.send(m.res.encode(res));
      if (typeof res?.then === "function") res.catch(() => {}); // (handled in its turn)
      queue(async () => {
        const r = await res;
        if (!call.done) call.send(m.res.encode(r));
      });
    };
    call.onEnd = () => {
      if (waiting === null) return stop(), call.finish(Code.OK);
      queue(() => call.done || (stop(), call.finish(Code.OK)));
    };
  };
}

// A session stream (Watch): requests and responses are independent; the
// session says what to send, asks how much the stream can take, and hears
// when it can take more and when it is gone. A client's half-close leaves
// it open, as etcd's does.
function session(m) {
  return (call) => {
    let closed = false;
    let stopTimer = null;
    const close = () => {
      if (closed) return;
      closed = true;
      stopTimer?.();
      s.close();
    };
    started(call, m);
    const s = m.handler.open((msg) => (closed ? false : call.send(m.res.encode(msg))), {
      token: call.token,
      room: () => (closed ? 0 : call.room()),
      prepare: m.res.prepare,
    });
    stopTimer = deadline(call, m.expired, close);
    call.onDrain = () => s.drain?.();
    call.onEnd = () => s.end?.();
    call.onCancel = close;
    call.onMessage = (bytes, compressed) => {
      if (closed) return;
      try {
        const req = m.req.decode(bytes, compressed, call.encoding, true);
        received(call, bytes);
        s.request(req);
      } catch (e) {
        close();
        fail(call, e);
      }
    };
  };
}

// grpc-go's answers for a path it has no method for.
function unknown(path) {
  const [, service = "", method = ""] = /^\/([^/]*)\/?(.*)$/.exec(path) ?? [];
  const known = Object.hasOwn(schema, service);
  const message = known ? `unknown method ${method} for service ${service}` : `unknown service ${service}`;
  return (call) => call.finish(Code.Unimplemented, message);
}

const SESSION = Symbol("h2 session");
const SHUTDOWN_GRACE_MS = 30_000;

/** How many calls the HTTP/2 connection on `socket` has in progress. */
export function activeCalls(socket) {
  return socket?.[SESSION]?.calls.size ?? 0;
}

/**
 * Generates every message type's codec ahead, a few types per turn of the
 * event loop (at most ~2 ms of it), so calls go on meanwhile. protobufjs
 * generates a type's encode, decode and conversions on its first use: a
 * fresh server's first Txn waited ~34 ms for its types' code (the Go
 * mutex's very first Lock 30-58 ms against etcd's 1). Resolves when done.
 */
export function prepareCodecs(root) {
  const types = [];
  const walk = (ns) => {
    for (const o of ns.nestedArray ?? []) {
      if (o instanceof protobuf.Type) types.push(o);
      walk(o);
    }
  };
  walk(root);
  return new Promise((done) => {
    let i = 0;
    const step = () => {
      const until = performance.now() + 2;
      while (i < types.length && performance.now() < until) {
        const T = types[i++];
        // (A type used already has its codec.)
        if (!Object.hasOwn(T, "decode")) T.setup();
      }
      if (i < types.length) setImmediate(step);
      else done();
    };
    setImmediate(step);
  });
}

/**
 * The gRPC server for `services` (services/index.mjs's table):
 * `serve(socket)` takes a connection whose first bytes are the HTTP/2
 * preface; `close()` ends them all. `maxConcurrentStreams`: calls one
 * connection may have open at once (the HTTP/2 setting; clients queue the
 * rest), etcd's --max-concurrent-streams. A connection with no call for
 * `idleMs` is closed with GOAWAY (clients reconnect). `counters`
 * (services/metrics.mjs's createCallCounters), if given, counts the calls,
 * their messages and bytes for /metrics. A server stream whose client reads
 * nothing for `stallMs` ends with Unavailable. `certAuth` (etcd's
 * --client-cert-auth): a call without a token is made as the user its TLS
 * client certificate names.
 */
export function createGrpcServer(services, { maxConcurrentStreams = 0, maxMessageBytes = MAX_MESSAGE_BYTES, idleMs = 5 * 60 * 1000, counters = null, stallMs = 60_000, certAuth = false } = {}) {
  const root = loadRoot();
  const methods = new Map();
  for (const [service, rpcs] of Object.entries(schema)) {
    for (const [rpc, [reqType, resType, streaming]] of Object.entries(rpcs)) {
      const name = `${service}/${rpc}`;
      const handler = services.get(name);
      const expired = deadlineAnswer(name, streaming);
      const m = { handler, req: codec(root, reqType, maxMessageBytes), res: codec(root, resType), expired, counts: counters?.of(`/${name}`) ?? null, stallMs, stream: streaming !== "" };
      let start;
      if (!handler) {
        const e = unimplemented(name);
        start = (call) => (started(call, m), call.finish(e.code, e.message));
      } else if (handler.each) start = each(m);
      else if (handler.stream) start = serverStream(m);
      else if (handler.open) start = session(m);
      else start = unary(m);
      methods.set(`/${name}`, start);
    }
  }
  prepareCodecs(root);
  const sessions = new Set();
  const onCall = (call) => {
    // A request message over the limit ends its call with etcd's error.
    call.onTooLarge = (size) => {
      const e = tooLargeMessage(size, maxMessageBytes);
      call.finish(e.code, e.message);
      call.onCancel?.();
    };
    (methods.get(call.path) ?? unknown(call.path))(call);
  };
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const s of sessions) {
      if (s.calls.size === 0 && now - s.lastActive > idleMs) s.shutdown();
      // GOAWAY waits for the client's ping ack; one that never answers is cut.
      if (s.shutdownAt !== undefined && now - s.shutdownAt > SHUTDOWN_GRACE_MS) s.destroy();
    }
  }, Math.min(idleMs, 30_000));
  sweep.unref();
  return {
    serve(socket) {
      const s = new H2Session(socket, { onCall, maxConcurrentStreams, maxMessage: maxMessageBytes });
      s.certUser = certAuth ? certificateUser(socket) : undefined;
      socket[SESSION] = s;
      sessions.add(s);
      socket.once("close", () => sessions.delete(s));
    },
    close() {
      clearInterval(sweep);
      for (const s of sessions) s.destroy();
    },
  };
}

// etcd's AuthInfoFromTLS: the common name of a client certificate that
// verified (the gateway, which has no such call, never uses it).
function certificateUser(socket) {
  const cn = certificateName(socket);
  return cn === undefined ? undefined : { commonName: cn };
}
