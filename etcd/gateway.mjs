// etcd 3.4's JSON gateway as one runtime-agnostic handler, (Request) =>
// Promise<Response>, using web standards only (web streams for the
// streaming endpoints), so the same code can serve from a worker. It
// translates JSON to the service layer's messages and back; the transports
// share etcd/services/. The Host/Origin guard is the caller's (guard.mjs).
import { routes, services as schema } from "./proto/schema.mjs";
import { Code, GrpcError, httpStatus, tooLargeMessage, unimplemented } from "./errors.mjs";
import { fromJson, parseBody, parseValue, toJson, toJsonPieces } from "./jsonpb.mjs";
import { JsonStream } from "./json-values.mjs";
import { encodedSize } from "./size.mjs";
import { MAX_BODY_BYTES, MAX_MESSAGE_BYTES, MAX_STREAM_MESSAGE_BYTES, bodyLimit } from "./limits.mjs";
import { CLUSTER_VERSION, SERVER_VERSION } from "./services/common.mjs";

function method(name) {
  const [service, rpc] = name.split("/");
  const [request, response, streaming] = schema[service][rpc];
  return { request, response, streaming };
}

const TEXT = { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" };
const JSON_TYPE = { "content-type": "application/json" };

const text = (status, body, headers = {}) => new Response(body, { status, headers: { ...TEXT, ...headers } });
// With its length, as etcd's gateway sends whole answers (not chunked).
const json = (status, body) => {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  return new Response(bytes, { status, headers: { ...JSON_TYPE, "content-length": String(bytes.length) } });
};

// Answers larger than this (as protobuf) are sent in chunks as they are
// encoded, not built as one string first (issue 13: a 109 MiB range).
const STREAM_ANSWER_BYTES = 1024 * 1024;
const PIECE_BYTES = 64 * 1024;

/** 200 with the JSON of `msg`, encoded piece by piece as the client reads. */
function streamed(type, msg) {
  const pieces = toJsonPieces(type, msg);
  const encoder = new TextEncoder();
  const body = new ReadableStream(
    {
      pull(controller) {
        let text = "";
        while (text.length < PIECE_BYTES) {
          const r = pieces.next();
          if (r.done) {
            if (text) controller.enqueue(encoder.encode(text));
            controller.close();
            return;
          }
          text += r.value;
        }
        controller.enqueue(encoder.encode(text));
      },
      cancel() {
        pieces.return();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 4 * PIECE_BYTES }),
  );
  return new Response(body, { status: 200, headers: JSON_TYPE });
}

/**
 * The caller's auth token as etcd's gateway hands it to etcd: the header
 * `Grpc-Metadata-Token` (the metadata `token`), else `Authorization` as it
 * is (etcd's gateway clients send the token bare); undefined if neither.
 */
export const tokenOf = (request) => request.headers.get("grpc-metadata-token") ?? request.headers.get("authorization") ?? undefined;

// The gRPC code of an error (one that is not etcd's: Unknown).
const codeOf = (e) => (e instanceof GrpcError ? e.code : Code.Unknown);

/** grpc-gateway's error body, with the HTTP status of the gRPC code. */
export function errorResponse(e) {
  const code = codeOf(e);
  const message = e instanceof GrpcError ? e.message : `edge-lease: ${e?.message ?? e}`;
  if (!(e instanceof GrpcError)) console.error(e);
  return json(httpStatus(code), { error: message, message, code });
}

/**
 * The body as text, or null past `limit` bytes. The rest of a body too large
 * is read and dropped, not cancelled: a client still sending would see a
 * reset instead of the answer. Memory stays bounded; the HTTP server's
 * request timeout bounds the time.
 */
async function readText(request, limit) {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let out = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return size > limit ? null : out + decoder.decode();
    size += value.length;
    if (size <= limit) out += decoder.decode(value, { stream: true });
    else out = "";
  }
}

// For /metrics: etcd's gateway is a gRPC client of its own server, so each
// gateway call is counted as that gRPC call (createCallCounters' counts for
// the method): started once its first request decodes (a body that does
// not is never a call), each message in and out with its encoded size, and
// the code it ends with (a client that goes: the method's cancel code).
const UNCOUNTED = { start() {}, received() {}, sent() {}, end() {}, cancelled() {} };
function counting(counters, name) {
  const c = counters?.of(`/${name}`);
  if (!c) return UNCOUNTED;
  let ended = false;
  const end = (code) => {
    if (!ended) c.handled[code]++;
    ended = true;
  };
  return {
    start() {
      c.started++;
      c.client(null);
    },
    received(size) {
      c.received++;
      c.bytesIn += size;
    },
    sent(size) {
      c.sent++;
      c.bytesOut += size;
    },
    end,
    cancelled: () => end(c.cancelled),
  };
}

