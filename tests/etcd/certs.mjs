// Certificates for the TLS tests, made at test time with Debian's openssl
// in a temp dir (no key is ever committed): a CA, a server certificate for
// 127.0.0.1 (SAN IP:127.0.0.1) that it signed, a client certificate with
// CN "some user" that it signed, and a client certificate from another CA.
// EC P-256 keys (quick to make); `rsa: true` for an RSA server key.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { root } from "./harness.mjs";

function openssl(dir, args) {
  try {
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });
  } catch (e) {
    if (e.code === "ENOENT") throw new Error("openssl is not installed (Debian: apt-get install openssl)");
    throw new Error(`openssl ${args.join(" ")}: ${e.stderr ?? e.message}`);
  }
}

const newKey = (rsa) => (rsa ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]);

// A key and a certificate `name`.{key,crt} for `subject`, signed by `ca` (a
// name made before) with `ext` (openssl's extension lines).
function issue(dir, name, subject, ca, ext, rsa = false) {
  openssl(dir, ["req", ...newKey(rsa), "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject]);
  writeFileSync(join(dir, `${name}.ext`), ext.join("\n") + "\n");
  openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", `${name}.ext`]);
}

/**
 * The files (paths) in `dir`: { ca, cert, key, clientCert, clientKey,
 * otherCert, otherKey, otherCa, users }; `users`: a client certificate of
 * the CA for each name given, with it as CN ({ [name]: { cert, key } }).
 */
export function makeCerts(dir, { rsa = false, users = [] } = {}) {
  for (const ca of ["ca", "other-ca"]) {
    openssl(dir, ["req", "-x509", ...newKey(false), "-nodes", "-keyout", `${ca}.key`, "-out", `${ca}.crt`, "-days", "2", "-subj", `/CN=${ca}`]);
  }
  issue(dir, "server", "/CN=server", "ca", ["subjectAltName=IP:127.0.0.1", "extendedKeyUsage=serverAuth,clientAuth"], rsa);
  issue(dir, "client", "/CN=some user", "ca", ["extendedKeyUsage=clientAuth"]);
  issue(dir, "other", "/CN=some user", "other-ca", ["extendedKeyUsage=clientAuth"]);
  const f = (n) => join(dir, n);
  for (const u of users) issue(dir, `user-${u}`, `/CN=${u}`, "ca", ["extendedKeyUsage=clientAuth"]);
  return {
    users: Object.fromEntries(users.map((u) => [u, { cert: f(`user-${u}.crt`), key: f(`user-${u}.key`) }])),
    dir,
    ca: f("ca.crt"),
    cert: f("server.crt"),
    key: f("server.key"),
    clientCert: f("client.crt"),
    clientKey: f("client.key"),
    otherCert: f("other.crt"),
    otherKey: f("other.key"),
    otherCa: f("other-ca.crt"),
  };
}

/** An undici Agent (for fetch's `dispatcher`) trusting `ca`, with the client certificate if given. */
export function tlsAgent({ ca, cert, key, rejectUnauthorized = true }) {
  // undici comes with miniflare; Node's fetch takes its Agent.
  const { Agent } = createRequire(join(root, "package.json"))("undici");
  const read = (f) => (f ? readFileSync(f) : undefined);
  return new Agent({ connect: { ca: read(ca), cert: read(cert), key: read(key), rejectUnauthorized } });
}

/** etcdctl's flags for `certs` (with the client certificate unless `client: false`). */
export function ctlFlags(certs, { client = true } = {}) {
  return [`--cacert=${certs.ca}`, ...(client ? [`--cert=${certs.clientCert}`, `--key=${certs.clientKey}`] : [])];
}
