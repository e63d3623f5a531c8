// --client-cert-auth with auth on: a gRPC call without a token is made as
// the user its verified client certificate names (CN), as etcd's
// AuthInfoFromTLS does; a token, when sent, wins. etcdctl with each user's
// certificate (and no --user) against etcd 3.4 and edge-lease: the same
// exit codes and output, step by step.
import { test } from "node:test";
import assert from "node:assert/strict";
import { etcdctl, post, startBoth, tempDir } from "./harness.mjs";
import { makeCerts, tlsAgent } from "./certs.mjs";

test("--client-cert-auth: the certificate's CN is the user when no token is sent; the same on etcd 3.4 and edge-lease", { timeout: 120_000 }, async (t) => {
  const certs = makeCerts(tempDir(t), { users: ["root", "alice"] });
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.users.root.cert, key: certs.users.root.key });
  t.after(() => dispatcher.close());
  const args = ["--cert-file", certs.cert, "--key-file", certs.key, "--trusted-ca-file", certs.ca, "--client-cert-auth"];
  const { etcd, edge } = await startBoth(t, { args, scheme: "https", dispatcher });
  const as = (who) => [`--cacert=${certs.ca}`, `--cert=${certs.users[who].cert}`, `--key=${certs.users[who].key}`];
  const steps = [
    ["root", ["user", "add", "root", "--new-user-password=rootpw"]],
    ["root", ["user", "add", "alice", "--new-user-password=alicepw"]],
    ["root", ["role", "add", "app"]],
    ["root", ["role", "grant-permission", "--prefix=true", "app", "readwrite", "a/"]],
    ["root", ["user", "grant-role", "alice", "app"]],
    ["root", ["auth", "enable"]],
    ["alice", ["put", "a/x", "1"]], // as alice, by her certificate
    ["alice", ["get", "a/x"]],
    ["alice", ["put", "b/x", "1"]], // outside her role: permission denied
    ["alice", ["user", "list"]], // not root
    ["root", ["put", "b/x", "2"]], // root by its certificate
    ["root", ["get", "--prefix", ""]],
    ["alice", ["--user", "root:rootpw", "get", "b/x"]], // a token wins over the certificate
    ["root", ["--user", "alice:alicepw", "get", "b/x"]],
    ["root", ["auth", "disable"]],
  ];
  // The gateway cannot act as a certificate's user: with auth on, etcd
  // refuses any /v3 call from a client whose certificate has a CN (a
  // token or none), and serves it again once auth is off.
  const gateway = async (label) => {
    const answers = await Promise.all(
      [etcd, edge].map(async (s) => {
        const calls = [
          post(s.url, "/v3/kv/range", { key: "YS94" }, { dispatcher }),
          post(s.url, "/v3beta/maintenance/status", {}, { dispatcher }),
          post(s.url, "/v3/auth/authenticate", { name: "root", password: "rootpw" }, { dispatcher }),
        ];
        return (await Promise.all(calls)).map((r) => (r.status === 200 ? { status: 200, type: r.type } : r));
      }),
    );
    assert.deepEqual(answers[1], answers[0], `gateway ${label}`);
    return answers[0];
  };
  assert.equal((await gateway("before auth"))[0].status, 200);
  for (const [who, cmd] of steps) {
    if (cmd.join(" ") === "put a/x 1") assert.equal((await gateway("with auth on"))[0].status, 400);
    const [a, b] = await Promise.all([etcd, edge].map((s) => etcdctl(s.url, [...as(who), ...cmd])));
    const clean = (r) => ({ code: r.code, stdout: r.stdout, stderr: r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n") });
    assert.deepEqual(clean(b), clean(a), `${who}: etcdctl ${cmd.join(" ")}`);
    if (cmd[0] === "put" && cmd[1] === "b/x" && who === "alice") assert.match(a.stderr, /permission denied/);
  }
  assert.equal((await gateway("with auth off again"))[0].status, 200);
});
