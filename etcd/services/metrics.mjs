// etcd's /metrics (Prometheus's text format, version 0.0.4): the subset of
// etcd 3.4's metrics that this server can give honestly, under etcd's names
// and types, so dashboards and `etcdctl check datascale` read them: the
// member and its versions, leadership (always this member's), the quota,
// the data's sizes, revisions and keys, the engine's reads, puts, deletes,
// transactions and lease grants, renewals and ends (counted as etcd's store
// and lessor count them), writes (as raft proposals: the
// revision, as Status's raft index), the gRPC transport's calls, messages
// and bytes (and calls per client version), the TTLs granted, how long
// compactions, defragmentations, snapshots and HashKV took, and the
// process's own figures when the host gives them (Node; not a Worker). (etcd's gateway calls its own gRPC server, so etcd counts
// gateway calls as gRPC calls too; so does gateway.mjs.) Values are
// written as Go's Prometheus client writes them (exponent form from 1e6
// and below 1e-4).
import { CLUSTER_VERSION, SERVER_VERSION, dbSizes } from "./common.mjs";
import { Code } from "../errors.mjs";

const TYPES = { "": "unary", c: "client_stream", s: "server_stream", cs: "bidi_stream" };
// Code names as grpc-go spells them in labels ("Canceled" is its name for
// 1), with their numbers, in the order the labels sort.
const CODES = Object.entries(Code).sort(([a], [b]) => (a < b ? -1 : 1));
// Client versions counted apart in etcd_server_client_requests_total.
const MAX_CLIENT_VERSIONS = 64;
const byLabels = (a, b) => (a.labels < b.labels ? -1 : a.labels > b.labels ? 1 : 0);
// The code etcd 3.4.23 counts a call the client cancels with (measured):
// LeaseKeepAlive ends with its "no leader" error; v3lock's Lock,
// v3election's Campaign and Observe and a Snapshot under way with the
// cancelled context as is (Unknown); the rest Canceled.
const CANCELLED = {
  "/etcdserverpb.Lease/LeaseKeepAlive": Code.Unavailable,
  "/v3lockpb.Lock/Lock": Code.Unknown,
  "/v3electionpb.Election/Campaign": Code.Unknown,
  "/v3electionpb.Election/Observe": Code.Unknown,
  "/etcdserverpb.Maintenance/Snapshot": Code.Unknown,
};

/** A metric family's text: its help, its type, then its samples' lines. */
const family = (name, type, help, samples) => [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples].join("\n");

/** Prometheus's exponential buckets: `count` bounds from `start`, each `factor` times the last. */
const exponential = (start, factor, count) => Array.from({ length: count }, (_, i) => start * factor ** i);

/**
 * A Prometheus histogram over `bounds` (default: etcd's for its disk syncs,
 * 1 ms doubling to 8.192 s): `observe(value)`, `text(name, help)`.
 */
export function createHistogram(bounds = exponential(0.001, 2, 14)) {
  const counts = new Array(bounds.length).fill(0);
  let n = 0;
  let sum = 0;
  return {
    observe(value) {
      n++;
      sum += value;
      const i = bounds.findIndex((b) => value <= b);
      if (i >= 0) counts[i]++;
    },
    get count() {
      return n;
    },
    text(name, help) {
      let below = 0;
      const buckets = bounds.map((b, i) => `${name}_bucket{le="${goFloat(b)}"} ${(below += counts[i])}`);
      return family(name, "histogram", help, [...buckets, `${name}_bucket{le="+Inf"} ${n}`, `${name}_sum ${goFloat(sum)}`, `${name}_count ${n}`]);
    },
  };
}

/**
 * What the services record for /metrics beside the engine's own counts,
 * each under etcd 3.4's buckets: `watch`, the open watch sessions and the
 * events handed to them (services/watch.mjs); `leaseTtl`, the TTL of each
 * lease granted (after the minimum); the durations of HashKV (`hashKv`; and
 * `hash`, for Hash, which is not served), of Defragment (`defrag`, and
 * `defragging` while one runs), of making a snapshot (`snapshot`: until its
 * file is laid out and its size known), and of a compaction (`compaction`:
 * moving its point, in ms; `compactionDurable`: until it is swept and on
 * disk, in ms; `compactionPause`: each step of its sweep, in ms).
 */
