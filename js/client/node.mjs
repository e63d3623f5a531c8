// edge-lease/client in Node (and Deno, Bun: the `node` condition of the
// `./client` export): index.mjs's API, with `connect(url, { tls })` for
// https:// servers that need a CA of their own or a client certificate
// (node-tls.mjs). Browsers and Workers load index.mjs, which has no node:
// import.

import { connect as connectAny } from "./index.mjs";
import { endpointList } from "./endpoints.mjs";
import { invalid } from "./errors.mjs";
import { tlsFetch } from "./node-tls.mjs";

export * from "./index.mjs";

/**
 * index.mjs's connect(), and with `tls` ({ ca, cert, key, servername,
 * rejectUnauthorized }: PEM contents, as node:tls takes them) its requests
 * go over node:https with those options. Watches then go over HTTP streams
 * (a WebSocket of the runtime cannot carry the certificate) unless
 * `webSocket` gives one that can.
 */
export function connect(target, options = {}) {
  if (options?.tls === undefined) return connectAny(target, options);
  const { tls, ...rest } = options;
  if (rest.fetch !== undefined) throw invalid("connect(): give tls or fetch, not both (a fetch of your own makes its own TLS connections)");
  if (typeof target !== "string" && !(target instanceof URL) && !Array.isArray(target)) throw invalid("tls is for a server's https:// URL");
  for (const url of endpointList(target)) {
    let u;
    try {
      u = new URL(url);
    } catch {
      throw invalid(`not a URL: ${JSON.stringify(url.slice(0, 200))}`);
    }
    if (u.protocol !== "https:") throw invalid(`tls is for https:// URLs, got ${u.protocol}//${u.host}`);
  }
  const { fetch, close } = tlsFetch(tls);
  const client = connectAny(target, { ...rest, fetch, webSocket: rest.webSocket ?? false });
  // (closed aborts once the sessions are revoked, just before the last requests end.)
  client.closed.addEventListener("abort", close, { once: true });
  return client;
}
