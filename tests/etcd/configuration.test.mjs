// etcd's configuration from the environment (ETCD_NAME for --name, and so
// on: how container set-ups configure etcd) and from a YAML config file,
// given the same way to a real etcd 3.4 and to edge-lease's server, the
// outcomes compared.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { clusterFlags, freePort, post, root, startEdge, startEtcd, tempDir } from "./harness.mjs";
import { grpcClient } from "./grpc-client.mjs";

// clusterFlags' `--flag value` pairs as ETCD_FLAG variables.
function asEnv(args) {
  const env = {};
  for (let i = 0; i < args.length; i += 2) env[`ETCD_${args[i].slice(2).toUpperCase().replaceAll("-", "_")}`] = args[i + 1];
  return env;
}

test("configured by ETCD_* variables alone, both serve as the member they describe; an unknown ETCD_* variable is only logged", async (t) => {
  const members = {};
  for (const [side, start] of [["etcd", startEtcd], ["edge-lease", startEdge]]) {
    const f = await clusterFlags(`${side}-env`, join(tempDir(t), "data"));
    const env = { ...asEnv(f.args), ETCD_NOT_A_FLAG: "1" };
    const p = await start(t, { flags: { ...f, args: [] }, env });
    const list = (await post(f.url, "/v3/cluster/member/list", {})).body;
    members[side] = list.members.map((m) => ({ name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs }));
    assert.deepEqual(members[side], [{ name: `${side}-env`, peerURLs: [f.peer], clientURLs: [f.url] }], side);
    assert.match(p.log(), /unrecognized environment variable ETCD_NOT_A_FLAG=1/, side);
    assert.match(p.log(), /recognized and used environment variable ETCD_DATA_DIR=/, side);
  }
});

