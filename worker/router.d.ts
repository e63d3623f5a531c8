// Types for edge-lease-etcd/worker/router: the Worker's routing, outside
// its main module (whose exports must all be entrypoints).

/** Namespace names: 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const NAMESPACE: RegExp;
export const DEFAULT_NAMESPACE: "default";

/** Where a request path goes: a namespace and the gateway path, or the Worker's own answer. */
export function route(pathname: string): { namespace: string; path: string; base: string } | { response: Response };

/** The header that carries the Worker's own token (`EDGE_LEASE_TOKEN`), leaving `Authorization` to etcd's. */
export const TOKEN_HEADER: "x-edge-lease-token";
