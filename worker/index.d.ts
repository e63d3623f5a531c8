// Types for edge-lease/worker (Cloudflare workerd). Structural: no
// dependency on @cloudflare/workers-types.

/** What the Worker needs in its env: the LEASES Durable Object binding, and optional settings (wrangler.toml [vars]). */
export interface LeaseWorkerEnv {
  LEASES: {
    idFromName(name: string): unknown;
    get(id: unknown): { fetch(request: Request): Promise<Response> };
  };
  /** With a token set, every request needs `Authorization: Bearer <token>`. */
  EDGE_LEASE_TOKEN?: string;
  /** Minimum lease TTL in seconds; default 2 (etcd's). */
  EDGE_LEASE_MIN_TTL?: string | number;
  /** Revisions of history kept; default "Infinity" (all until compacted, as etcd). */
  EDGE_LEASE_HISTORY?: string | number;
  /** Bytes of keys, values and history per namespace; default 33554432 (32 MiB). */
  EDGE_LEASE_QUOTA_BYTES?: string | number;
}

/** The Durable Object class serving one namespace (bind it as LEASES). */
export class LeaseNamespace {
  constructor(ctx: unknown, env: LeaseWorkerEnv);
  fetch(request: Request): Promise<Response>;
  alarm(): Promise<void>;
  webSocketMessage(ws: unknown, message: string | ArrayBuffer): Promise<void>;
  webSocketClose(ws: unknown, code: number, reason: string, wasClean: boolean): Promise<void>;
  webSocketError(ws: unknown, error: unknown): Promise<void>;
}

/** The Worker: `/v3/...` to namespace "default", `/n/<namespace>/v3/...` to that namespace, `/version`, `/health`. */
declare const worker: { fetch(request: Request, env: LeaseWorkerEnv): Promise<Response> };
export default worker;