// Runs `cmd` to its exit (at most 10 s): { code, out }.
function exitOf(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`${cmd} did not exit in 10 s:\n${out}`))), 10_000);
    // ("close", not "exit": what it wrote may still be in the pipes at its exit.)
    child.on("close", (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

test("a variable that a command-line flag shadows is refused by both, in etcd's words", async (t) => {
  const dir = tempDir(t);
  const f = await clusterFlags("flagged", join(dir, "data"));
  const said = 'conflicting environment variable "ETCD_NAME" is shadowed by corresponding command-line flag (either unset environment variable or disable flag)';
  // (Empty too: etcd looks at what is set, not at what is used.)
  for (const env of [{ ETCD_NAME: "from-env" }, { ETCD_NAME: "" }]) {
    const etcd = await exitOf("etcd", f.args, env);
    const edge = await exitOf(process.execPath, ["server/main.mjs", ...f.args], env);
    for (const [side, r] of [["etcd", etcd], ["edge-lease", edge]]) {
      assert.notEqual(r.code, 0, side);
      assert.ok(r.out.includes(said), `${side} with ${JSON.stringify(env)}: ${r.out.slice(-500)}`);
    }
  }
});

test("an ETCD_* variable for an etcd flag edge-lease does not support is refused, as that flag is", async () => {
  const r = await exitOf(process.execPath, ["server/main.mjs"], { ETCD_CLIENT_CRL_FILE: "/etc/etcd/crl.pem" });
  assert.equal(r.code, 2);
  assert.match(r.out, /flag provided but not supported: ETCD_CLIENT_CRL_FILE \(--client-crl-file\)/);
});

test("raft, WAL and bbolt tuning flags, which have no counterpart in one process, and other flags at etcd's defaults are accepted as etcd accepts them", async (t) => {
  const args = [
    "--snapshot-count", "5000", "--pre-vote", "--max-wals", "3", "--backend-batch-limit", "100", "--strict-reconfig-check=false",
    "--client-cert-auth=false", "--auth-token", "simple", "--grpc-keepalive-min-time", "5000ms", "--enable-pprof",
  ];
  for (const start of [startEtcd, startEdge]) {
    const p = await start(t, { args, env: { ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK: "true" } });
    assert.equal((await post(p.url, "/v3/kv/put", { key: "YQ==", value: "Yg==" })).status, 200, p.name);
  }
});

// etcd's sample config file (etcd.conf.yml.sample in its repository), with
// its values for one member on `f`'s ports and the v2 API off.
function sampleConfig(name, f, dataDir) {
  return `# This is the configuration file for the etcd server.
name: '${name}'
data-dir: ${dataDir}
wal-dir:
snapshot-count: 10000
heartbeat-interval: 100
election-timeout: 1000
quota-backend-bytes: 0
listen-peer-urls: ${f.peer}
listen-client-urls: ${f.url}
max-snapshots: 5
max-wals: 5
cors:
initial-advertise-peer-urls: ${f.peer}
advertise-client-urls: ${f.url}
discovery:
discovery-fallback: 'proxy'
discovery-proxy:
discovery-srv:
initial-cluster:
initial-cluster-token: 'etcd-cluster'
initial-cluster-state: 'new'
strict-reconfig-check: false
enable-v2: false
enable-pprof: true
proxy: 'off'
proxy-failure-wait: 5000
proxy-refresh-interval: 30000
proxy-dial-timeout: 1000
proxy-write-timeout: 5000
proxy-read-timeout: 0
client-transport-security:
  cert-file:
  key-file:
  client-cert-auth: false
  trusted-ca-file:
  auto-tls: false
peer-transport-security:
  cert-file:
  key-file:
  client-cert-auth: false
  trusted-ca-file:
  auto-tls: false
debug: false
log-package-levels:
log-outputs: [default]
force-new-cluster: false
`;
}

test("--config-file: etcd's sample file serves as the member it describes; flags and ETCD_* variables beside it are left aside, as etcd leaves them", async (t) => {
  const gateway = {};
  for (const [side, start] of [["etcd", startEtcd], ["edge-lease", startEdge]]) {
    const dir = tempDir(t);
    const f = await clusterFlags(`${side}-file`, join(dir, "data"));
    const file = join(dir, "etcd.conf.yml");
    writeFileSync(file, sampleConfig(`${side}-file`, f, join(dir, "data")));
    // Both would be refused, or change the member, if they were read.
    const env = { ETCD_NAME: "from-env", ETCD_INITIAL_CLUSTER: "a=http://127.0.0.1:1,b=http://127.0.0.1:2" };
    const p = await start(t, { flags: { ...f, args: ["--config-file", file, "--name", "from-flag"] }, env });
    const cluster = grpcClient(f.url, "etcdserverpb.Cluster");
    t.after(() => cluster.close());
    const list = await new Promise((ok, no) => cluster.MemberList({}, { deadline: Date.now() + 10_000 }, (e, r) => (e ? no(e) : ok(r))));
    assert.deepEqual(
      list.members.map((m) => ({ name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs })),
      [{ name: `${side}-file`, peerURLs: [f.peer], clientURLs: [f.url] }],
      side,
    );
    assert.match(p.log(), /other configuration command line flags and environment variables will be ignored if provided/i, side);
    // etcd 3.4 leaves its JSON gateway off for a config file without
    // `enable-grpc-gateway: true` (a known difference: here it is served).
    gateway[side] = (await post(f.url, "/v3/kv/put", { key: "YQ==", value: "Yg==" })).status;
  }
  assert.deepEqual(gateway, { etcd: 404, "edge-lease": 200 });
});

test("--config-file: a file asking for a client CRL, one that is not YAML and one that is missing are refused with a clear message", async (t) => {
  const dir = tempDir(t);
  const cases = [
    ["crl.yml", "name: x\nclient-transport-security:\n  crl-file: /etc/etcd/crl.pem\n", /flag provided but not supported: client-crl-file in /],
    ["broken.yml", "name: [\n", /is not YAML/],
    ["list.yml", "- name\n", /not a YAML mapping of etcd's settings/],
  ];
  for (const [name, text, said] of cases) {
    writeFileSync(join(dir, name), text);
    const r = await exitOf(process.execPath, ["server/main.mjs", "--config-file", join(dir, name)], {});
    assert.equal(r.code, 2, r.out);
    assert.match(r.out, said);
  }
  const missing = await exitOf(process.execPath, ["server/main.mjs"], { ETCD_CONFIG_FILE: join(dir, "nope.yml") });
  assert.equal(missing.code, 2, missing.out);
  assert.match(missing.out, /cannot read the config file .*nope\.yml/);
});

test("--listen-metrics-urls: /metrics and /health there, etcd's 404 for the rest, as etcd serves it", async (t) => {
  const out = {};
  for (const [side, start] of [["etcd", startEtcd], ["edge-lease", startEdge]]) {
    const metrics = `http://127.0.0.1:${await freePort()}`;
    await start(t, { args: ["--listen-metrics-urls", metrics] });
    const r = {};
    for (const [method, path] of [["GET", "/metrics"], ["GET", "/health"], ["POST", "/health"], ["GET", "/version"], ["POST", "/v3/kv/range"], ["GET", "/"]]) {
      const res = await fetch(metrics + path, { method, body: method === "POST" ? "{}" : undefined });
      const body = await res.text();
      r[`${method} ${path}`] = [res.status, path === "/metrics" ? /^etcd_server_has_leader 1$/m.test(body) : body];
    }
    out[side] = r;
  }
  assert.deepEqual(out["edge-lease"], out.etcd);
  assert.deepEqual(out.etcd["GET /metrics"], [200, true]);
});
