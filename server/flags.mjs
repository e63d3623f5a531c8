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
};
// Accepted and without effect here (logging, raft timing that has no
// counterpart in one process).
const IGNORED = new Set(["logger", "log-level", "log-outputs", "debug", "heartbeat-interval", "enable-v2"]);

export class FlagError extends Error {}

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
  };
}
