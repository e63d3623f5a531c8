// TLS on the client and metrics listeners, from etcd 3.4's flags and as
// etcd sets it up (embed's configureClientListeners, pkg/transport's
// TLSInfo): --cert-file/--key-file (or --auto-tls), --trusted-ca-file and
// --client-cert-auth (either one asks every client for a certificate its
// CAs signed), --cipher-suites in Go's names. node:tls terminates it; the
// cleartext goes through the same sniffing as a plain port's (listen.mjs),
// so gRPC and the JSON gateway share a TLS port as they share a plain one.
import { createSecureContext, createServer, getCiphers } from "node:tls";
import { readFileSync, statSync } from "node:fs";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { selfCert } from "./selfcert.mjs";

/**
 * The common name of `socket`'s client certificate when it verified
 * against the trusted CAs (etcd reads the first verified chain's leaf), or
 * undefined: no TLS, no certificate, or an empty CN.
 */
export function certificateName(socket) {
  if (!socket?.authorized || typeof socket.getPeerCertificate !== "function") return undefined;
  const cn = socket.getPeerCertificate()?.subject?.CN;
  return typeof cn === "string" && cn !== "" ? cn : undefined;
}

/** A TLS set-up etcd refuses: it exits (status 1) with these words. */
export class TlsError extends Error {}

// The names etcd 3.4.23 takes (Go's crypto/tls CipherSuites() and
// InsecureCipherSuites(), and two older ChaCha20 spellings), as OpenSSL's.
const CIPHERS = {
  TLS_RSA_WITH_RC4_128_SHA: "RC4-SHA",
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: "DES-CBC3-SHA",
  TLS_RSA_WITH_AES_128_CBC_SHA: "AES128-SHA",
  TLS_RSA_WITH_AES_256_CBC_SHA: "AES256-SHA",
  TLS_RSA_WITH_AES_128_CBC_SHA256: "AES128-SHA256",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "AES128-GCM-SHA256",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: "ECDHE-ECDSA-RC4-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: "ECDHE-RSA-RC4-SHA",
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: "ECDHE-RSA-DES-CBC3-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "ECDHE-ECDSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "ECDHE-RSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "ECDHE-ECDSA-CHACHA20-POLY1305",
  // TLS 1.3's: Go takes the names but chooses among these suites itself,
  // so they change nothing, there as here.
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
};

/** --cipher-suites as OpenSSL's cipher list (undefined: Node's default), or etcd's refusal. */
export function cipherList(names) {
  const available = new Set(getCiphers());
  const out = [];
  for (const name of names) {
    if (!Object.hasOwn(CIPHERS, name)) throw new TlsError(`unexpected TLS cipher suite ${JSON.stringify(name)}`);
    const openssl = CIPHERS[name];
    if (openssl === null) continue;
    // (RC4 and 3DES, which OpenSSL 3 leaves out.)
    if (!available.has(openssl.toLowerCase())) throw new TlsError(`TLS cipher suite ${JSON.stringify(name)} is not available in this Node's OpenSSL`);
    out.push(openssl);
  }
  // Only TLS 1.3 names: TLS 1.2 has no suite left, as in Go.
  if (names.length && !out.length) return "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256";
  return out.length ? out.join(":") : undefined;
}

// A file's bytes, or Go's words for why it could not be read.
function readFile(file) {
  try {
    return readFileSync(file);
  } catch (e) {
    if (e.code === "EISDIR") throw new TlsError(`read ${file}: is a directory`);
    const why = { ENOENT: "no such file or directory", EACCES: "permission denied" }[e.code] ?? e.message;
    throw new TlsError(`open ${file}: ${why}`);
  }
}

const pemTypes = (bytes) => [...bytes.toString("latin1").matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]);
const skipped = (types) => `after skipping PEM blocks of the following types: [${types.join(" ")}]`;

/** The key pair in `certFile` and `keyFile`, checked as Go's tls.X509KeyPair checks it, in its words. */
export function keyPair(certFile, keyFile) {
  const cert = readFile(certFile);
  const key = readFile(keyFile);
  const certTypes = pemTypes(cert);
  if (!certTypes.includes("CERTIFICATE")) {
    if (!certTypes.length) throw new TlsError("tls: failed to find any PEM data in certificate input");
    throw new TlsError(`tls: failed to find "CERTIFICATE" PEM block in certificate input ${skipped(certTypes)}`);
  }
  const keyTypes = pemTypes(key);
  if (!keyTypes.some((t) => t === "PRIVATE KEY" || t.endsWith(" PRIVATE KEY"))) {
    if (!keyTypes.length) throw new TlsError("tls: failed to find any PEM data in key input");
    if (keyTypes.includes("CERTIFICATE")) throw new TlsError("tls: found a certificate rather than a key in the PEM for the private key");
    throw new TlsError(`tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input ${skipped(keyTypes)}`);
  }
  let x509, privateKey;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw new TlsError(`tls: failed to parse certificate: ${e.message}`);
  }
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsError("tls: failed to parse private key");
  }
  if (!x509.checkPrivateKey(privateKey)) throw new TlsError("tls: private key does not match public key");
  return { cert, key };
}

// What changes when a file is replaced or rewritten (null if it is gone).
function stamp(files) {
  try {
    return files.map((f) => {
      const s = statSync(f);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    }).join("|");
  } catch {
    return null;
  }
}

const origin = (u) => `${u.protocol}//${u.host}`;
// (A socket node:tls closed already has no address left to give.)
const peer = (s) => {
  if (!s.remoteAddress) return "";
  const host = s.remoteFamily === "IPv6" ? `[${s.remoteAddress}]` : s.remoteAddress;
  return ` from ${JSON.stringify(`${host}:${s.remotePort}`)}`;
};
const fourTuple = (s) => `${s.localAddress}|${s.localPort}|${s.remoteAddress}|${s.remotePort}`;

