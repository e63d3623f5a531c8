// etcd's configuration, for a single-member cluster, from where etcd 3.4
// takes it: flags (`--name value` or `--name=value`), ETCD_NAME in the
// environment (pkg/flags' rules, which container set-ups rely on), or a YAML
// file (--config-file). A configuration that needs a second member is
// refused: edge-lease is one process.

import { readFileSync } from "node:fs";
import { MAX_REQUEST_BYTES_LIMIT } from "../etcd/limits.mjs";

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
  "max-request-bytes": String(1.5 * 1024 * 1024),
  "auto-compaction-mode": "periodic",
  "auto-compaction-retention": "0",
  "experimental-watch-progress-notify-interval": "10m",
  "listen-metrics-urls": "",
  // etcd's hidden flag; the gateway is always served here (below).
  "enable-grpc-gateway": "true",
  // TLS on the client and metrics listeners (server/tls.mjs).
  "cert-file": "",
  "key-file": "",
  "client-cert-auth": "false",
  "trusted-ca-file": "",
  "auto-tls": "false",
  "cipher-suites": "",
  // Auth (etcd/auth/): simple tokens only; their TTL in seconds; bcrypt's cost.
  "auth-token": "simple",
  "auth-token-ttl": "300",
  "bcrypt-cost": "10",
};
// Accepted and without effect here: logging and profiling (no pprof
// endpoints: etcd's sample config turns them on), and tuning of raft, its
// WAL and bbolt, which have no counterpart in one process with its own
// journal.
const IGNORED = new Set([
  "logger", "log-level", "log-outputs", "log-package-levels", "debug", "enable-v2", "metrics", "enable-pprof",
  "heartbeat-interval", "initial-election-tick-advance", "pre-vote", "strict-reconfig-check",
  "snapshot-count", "max-snapshots", "max-wals", "backend-batch-interval", "backend-batch-limit",
  "experimental-backend-bbolt-freelist-type", "experimental-compaction-batch-limit",
  "experimental-enable-lease-checkpoint", "experimental-initial-corrupt-check",
  "experimental-corrupt-check-time", "experimental-warning-apply-duration",
  // Hidden in etcd 3.4.23's help. (Without fsync etcd risks what it
  // acknowledged; here every write is synced all the same.)
  "unsafe-no-fsync", "experimental-enable-lease-checkpoint-persist",
]);
// Go bool flags: a bare one is true (a following "true" or "false" is taken
// as its value too).
const BOOLEAN = new Set([
  "enable-grpc-gateway", "debug", "enable-v2", "pre-vote", "strict-reconfig-check", "experimental-enable-lease-checkpoint",
  "experimental-initial-corrupt-check", "client-cert-auth", "auto-tls", "peer-client-cert-auth", "peer-auto-tls",
  "enable-pprof", "experimental-peer-skip-client-san-verification", "force-new-cluster",
  "unsafe-no-fsync", "experimental-enable-lease-checkpoint-persist",
]);
// Go's strconv.ParseBool spellings.
const BOOLS = { 1: "true", t: "true", T: "true", TRUE: "true", true: "true", True: "true", 0: "false", f: "false", F: "false", FALSE: "false", false: "false", False: "false" };
// etcd 3.4's other flags with its defaults (`etcd --help`). Given its
// default, one asks for nothing etcd would not do without it, and is
// accepted; any other value is refused, as a flag, as ETCD_* or in a config
// file, rather than dropped, since most change what a client can rely on
// (peer TLS, CRLs, auth, CORS, Host checks, the WAL's place).
const UNSUPPORTED = {
  "wal-dir": "", "grpc-keepalive-min-time": "5s", "grpc-keepalive-interval": "2h", "grpc-keepalive-timeout": "20s",
  discovery: "", "discovery-fallback": "proxy", "discovery-proxy": "", "discovery-srv": "", "discovery-srv-name": "",
  "client-crl-file": "", "client-cert-allowed-hostname": "", "peer-cert-file": "", "peer-key-file": "", "peer-client-cert-auth": "false",
  "peer-trusted-ca-file": "", "peer-cert-allowed-cn": "", "peer-cert-allowed-hostname": "", "peer-auto-tls": "false",
  "peer-crl-file": "", cors: "*", "host-whitelist": "*", proxy: "off", "proxy-failure-wait": "5000",
  "proxy-refresh-interval": "30000", "proxy-dial-timeout": "1000", "proxy-write-timeout": "5000", "proxy-read-timeout": "0",
  "experimental-enable-v2v3": "", "experimental-peer-skip-client-san-verification": "false", "force-new-cluster": "false",
};
// Flags that are Go durations: a config file gives them in nanoseconds.
const DURATIONS = new Set([
  "experimental-watch-progress-notify-interval", "grpc-keepalive-min-time", "grpc-keepalive-interval",
  "grpc-keepalive-timeout", "experimental-corrupt-check-time", "experimental-warning-apply-duration", "backend-batch-interval",
]);
// A config file's transport sections, as the flags they stand for.
const TRANSPORT = {
  "client-transport-security": { "cert-file": "cert-file", "key-file": "key-file", "client-cert-auth": "client-cert-auth", "trusted-ca-file": "trusted-ca-file", "auto-tls": "auto-tls", "crl-file": "client-crl-file" },
  "peer-transport-security": { "cert-file": "peer-cert-file", "key-file": "peer-key-file", "client-cert-auth": "peer-client-cert-auth", "trusted-ca-file": "peer-trusted-ca-file", "auto-tls": "peer-auto-tls", "crl-file": "peer-crl-file" },
};

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

