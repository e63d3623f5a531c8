// edge-lease's server on an https:// client URL, beyond what the
// differential tests compare with etcd (tests/etcd/tls-*.test.mjs): ALPN
// (h2 for gRPC's clients, HTTP/1.1 for clients that offer both), plain text
// and silent clients on the TLS port, certificates replaced in place,
// --auto-tls's certificate kept across restarts, edge-lease/client and the
// demo page over https, and the TLS flags as parsed. Certificates are made
// at test time (tests/etcd/certs.mjs); every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { X509Certificate } from "node:crypto";
import { post, startEdge, tempDir } from "../etcd/harness.mjs";
import { makeCerts, tlsAgent } from "../etcd/certs.mjs";
import { parseFlags } from "../../server/flags.mjs";
import { connect } from "../../js/client/index.mjs";

const tlsArgs = (c, more = []) => ["--cert-file", c.cert, "--key-file", c.key, "--trusted-ca-file", c.ca, ...more];

async function startTls(t, { args = [], env } = {}) {
  const certs = makeCerts(tempDir(t));
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const edge = await startEdge(t, { args: tlsArgs(certs, args), scheme: "https", dispatcher, env });
  return { certs, dispatcher, edge };
}

// node:tls's options for a client of `certs` (trusting `ca`, its CA by default).
const client = (certs, ca = certs.ca) => ({ ca: readFileSync(ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) });

// A TLS connection to `url` with node:tls's `options`: { alpn, cert (the
// server's), socket } or { error }, within 5 s.
function open(url, options) {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const s = tlsConnect({ host: "127.0.0.1", port: Number(port), ...options }, () =>
      resolve({ alpn: s.alpnProtocol, cert: s.getPeerX509Certificate(), socket: s }),
    );
    s.setTimeout(5000, () => (s.destroy(), resolve({ error: "timeout" })));
    s.on("error", (e) => resolve({ error: e.code }));
  });
}

