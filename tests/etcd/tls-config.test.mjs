// TLS set up the ways etcd 3.4 takes it, given the same way to a real etcd
// and to edge-lease's server, the outcomes compared: bad or missing files
// (both exit with status 1 and etcd's message), the ETCD_* variables, a
// config file's client-transport-security, and --auto-tls (a self-signed
// certificate in <data-dir>/fixtures/client). Certificates are made at test
// time (certs.mjs); every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { clusterFlags, etcdctl, freePort, root, startEdge, startEtcd, tempDir } from "./harness.mjs";
import { ctlFlags, makeCerts, tlsAgent } from "./certs.mjs";

// Runs `cmd` to its exit (at most 15 s): { code, out }.
function exitOf(cmd, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`${cmd} did not exit in 15 s:\n${out.slice(-2000)}`))), 15_000);
    // ("close", not "exit": what it wrote may still be in the pipes at its exit.)
    child.on("close", (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

const SIDES = [
  ["etcd", "etcd", []],
  ["edge-lease", process.execPath, ["server/main.mjs"]],
];

test("bad or missing TLS files, and unknown cipher suites: both exit with status 1 and etcd's message", async (t) => {
  const dir = tempDir(t);
  const c = makeCerts(dir);
  const garbage = join(dir, "garbage.pem");
  writeFileSync(garbage, "not a PEM file\n");
  const missing = join(dir, "missing.pem");
  // [client URL scheme, more flags, what etcd says], for a client URL `url`
  // and a free port's https:// URL `free`.
  const cases = (url, free) => [
    ["https", [], `TLS key/cert (--cert-file, --key-file) must be provided for client url ${url} with HTTPS scheme`],
    ["https", ["--cert-file", missing, "--key-file", c.key], `open ${missing}: no such file or directory`],
    ["https", ["--cert-file", c.cert, "--key-file", missing], `open ${missing}: no such file or directory`],
    ["https", ["--cert-file", garbage, "--key-file", c.key], "tls: failed to find any PEM data in certificate input"],
    ["https", ["--cert-file", c.cert, "--key-file", garbage], "tls: failed to find any PEM data in key input"],
    ["https", ["--cert-file", c.cert, "--key-file", c.clientKey], "tls: private key does not match public key"],
    ["https", ["--cert-file", c.cert], `KeyFile and CertFile must both be present[key: , cert: ${c.cert}]`],
    ["https", ["--cert-file", c.cert, "--key-file", c.key, "--trusted-ca-file", missing], `open ${missing}: no such file or directory`],
    ["https", ["--cert-file", c.cert, "--key-file", c.key, "--cipher-suites", "TLS_FOO"], 'unexpected TLS cipher suite "TLS_FOO"'],
    ["http", ["--listen-metrics-urls", free], `cannot listen on TLS for ${new URL(free).host}: KeyFile and CertFile are not presented`],
  ];
  const count = cases("", "https://x:1").length;
  for (const [side, cmd, pre] of SIDES) {
    // (Side by side: etcd starts its member before it finds most of these.)
    const runs = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const free = `https://127.0.0.1:${await freePort()}`;
        const scheme = cases("", free)[i][0];
        const f = await clusterFlags(`bad-${side}`, join(dir, `${side}-${i}`), { scheme });
        const [, args, said] = cases(f.url, free)[i];
        const r = await exitOf(cmd, [...pre, ...f.args, ...args]);
        return { args, code: r.code, found: r.out.includes(said) || r.out.slice(-1000) };
      }),
    );
    for (const r of runs) assert.deepEqual([r.code, r.found], [1, true], `${side} ${r.args.join(" ")}`);
  }
});

test("key and cert files on an http:// URL are left unread by both (a warning), and it serves", async (t) => {
  const missing = join(tempDir(t), "missing.pem");
  for (const start of [startEtcd, startEdge]) {
    const p = await start(t, { args: ["--cert-file", missing, "--key-file", missing, "--client-cert-auth"] });
    assert.equal((await etcdctl(p.url, ["put", "a", "1"])).stdout, "OK\n", p.name);
    assert.match(p.log(), /(Ignored key\/cert files|ignoring key and cert files)/i, p.name);
  }
});

// The flags of a TLS member as ETCD_* variables.
function tlsEnv(f, c) {
  return {
    ETCD_NAME: "tls-env",
    ETCD_DATA_DIR: f.args[f.args.indexOf("--data-dir") + 1],
    ETCD_LISTEN_CLIENT_URLS: f.url,
    ETCD_ADVERTISE_CLIENT_URLS: f.url,
    ETCD_LISTEN_PEER_URLS: f.peer,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: f.peer,
    ETCD_INITIAL_CLUSTER: `tls-env=${f.peer}`,
    ETCD_CERT_FILE: c.cert,
    ETCD_KEY_FILE: c.key,
    ETCD_TRUSTED_CA_FILE: c.ca,
    ETCD_CLIENT_CERT_AUTH: "true",
    ETCD_CIPHER_SUITES: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
  };
}

