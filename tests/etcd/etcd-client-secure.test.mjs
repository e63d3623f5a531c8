// The etcd-client crate (Rust, tonic) with auth and with TLS
// (tests/etcd-client/src/secure.rs), the same scenario against a real etcd
// 3.4 and edge-lease, every line compared: users and roles through its
// Auth client, a limited user's allowed and refused kv, txn, lease, watch,
// lock and election calls, a wrong password, auth off, in plain text and
// over TLS with a client certificate; kv, txn, lease and
// watch over https with a client certificate (rustls), and a client
// without one or with another CA's refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { startBoth, tempDir, root } from "./harness.mjs";
import { makeCerts, tlsAgent } from "./certs.mjs";

const bin = join(root, "target/release/etcd-client-secure-check");

// Its own workspace (protoc at build time); the shared target dir keeps it
// built between runs (etcd-client.test.mjs builds the same crate).
function build() {
  execFileSync("cargo", ["build", "--release", "--quiet", "--manifest-path", join(root, "tests/etcd-client/Cargo.toml")], {
    cwd: root,
    env: { ...process.env, CARGO_TARGET_DIR: join(root, "target") },
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 15 * 60_000,
  });
}

function run(args) {
  return new Promise((ok, fail) =>
    execFile(bin, args, { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${args.join(" ")}: ${err.message}\n${stderr}`)) : ok(stdout.trim().split("\n").map((line) => line.split("\t"))),
    ),
  );
}

// Every line equal, but those named "beyond 3.4.23: ...", where edge-lease
// closes a leak of etcd 3.4.23 (docs/server.md, Auth): etcd's lines.
function compare(want, got) {
  const same = (lines) => lines.filter(([name]) => !name.startsWith("beyond 3.4.23:"));
  const [w, g] = [same(want), same(got)];
  for (let i = 0; i < Math.max(w.length, g.length); i++) assert.deepEqual(g[i], w[i], `line ${i}: ${w[i]?.[0]}`);
  return Object.fromEntries(want);
}

const DENIED = 'error PermissionDenied "etcdserver: permission denied"';

// The auth scenario's lines on both sides compared, and what etcd answered
// checked, so that equal is also right.
function checkAuth(want, got) {
  const line = compare(want, got);
  // A lease's keys: etcd 3.4.23 lists root's secret to u; edge-lease refuses.
  const leak = "beyond 3.4.23: time to live of root's lease";
  assert.equal(line[leak], 'ok keys ["secret"]');
  assert.equal(Object.fromEntries(got)[leak], DENIED);
  assert.equal(line["get app/1"], 'ok ["app/1=uno"]');
  assert.equal(line["get ro/1"], 'ok ["ro/1=r"]');
  assert.equal(line["wrong password"], 'error InvalidArgument "etcdserver: authentication failed, invalid user ID or password"');
  for (const step of ["put ro/1", "get wo/1", "get secret", "put secret", "txn comparing secret", "revoke root's lease"]) assert.equal(line[step], DENIED, step);
  // (etcd's v3lock and v3election hand the error on as Unknown.)
  for (const step of ["lock secret-lock", "campaign elsewhere"]) assert.equal(line[step], 'error Unknown "etcdserver: permission denied"', step);
  assert.equal(line["event on app/"], 'created false canceled false reason "" events ["PUT app/w=hi"]');
  assert.equal(line["watch secret"], 'created true canceled true reason "rpc error: code = PermissionDenied desc = etcdserver: permission denied" events []');
  assert.equal(line["lock app/lock"], "ok app/lock/<lease>");
  assert.equal(line["campaign app/vote"], "ok app/vote/<lease>");
  assert.equal(line["u after auth disable"], 'error Unauthenticated "etcdserver: invalid auth token"');
  return line;
}

// Both servers on https:// with client certificates required (and `more` flags).
async function startTls(t, more = []) {
  const certs = makeCerts(tempDir(t));
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const args = ["--cert-file", certs.cert, "--key-file", certs.key, "--trusted-ca-file", certs.ca, "--client-cert-auth", ...more];
  return { certs, ...(await startBoth(t, { args, scheme: "https", dispatcher })) };
}

test("etcd-client (Rust) with auth: the same lines on etcd 3.4 and on edge-lease", { timeout: 16 * 60_000 }, async (t) => {
  build();
  const { etcd, edge } = await startBoth(t, { args: ["--bcrypt-cost", "4"] });
  const line = checkAuth(await run(["auth", etcd.url]), await run(["auth", edge.url]));
  assert.equal(line["no token"], 'error InvalidArgument "etcdserver: user name is empty"');
});

test("etcd-client (Rust) with auth over TLS with a client certificate: the same lines on etcd 3.4 and on edge-lease", { timeout: 16 * 60_000 }, async (t) => {
  build();
  const { certs, etcd, edge } = await startTls(t, ["--bcrypt-cost", "4"]);
  const auth = (side) => run(["auth", side.url, certs.ca, certs.clientCert, certs.clientKey]);
  const line = checkAuth(await auth(etcd), await auth(edge));
  // No token: the call is made as the certificate's CN, "some user", no user.
  assert.equal(line["no token"], DENIED);
});

test("etcd-client (Rust) over TLS with a client certificate (rustls): the same lines on etcd 3.4 and on edge-lease", { timeout: 16 * 60_000 }, async (t) => {
  build();
  const { certs, etcd, edge } = await startTls(t);
  const tls = (side) => run(["tls", side.url, certs.ca, certs.clientCert, certs.clientKey, certs.otherCert, certs.otherKey]);
  const line = compare(await tls(etcd), await tls(edge));
  assert.equal(line["get t/"], 'ok ["t/a=2"]');
  assert.equal(line["keepalive"], "ok ttl 30");
  assert.equal(line["event of the revoke"], 'created false canceled false reason "" events ["DELETE t/l="]');
  assert.equal(line["no client certificate"], "refused before any answer");
  assert.equal(line["a certificate of another CA"], "refused before any answer");
});
