// --auto-tls: the self-signed certificate etcd 3.4 makes for its client
// listeners (pkg/transport's SelfCert), in the same place and shape: an
// ECDSA P-521 key, O=etcd, a year's validity, serverAuth, the listen URLs'
// hosts as its names (IP or DNS), kept in <data-dir>/fixtures/client as
// cert.pem and key.pem and used again by the next start. Node can sign but
// not build a certificate, so the few DER structures are written here.
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";

const length = (n) => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes = [];
  for (; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};
const der = (tag, ...parts) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const seq = (...parts) => der(0x30, ...parts);
const set = (...parts) => der(0x31, ...parts);
const octets = (buf) => der(0x04, buf);
const bits = (buf, unused = 0) => der(0x03, Buffer.from([unused]), buf);
const TRUE = Buffer.from([0x01, 0x01, 0xff]);

function oid(text) {
  const [a, b, ...rest] = text.split(".").map(Number);
  const out = [40 * a + b];
  for (let n of rest) {
    const base128 = [n & 0x7f];
    for (n = Math.floor(n / 128); n > 0; n = Math.floor(n / 128)) base128.unshift(0x80 | (n & 0x7f));
    out.push(...base128);
  }
  return der(0x06, Buffer.from(out));
}

// UTCTime until 2049, GeneralizedTime after, as X.509 (and Go) write them.
function time(date) {
  const digits = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(digits.slice(2))) : der(0x18, Buffer.from(digits));
}

// An IP address's bytes (4 for IPv4, 16 for IPv6), as a SAN holds them.
function ipBytes(ip) {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number));
  // IPv6: an IPv4 tail as its two groups, then "::" as the zero groups it stands for.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    ip = ip.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = ip.split("::").map((s) => (s ? s.split(":") : []));
  const groups = tail === undefined ? head : [...head, ...Array(8 - head.length - tail.length).fill("0"), ...tail];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

/** A self-signed certificate (PEM) and its key (SEC 1 PEM) for `hosts` (names or IPs). */
export function makeSelfCert(hosts, now = new Date()) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-521" });
  const serial = randomBytes(16);
  serial[0] &= 0x7f; // a positive INTEGER
  serial[0] ||= 1; // with no leading zero byte
  const name = seq(set(seq(oid("2.5.4.10"), der(0x13, Buffer.from("etcd"))))); // O=etcd
  const ecdsaSha512 = seq(oid("1.2.840.10045.4.3.4"));
  const names = hosts.map((h) => (isIP(h) ? der(0x87, ipBytes(h)) : der(0x82, Buffer.from(h))));
  const extensions = [
    // keyUsage (critical): digitalSignature, keyEncipherment
    seq(oid("2.5.29.15"), TRUE, octets(bits(Buffer.from([0xa0]), 5))),
    // extKeyUsage: serverAuth
    seq(oid("2.5.29.37"), octets(seq(oid("1.3.6.1.5.5.7.3.1")))),
    // basicConstraints (critical): not a CA
    seq(oid("2.5.29.19"), TRUE, octets(seq())),
    // subjectAltName
    ...(names.length ? [seq(oid("2.5.29.17"), octets(seq(...names)))] : []),
  ];
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // v3
    der(0x02, serial),
    ecdsaSha512,
    name,
    seq(time(now), time(new Date(now.getTime() + 365 * 24 * 3600 * 1000))),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    der(0xa3, seq(...extensions)),
  );
  const cert = seq(tbs, ecdsaSha512, bits(sign("sha512", tbs, privateKey)));
  const pem = `-----BEGIN CERTIFICATE-----\n${cert.toString("base64").match(/.{1,64}/g).join("\n")}\n-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: "sec1", format: "pem" }) };
}

/**
 * etcd's --auto-tls files for the client listeners `urls` in `dataDir`:
 * made once, then reused (as etcd does). Returns { certFile, keyFile }.
 */
export function selfCert(dataDir, urls) {
  const dir = join(dataDir, "fixtures", "client");
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { cert, key } = makeSelfCert(urls.map((u) => u.hostname.replace(/^\[|\]$/g, "")));
  writeFileSync(certFile, cert, { mode: 0o644 });
  writeFileSync(keyFile, key, { mode: 0o600 });
  return { certFile, keyFile };
}