/** The request as a service message, with etcd's size checks (`max`: the gRPC receive limit). */
function decode(type, value, max) {
  const msg = fromJson(type, value);
  const size = encodedSize(type, msg);
  if (size > max) throw tooLargeMessage(size, max);
  return { msg, size };
}

/** A request body's text, refused past the body limit as etcd's gRPC limit refuses it. */
async function bodyText(request, maxMessage) {
  const limit = bodyLimit(maxMessage);
  const body = await readText(request, limit);
  if (body === null) throw tooLargeMessage(`more than ${limit}`, maxMessage);
  return body;
}

/**
 * The JSON values of a streaming body, one at a time, as they arrive. The
 * body is locked at once, before the first value is asked for: the stream
 * owns it (discardUnread leaves it alone).
 */
function values(request) {
  return request.body ? parse(request.body.getReader()) : parse(null);
}

async function* parse(reader) {
  if (!reader) return;
  const decoder = new TextDecoder();
  // (Scanned as the pieces come: a body cut a byte at a time costs no more.)
  const values = new JsonStream();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      for (const text of values.push(done ? decoder.decode() : decoder.decode(value, { stream: true }))) yield parseValue(text);
      if (done) {
        if (values.unfinished) throw new GrpcError(Code.Unknown, "unexpected EOF");
        const last = values.end();
        if (last !== null) yield parseValue(last);
        return;
      }
      if (values.pending > MAX_STREAM_MESSAGE_BYTES) throw new GrpcError(Code.InvalidArgument, "edge-lease: stream message too large");
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * A stream that answers each request with one response (LeaseKeepAlive):
 * 200, one `{"result":...}\n` chunk per message, ended when the request body
 * is. As etcd's gateway: an error before the first message is an error
 * response; after it, the stream just ends.
 */
async function eachStream(request, m, handler, count, maxMessage) {
  const it = values(request);
  let started = false;
  const answer = (v) => {
    let msg, size;
    try {
      ({ msg, size } = decode(m.request, v, maxMessage));
    } catch (e) {
      // grpc-gateway hands a stream's decode error on as a plain error: Unknown.
      throw new GrpcError(Code.Unknown, e.message);
    }
    if (!started) count.start();
    started = true;
    count.received(size);
    const res = handler.each(msg);
    // (A promise: an answer that comes later, as a renewal waiting for an
    // alarm to clear; the stream reads on only after it.)
    if (typeof res?.then === "function") return res.then(chunk);
    return chunk(res);
  };
  const chunk = (res) => {
    count.sent(encodedSize(m.response, res));
    return new TextEncoder().encode(JSON.stringify({ result: toJson(m.response, res) }) + "\n");
  };
  const ended = (code) => started && count.end(code);
  let first;
  try {
    const r = await it.next();
    first = r.done ? null : await answer(r.value);
  } catch (e) {
    ended(codeOf(e));
    await it.return();
    return errorResponse(e);
  }
  const body = new ReadableStream({
    start(controller) {
      if (first !== null) return controller.enqueue(first);
      ended(Code.OK);
      controller.close();
    },
    async pull(controller) {
      try {
        const r = await it.next();
        if (r.done) {
          ended(Code.OK);
          controller.close();
        } else controller.enqueue(await answer(r.value));
      } catch (e) {
        ended(codeOf(e));
        controller.close();
      }
    },
    async cancel() {
      if (started) count.cancelled();
      await it.return();
    },
  });
  return new Response(body, { status: 200, headers: JSON_TYPE });
}

/** grpc-gateway v1's streamChunk for an error. */
function errorChunk(e) {
  const code = codeOf(e);
  const message = e instanceof GrpcError ? e.message : String(e?.message ?? e);
  const http = httpStatus(code);
  const statusText = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 412: "Precondition Failed", 499: "", 500: "Internal Server Error", 503: "Service Unavailable" }[http] ?? "";
  return new TextEncoder().encode(JSON.stringify({ error: { grpc_code: code, http_code: http, message, http_status: statusText } }) + "\n");
}

