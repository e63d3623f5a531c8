// etcd's configuration from the environment (ETCD_NAME for --name, and so
// on: how container set-ups configure etcd), given the same way to a real
// etcd 3.4 and to edge-lease's server, the outcomes compared.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { clusterFlags, post, root, startEdge, startEtcd, tempDir } from "./harness.mjs";

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
    child.on("exit", (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

test("a variable that a command-line flag shadows is refused by both, in etcd's words", async (t) => {
  const dir = tempDir(t);
  const f = await clusterFlags("flagged", join(dir, "data"));
  const env = { ETCD_NAME: "from-env" };
  const etcd = await exitOf("etcd", f.args, env);
  const edge = await exitOf(process.execPath, ["server/main.mjs", ...f.args], env);
  const said = 'conflicting environment variable "ETCD_NAME" is shadowed by corresponding command-line flag (either unset environment variable or disable flag)';
  for (const [side, r] of [["etcd", etcd], ["edge-lease", edge]]) {
    assert.notEqual(r.code, 0, side);
    assert.ok(r.out.includes(said), `${side}: ${r.out.slice(-500)}`);
  }
});

test("an ETCD_* variable for an etcd flag edge-lease does not support is refused, as that flag is", async () => {
  const r = await exitOf(process.execPath, ["server/main.mjs"], { ETCD_CLIENT_CERT_AUTH: "true" });
  assert.equal(r.code, 2);
  assert.match(r.out, /flag provided but not supported: ETCD_CLIENT_CERT_AUTH \(--client-cert-auth\)/);
});

test("raft, WAL and bbolt tuning flags, which have no counterpart in one process, are accepted as etcd accepts them", async (t) => {
  const args = ["--snapshot-count", "5000", "--pre-vote", "--max-wals", "3", "--backend-batch-limit", "100", "--strict-reconfig-check=false"];
  for (const start of [startEtcd, startEdge]) {
    const p = await start(t, { args, env: { ETCD_EXPERIMENTAL_INITIAL_CORRUPT_CHECK: "true" } });
    assert.equal((await post(p.url, "/v3/kv/put", { key: "YQ==", value: "Yg==" })).status, 200, p.name);
  }
});
