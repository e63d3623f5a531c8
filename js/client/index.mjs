// edge-lease/client: etcd's KV, leases, watch, and the concurrency recipes
// (sessions, mutexes, elections) over etcd's JSON gateway (a real etcd
// 3.4/3.5 or edge-lease's server) or an in-process Lessor, with the same
// interface. Web standards only (fetch, web streams, AbortSignal).

import { isBackend } from "./backend.mjs";
import { Client } from "./client.mjs";
import { invalid } from "./errors.mjs";
import { EndpointSet, endpointList } from "./endpoints.mjs";
import { gatewayAuth } from "./auth.mjs";
import { LocalBackend, isLessor } from "./local.mjs";

export { LeaseError } from "./errors.mjs";
export { leaseId } from "./codec.mjs";
export { Client } from "./client.mjs";
export { Session } from "./session.mjs";
export { Mutex } from "./mutex.mjs";
export { Election } from "./election.mjs";
export { Watch } from "./watch.mjs";

/**
 * `connect("http://127.0.0.1:2379", { timeout, fetch, headers, user,
 * password })` for a server (etcd's JSON gateway; with a user, etcd's auth:
 * auth.mjs); `connect([url, ...])` or `connect("url1,url2")` for the
 * members of a cluster (endpoints.mjs: spread, retried and failed over as
 * etcd's clientv3 does); `connect(lessor)` for an in-process Lessor;
 * `connect(backend)` for anything implementing backend.mjs's interface.
 */
export function connect(target, options = {}) {
  // (Node's entry, node.mjs, takes `tls` off before it calls this.)
  if (options?.tls !== undefined) {
    throw invalid("tls options are for Node (and Deno, Bun); in a browser or a Worker TLS is the platform's: use an https:// URL and trust its CA there");
  }
  if (typeof target === "string" || target instanceof URL || Array.isArray(target)) {
    const urls = endpointList(target);
    const auth = gatewayAuth(urls, options);
    return new Client(auth.wrap(new EndpointSet(urls, auth.options)));
  }
  if (isLessor(target)) return new Client(new LocalBackend(target, options));
  if (isBackend(target)) return new Client(target);
  throw invalid("connect() takes a server URL (or a list of them), a Lessor or a backend");
}
