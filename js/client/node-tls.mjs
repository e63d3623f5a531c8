// `connect(url, { tls })` in Node (and Deno, Bun, which resolve the `node`
// condition): a `fetch` over node:https whose keep-alive Agent carries the
// TLS options (a CA to trust, a client certificate), as Node's own fetch
// cannot take them without undici's dispatcher, which the package does not
// ship. Only this module and client/node.mjs import node:, and nothing a
// browser or a Worker loads reaches them (the `./client` export's
// conditions; tests/layers checks the graph).
//
// It answers as fetch does: a web Response whose body is a ReadableStream
// read as it arrives (a watch's answer stays open), an abort signal that
// destroys the request, a network failure as `TypeError("fetch failed")`
// with Node's error as its cause (endpoints.mjs reads its code). A TLS
// failure, which retrying cannot mend, is a LeaseError "Unauthenticated"
// that names what to check; key material never appears in a message.

import { Agent, request } from "node:https";
import { LeaseError, invalid } from "./errors.mjs";

// node:tls's codes for a server certificate that does not verify (OpenSSL's
// X509_V_ERR_* names, and Node's own for a name mismatch).
const UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "INVALID_CA",
  "INVALID_PURPOSE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const FIELDS = ["ca", "cert", "key", "servername", "rejectUnauthorized"];
const isPemData = (x) => typeof x === "string" || x instanceof Uint8Array;

// PEM contents, as node:tls takes them: a string, a Buffer, or a list of them.
// A string with no PEM header is most likely a file path: said so.
function pem(name, value, required) {
  if (value === undefined || value === null) {
    if (required) throw invalid(`tls.${name} is required with tls.${name === "key" ? "cert" : "key"}`);
    return undefined;
  }
  const list = Array.isArray(value) ? value : [value];
  for (const x of list) {
    if (!isPemData(x)) throw invalid(`tls.${name} must be PEM contents (a string or a Buffer, or a list of them), got ${typeof x}`);
    const text = typeof x === "string" ? x : new TextDecoder().decode(x.subarray(0, 4096));
    if (!text.includes("-----BEGIN ")) {
      throw invalid(`tls.${name} must be PEM contents, not a file path: pass readFileSync(path) (no "-----BEGIN" found)`);
    }
  }
  return value;
}

/** `connect()`'s `tls` option checked, as node:tls's options (throws InvalidArgument). */
export function tlsOptions(tls) {
  if (tls === null || typeof tls !== "object" || Array.isArray(tls)) throw invalid("tls must be an object: { ca, cert, key, servername, rejectUnauthorized }");
  const unknown = Object.keys(tls).filter((k) => !FIELDS.includes(k));
  if (unknown.length) throw invalid(`tls has no option ${unknown.join(", ")} (it takes ${FIELDS.join(", ")})`);
  const both = tls.cert !== undefined || tls.key !== undefined;
  const out = { ca: pem("ca", tls.ca, false), cert: pem("cert", tls.cert, both), key: pem("key", tls.key, both) };
  if (tls.servername !== undefined && typeof tls.servername !== "string") throw invalid("tls.servername must be a string");
  if (tls.rejectUnauthorized !== undefined && typeof tls.rejectUnauthorized !== "boolean") throw invalid("tls.rejectUnauthorized must be a boolean");
  if (tls.servername !== undefined) out.servername = tls.servername;
  out.rejectUnauthorized = tls.rejectUnauthorized ?? true;
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

// What a TLS failure means, or null for any other error.
function tlsFailure(e, url) {
  const code = typeof e?.code === "string" ? e.code : "";
  if (UNTRUSTED.has(code)) {
    return new LeaseError("Unauthenticated", `TLS: ${url.host} sent a certificate this client does not trust (${code}: ${e.message}); check tls.ca${code === "ERR_TLS_CERT_ALTNAME_INVALID" ? " and tls.servername" : ""}`, { cause: e });
  }
  // The server's alert: it wants a certificate (Node's and Go's servers
  // say so differently), or refused the one sent.
  if (/^ERR_SSL_.*ALERT/.test(code)) {
    return new LeaseError("Unauthenticated", `TLS: ${url.host} refused the handshake (${code}): it wants a client certificate its CA signed; check tls.cert and tls.key`, { cause: e });
  }
  return null;
}

// Node's headers as a web Headers (raw pairs, so repeated ones stay).
function headersOf(res) {
  const h = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    try {
      h.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
    } catch {} // (a header Headers refuses is dropped, as fetch would)
  }
  return h;
}

// The body as a web stream: paused while the reader has enough, destroyed
// when the reader cancels it; a failure mid-body errors it as fetch's "terminated".
function bodyOf(res, url, signal) {
  let done = false;
  return new ReadableStream({
    start(controller) {
      res.on("data", (chunk) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (controller.desiredSize <= 0) res.pause();
      });
      res.on("end", () => {
        if (done) return;
        done = true;
        controller.close();
      });
      res.on("error", (e) => {
        if (done) return;
        done = true;
        controller.error(signal?.aborted ? signal.reason : tlsFailure(e, url) ?? new TypeError("terminated", { cause: e }));
      });
      res.on("close", () => {
        if (done) return;
        done = true;
        controller.error(signal?.aborted ? signal.reason : new TypeError("terminated", { cause: new Error("the connection closed") }));
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      done = true;
      res.destroy();
    },
  }, { highWaterMark: 1 });
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * `{ fetch, close }` for `tls` (tlsOptions' shape): fetch as the client
 * calls it (a URL string, and init's method, headers, string body and
 * signal); close() ends the Agent's sockets.
 */
export function tlsFetch(tls) {
  const options = tlsOptions(tls);
  // One Agent per client: its sockets are kept between calls (a session's
  // keepalives, a lock's requests) and hold only this client's certificate.
  const agent = new Agent({ keepAlive: true, ...options });
  const fetch = (input, init = {}) =>
    new Promise((resolve, reject) => {
      const url = new URL(String(input));
      if (url.protocol !== "https:") return reject(invalid(`tls is for https:// URLs, got ${url.protocol}`));
      const signal = init.signal;
      if (signal?.aborted) return reject(signal.reason);
      const headers = {};
      for (const [k, v] of new Headers(init.headers ?? {})) headers[k] = v;
      const body = init.body === undefined || init.body === null ? null : new TextEncoder().encode(String(init.body));
      if (body !== null) headers["content-length"] = String(body.byteLength);
      const req = request(url, { method: init.method ?? "GET", headers, agent, ...(options.servername ? { servername: options.servername } : {}) });
      let settled = false;
      const onAbort = () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      const unlisten = () => signal?.removeEventListener("abort", onAbort);
      req.on("error", (e) => {
        unlisten();
        if (settled) return;
        settled = true;
        reject(signal?.aborted ? signal.reason : tlsFailure(e, url) ?? new TypeError("fetch failed", { cause: e }));
      });
      req.on("response", (res) => {
        settled = true;
        res.on("close", unlisten);
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 599) {
          res.destroy();
          return reject(new TypeError("fetch failed", { cause: new Error(`HTTP status ${status}`) }));
        }
        const stream = NULL_BODY.has(status) || init.method === "HEAD" ? null : bodyOf(res, url, signal);
        if (stream === null) res.resume();
        resolve(new Response(stream, { status, statusText: res.statusMessage ?? "", headers: headersOf(res) }));
      });
      req.end(body ?? undefined);
    });
  return { fetch, close: () => agent.destroy() };
}
