// etcd's command-line flags, for a single-member cluster. Flags are
// `--name value` or `--name=value`, as etcd takes them. A configuration that
// needs a second member is refused: edge-lease is one process.

const DEFAULTS = {
  name: "default",
  "data-dir": "data",
  "listen-client-urls": "http://127.0.0.1:2379",
  "advertise-client-urls": "http://localhost:2379",
  "listen-peer-urls": "http://localhost:2380",
  "initial-advertise-peer-urls": "http://localhost:2380",
  "initial-cluster": "", // default: NAME=<initial-advertise-peer-urls>
  "initial-cluster-token": "etcd-cluster",
  "initial-cluster-state": "new",
  "election-timeout": "1000",
  // etcd's default is unlimited (2^32-1); calls past it wait in the client.
  "max-concurrent-streams": "1000",
  "quota-backend-bytes": "0",
  "max-txn-ops": "128",
  "auto-compaction-mode": "periodic",
  "auto-compaction-retention": "0",
  "experimental-watch-progress-notify-interval": "10m",
};
// Accepted and without effect here (logging, raft timing that has no
// counterpart in one process).
const IGNORED = new Set(["logger", "log-level", "log-outputs", "debug", "heartbeat-interval", "enable-v2"]);

export class FlagError extends Error {}

const UNITS = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration, in ms (null if it does not parse). */
export function parseDuration(text) {
  if (text === "0") return 0;
  const m = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/.exec(text);
  if (!m) return null;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)) ms += Number(n) * UNITS[unit];
  return m[1] === "-" ? -ms : ms;
}

/** A whole number flag: etcd's integer parse, with a lower bound. */
function integerFlag(v, flag, min) {
  if (!/^[+-]?\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) {
    throw new FlagError(`invalid value ${JSON.stringify(v)} for flag --${flag}`);
  }
  return Number(v);
}

/**
 * --auto-compaction-mode/--auto-compaction-retention as etcd reads them:
 * null (off, retention 0), { revisions } or { periodMs } (a bare number is
 * hours in periodic mode).
 */
function autoCompaction(mode, retention) {
  if (mode === "revision") {
    const n = integerFlag(retention, "auto-compaction-retention", 0);
    return n === 0 ? null : { revisions: n };
  }
  if (mode !== "periodic") throw new FlagError(`unknown auto-compaction-mode ${JSON.stringify(mode)}`);
  const ms = /^\d+$/.test(retention) ? Number(retention) * 3_600_000 : parseDuration(retention);
  if (ms === null || ms < 0) throw new FlagError(`invalid auto-compaction-retention ${JSON.stringify(retention)}`);
  return ms === 0 ? null : { periodMs: ms };
}

const urls = (s) => s.split(",").map((u) => u.trim()).filter(Boolean);

function checkUrls(flag, list) {
  if (list.length === 0) throw new FlagError(`--${flag} is empty`);
  for (const u of list) {
    let url;
    try {
      url = new URL(u);
    } catch {
      throw new FlagError(`--${flag}: ${JSON.stringify(u)} is not a URL`);
    }
    if (url.protocol !== "http:") throw new FlagError(`--${flag}: ${u}: only http:// is supported (no TLS)`);
  }
  return list;
}

export function parseFlags(argv) {
  const v = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?([a-z0-9-]+)(?:=(.*))?$/s.exec(argv[i]);
    if (!m) throw new FlagError(`unexpected argument ${JSON.stringify(argv[i])}`);
    const [, name, inline] = m;
    if (!(name in DEFAULTS) && !IGNORED.has(name)) throw new FlagError(`flag provided but not supported: --${name}`);
    let value = inline;
    if (value === undefined) {
      if (name === "debug" || (name === "enable-v2" && !/^(true|false)$/.test(argv[i + 1] ?? ""))) value = "true";
      else if (i + 1 < argv.length) value = argv[++i];
      else throw new FlagError(`flag needs an argument: --${name}`);
    }
    v[name] = value;
  }
  if (v["enable-v2"] === "true") throw new FlagError("--enable-v2: the v2 API is not supported");

  const listen = checkUrls("listen-client-urls", urls(v["listen-client-urls"]));
  const advertise = checkUrls("advertise-client-urls", urls(v["advertise-client-urls"]));
  const peers = checkUrls("initial-advertise-peer-urls", urls(v["initial-advertise-peer-urls"]));
  checkUrls("listen-peer-urls", urls(v["listen-peer-urls"]));

  const cluster = v["initial-cluster"] || `${v.name}=${peers.join(",")}`;
  const members = new Map();
  for (const part of cluster.split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new FlagError(`--initial-cluster: ${JSON.stringify(part)} is not NAME=URL`);
    const n = part.slice(0, eq);
    members.set(n, [...(members.get(n) ?? []), part.slice(eq + 1)]);
  }
  if (members.size !== 1) {
    throw new FlagError(
      `edge-lease is a single-member etcd: --initial-cluster names ${members.size} members (${[...members.keys()].join(", ")}); a cluster with more members needs real etcd`,
    );
  }
  if (!members.has(v.name)) {
    throw new FlagError(`couldn't find local name ${JSON.stringify(v.name)} in the initial cluster configuration`);
  }
  const clusterPeers = members.get(v.name);
  if ([...clusterPeers].sort().join(",") !== [...peers].sort().join(",")) {
    throw new FlagError(
      `--initial-cluster has ${v.name}=${clusterPeers.join(",")} but missing from --initial-advertise-peer-urls=${peers.join(",")}`,
    );
  }
  if (v["initial-cluster-state"] !== "new") {
    if (v["initial-cluster-state"] === "existing") {
      throw new FlagError("--initial-cluster-state=existing joins another member's cluster: edge-lease is a single-member etcd");
    }
    throw new FlagError(`--initial-cluster-state: ${JSON.stringify(v["initial-cluster-state"])} is not "new" or "existing"`);
  }
  const electionMs = Number(v["election-timeout"]);
  if (!Number.isInteger(electionMs) || electionMs <= 0) throw new FlagError("--election-timeout must be a positive number of ms");

  const streams = Number(v["max-concurrent-streams"]);
  if (!Number.isInteger(streams) || streams <= 0 || streams > 2 ** 32 - 1) {
    throw new FlagError("--max-concurrent-streams must be a positive number (at most 4294967295)");
  }
  const progressMs = parseDuration(v["experimental-watch-progress-notify-interval"]);
  if (progressMs === null) throw new FlagError("--experimental-watch-progress-notify-interval must be a duration (e.g. 10m)");

  return {
    name: v.name,
    maxConcurrentStreams: streams,
    dataDir: v["data-dir"],
    listen: listen.map((u) => new URL(u)),
    clientURLs: advertise,
    peerURLs: peers,
    token: v["initial-cluster-token"],
    // etcd's minimum lease TTL: 1.5 election timeouts, rounded up to seconds.
    minTtl: Math.ceil((3 * electionMs) / 2 / 1000),
    // 0: etcd's default (2 GiB), which main.mjs clamps to what the engine holds.
    quotaBytes: integerFlag(v["quota-backend-bytes"], "quota-backend-bytes", Number.MIN_SAFE_INTEGER),
    maxTxnOps: integerFlag(v["max-txn-ops"], "max-txn-ops", 1),
    autoCompaction: autoCompaction(v["auto-compaction-mode"], v["auto-compaction-retention"]),
    progressIntervalMs: progressMs,
  };
}