/**
 * A server stream (Election/Observe, Maintenance/Snapshot): the request
 * body is one message; one `{"result":...}\n` chunk per response, for as
 * long as the handler yields. As grpc-gateway: nothing is answered before
 * the first message, and a stream that fails before it answers with the
 * error's HTTP status (its error chunk the body), after it with 200 and
 * the chunk last. A cancel (the client gone) aborts the handler's signal.
 */
async function serverStream(request, m, handler, count, maxMessage) {
  let msg;
  let size;
  try {
    ({ msg, size } = decode(m.request, parseBody(await bodyText(request, maxMessage)), maxMessage));
  } catch (e) {
    return errorResponse(e);
  }
  count.start();
  count.received(size);
  const ac = new AbortController();
  const stop = () => ac.abort();
  if (request.signal?.aborted) stop();
  request.signal?.addEventListener("abort", stop, { once: true });
  const it = handler.stream(msg, { size, signal: ac.signal, token: tokenOf(request) })[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const chunk = (r) => {
    count.sent(encodedSize(m.response, r.value));
    return encoder.encode(JSON.stringify({ result: toJson(m.response, r.value) }) + "\n");
  };
  let first;
  try {
    first = await it.next();
  } catch (e) {
    count.end(codeOf(e));
    return new Response(errorChunk(e), { status: httpStatus(codeOf(e)), headers: JSON_TYPE });
  }
  const body = new ReadableStream({
    start(controller) {
      if (!first.done) return controller.enqueue(chunk(first));
      count.end(Code.OK);
      controller.close();
    },
    async pull(controller) {
      try {
        const r = await it.next();
        if (r.done) {
          count.end(Code.OK);
          return controller.close();
        }
        controller.enqueue(chunk(r));
      } catch (e) {
        count.end(codeOf(e));
        controller.enqueue(errorChunk(e));
        controller.close();
      }
    },
    cancel() {
      count.cancelled();
      stop();
      it.return?.().catch(() => {});
    },
  });
  return new Response(body, { status: 200, headers: JSON_TYPE });
}

/**
 * A session stream (/v3/watch): 200, one `{"result":...}\n` chunk per
 * response, as they come. The body may hold several requests; the stream
 * stays open once it ends, until the client goes. As etcd's gateway: a
 * first request that does not parse is an error response (code 2, HTTP
 * 500); a later one stops the reading, not the stream.
 */
async function sessionStream(request, m, handler, count, maxMessage) {
  const it = values(request);
  const next = (v) => {
    const { msg, size } = decode(m.request, v, maxMessage);
    count.received(size);
    return msg;
  };
  let first;
  try {
    const r = await it.next();
    first = r.done ? null : next(r.value);
    count.start();
  } catch (e) {
    await it.return();
    return errorResponse(new GrpcError(Code.Unknown, e.message));
  }
  const encoder = new TextEncoder();
  let session = null;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    session?.close();
    it.return().catch(() => {});
  };
  const body = new ReadableStream(
    {
      start(controller) {
        session = handler.open(
          (msg) => {
            if (closed) return false;
            count.sent(encodedSize(m.response, msg));
            controller.enqueue(encoder.encode(JSON.stringify({ result: toJson(m.response, msg) }) + "\n"));
            return controller.desiredSize > 0;
          },
          { token: tokenOf(request) },
        );
        if (first) session.request(first);
        (async () => {
          try {
            for (;;) {
              const r = await it.next();
              if (r.done || closed) break;
              session.request(next(r.value));
            }
          } catch {
            // A request that does not parse ends the reading.
          }
          if (!closed) session.end?.();
        })();
      },
      pull() {
        session?.drain?.();
      },
      cancel() {
        count.cancelled();
        close();
      },
    },
    // Bytes buffered before the session is asked to wait.
    new ByteLengthQueuingStrategy({ highWaterMark: 1024 * 1024 }),
  );
  return new Response(body, { status: 200, headers: JSON_TYPE });
}

/**
 * `services`: the table from etcd/services/index.mjs; `metrics`: the text
 * of /metrics (services/metrics.mjs), or null (404 there); `health`:
 * { success, failures }, the /health answers counted for /metrics, or null.
 */
