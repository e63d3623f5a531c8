// LeaseNamespace: one namespace of leases, one Durable Object. It serves
// etcd 3.4's JSON gateway with the Node server's own handler
// (etcd/gateway.mjs over etcd/services/), backed by a DurableLessor:
// state in the object's storage, one atomic write per change, leases
// expired from the object's one alarm (also when no request comes).
//
// Durability: the store runs in output-gate mode (js/stores/durable-object.mjs).
// Each change's writes are issued in the same turn as the change, and the
// runtime's output gate holds the answer (and every later message, stream
// chunk or WebSocket frame) until the storage has confirmed them. So an
// acknowledged change is durable, an object that is evicted, reset or moved
// comes back from storage with it, and no request waits on another's write.
// The alarm handler still awaits sync(): the alarm is done only once the
// expiry is stored and the next alarm set.
import { DurableLessor, KV_MAX_ENGINE_KEY_BYTES, sqliteBacked } from "edge-lease/stores/durable-object";
import { Lessor } from "./engine.mjs";
import { createServices, memberIds } from "../etcd/services/index.mjs";
import { createGateway } from "../etcd/gateway.mjs";
import { createCallCounters, createMetrics, createServiceStats } from "../etcd/services/metrics.mjs";
import { services as schema } from "../etcd/proto/schema.mjs";
import { BASE_HEADER, DEFAULT_NAMESPACE, NAMESPACE_HEADER } from "./router.mjs";
import { Sockets } from "./sockets.mjs";

const MiB = 1024 * 1024;

/** Defaults, each overridable by a Worker var of the same name (wrangler.toml [vars]). */
export const DEFAULTS = {
  // etcd's minimum lease TTL with default flags.
  EDGE_LEASE_MIN_TTL: 2,
  // Every revision back to the last compaction, as etcd keeps them.
  EDGE_LEASE_HISTORY: Infinity,
  // Keys, values and history of one namespace, as etcd's quota counts them
  // (64 bytes a version on top). One object's isolate has 128 MB of memory,
  // shared with the JS heap (and perhaps other objects), and the engine
  // holds the data in wasm memory at up to ~4x what the quota counts (half
  // a million one-byte keys: 33.5 MB counted, 121 MB of wasm memory): 8 MiB
  // keeps a namespace of tiny keys near 32 MB.
  EDGE_LEASE_QUOTA_BYTES: 8 * MiB,
  // etcd's --auth-token-ttl (seconds) and --bcrypt-cost.
  EDGE_LEASE_AUTH_TOKEN_TTL: 300,
  EDGE_LEASE_BCRYPT_COST: 10,
};

function number(env, name) {
  const v = env?.[name];
  if (v === undefined || v === null || v === "") return DEFAULTS[name];
  if (v === "Infinity" || v === Infinity) return Infinity;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`edge-lease: ${name} must be a whole number or "Infinity", got ${JSON.stringify(v)}`);
  return n;
}


/**
 * The engine's options for this object. SQLite-backed (recommended): key
 * and value of one stored entry may take 2 MB together, so values up to
 * etcd's 1.5 MiB request limit fit. KV-backed: stored keys are at most
 * 2 KiB (a key is stored percent-encoded, up to 3 bytes per byte, after a
 * prefix of 35 bytes) and values 128 KiB.
 */
export function engineOptions(env, sqlite) {
  return {
    minTtl: number(env, "EDGE_LEASE_MIN_TTL"),
    history: number(env, "EDGE_LEASE_HISTORY"),
    quotaBytes: number(env, "EDGE_LEASE_QUOTA_BYTES"),
    maxKeyBytes: sqlite ? 4096 : KV_MAX_ENGINE_KEY_BYTES,
    maxValueBytes: sqlite ? 1.5 * MiB : 127 * 1024,
  };
}

export class LeaseNamespace {
  #ctx;
  #env;
  #dl = null;
  #gateway = null;
  #sockets = null;
  // This namespace's name and public URL, as the last request named them.
  #name = DEFAULT_NAMESPACE;
  #url = "";

