// What a loopback server must refuse before anything else (web standards
// only): requests for another Host (a DNS-rebinding page reaching the server
// through its own name) and requests a browser sends from another origin (a
// web page POSTing to 127.0.0.1 cannot read the answer, but the write would
// happen). etcd's own tools send no Origin. No CORS header is ever sent, so
// no other origin can read an answer either.

// The bytes Go's net/http accepts in a Host header (httpguts'
// validHostByte); etcd answers any other with a 400 before routing. (URL
// parsing alone would take "evil.com@127.0.0.1" or "127.0.0.1/evil.com"
// for 127.0.0.1.)
const HOST_BYTES = /^[0-9A-Za-z!$%&'()*+,\-.:;=[\]_~]*$/;

/** Whether `host` (a Host header) is one etcd's Go server accepts. */
export const wellFormedHost = (host) => HOST_BYTES.test(host);

/** Go's answer to a malformed Host, its status line's text and its body. */
export const MALFORMED_HOST = "400 Bad Request: malformed Host header";

/**
 * `hosts`: the host names (no port) this server answers to. `request`'s
 * Host is well-formed: the HTTP server answers a malformed one first, as
 * Go's does (http.mjs). Its URL's scheme is the listener's (https on TLS),
 * which a same-origin page's Origin has.
 */
export function guard(request, hosts) {
  const host = request.headers.get("host") ?? "";
  let name;
  try {
    name = new URL(`http://${host}`).hostname;
  } catch {
    name = null;
  }
  if (!name || !hosts.has(name)) return refuse(421, "misdirected request: unknown Host\n");
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== `${new URL(request.url).protocol}//${host}`) return refuse(403, "cross-origin requests are refused\n");
  if ((request.headers.get("sec-fetch-site") ?? "same-origin") === "cross-site") {
    return refuse(403, "cross-origin requests are refused\n");
  }
  return null;
}

function refuse(status, text) {
  return new Response(text, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

/** The names a server listening on `listenHost` answers to: it and loopback's. */
export function allowedHosts(listenHosts) {
  const set = new Set(["localhost", "127.0.0.1", "[::1]"]);
  for (const h of listenHosts) set.add(h.includes(":") && !h.startsWith("[") ? `[${h}]` : h);
  return set;
}