// A config file for a TLS member, its TLS in client-transport-security.
function tlsConfig(f, c) {
  return `name: tls-file
data-dir: ${f.args[f.args.indexOf("--data-dir") + 1]}
listen-client-urls: ${f.url}
advertise-client-urls: ${f.url}
listen-peer-urls: ${f.peer}
initial-advertise-peer-urls: ${f.peer}
initial-cluster: tls-file=${f.peer}
cipher-suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
client-transport-security:
  cert-file: ${c.cert}
  key-file: ${c.key}
  trusted-ca-file: ${c.ca}
  client-cert-auth: true
`;
}

test("TLS from ETCD_* variables and from a config file's client-transport-security: both serve it, and refuse a client without a certificate", async (t) => {
  const dir = tempDir(t);
  const c = makeCerts(dir);
  const dispatcher = tlsAgent({ ca: c.ca, cert: c.clientCert, key: c.clientKey });
  t.after(() => dispatcher.close());
  const out = {};
  // (Side by side: each refusal waits out etcdctl's timeout.)
  await Promise.all([["etcd", startEtcd], ["edge-lease", startEdge]].map(async ([side, start]) => {
    for (const how of ["env", "file"]) {
      const f = await clusterFlags(`tls-${how}`, join(dir, `${side}-${how}`), { scheme: "https" });
      const file = join(dir, `${side}.yml`);
      writeFileSync(file, tlsConfig(f, c));
      const p = await start(t, how === "env" ? { flags: { ...f, args: [] }, env: tlsEnv(f, c), dispatcher } : { flags: { ...f, args: ["--config-file", file] }, dispatcher });
      const ok = await etcdctl(p.url, [...ctlFlags(c), "put", "a", "1"]);
      const refused = await etcdctl(p.url, [...ctlFlags(c, { client: false }), "--command-timeout=2s", "get", "a"]);
      out[`${side} ${how}`] = [ok.code, ok.stdout, refused.code];
    }
  }));
  assert.deepEqual(new Set(Object.values(out).map((v) => JSON.stringify(v))), new Set([JSON.stringify([0, "OK\n", 1])]), JSON.stringify(out));
});

// The certificate an https:// URL serves.
function servedCert(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      resolve(s.getPeerX509Certificate());
      s.destroy();
    });
    s.setTimeout(5000, () => (s.destroy(), reject(new Error("no handshake in 5 s"))));
    s.on("error", reject);
  });
}

test("--auto-tls: both make and serve the same kind of self-signed certificate, in <data-dir>/fixtures/client, and ignore --client-cert-auth with it", async (t) => {
  const insecure = tlsAgent({ rejectUnauthorized: false });
  t.after(() => insecure.close());
  const out = {};
  await Promise.all([["etcd", startEtcd], ["edge-lease", startEdge]].map(async ([side, start]) => {
    const p = await start(t, { args: ["--auto-tls", "--client-cert-auth"], scheme: "https", dispatcher: insecure });
    const dir = join(p.args[p.args.indexOf("--data-dir") + 1], "fixtures", "client");
    const file = new X509Certificate(readFileSync(join(dir, "cert.pem")));
    const served = await servedCert(p.url);
    const days = (Date.parse(file.validTo) - Date.parse(file.validFrom)) / 86_400_000;
    const key = file.publicKey.asymmetricKeyDetails;
    out[side] = {
      served: served.fingerprint256 === file.fingerprint256,
      subject: file.subject,
      issuer: file.issuer,
      san: file.subjectAltName,
      ca: file.ca,
      days,
      key: `${file.publicKey.asymmetricKeyType} ${key.namedCurve}`,
      keyUsage: file.keyUsage,
      keyMode: (statSync(join(dir, "key.pem")).mode & 0o777).toString(8),
      // Trusted by no one: etcdctl needs --insecure-skip-tls-verify, and no
      // client certificate (etcd drops --client-cert-auth here).
      verified: (await etcdctl(p.url, ["--insecure-transport=false", "--command-timeout=2s", "get", "a"])).code,
      insecure: (await etcdctl(p.url, ["--insecure-transport=false", "--insecure-skip-tls-verify", "put", "a", "1"])).stdout,
    };
  }));
  assert.deepEqual(out["edge-lease"], out.etcd);
  assert.deepEqual(out.etcd, {
    served: true,
    subject: "O=etcd",
    issuer: "O=etcd",
    san: "IP Address:127.0.0.1",
    ca: false,
    days: 365,
    key: "ec secp521r1",
    keyUsage: ["1.3.6.1.5.5.7.3.1"],
    keyMode: "600",
    verified: 1,
    insecure: "OK\n",
  });
});