/**
 * The TLS of the listeners `listen` (--listen-client-urls) and `metrics`
 * (--listen-metrics-urls), from `flags` (flags.mjs's `tls`): null if none
 * is https://, else `{ acceptor(alpn) }`. Throws TlsError where etcd
 * refuses to start; `log` hears etcd's warnings and its ClientTLS line.
 * `handshakeMs` bounds a handshake.
 */
export function clientTls(flags, { listen, metrics = [], dataDir, handshakeMs = 5_000, log = () => {} }) {
  // etcd's order: the cipher suites, --auto-tls, then each URL.
  const ciphers = cipherList(flags.cipherSuites);
  let { certFile, keyFile, trustedCaFile, clientCertAuth } = flags;
  if (flags.autoTls) {
    if (certFile || keyFile) log("ignoring client auto TLS since certs given");
    else {
      // etcd's self-signed set-up replaces the configured one, its client
      // certificate checks with it.
      try {
        ({ certFile, keyFile } = selfCert(dataDir, listen));
      } catch (e) {
        throw new TlsError(`could not get certs (${e.message})`);
      }
      trustedCaFile = "";
      clientCertAuth = false;
    }
  }
  const empty = !certFile && !keyFile;
  for (const u of listen) {
    if (u.protocol === "https:") {
      if (empty) throw new TlsError(`TLS key/cert (--cert-file, --key-file) must be provided for client url ${origin(u)} with HTTPS scheme`);
      continue;
    }
    if (!empty) log(`scheme is HTTP while key and cert files are present; ignoring key and cert files (client-url ${origin(u)})`);
    if (clientCertAuth) log(`scheme is HTTP while --client-cert-auth is enabled; ignoring client cert auth for this URL (client-url ${origin(u)})`);
  }
  for (const u of metrics) {
    if (u.protocol === "https:" && empty) throw new TlsError(`cannot listen on TLS for ${u.host}: KeyFile and CertFile are not presented`);
  }
  if (!empty) log(`ClientTLS: cert = ${certFile}, key = ${keyFile}, trusted-ca = ${trustedCaFile}, client-cert-auth = ${clientCertAuth}, crl-file = `);
  if (![...listen, ...metrics].some((u) => u.protocol === "https:")) return null;
  if (!certFile || !keyFile) throw new TlsError(`KeyFile and CertFile must both be present[key: ${keyFile}, cert: ${certFile}]`);

  // Either flag makes a certificate required, and verified against the CA
  // file (Go's RequireAndVerifyClientCert), or Node's CAs without one, as
  // Go falls back to the system's. A CA file without certificates trusts
  // nothing, as Go's empty pool.
  const verify = clientCertAuth || trustedCaFile !== "";
  const files = [certFile, keyFile];
  let pair = keyPair(certFile, keyFile);
  let pairStamp = stamp(files);
  const ca = trustedCaFile ? [readFile(trustedCaFile)] : undefined;
  const options = () => ({ ...pair, ca, ciphers, requestCert: verify, rejectUnauthorized: true });
  try {
    createSecureContext(options());
  } catch (e) {
    throw new TlsError(`tls: ${e.message}`);
  }
  const servers = [];
  // etcd reads the key pair again for each handshake, so that it can be
  // replaced in place; here, when a file changed. A pair that is not one
  // (yet: a rotation half done) leaves the last good one in use.
  function refresh() {
    const now = stamp(files);
    if (now === null || now === pairStamp) return;
    pairStamp = now;
    try {
      pair = keyPair(certFile, keyFile);
      for (const { server, alpn } of servers) server.setSecureContext({ ...options(), ALPNProtocols: alpn });
    } catch (e) {
      log(`failed to reload the client certificate, keeping the last one: ${e.message}`);
    }
  }

  // A failed handshake or an unverified client certificate (node:tls
  // closes it, then reports a hang-up): logged as etcd logs it, and the
  // connection closed.
  function reject(s, e) {
    let why = e.reason ?? e.message;
    if (s.authorizationError) why = `tls: failed to verify client certificate: ${s.authorizationError}`;
    else if (e.code === "ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE") why = "tls: client didn't provide a certificate";
    log(`rejected connection${peer(s)} (error ${JSON.stringify(why)}, ServerName ${JSON.stringify(s.servername || "")})`);
    s.destroy();
  }

  return {
    /**
     * `accept(socket, onSecure)` for a listener offering the protocols
     * `alpn` (server's preference first): takes an accepted TCP socket
     * through the handshake, then gives `onSecure` the TLS socket.
     */
    acceptor(alpn) {
      const server = createServer({ ...options(), ALPNProtocols: alpn, handshakeTimeout: handshakeMs });
      servers.push({ server, alpn });
      // node:tls gives back the TLS socket alone: its TCP connection's four
      // addresses, unique among those open, say whose it is.
      const waiting = new Map();
      server.on("secureConnection", (s) => {
        const onSecure = waiting.get(fourTuple(s));
        waiting.delete(fourTuple(s));
        // (node:tls let no unverified client this far; checked all the same.)
        if (onSecure && (!verify || s.authorized)) onSecure(s);
        else s.destroy();
      });
      server.on("tlsClientError", (e, s) => reject(s, e));
      return (socket, onSecure) => {
        refresh();
        const key = fourTuple(socket);
        waiting.set(key, onSecure);
        socket.once("close", () => waiting.delete(key));
        server.emit("connection", socket);
      };
    },
  };
}