  constructor(ctx, env) {
    this.#ctx = ctx;
    this.#env = env;
    // No event is delivered until the lessor is restored. If this throws
    // (a corrupt entry, bad settings), the runtime resets the object and
    // the request that woke it fails; the next one tries again.
    ctx.blockConcurrencyWhile(() => this.#open());
  }

  async #open() {
    const storage = this.#ctx.storage;
    const sqlite = sqliteBacked(storage);
    const options = engineOptions(this.#env, sqlite);
    this.#dl = await DurableLessor.open(storage, { ...options, outputGate: true, Lessor, id: String(this.#ctx.id) });
    const lessor = this.#dl.lessor;
    const ids = await memberIds([`edge-lease:${this.#ctx.id}`], "edge-lease");
    const self = this;
    const member = {
      ...ids,
      raftTerm: 2,
      get name() {
        return self.#name;
      },
      // No peers: the namespace's own URL.
      get peerURLs() {
        return [self.#url];
      },
      get clientURLs() {
        return [self.#url];
      },
    };
    // What etcd's Status calls dbSize: the bytes the quota counts.
    const store = { sizes: { get journal() { return lessor.sizeBytes; }, snapshot: 0, header: 0 }, compactFrom() {} };
    // A failed engine (a wasm trap) resets the object: the next request
    // reopens it from storage.
    const onFatal = (e) => this.#ctx.abort?.(`edge-lease: the engine failed: ${e?.message ?? e}`);
    // (Snapshots: an isolate has 128 MB, which the engine's data and the
    // file must fit in.)
    const stats = createServiceStats();
    // Auth per namespace: its users, roles and tokens are this object's.
    // (A KV-backed object stores at most 128 KiB in one value.)
    const auth = {
      tokenTtlMs: number(this.#env, "EDGE_LEASE_AUTH_TOKEN_TTL") * 1000,
      bcryptCost: number(this.#env, "EDGE_LEASE_BCRYPT_COST"),
      maxStateBytes: sqlite ? undefined : 127 * 1024,
    };
    const services = createServices({ lessor, store, member, maxSnapshotBytes: 8 * 1024 * 1024, stats, onFatal, auth });
    // Calls counted since the object woke (its /metrics' gRPC counters: the gateway's calls).
    const calls = createCallCounters(schema);
    const health = { success: 0, failures: 0 };
    this.#gateway = createGateway({ services, counters: calls, health, metrics: createMetrics({ lessor, store, member, quotaBytes: options.quotaBytes, calls, stats, health }) });
    this.#sockets = new Sockets({ ctx: this.#ctx, services, dl: this.#dl, named: (n, u) => this.#named(n, u) });
  }

  #named(name, url) {
    if (name) this.#name = name;
    if (url) this.#url = url;
  }

  async fetch(request) {
    const url = new URL(request.url);
    this.#named(request.headers.get(NAMESPACE_HEADER), request.headers.get(BASE_HEADER) ?? url.origin);
    if ((request.headers.get("upgrade") ?? "").toLowerCase() === "websocket") {
      return this.#sockets.accept(request, url.pathname, this.#name, this.#url);
    }
    const response = await this.#gateway(request);
    // A grant may need an earlier alarm: set before the answer leaves (the
    // output gate holds it until the alarm is stored too).
    this.#dl.arm();
    if (!/^\/v3[^/]*\/(lease\/keepalive|watch|election\/observe)$/.test(url.pathname) || !response.body || response.status !== 200) {
      return response;
    }
    // A stream: each chunk waits until the writes before it are confirmed
    // (a persisted renewal; the change a watch event or a leader reports).
    const dl = this.#dl;
    const gated = response.body.pipeThrough(
      new TransformStream({
        async transform(chunk, controller) {
          await dl.sync();
          controller.enqueue(chunk);
        },
      }),
    );
    // Cloudflare compresses JSON answers for clients that accept gzip or br,
    // and a compressor holds small chunks back: a watch event or a keepalive
    // answer would wait for more to come. A stream goes out as it is.
    const headers = new Headers(response.headers);
    headers.set("content-encoding", "identity");
    headers.set("cache-control", "no-transform");
    return new Response(gated, { status: response.status, headers });
  }

  async alarm() {
    await this.#dl.alarm();
  }

  // WebSocket hibernation: the runtime calls these on a woken object too.
  async webSocketMessage(ws, message) {
    await this.#sockets.message(ws, message);
  }

  async webSocketClose(ws, code, reason) {
    this.#sockets.closed(ws, code, reason);
  }

  async webSocketError(ws) {
    this.#sockets.closed(ws, 1011, "error");
  }
}