export function createServiceStats() {
  return {
    watch: { sessions: new Set(), events: 0 },
    leaseTtl: createHistogram(exponential(1, 2, 24)),
    hashKv: createHistogram(exponential(0.01, 2, 15)),
    hash: createHistogram(exponential(0.01, 2, 15)),
    defrag: createHistogram(exponential(0.1, 2, 13)),
    defragging: 0,
    snapshot: createHistogram(exponential(0.01, 2, 17)),
    compaction: createHistogram(exponential(0.5, 2, 14)),
    compactionDurable: createHistogram(exponential(100, 2, 14)),
    // Each step of a compaction's sweep (etcd: each batch of 1000 keys its
    // backend deletes), in ms.
    compactionPause: createHistogram(exponential(1, 2, 13)),
  };
}

/** Milliseconds since `t0` (performance.now()), in seconds. */
export const secondsSince = (t0) => (performance.now() - t0) / 1000;

/**
 * Counts of the gRPC transport's calls per method, as go-grpc-prometheus
 * keeps them for etcd (`schema`: a services table of
 * etcd/proto/schema.mjs): calls started, messages received and sent,
 * calls handled per status code, and the bytes of those messages. etcd's
 * own services and gRPC's health service are listed from the start (etcd
 * registers its metrics after them), v3lock's and v3election's once used,
 * each count once it is not 0 (as etcd's). `cancelled` is the code a call
 * the client cancels is counted with. `of("/package.Service/Method")` is
 * the method's counts (null for a path with none): the transport adds to
 * them, and calls `client(version)` as a call starts (the client's
 * client-api-version header, null without one: etcd's gateway sends none);
 * `bytes()` is [received, sent] over all methods.
 */
export function createCallCounters(schema) {
  // etcd_server_client_requests_total: calls per type and the version the
  // client names in its client-api-version header ("unknown" without one).
  const requests = new Map();
  const client = (type) => {
    const keys = new Map(); // version -> its key in `requests`
    return (version) => {
      const v = version ?? "unknown";
      let k = keys.get(v);
      if (k === undefined) {
        // (A label value is the client's text: kept short and plain, and
        // only so many kept apart, so no client can grow /metrics without
        // bound.)
        const own = /^[\w.+-]{0,32}$/.test(v) && (requests.has(`${type} ${v}`) || requests.size < MAX_CLIENT_VERSIONS);
        k = `${type} ${own ? v : "other"}`;
        if (keys.size < MAX_CLIENT_VERSIONS) keys.set(v, k);
      }
      requests.set(k, (requests.get(k) ?? 0) + 1);
    };
  };
  const methods = new Map();
  for (const [service, rpcs] of Object.entries(schema)) {
    for (const [method, [, , streaming]] of Object.entries(rpcs)) {
      const labels = `grpc_method="${method}",grpc_service="${service}",grpc_type="${TYPES[streaming]}"`;
      const listed = !service.startsWith("v3");
      const path = `/${service}/${method}`;
      const cancelled = CANCELLED[path] ?? Code.Canceled;
      const handled = new Array(CODES.length).fill(0);
      methods.set(path, { labels, listed, cancelled, started: 0, received: 0, sent: 0, handled, bytesIn: 0, bytesOut: 0, client: client(streaming ? "stream" : "unary") });
    }
  }
  const all = [...methods.values()].sort(byLabels);
  const sum = (field) => all.reduce((n, m) => n + m[field], 0);
  const counter = (name, help, field) => family(name, "counter", help, all.filter((m) => m.listed || m[field] > 0).map((m) => `${name}{${m.labels}} ${goFloat(m[field])}`));
  return {
    of: (path) => methods.get(path) ?? null,
    bytes: () => [sum("bytesIn"), sum("bytesOut")],
    /** The metric families' texts. */
    families() {
      const handled = [];
      for (const [code, i] of CODES) {
        for (const m of all) if (m.listed || m.handled[i] > 0) handled.push(`grpc_server_handled_total{grpc_code="${code}",${m.labels}} ${goFloat(m.handled[i])}`);
      }
      const out = [
        family("grpc_server_handled_total", "counter", "gRPC calls completed, by status code.", handled),
        counter("grpc_server_msg_received_total", "gRPC messages received.", "received"),
        counter("grpc_server_msg_sent_total", "gRPC messages sent.", "sent"),
        counter("grpc_server_started_total", "gRPC calls started.", "started"),
      ];
      if (requests.size > 0) {
        const name = "etcd_server_client_requests_total";
        const samples = [...requests].map(([k, n]) => {
          const [type, version] = k.split(" ");
          return `${name}{client_api_version="${version}",type="${type}"} ${goFloat(n)}`;
        });
        out.push(family(name, "counter", "Calls started, by type and the client's API version (its client-api-version header).", samples.sort()));
      }
      return out;
    },
  };
}

