// The lease server's HTTP JSON API, mounted by scripts/serve.mjs under /v1/.
// Modelled on etcd's v3 JSON gateway (POST a JSON object, get one back), but
// with edge-lease's own shapes: lease ids are 16 hex digits and values are
// plain strings (JSON has no bytes; this server only ever writes strings).
//
//   POST /v1/lease/grant  {ttl, id?}                          -> {id, ttl}
//   POST /v1/lease/renew  {id}                                -> {id, ttl}
//   POST /v1/lease/revoke {id}                                -> {id, keys, revision}
//   POST /v1/lease/ttl    {id, keys?}                         -> {id, ttl, ttlMs, grantedTtl, keys}
//   POST /v1/lease/list   {}                                  -> {leases}
//   POST /v1/kv/put       {key, value, lease?, ifAbsent?, prevKv?} -> {revision, created, prev?}
//   POST /v1/kv/get       {key}                               -> entry, or {} if absent
//   POST /v1/kv/range     {prefix?}                           -> {entries}
//   POST /v1/kv/delete    {key, prevKv?}                      -> {deleted, revision, prev?}
//   GET  /v1/status                                           -> {revision, leases, primary}
//
// Errors are {error: {code, message}} with the LeaseError code, or one of
// NotFound, MethodNotAllowed, UnsupportedMediaType, PayloadTooLarge for
// requests that never reached the lessor.

const MIB = 1 << 20;

const STATUS = {
  InvalidArgument: 400,
  LeaseTtlTooLarge: 400,
  LeaseNotFound: 404,
  NotFound: 404,
  MethodNotAllowed: 405,
  LeaseExists: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  // This server's lessor is always primary; a standby (or a lessor closed by
  // shutdown while a request was in flight) cannot serve the request now.
  NotPrimary: 503,
  Closed: 503,
};

class HttpError extends Error {
  constructor(code, message, headers) {
    super(message);
    this.code = code;
    this.headers = headers;
  }
}

const invalid = (message) => new HttpError("InvalidArgument", message);

// Flags are checked here rather than coerced: "ifAbsent": "false" must not
// quietly become a create-only put (or the reverse).
function flag(body, name) {
  const v = body[name];
  if (v !== undefined && v !== null && typeof v !== "boolean") {
    throw invalid(`${name} must be true or false, got ${JSON.stringify(v)}`);
  }
  return v === true;
}

// Endpoint -> [fields it accepts, what it does]. Unknown fields are refused:
// a misspelled "ifabsent" silently ignored would turn a lock into an overwrite.
const routes = {
  "/v1/lease/grant": [["ttl", "id"], (l, b) => l.grant(b.ttl, { id: b.id })],
  "/v1/lease/renew": [["id"], (l, b) => ({ id: b.id, ttl: l.renew(b.id) })],
  "/v1/lease/revoke": [["id"], (l, b) => l.revoke(b.id)],
  "/v1/lease/ttl": [["id", "keys"], (l, b) => l.timeToLive(b.id, { keys: flag(b, "keys") })],
  "/v1/lease/list": [[], (l) => ({ leases: l.leases() })],
  "/v1/kv/put": [
    ["key", "value", "lease", "ifAbsent", "prevKv"],
    (l, b) => {
      if (typeof b.value !== "string") throw invalid(`value must be a string, got ${typeof b.value}`);
      return l.put(b.key, b.value, { lease: b.lease, ifAbsent: flag(b, "ifAbsent"), prevKv: flag(b, "prevKv") });
    },
  ],
  "/v1/kv/get": [["key"], (l, b) => l.get(b.key) ?? {}],
  "/v1/kv/range": [["prefix"], (l, b) => ({ entries: l.range(b.prefix ?? "") })],
  "/v1/kv/delete": [["key", "prevKv"], (l, b) => l.delete(b.key, { prevKv: flag(b, "prevKv") })],
};

// Reads the body as text, at most `limit` bytes. Past the limit the rest is
// read and dropped before answering 413: closing on a client that is still
// sending makes it see a reset instead of the answer. Memory stays bounded,
// and Node's requestTimeout bounds the time.
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on("end", () => {
      if (size > limit) reject(new HttpError("PayloadTooLarge", `request body is larger than ${limit} bytes`));
      else resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", reject);
  });
}

function parse(text) {
  if (text.trim() === "") return {};
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw invalid(`request body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalid("request body must be a JSON object");
  }
  return body;
}

/**
 * A request handler for /v1/ backed by `lessor`. With `store` (a FileStore),
 * the journal is compacted after requests when it has grown enough.
 */
export function createLeaseApi({ lessor, store = null, maxBodyBytes = 2 * MIB }) {
  function send(res, status, body, headers = {}) {
    const json = JSON.stringify(body);
    res.writeHead(status, {
      "Content-Type": "application/json",
      "Content-Length": Buffer.byteLength(json),
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      ...headers,
    });
    res.end(json);
  }

  function fail(req, res, e) {
    // A request refused before its body was read: drop the body, so the
    // connection can carry the next request.
    req.resume();
    let status = STATUS[e?.code];
    if (status === undefined) {
      // StorageFailed, Internal, or a bug here: the server's fault, so the
      // operator sees it too.
      status = 500;
      console.error(e);
    }
    const code = typeof e?.code === "string" ? e.code : "Internal";
    send(res, status, { error: { code, message: String(e?.message ?? e) } }, e?.headers);
  }

  async function handle(req, pathname) {
    if (pathname === "/v1/status") {
      if (req.method !== "GET") {
        throw new HttpError("MethodNotAllowed", "use GET", { Allow: "GET" });
      }
      return { revision: lessor.revision, leases: lessor.leases().length, primary: lessor.isPrimary };
    }
    const route = routes[pathname];
    if (!route) throw new HttpError("NotFound", `no endpoint ${pathname}`);
    if (req.method !== "POST") {
      throw new HttpError("MethodNotAllowed", "use POST", { Allow: "POST" });
    }
    // Requiring JSON makes a cross-site POST a preflighted request, which
    // this server never approves: a web page the user visits cannot change
    // the leases of the server on their loopback.
    const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
    if (type !== "application/json") {
      throw new HttpError("UnsupportedMediaType", "send Content-Type: application/json");
    }
    const body = parse(await readBody(req, maxBodyBytes));
    const [fields, run] = route;
    for (const name of Object.keys(body)) {
      if (!fields.includes(name)) throw invalid(`unknown field ${JSON.stringify(name)} for ${pathname}`);
    }
    return run(lessor, body);
  }

  return async (req, res, pathname) => {
    try {
      send(res, 200, await handle(req, pathname));
    } catch (e) {
      fail(req, res, e);
    }
    if (store) {
      // Cheap unless the journal has outgrown the snapshot; the snapshot is
      // then written in the background. The answer is already sent, and
      // every acknowledged write is in the journal, so a failure here loses
      // nothing: log it and compact next time.
      store.compactFrom(lessor).catch((e) => console.error(`lease server: compaction failed: ${e.message}`));
    }
  };
}
