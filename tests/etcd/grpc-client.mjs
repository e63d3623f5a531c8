// A gRPC client for tests, built from etcd/proto's definitions (so the
// same bytes go to a real etcd and to edge-lease): unary calls resolve to
// the response or { code, details }; streams are grpc-js duplex streams.
// Messages come back as plain objects: 64-bit integers as decimal strings,
// enums as names, bytes as base64.
import * as grpc from "@grpc/grpc-js";
import { loadRoot } from "../../etcd/proto/load.mjs";

let shared;

/**
 * A @grpc/grpc-js client of `service` (e.g. "etcdserverpb.KV") at `url`
 * with these definitions, for tests and benchmarks (the same bytes to a
 * real etcd and to edge-lease). Responses are plain objects: 64-bit
 * integers as decimal strings, enums as names (`enums: String`), bytes as
 * `bytes` says (String: base64; Buffer). `channel` options go to grpc-js;
 * `credentials` are grpc-js's (plain text unless given: TLS for https://).
 */
export function grpcClient(url, service, { bytes = String, enums = String, channel = {}, credentials = grpc.credentials.createInsecure() } = {}) {
  shared ??= loadRoot();
  const svc = shared.lookupService(service);
  const def = {};
  for (const m of svc.methodsArray) {
    const Req = shared.lookupType(m.requestType);
    const Res = shared.lookupType(m.responseType);
    def[m.name] = {
      path: `/${service}/${m.name}`,
      requestStream: Boolean(m.requestStream),
      responseStream: Boolean(m.responseStream),
      requestSerialize: (o) => Buffer.from(Req.encode(Req.fromObject(o)).finish()),
      responseDeserialize: (b) => Res.toObject(Res.decode(b), { longs: String, enums, bytes }),
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(def, service);
  return new Ctor(url.replace(/^https?:\/\//, ""), credentials, channel);
}

/**
 * Calls to `url` each made with a token (gRPC metadata `token`, or `key`):
 * `unary(service, method, req, token, key, deadlineMs)` resolves to the response or
 * { code, details }; `first(...)` to a server stream's first message
 * ({ data: true }) or its error; `watch(token)` opens a Watch stream:
 * { write(req), messages, error, close() }.
 */
export function authCaller(t, url) {
  const clients = {};
  const client = (svc) => {
    if (!clients[svc]) {
      clients[svc] = grpcClient(url, svc);
      t.after(() => clients[svc].close());
    }
    return clients[svc];
  };
  const md = (token, key = "token") => {
    const m = new grpc.Metadata();
    if (token !== undefined) m.set(key, token);
    return m;
  };
  return {
    unary: (svc, method, req, token, key, deadlineMs = 10_000) =>
      new Promise((ok) =>
        client(svc)[method](req, md(token, key), { deadline: Date.now() + deadlineMs }, (err, res) => ok(err ? { code: err.code, details: err.details } : res)),
      ),
    /** A server stream's first message, or its error. */
    first: (svc, method, req, token) =>
      new Promise((ok) => {
        const s = client(svc)[method](req, md(token));
        s.on("data", () => (ok({ data: true }), s.cancel()));
        s.on("error", (e) => ok({ code: e.code, details: e.details }));
        s.on("end", () => ok({ ended: true }));
      }),
    watch(token) {
      const s = client("etcdserverpb.Watch").Watch(md(token));
      const w = { messages: [], error: null, write: (r) => s.write(r), close: () => s.cancel() };
      s.on("data", (d) => w.messages.push(d));
      s.on("error", (e) => (w.error = { code: e.code, details: e.details }));
      t.after(() => s.cancel());
      return w;
    },
  };
}

export function connect(t, url) {
  const clients = {};
  const client = (service) => {
    if (!clients[service]) {
      const c = grpcClient(url, service, { channel: { "grpc.max_receive_message_length": -1 } });
      t.after(() => c.close());
      clients[service] = c;
    }
    return clients[service];
  };
  const unary = (service, method, req, deadlineMs = 10_000) =>
    new Promise((ok) =>
      client(service)[method](req, { deadline: Date.now() + deadlineMs }, (err, res) =>
        ok(err ? { code: err.code, details: err.details } : res),
      ),
    );
  return {
    kv: (method, req) => unary("etcdserverpb.KV", method, req),
    lease: (method, req) => unary("etcdserverpb.Lease", method, req),
    maintenance: (method, req) => unary("etcdserverpb.Maintenance", method, req),
    /** A Watch stream: { write(req), messages (array, filled as they come), stream, close() }. */
    watch(metadata) {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata ?? {})) md.set(k, v);
      const stream = client("etcdserverpb.Watch").Watch(md);
      const messages = [];
      const w = { stream, messages, error: null, ended: false };
      stream.on("data", (d) => messages.push(d));
      stream.on("error", (e) => (w.error = { code: e.code, details: e.details }));
      stream.on("end", () => (w.ended = true));
      w.write = (req) => stream.write(req);
      w.close = () => stream.cancel();
      t.after(() => stream.cancel());
      return w;
    },
  };
}

/** Drops what differs between two members by nature: cluster and member ids, raft terms. */
export function norm(v) {
  return JSON.parse(JSON.stringify(v), (k, x) => (["cluster_id", "member_id", "raft_term"].includes(k) ? undefined : x));
}

export { b64 } from "./harness.mjs";

/** `p`, or a rejection "timed out: <what>" once `ms` have passed. */
export function within(p, ms, what) {
  let timer;
  const late = new Promise((_, no) => (timer = setTimeout(() => no(new Error(`timed out: ${what}`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A gRPC message frame of `bytes` (raw HTTP/2 tests). */
export function grpcFrame(bytes, compressed = false) {
  const out = Buffer.alloc(5 + bytes.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/**
 * One gRPC call over raw HTTP/2 on `session` (node:http2), `body` sent and
 * the request side ended (null: headers only, left open), bounded at 10 s:
 * { head, status (a number; a trailers-only answer's from the headers),
 * message, messages, rst }.
 */
export function rawCall(session, path, body, headers = {}) {
  return within(
    new Promise((ok, fail) => {
      const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
      const chunks = [];
      let head = {};
      let trailers = {};
      s.on("response", (h) => (head = h));
      s.on("trailers", (t) => (trailers = t));
      s.on("data", (d) => chunks.push(d));
      s.on("error", fail);
      s.on("close", () => {
        const all = Buffer.concat(chunks);
        const messages = [];
        for (let at = 0; at + 5 <= all.length; at += 5 + all.readUInt32BE(at + 1)) messages.push(all.subarray(at + 5, at + 5 + all.readUInt32BE(at + 1)));
        const status = trailers["grpc-status"] ?? head["grpc-status"];
        const message = decodeURIComponent(trailers["grpc-message"] ?? head["grpc-message"] ?? "");
        ok({ head, status: status === undefined ? undefined : Number(status), message, messages, rst: s.rstCode });
      });
      if (body !== null) s.end(body);
    }),
    10_000,
    path,
  );
}

/** Waits (bounded) until `fn()` is true. */
export async function until(fn, ms = 5000, step = 20) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, step));
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A stream's responses by watch id, in order within each: etcd hands one
 * revision's events to the watchers of a stream in Go map order.
 */
export function byWatcher(messages) {
  const out = {};
  for (const m of norm(messages)) (out[m.watch_id ?? "0"] ??= []).push(m);
  return out;
}

/** Waits (bounded) until `until()` holds and no stream of `streams` got anything for `quietMs`. */
export async function settle(streams, quietMs = 250, maxMs = 5000, { until = () => true } = {}) {
  const count = () => streams.reduce((n, s) => n + s.messages.length, 0);
  let last = count();
  let since = Date.now();
  const end = Date.now() + maxMs;
  while (Date.now() < end) {
    await sleep(20);
    const n = count();
    if (n !== last) [last, since] = [n, Date.now()];
    // (A server may start sending only later: quiet counts once `until` holds.)
    else if (Date.now() - since >= quietMs && until()) return;
  }
}