export function createGateway({ services, metrics = null, counters = null, health: healthCounts = null, maxMessageBytes = MAX_MESSAGE_BYTES }) {
  // etcd's /health: false while an alarm is raised (except those named by
  // `exclude`, each excusing one entry of its type: etcd's checkHealth
  // forgets the name once used), or when the engine fails. Go's http.Error
  // ends the false answer with a newline.
  // Counted for /metrics as etcd counts them: an answer refused for an
  // alarm is neither a success nor a failure.
  const count = (outcome) => healthCounts && healthCounts[outcome]++;
  async function health(query) {
    try {
      const excluded = new Set(query.getAll("exclude"));
      const { alarms = [] } = await services.get("etcdserverpb.Maintenance/Alarm")({ action: "GET" }, { size: 0 });
      for (const a of alarms) {
        if (!excluded.delete(String(a.alarm))) return text(503, '{"health":"false"}\n');
      }
      // (etcd's check reads through raft, not its store: Status reads the
      // engine without counting a range in /metrics.)
      await services.get("etcdserverpb.Maintenance/Status")({}, { size: 0 });
      count("success");
      return text(200, '{"health":"true"}');
    } catch {
      count("failures");
      return text(503, '{"health":"false"}\n');
    }
  }

  async function answer(request) {
    let path, query;
    try {
      ({ pathname: path, searchParams: query } = new URL(request.url));
    } catch {
      return text(400, "400 bad request\n");
    }
    if (path === "/version" || path === "/health" || (path === "/metrics" && metrics)) {
      if (request.method !== "GET") return text(405, "Method Not Allowed\n", { allow: "GET" });
      if (path === "/health") return health(query);
      if (path === "/metrics") return text(200, metrics(), { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
      return json(200, { etcdserver: SERVER_VERSION, etcdcluster: CLUSTER_VERSION });
    }
    const m = /^\/v3(?:beta)?\/(.+)$/.exec(path);
    const name = m && Object.hasOwn(routes, m[1]) ? routes[m[1]] : null;
    // grpc-gateway's mux and Go's default handler word their 404s differently.
    if (!name) return text(404, m ? "Not Found\n" : "404 page not found\n");
    if (request.method !== "POST") return text(405, "Method Not Allowed\n");
    const meta = method(name);
    const handler = services.get(name);
    const count = counting(counters, name);
    if (!handler) return errorResponse(unimplemented(name));
    if (handler.each) return eachStream(request, meta, handler, count, maxMessageBytes);
    if (handler.stream) return serverStream(request, meta, handler, count, maxMessageBytes);
    if (handler.open) return sessionStream(request, meta, handler, count, maxMessageBytes);
    try {
      const { msg, size } = decode(meta.request, parseBody(await bodyText(request, maxMessageBytes)), maxMessageBytes);
      count.start();
      count.received(size);
      // The request's signal aborts when the client goes (a blocked Lock cleans up).
      let res;
      try {
        res = await handler(msg, { size, signal: request.signal, token: tokenOf(request) });
      } catch (e) {
        if (request.signal?.aborted) count.cancelled();
        else count.end(codeOf(e));
        throw e;
      }
      const bytes = encodedSize(meta.response, res);
      count.sent(bytes);
      count.end(Code.OK);
      // A big answer (a Range of many keys) goes out as it is encoded.
      if (bytes > STREAM_ANSWER_BYTES) return streamed(meta.response, res);
      return json(200, toJson(meta.response, res));
    } catch (e) {
      return errorResponse(e);
    }
  }

  return async function gateway(request) {
    const response = await answer(request);
    await discardUnread(request);
    return response;
  };
}

/**
 * What etcd serves on --listen-metrics-urls: `gateway`'s /metrics and
 * /health, and Go's 404 for every other path.
 */
export function metricsOnly(gateway) {
  return (request) => {
    let path;
    try {
      path = new URL(request.url).pathname;
    } catch {
      return text(400, "400 bad request\n");
    }
    return path === "/metrics" || path === "/health" ? gateway(request) : text(404, "404 page not found\n");
  };
}

/**
 * Reads and drops a request body nothing read (answers such as a 404 or a
 * 405), up to the gateway's body limit. workerd resets a keep-alive
 * connection whose request body was left unread, and a client that has
 * already sent its next request on it sees that request fail.
 */
export async function discardUnread(request, limit = MAX_BODY_BYTES) {
  if (!request.body || request.bodyUsed || request.body.locked) return;
  const reader = request.body.getReader();
  try {
    for (let size = 0; size <= limit; ) {
      const { done, value } = await reader.read();
      if (done) return;
      size += value.length;
    }
    await reader.cancel();
  } catch {
    // The client went: nothing to keep the connection for.
  }
}