/** A float as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it. */
export function goFloat(v) {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v === 0) return "0";
  const [mantissa, e] = v.toExponential().split("e");
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return String(v);
  return `${mantissa}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}

/**
 * A function giving the text of /metrics for `lessor` (its `store`,
 * `member` and `quotaBytes`); `host()` gives the process's figures
 * ({ residentBytes, virtualBytes, cpuSeconds, startSeconds, openFds,
 * maxFds }, any of them left out) or is null; `calls`, the gRPC
 * transport's counts (createCallCounters), or null; `syncs`, a histogram of
 * the journal's syncs (createHistogram), or null; `stats`, the services'
 * (createServiceStats), or null; `health`, the gateway's { success,
 * failures } count of /health answers, or null.
 */
export function createMetrics({ lessor, store = null, member, quotaBytes = null, host = null, calls = null, syncs = null, stats = null, health = null }) {
  return () => {
    const out = [];
    const metric = (name, type, help, value, labels = "") => {
      if (value !== undefined && value !== null) out.push(family(name, type, help, [`${name}${labels} ${goFloat(value)}`]));
    };
    const [dbSize, dbSizeInUse] = dbSizes(lessor, store);
    metric("etcd_cluster_version", "gauge", "The cluster version: 1 for the cluster_version label.", 1, `{cluster_version="${CLUSTER_VERSION.split(".").slice(0, 2).join(".")}"}`);
    // Counted by the engine as etcd counts them (crates/core/src/counts.rs), since start.
    const c = lessor.counts;
    metric("etcd_debugging_lease_granted_total", "counter", "Leases granted.", c.granted);
    metric("etcd_debugging_lease_renewed_total", "counter", "Renewals of live leases.", c.renewed);
    metric("etcd_debugging_lease_revoked_total", "counter", "Leases revoked, expired ones included.", c.revoked);
    metric("etcd_debugging_mvcc_compact_revision", "gauge", "The revision of the last compaction (-1: none).", lessor.compactRevision);
    metric("etcd_debugging_mvcc_current_revision", "gauge", "The current revision of the store.", lessor.revision);
    metric("etcd_debugging_mvcc_db_compaction_keys_total", "counter", "Versions compactions dropped (etcd: key bucket records deleted).", c.compacted);
    metric("etcd_debugging_mvcc_db_total_size_in_bytes", "gauge", "The store's size on disk, in bytes.", dbSize);
    metric("etcd_debugging_mvcc_keys_total", "gauge", "Keys held.", lessor.keyCount);
    // etcd 3.4 gives these four under both names.
    for (const prefix of ["etcd_debugging_mvcc", "etcd_mvcc"]) {
      metric(`${prefix}_delete_total`, "counter", "Deletes made (a lease's end: one per key).", c.deletes);
      metric(`${prefix}_put_total`, "counter", "Puts made.", c.puts);
      metric(`${prefix}_range_total`, "counter", "Reads made (compares, and the reads puts and deletes make for prev_kv or ignore_*, included).", c.ranges);
      metric(`${prefix}_txn_total`, "counter", "Store transactions with more than one read, put or delete.", c.txns);
    }
    metric("etcd_debugging_mvcc_total_put_size_in_bytes", "gauge", "Bytes of the keys and values put.", c.putBytes);
    metric("etcd_debugging_server_lease_expired_total", "counter", "Leases ended by their deadline.", c.expired);
    const watches = stats?.watch;
    if (watches) {
      let watchers = 0;
      let slow = 0;
      for (const s of watches.sessions) {
        const n = s.watcherCounts();
        watchers += n.watchers;
        slow += n.slow;
      }
      metric("etcd_debugging_mvcc_events_total", "counter", "Events handed to watchers.", watches.events);
      metric("etcd_debugging_mvcc_slow_watcher_total", "gauge", "Watchers waiting for their client to read.", slow);
      metric("etcd_debugging_mvcc_watch_stream_total", "gauge", "Watch streams open (gRPC and the gateway's).", watches.sessions.size);
      metric("etcd_debugging_mvcc_watcher_total", "gauge", "Watchers on them.", watchers);
    }
    // (The journal's sync is what makes a write durable, etcd's WAL fsync
    // and its backend commit in one.)
    if (syncs) out.push(syncs.text("etcd_disk_backend_commit_duration_seconds", "How long the journal's syncs took (fdatasync): the store's commits."));
    if (syncs) out.push(syncs.text("etcd_disk_wal_fsync_duration_seconds", "How long the journal's syncs took (fdatasync), as etcd's WAL fsyncs."));
    if (stats) {
      out.push(stats.leaseTtl.text("etcd_debugging_lease_ttl_total", "The TTLs of the leases granted, in seconds."));
      out.push(stats.compactionPause.text("etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds", "How long each step of a compaction's sweep took (etcd: each batch of its deletes), in ms."));
      out.push(stats.compactionDurable.text("etcd_debugging_mvcc_db_compaction_total_duration_milliseconds", "How long compactions took until on disk, in ms."));
      out.push(stats.compaction.text("etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds", "How long the engine's compactions took, in ms."));
      out.push(stats.defrag.text("etcd_disk_backend_defrag_duration_seconds", "How long defragmentations took."));
      out.push(stats.snapshot.text("etcd_disk_backend_snapshot_duration_seconds", "How long snapshots took to make, until their size was known."));
      metric("etcd_disk_defrag_inflight", "gauge", "Whether a defragmentation runs: 1 or 0.", Math.min(1, stats.defragging));
      out.push(stats.hash.text("etcd_mvcc_hash_duration_seconds", "How long Hash took (not served: none)."));
      out.push(stats.hashKv.text("etcd_mvcc_hash_rev_duration_seconds", "How long HashKV took."));
    }
    metric("etcd_disk_wal_write_bytes_total", "gauge", "Bytes of records appended to the journal since start.", store?.bytesWritten);
    metric("etcd_mvcc_db_total_size_in_bytes", "gauge", "The store's size on disk, in bytes.", dbSize);
    metric("etcd_mvcc_db_total_size_in_use_in_bytes", "gauge", "The bytes of the store in use.", dbSizeInUse);
    if (calls) {
      const [received, sent] = calls.bytes();
      metric("etcd_network_client_grpc_received_bytes_total", "counter", "Bytes of the messages received from gRPC clients.", received);
      metric("etcd_network_client_grpc_sent_bytes_total", "counter", "Bytes of the messages sent to gRPC clients.", sent);
    }
    if (health) {
      metric("etcd_server_health_failures", "counter", "/health answers that were not healthy.", health.failures);
      metric("etcd_server_health_success", "counter", "/health answers that were healthy.", health.success);
    }
    metric("etcd_server_has_leader", "gauge", "Whether a leader exists: 1 (a single member leads itself).", 1);
    metric("etcd_server_id", "gauge", "The member's id in hexadecimal: 1 for the server_id label.", 1, `{server_id="${BigInt(member.id).toString(16)}"}`);
    metric("etcd_server_is_leader", "gauge", "Whether this member leads: 1.", 1);
    metric("etcd_server_is_learner", "gauge", "Whether this member is a learner: 0.", 0);
    metric("etcd_server_leader_changes_seen_total", "counter", "Leader changes seen: the one at start.", 1);
    // (No raft: the applied index is the revision, as Status's raftIndex;
    // pending are the writes waiting for their sync; none fails but with
    // the disk, which stops the server.)
    metric("etcd_server_proposals_applied_total", "gauge", "Writes applied: the revision, as Status's raftAppliedIndex.", lessor.revision);
    metric("etcd_server_proposals_committed_total", "gauge", "Writes committed: the revision, as Status's raftIndex.", lessor.revision);
    metric("etcd_server_proposals_failed_total", "counter", "Writes that failed to commit.", 0);
    metric("etcd_server_proposals_pending", "gauge", "Writes waiting for the disk.", lessor.pendingWrites);
    metric("etcd_server_quota_backend_bytes", "gauge", "The quota on the store's data, in bytes.", quotaBytes);
    metric("etcd_server_version", "gauge", "The server version: 1 for the server_version label.", 1, `{server_version="${SERVER_VERSION}"}`);
    if (calls) out.push(...calls.families());
    const p = host?.() ?? {};
    metric("os_fd_limit", "gauge", "The most open file descriptors allowed.", p.maxFds);
    metric("os_fd_used", "gauge", "Open file descriptors.", p.openFds);
    metric("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.", p.cpuSeconds);
    metric("process_max_fds", "gauge", "The most open file descriptors allowed.", p.maxFds);
    metric("process_open_fds", "gauge", "Open file descriptors.", p.openFds);
    metric("process_resident_memory_bytes", "gauge", "Resident memory, in bytes.", p.residentBytes);
    metric("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.", p.startSeconds);
    metric("process_virtual_memory_bytes", "gauge", "Virtual memory, in bytes.", p.virtualBytes);
    // In name order, as Go's Prometheus client writes them (each entry
    // starts "# HELP <name> ").
    return out.sort().join("\n") + "\n";
  };
}
