// The Worker in front of the namespaces: `/v3/...`, `/version`, `/health`
// and `/metrics` go to the namespace "default"; `/n/<namespace>/...` to
// that namespace. Each namespace is one Durable Object
// (`env.LEASES.idFromName(namespace)`), so namespaces share nothing: leases,
// keys and revisions of one never show in another. Web standards only.

/** Namespace names: 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const DEFAULT_NAMESPACE = "default";

// Set by the Worker on what it forwards (a client's own values are replaced).
export const NAMESPACE_HEADER = "x-edge-lease-namespace";
export const BASE_HEADER = "x-edge-lease-url";

import { discardUnread } from "../etcd/gateway.mjs";

const TEXT = { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" };
const text = (status, body) => new Response(body, { status, headers: TEXT });

/** The gateway's own paths, as etcd serves them (its 404s are the gateway's). */
const served = (path) => path === "/version" || path === "/health" || path === "/metrics" || /^\/v3[^/]*\//.test(path);

/**
 * `{ namespace, path, base }` for a request path (`base`: the URL prefix of
 * the namespace, `""` or `/n/<name>`), or `{ response }` when the Worker
 * answers itself (a bad namespace name, a path the gateway has not).
 */
export function route(pathname) {
  if (pathname === "/n" || pathname.startsWith("/n/")) {
    const slash = pathname.indexOf("/", 3);
    const raw = slash < 0 ? pathname.slice(3) : pathname.slice(3, slash);
    const path = slash < 0 ? "" : pathname.slice(slash);
    let name;
    try {
      name = decodeURIComponent(raw);
    } catch {
      name = raw;
    }
    if (!NAMESPACE.test(name)) {
      return {
        response: text(
          400,
          `invalid namespace ${JSON.stringify(name.slice(0, 80))}: 1 to 63 letters, digits, '.', '_' or '-', ` +
            "starting with a letter or digit (/n/<namespace>/v3/...)\n",
        ),
      };
    }
    if (!served(path)) return { response: text(404, "404 page not found\n") };
    return { namespace: name, path, base: `/n/${name}` };
  }
  if (!served(pathname)) return { response: text(404, "404 page not found\n") };
  return { namespace: DEFAULT_NAMESPACE, path: pathname, base: "" };
}

/**
 * Refuses what a browser sends from another origin (a page elsewhere could
 * make writes, or open a WebSocket, without reading anything): as the Node
 * server, and no CORS header is ever sent.
 */
function crossOrigin(request, url) {
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== url.origin) return true;
  return request.headers.get("sec-fetch-site") === "cross-site";
}

/** The Worker's own token header: it gates the Worker, and the namespaces never see it. */
export const TOKEN_HEADER = "x-edge-lease-token";

// Constant time in the secret's length.
function same(got, want) {
  if (got.length !== want.length) return false;
  let diff = 0;
  for (let i = 0; i < want.length; i++) diff |= got.charCodeAt(i) ^ want.charCodeAt(i);
  return diff === 0;
}

/**
 * The Worker's token offered as WebSocket subprotocols, as etcd's gateway
 * websocket proxy (grpc-websocket-proxy) reads them: `Sec-WebSocket-Protocol:
 * Bearer, <token>`, since a browser's WebSocket cannot send headers. The
 * token, or null when the header is not in that form.
 */
function subprotocolToken(request) {
  if ((request.headers.get("upgrade") ?? "").toLowerCase() !== "websocket") return null;
  const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  return offered.length === 2 && offered[0] === "Bearer" && offered[1] !== "" ? offered[1] : null;
}

/** The subprotocol a WebSocket that sent its token that way is answered with: the non-secret one. */
export const BEARER_PROTOCOL = "Bearer";

/**
 * The Worker's gate. With `EDGE_LEASE_TOKEN` set, every request carries it:
 * as `X-Edge-Lease-Token: <token>`, which leaves `Authorization` to etcd's
 * own token (sent bare, as etcd's gateway clients send it), as
 * `Authorization: Bearer <token>`, which is then the Worker's and not passed
 * on, or, on a WebSocket upgrade, as the subprotocols `Bearer, <token>`,
 * which are not passed on either. `{ headers, bearer }`: the headers to
 * forward, and whether the upgrade's answer must name the `Bearer`
 * subprotocol; null when the token is missing or wrong.
 */
function gate(request, env) {
  const headers = new Headers(request.headers);
  headers.delete(TOKEN_HEADER);
  // (Offered, it is answered in kind, with or without a token set, as etcd's proxy does.)
  const offered = subprotocolToken(request);
  const bearer = offered !== null;
  if (bearer) headers.delete("sec-websocket-protocol");
  const token = env.EDGE_LEASE_TOKEN;
  if (!token) return { headers, bearer };
  const own = request.headers.get(TOKEN_HEADER);
  if (own !== null) return same(own, token) ? { headers, bearer } : null;
  if (bearer) return same(offered, token) ? { headers, bearer } : null;
  if (!same(request.headers.get("authorization") ?? "", `Bearer ${token}`)) return null;
  headers.delete("authorization");
  return { headers, bearer };
}

/** The Worker's fetch handler. */
export async function fetchWorker(request, env) {
  const response = await handle(request, env);
  // An answer of the Worker's own (a 404, a refusal) leaves the body unread.
  await discardUnread(request);
  return response;
}

async function handle(request, env) {
  const url = new URL(request.url);
  const r = route(url.pathname);
  if (r.response) return r.response;
  if (crossOrigin(request, url)) return text(403, "cross-origin requests are refused\n");
  const passed = gate(request, env);
  if (passed === null) {
    // grpc-gateway's answer for etcd's Unauthenticated.
    const message = "edge-lease: missing or wrong Worker token (X-Edge-Lease-Token, Authorization: Bearer, or a WebSocket's subprotocols Bearer, <token>)";
    return Response.json({ error: message, message, code: 16 }, { status: 401 });
  }
  const { headers, bearer } = passed;
  if (!env.LEASES) return text(500, "edge-lease: the Durable Object binding LEASES is missing (see wrangler.toml)\n");
  const stub = env.LEASES.get(env.LEASES.idFromName(r.namespace));
  const target = new URL(url);
  target.pathname = r.path;
  headers.set(NAMESPACE_HEADER, r.namespace);
  headers.set(BASE_HEADER, url.origin + r.base);
  const forwarded = new Request(target, {
    method: request.method,
    headers,
    body: request.method === "GET" || request.method === "HEAD" ? null : request.body,
    redirect: "manual",
  });
  try {
    const res = await stub.fetch(forwarded);
    // A client that offered subprotocols fails the socket unless one is named.
    if (!bearer || res.status !== 101 || !res.webSocket) return res;
    return new Response(null, { status: 101, webSocket: res.webSocket, headers: { "sec-websocket-protocol": BEARER_PROTOCOL } });
  } catch (e) {
    // The object was reset (a failed storage write, an exceeded limit) or
    // could not be reached: etcd's Unavailable, to be retried.
    const message = `edge-lease: namespace ${r.namespace} unavailable: ${e?.message ?? e}`;
    return Response.json({ error: message, message, code: 14 }, { status: 503 });
  }
}
