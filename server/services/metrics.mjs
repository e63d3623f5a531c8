// etcd's /metrics (Prometheus's text format, version 0.0.4): the subset of
// etcd 3.4's metrics that this server can give honestly, under etcd's names
// and types, so dashboards and `etcdctl check datascale` read them: the
// member and its versions, leadership (always this member's), the quota,
// the data's sizes, revisions and keys, and the process's own figures when
// the host gives them (Node; not a Worker). Values are written as Go's
// Prometheus client writes them (exponent form from 1e6 and below 1e-4).
import { CLUSTER_VERSION, SERVER_VERSION, dbSizes } from "./common.mjs";

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
 * maxFds }, any of them left out) or is null.
 */
export function createMetrics({ lessor, store = null, member, quotaBytes = null, host = null }) {
  return () => {
    const out = [];
    const metric = (name, type, help, value, labels = "") => {
      if (value === undefined || value === null) return;
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name}${labels} ${goFloat(value)}`);
    };
    const [dbSize, dbSizeInUse] = dbSizes(lessor, store);
    metric("etcd_cluster_version", "gauge", "The cluster version: 1 for the cluster_version label.", 1, `{cluster_version="${CLUSTER_VERSION.split(".").slice(0, 2).join(".")}"}`);
    metric("etcd_debugging_mvcc_compact_revision", "gauge", "The revision of the last compaction (-1: none).", lessor.compactRevision);
    metric("etcd_debugging_mvcc_current_revision", "gauge", "The current revision of the store.", lessor.revision);
    metric("etcd_debugging_mvcc_db_total_size_in_bytes", "gauge", "The store's size on disk, in bytes.", dbSize);
    metric("etcd_debugging_mvcc_keys_total", "gauge", "Keys held.", lessor.keyCount);
    metric("etcd_mvcc_db_total_size_in_bytes", "gauge", "The store's size on disk, in bytes.", dbSize);
    metric("etcd_mvcc_db_total_size_in_use_in_bytes", "gauge", "The bytes of the store in use.", dbSizeInUse);
    metric("etcd_server_has_leader", "gauge", "Whether a leader exists: 1 (a single member leads itself).", 1);
    metric("etcd_server_id", "gauge", "The member's id in hexadecimal: 1 for the server_id label.", 1, `{server_id="${BigInt(member.id).toString(16)}"}`);
    metric("etcd_server_is_leader", "gauge", "Whether this member leads: 1.", 1);
    metric("etcd_server_is_learner", "gauge", "Whether this member is a learner: 0.", 0);
    metric("etcd_server_leader_changes_seen_total", "counter", "Leader changes seen: the one at start.", 1);
    metric("etcd_server_quota_backend_bytes", "gauge", "The quota on the store's data, in bytes.", quotaBytes);
    metric("etcd_server_version", "gauge", "The server version: 1 for the server_version label.", 1, `{server_version="${SERVER_VERSION}"}`);
    const p = host?.() ?? {};
    metric("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.", p.cpuSeconds);
    metric("process_max_fds", "gauge", "The most open file descriptors allowed.", p.maxFds);
    metric("process_open_fds", "gauge", "Open file descriptors.", p.openFds);
    metric("process_resident_memory_bytes", "gauge", "Resident memory, in bytes.", p.residentBytes);
    metric("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.", p.startSeconds);
    metric("process_virtual_memory_bytes", "gauge", "Virtual memory, in bytes.", p.virtualBytes);
    return out.join("\n") + "\n";
  };
}