// What a GET /version over a TLS connection with `options` gets: its status
// line, or the error that ended it (a TLS 1.3 client hears a refusal of its
// certificate only after its side of the handshake is done).
async function ask(url, options) {
  const c = await open(url, options);
  if (c.error) return c.error;
  return new Promise((resolve) => {
    let got = "";
    c.socket.on("data", (d) => (got += d));
    c.socket.on("error", (e) => resolve(e.code));
    c.socket.on("close", () => resolve(got.split("\r\n")[0] || "closed"));
    c.socket.end("GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  });
}

// What a TCP client that sends `bytes` (or nothing) gets before the server
// closes: { data, ms }, within 10 s.
function raw(url, bytes) {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const t0 = Date.now();
    let data = "";
    const s = netConnect(Number(port), "127.0.0.1", () => bytes && s.write(bytes));
    s.on("data", (d) => (data += d.toString("latin1")));
    s.on("error", () => {});
    const timer = setTimeout(() => s.destroy(), 10_000);
    s.on("close", () => (clearTimeout(timer), resolve({ data, ms: Date.now() - t0 })));
  });
}

test("ALPN: h2 for a client that offers only h2 (gRPC's), HTTP/1.1 for one that offers both, none when none is offered", async (t) => {
  const { certs, edge } = await startTls(t);
  const alpn = [];
  for (const ALPNProtocols of [["h2"], ["h2", "http/1.1"], ["http/1.1"], undefined, ["foo"]]) {
    const c = await open(edge.url, { ...client(certs), ALPNProtocols });
    c.socket?.destroy();
    alpn.push(c.error ?? c.alpn);
  }
  assert.deepEqual(alpn, ["h2", "http/1.1", "http/1.1", false, "ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL"]);
  // Without ALPN the first bytes say which side a connection goes to, as on a plain port.
  assert.equal(await ask(edge.url, client(certs)), "HTTP/1.1 200 OK");
});

test("plain text, silent clients and clients without a trusted certificate are closed, within the handshake time, and logged; the server serves on", async (t) => {
  const { certs, edge, dispatcher } = await startTls(t, { env: { EDGE_LEASE_HEADERS_TIMEOUT_MS: "500" } });
  // (--trusted-ca-file alone asks for a certificate, as in etcd.)
  const other = { ca: readFileSync(certs.ca), cert: readFileSync(certs.otherCert), key: readFileSync(certs.otherKey) };
  assert.equal(await ask(edge.url, { ca: readFileSync(certs.ca) }), "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED");
  assert.ok(["closed", "ECONNRESET"].includes(await ask(edge.url, other)));
  assert.ok(["closed", "ECONNRESET"].includes(await ask(edge.url, { ...other, maxVersion: "TLSv1.2" })));
  const http1 = await raw(edge.url, "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const preface = await raw(edge.url, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  assert.deepEqual([http1.data, preface.data], ["", ""]);
  // Fifty that never start a handshake, and one that stops halfway.
  const silent = await Promise.all([...Array.from({ length: 50 }, () => raw(edge.url)), raw(edge.url, Buffer.from([0x16, 3, 1, 0, 200, 1]))]);
  assert.ok(silent.every((r) => r.data === "" && r.ms < 3000), JSON.stringify(silent.map((r) => r.ms)));
  assert.equal((await post(edge.url, "/v3/kv/put", { key: "YQ==", value: "Yg==" }, { dispatcher })).status, 200);
  assert.match(edge.log(), /rejected connection from "127\.0\.0\.1:\d+" \(error "http request", ServerName ""\)/);
  assert.match(edge.log(), /rejected connection from "127\.0\.0\.1:\d+" \(error "TLS handshake timeout", ServerName ""\)/);
});

test("a key pair replaced in place is served to the next connections, as etcd reloads it; a broken one leaves the last good pair", async (t) => {
  const { certs, edge } = await startTls(t);
  const first = await open(edge.url, client(certs));
  first.socket.destroy();
  // Another pair (from another CA), written over the files.
  const next = makeCerts(tempDir(t));
  copyFileSync(next.cert, certs.cert);
  copyFileSync(next.key, certs.key);
  const other = await open(edge.url, client(certs, next.ca));
  assert.ok(other.cert, `no handshake: ${other.error}`);
  other.socket.destroy();
  assert.notEqual(other.cert.fingerprint256, first.cert.fingerprint256);
  assert.equal(other.cert.fingerprint256, new X509Certificate(readFileSync(next.cert)).fingerprint256);
  // The rest of the set-up stays: ALPN, and a certificate asked of clients.
  const h2 = await open(edge.url, { ...client(certs, next.ca), ALPNProtocols: ["h2"] });
  h2.socket.destroy();
  assert.equal(h2.alpn, "h2");
  assert.equal(await ask(edge.url, { ca: readFileSync(next.ca) }), "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED");
  assert.equal(await ask(edge.url, client(certs, next.ca)), "HTTP/1.1 200 OK");
  // A key that does not match its certificate: kept out, logged.
  copyFileSync(certs.clientKey, certs.key);
  const kept = await open(edge.url, client(certs, next.ca));
  assert.equal(kept.cert?.fingerprint256, other.cert.fingerprint256);
  kept.socket.destroy();
  assert.match(edge.log(), /failed to reload the client certificate, keeping the last one: tls: private key does not match public key/);
});

test("--auto-tls: the certificate made at the first start is served again after a restart", async (t) => {
  const insecure = tlsAgent({ rejectUnauthorized: false });
  t.after(() => insecure.close());
  const dataDir = join(tempDir(t), "data");
  const served = async (url) => {
    const c = await open(url, { rejectUnauthorized: false });
    c.socket.destroy();
    return c.cert.fingerprint256;
  };
  const edge = await startEdge(t, { dataDir, args: ["--auto-tls"], scheme: "https", dispatcher: insecure });
  const before = await served(edge.url);
  edge.child.kill("SIGTERM");
  assert.equal((await edge.exited).code, 0);
  const again = await startEdge(t, { dataDir, flags: edge.flags, args: ["--auto-tls"], dispatcher: insecure });
  assert.equal(await served(again.url), before);
  assert.equal(new X509Certificate(readFileSync(join(dataDir, "fixtures", "client", "cert.pem"))).fingerprint256, before);
});

test("edge-lease/client over https, given a fetch with a dispatcher: KV, a session and a watch", async (t) => {
  const { edge, dispatcher } = await startTls(t, { args: ["--client-cert-auth"] });
  const client = connect(edge.url, { fetch: (url, init) => fetch(url, { ...init, dispatcher }) });
  t.after(() => client.close());
  const w = client.watch("c/", { prefix: true });
  await w.ready;
  const put = await client.put("c/a", "1");
  assert.equal((await client.get("c/a")).value, "1");
  const session = await client.session({ ttl: 5 });
  await client.put("c/b", "2", { lease: session.lease });
  const events = [];
  const deadline = setTimeout(() => w.return(), 5000);
  for await (const e of w) if (events.push(e) === 2) break;
  clearTimeout(deadline);
  assert.deepEqual(events.map((e) => [e.type, e.key, e.value]), [["put", "c/a", "1"], ["put", "c/b", "2"]]);
  assert.equal(events[0].modRevision, put.revision);
  await session.close();
});

test("the demo page over https: served, and a same-origin Origin is https://", async (t) => {
  const { edge, dispatcher } = await startTls(t);
  const page = await fetch(`${edge.url}/`, { dispatcher });
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /text\/html/);
  await page.arrayBuffer();
  const from = async (origin) => (await fetch(`${edge.url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: "YQ==" }), headers: { origin }, dispatcher })).status;
  assert.equal(await from(edge.url), 200);
  assert.equal(await from(edge.url.replace("https:", "http:")), 403);
});

test("the TLS flags as parsed, from flags and ETCD_* variables alike", async () => {
  const tls = { certFile: "c.pem", keyFile: "k.pem", trustedCaFile: "ca.pem", clientCertAuth: true, autoTls: false, cipherSuites: ["TLS_A", "TLS_B"] };
  const byFlags = await parseFlags(["--listen-client-urls", "https://127.0.0.1:2379", "--cert-file", "c.pem", "--key-file=k.pem", "--trusted-ca-file", "ca.pem", "--client-cert-auth", "--cipher-suites", "TLS_A,TLS_B"]);
  assert.deepEqual(byFlags.tls, tls);
  assert.equal(byFlags.listen[0].protocol, "https:");
  const byEnv = await parseFlags([], { ETCD_CERT_FILE: "c.pem", ETCD_KEY_FILE: "k.pem", ETCD_TRUSTED_CA_FILE: "ca.pem", ETCD_CLIENT_CERT_AUTH: "true", ETCD_CIPHER_SUITES: "TLS_A,TLS_B" });
  assert.deepEqual(byEnv.tls, tls);
  assert.deepEqual((await parseFlags(["--auto-tls"])).tls, { certFile: "", keyFile: "", trustedCaFile: "", clientCertAuth: false, autoTls: true, cipherSuites: [] });
  await assert.rejects(parseFlags(["--listen-peer-urls", "https://127.0.0.1:2380"]), /only http:\/\/ is supported/);
  await assert.rejects(parseFlags(["--peer-cert-file", "p.pem"]), /flag provided but not supported: --peer-cert-file/);
});