function requestBytes(v) {
  const n = integerFlag(v, "max-request-bytes", 0);
  if (n > MAX_REQUEST_BYTES_LIMIT) throw new FlagError(`--max-request-bytes: at most ${MAX_REQUEST_BYTES_LIMIT} (128 MiB) here`);
  return n;
}

// A comma-separated flag (URLs, cipher suites) as its items.
const items = (s) => s.split(",").map((u) => u.trim()).filter(Boolean);

// Client URLs may be https:// (server/tls.mjs); peer URLs name no peer
// here, so only etcd's default scheme is taken for them.
function checkUrls(flag, list, schemes = ["http:", "https:"]) {
  if (list.length === 0) throw new FlagError(`--${flag} is empty`);
  for (const u of list) {
    let url;
    try {
      url = new URL(u);
    } catch {
      throw new FlagError(`--${flag}: ${JSON.stringify(u)} is not a URL`);
    }
    if (!schemes.includes(url.protocol)) throw new FlagError(`--${flag}: ${u}: only ${schemes.map((s) => `${s}//`).join(" or ")} is supported`);
  }
  return list;
}

/** The ETCD_* variable etcd reads for flag `name` (pkg/flags' FlagToEnv). */
const envName = (name) => `ETCD_${name.toUpperCase().replaceAll("-", "_")}`;

const isFlag = (name) => name in DEFAULTS || IGNORED.has(name) || Object.hasOwn(UNSUPPORTED, name);

/**
 * Flag `name` set to `value` (from `from`) as it is kept: a bool in one
 * spelling. Refused unless it is one served here, or an unsupported one at
 * etcd's default.
 */
function check(name, value, from) {
  if (BOOLEAN.has(name)) {
    if (!Object.hasOwn(BOOLS, value)) throw new FlagError(`invalid boolean value ${JSON.stringify(value)} for ${from}`);
    value = BOOLS[value];
  }
  if (name in DEFAULTS || IGNORED.has(name)) return value;
  if (Object.hasOwn(UNSUPPORTED, name)) {
    const d = UNSUPPORTED[name];
    const ms = parseDuration(d);
    if (value === d || (ms !== null && d !== "" && parseDuration(value) === ms)) return value;
    throw new FlagError(`flag provided but not supported: ${from}`);
  }
  throw new FlagError(`flag provided but not supported: ${from} (not an etcd 3.4 flag)`);
}

/**
 * A config file's settings as flag values. etcd reads it as YAML into its
 * Config, so durations are numbers of nanoseconds there, and keys it does
 * not know are left alone.
 */
function fromConfigFile(doc, log) {
  const out = new Map();
  const put = (name, value) => {
    if (value === null || value === undefined || value === "") return;
    // etcd unmarshals a bool field from a YAML bool only (YAML 1.1's yes,
    // no, on, off included), not from a number or a string.
    if (BOOLEAN.has(name) && typeof value !== "boolean") {
      throw new FlagError(`${name} in the config file: cannot unmarshal ${JSON.stringify(value)} into a bool`);
    }
    if (Array.isArray(value)) value = value.join(",");
    else if (typeof value === "number" && DURATIONS.has(name)) value = `${value}ns`;
    out.set(name, String(value));
  };
  // (An empty file is no settings, as etcd reads it.)
  if (doc === null || doc === undefined) return out;
  if (typeof doc !== "object" || Array.isArray(doc)) throw new FlagError("the config file is not a YAML mapping of etcd's settings");
  for (const [key, value] of Object.entries(doc)) {
    if (Object.hasOwn(TRANSPORT, key)) {
      for (const [k, v] of Object.entries(value ?? {})) if (Object.hasOwn(TRANSPORT[key], k)) put(TRANSPORT[key][k], v);
    } else if (key !== "config-file" && isFlag(key)) put(key, value);
    else log(`config file: ${key} is not one of etcd 3.4's settings; left alone`);
  }
  return out;
}

/**
 * The configuration from `argv` and, for flags not given there, `env`'s
 * ETCD_* variables (an empty one is unset); or, with --config-file (or
 * ETCD_CONFIG_FILE), from that YAML file alone, as etcd reads it.
 * `log(text)` hears which variables were used, and of those that name no
 * etcd flag (etcd logs both and goes on).
 */
export async function parseFlags(argv, env = {}, log = () => {}) {
  const v = { ...DEFAULTS };
  const given = new Map();
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?([a-z0-9-]+)(?:=(.*))?$/s.exec(argv[i]);
    if (!m) throw new FlagError(`unexpected argument ${JSON.stringify(argv[i])}`);
    const [, name, inline] = m;
    if (name !== "config-file" && !isFlag(name)) check(name, inline, `--${name}`);
    let value = inline;
    if (value === undefined) {
      if (BOOLEAN.has(name)) value = /^(true|false)$/.test(argv[i + 1] ?? "") ? argv[++i] : "true";
      else if (i + 1 < argv.length) value = argv[++i];
      else throw new FlagError(`flag needs an argument: --${name}`);
    }
    given.set(name, value);
  }
  const configFile = given.get("config-file") || env.ETCD_CONFIG_FILE;
  if (configFile) {
    // etcd's own rule: the file alone, flags and variables left aside.
    log(`loading server configuration from ${JSON.stringify(configFile)}; other configuration command line flags and environment variables will be ignored if provided`);
    let text;
    try {
      text = readFileSync(configFile, "utf8");
    } catch (e) {
      throw new FlagError(`cannot read the config file ${configFile}: ${e.message}`);
    }
    let doc;
    try {
      // YAML 1.1, as etcd's parser (go-yaml v2) reads it.
      doc = (await import("yaml")).parse(text, { version: "1.1" });
    } catch (e) {
      throw new FlagError(`the config file ${configFile} is not YAML: ${e.message.split("\n")[0]}`);
    }
    for (const [name, value] of fromConfigFile(doc, log)) v[name] = check(name, value, `${name} in ${configFile}`);
  } else {
    for (const [name, value] of given) {
      if (name !== "config-file") v[name] = check(name, value, `--${name}`);
    }
    for (const [key, value] of Object.entries(env)) {
      if (!key.startsWith("ETCD_") || key === "ETCD_CONFIG_FILE" || typeof value !== "string") continue;
      const name = key.slice(5).toLowerCase().replaceAll("_", "-");
      const known = envName(name) === key && isFlag(name);
      if (known && given.has(name)) {
        // etcd 3.4 exits on this too (an empty variable included), in these words.
        throw new FlagError(
          `conflicting environment variable ${JSON.stringify(key)} is shadowed by corresponding command-line flag (either unset environment variable or disable flag)`,
        );
      }
      // (etcd leaves an empty one unused, and so calls it unrecognized.)
      if (!known || value === "") {
        log(`unrecognized environment variable ${key}=${value}`);
        continue;
      }
      v[name] = check(name, value, `${key} (--${name})`);
      log(`recognized and used environment variable ${key}=${value}`);
    }
  }
  if (v["enable-v2"] === "true") throw new FlagError("--enable-v2: the v2 API is not supported");
  // etcd 3.4 leaves its JSON gateway off for a config file that does not
  // say `enable-grpc-gateway: true`; here it is always on (the demo page and
  // gateway clients need it), and only turning it off is refused.
  if (v["enable-grpc-gateway"] !== "true") throw new FlagError("--enable-grpc-gateway: the JSON gateway is always served here");

  const listen = checkUrls("listen-client-urls", items(v["listen-client-urls"]));
  const advertise = checkUrls("advertise-client-urls", items(v["advertise-client-urls"]));
  const peers = checkUrls("initial-advertise-peer-urls", items(v["initial-advertise-peer-urls"]), ["http:"]);
  checkUrls("listen-peer-urls", items(v["listen-peer-urls"]), ["http:"]);
  const metricsUrls = items(v["listen-metrics-urls"]);
  if (metricsUrls.length) checkUrls("listen-metrics-urls", metricsUrls);

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
    listenMetrics: metricsUrls.map((u) => new URL(u)),
    clientURLs: advertise,
    peerURLs: peers,
    token: v["initial-cluster-token"],
    // etcd's minimum lease TTL: 1.5 election timeouts, rounded up to seconds.
    minTtl: Math.ceil((3 * electionMs) / 2 / 1000),
    // 0: etcd's default (2 GiB), which main.mjs clamps to what the engine holds.
    quotaBytes: integerFlag(v["quota-backend-bytes"], "quota-backend-bytes", Number.MIN_SAFE_INTEGER),
    maxTxnOps: integerFlag(v["max-txn-ops"], "max-txn-ops", 1),
    maxRequestBytes: requestBytes(v["max-request-bytes"]),
    autoCompaction: autoCompaction(v["auto-compaction-mode"], v["auto-compaction-retention"]),
    progressIntervalMs: progressMs,
    tls: {
      certFile: v["cert-file"],
      keyFile: v["key-file"],
      trustedCaFile: v["trusted-ca-file"],
      clientCertAuth: v["client-cert-auth"] === "true",
      autoTls: v["auto-tls"] === "true",
      cipherSuites: items(v["cipher-suites"]),
    },
    auth: {
      tokenTtlMs: integerFlag(v["auth-token-ttl"], "auth-token-ttl", 0) * 1000,
      bcryptCost: integerFlag(v["bcrypt-cost"], "bcrypt-cost", 0),
      token: v["auth-token"] === "simple" ? "simple" : unsupported(`--auth-token=${v["auth-token"]}: only simple tokens are supported here`),
    },
  };
}

const unsupported = (why) => {
  throw new FlagError(why);
};
