// The service layer both transports share: "package.Service/Method" -> a
// handler. A unary handler is (request, call) => response (or a promise of
// it), where call.size is the request's encoded size and call.signal aborts
// when the client cancels or goes, and call.token is the caller's auth token
// (gRPC metadata `token`, else `authorization`; the gateway's header
// `Grpc-Metadata-Token`, else `Authorization`), or undefined; a
// bidirectional stream that answers each request with one response is
// { each(request) }; one whose responses come independently (Watch) is
// { open(send, call) } -> { request(msg), drain(), end(), close() }
// (services/watch.mjs says how); a server stream is { stream(request, call) }
// returning an async iterable. Messages are plain objects (etcd/jsonpb.mjs
// says how). Methods with no handler here answer Unimplemented: they wait
// for engine features (docs/server.md).
import { etcdError, headers, isEngineFailure, throughErrors } from "./common.mjs";
import { kvService } from "./kv.mjs";
import { leaseService } from "./lease.mjs";
import { watchService } from "./watch.mjs";
import { clusterService } from "./cluster.mjs";
import { maintenanceService } from "./maintenance.mjs";
import { authService } from "./auth.mjs";
import { lockService } from "./lock.mjs";
import { electionService } from "./election.mjs";
import { createAlarms } from "./alarms.mjs";
import { healthService } from "./health.mjs";
import { createServiceStats } from "./metrics.mjs";
import { createAuth } from "../auth/auth.mjs";
import { policyOf } from "../methods.mjs";

export { memberIds } from "./cluster.mjs";

/**
 * `lessor`: the engine; `store`: its FileStore or null; `member`: { id,
 * clusterId (uint64 decimal strings), name, peerURLs, clientURLs, raftTerm };
 * `maxTxnOps` (etcd's --max-txn-ops, also the engine's), `progressIntervalMs`
 * (etcd's --experimental-watch-progress-notify-interval), `maxSnapshotBytes`
 * `snapshot` and `hashKv` (maintenance.mjs); `stats` (metrics.mjs's
 * createServiceStats: what the services record for /metrics);
 * `onFatal(error)` hears the first call that finds the engine failed
 * (below); `auth`: { tokenTtlMs (--auth-token-ttl), bcryptCost
 * (--bcrypt-cost), now } for etcd/auth/auth.mjs, whose users and roles
 * `lessor` keeps. Returns the methods, path -> handler, and
 * `authEnabled()`.
 */
export function createServices({ lessor, store = null, member, maxTxnOps, maxRequestBytes, progressIntervalMs, maxSnapshotBytes, snapshot, hashKv, hashKvInlineBytes, stats = createServiceStats(), onFatal = null, auth: authOptions = {} }) {
  const alarms = createAlarms(member, lessor);
  const auth = createAuth({ lessor, ...authOptions });
  // Each step of a compaction's sweep but the last, as etcd observes a
  // pause after each batch of deletes that more batches follow.
  lessor.addEventListener("compaction", (e) => e.pending > 0 && stats.compactionPause.observe(e.ms));
  const ctx = { lessor, store, member, maxTxnOps, maxRequestBytes, progressIntervalMs, maxSnapshotBytes, snapshot, hashKv, hashKvInlineBytes, stats, alarms, auth, ...headers(lessor, member) };
  const services = {
    "etcdserverpb.KV": kvService(ctx),
    "etcdserverpb.Watch": watchService(ctx),
    "etcdserverpb.Lease": leaseService(ctx),
    "etcdserverpb.Cluster": clusterService(ctx),
    "etcdserverpb.Maintenance": maintenanceService(ctx),
    "etcdserverpb.Auth": authService(ctx),
    "v3lockpb.Lock": lockService(ctx),
    "v3electionpb.Election": electionService(ctx),
    "grpc.health.v1.Health": healthService(),
  };
  const table = new Map();
  const fatal = once(onFatal);
  for (const [service, methods] of Object.entries(services)) {
    for (const [name, handler] of Object.entries(methods)) {
      const path = `${service}/${name}`;
      const checked = gated(auth, path, handler);
      const h = typeof checked === "function" ? durable(lessor, alarms.guard(path, checked)) : checked.stream ? durableStream(lessor, checked) : checked;
      table.set(path, fatal ? failing(h, fatal) : h);
    }
  }
  // (For a host's own checks: etcd's gateway refuses certificate names
  // while auth is on.)
  table.authEnabled = () => auth.enabled;
  return table;
}

// The method's auth (etcd/methods.mjs) before its handler runs, unless the
// handler's admission applies it (`admitted`) or it has none.
function gated(auth, path, handler) {
  const { auth: check, admitted } = policyOf(path);
  if (!check || admitted) return handler;
  if (typeof handler === "function") {
    return (req, call) => {
      auth.authorize(check, req, call?.token);
      return handler(req, call);
    };
  }
  if (!handler.stream) return handler;
  return {
    // (Refused at the first message: the transports' stream error.)
    async *stream(req, call) {
      auth.authorize(check, req, call?.token);
      yield* handler.stream(req, call);
    },
  };
}

const once = (f) => {
  let called = false;
  return f && ((e) => called || ((called = true), f(e)));
};

// An engine that trapped (its wasm ran out of memory, say) is unusable from
// then on: every later call into it fails. The host hears the first such
// failure and restarts (the server exits, a Durable Object resets itself);
// every acknowledged write is in the store. Errors go on to the caller.
function failing(handler, fatal) {
  const check = (e) => {
    if (isEngineFailure(e)) fatal(e);
    throw e;
  };
  if (typeof handler === "function") return throughErrors(handler, check);
  if (handler.each) return { ...handler, each: throughErrors(handler.each, check) };
  if (handler.stream) {
    return {
      async *stream(req, call) {
        try {
          yield* handler.stream(req, call);
        } catch (e) {
          check(e);
        }
      },
    };
  }
  if (handler.open) {
    return {
      open(send, call) {
        const s = handler.open(send, call);
        s.request = throughErrors(s.request.bind(s), check);
        return s;
      },
    };
  }
  return handler;
}

// A unary answer goes out only once every write made so far is durable: its
// own (acknowledged = on disk) and, for a read, the ones it may have seen.
// With a group-committing store many calls share one fsync this way. An
// answer with nothing to wait for (a read, when every write is on disk) is
// returned as it is, not as a promise (the awaits cost a read ~5% of its
// CPU); one that waits chains once on the flush. Errors are always a
// rejected promise; a failed store's error replaces the answer.
function durable(lessor, handler) {
  const after = (ok) => (lessor.pendingWrites > 0 ? lessor.flush().then(ok, storeFailed) : ok());
  return (req, call) => {
    let res;
    try {
      res = handler(req, call);
    } catch (e) {
      return after(() => Promise.reject(e));
    }
    if (typeof res?.then === "function") {
      return res.then(
        (v) => after(() => v),
        (e) => after(() => Promise.reject(e)),
      );
    }
    return lessor.pendingWrites > 0 ? after(() => res) : res;
  };
}

// A server stream's messages (Observe) likewise wait for what they report.
function durableStream(lessor, handler) {
  return {
    async *stream(req, call) {
      for await (const msg of handler.stream(req, call)) {
        if (lessor.pendingWrites > 0) await lessor.flush().catch(storeFailed);
        yield msg;
      }
    },
  };
}

/** A failed store's error (waiting for the writes so far) as etcd's error for it. */
function storeFailed(e) {
  throw etcdError(e);
}
