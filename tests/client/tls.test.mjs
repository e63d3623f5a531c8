// edge-lease/client's `tls` option in Node (js/client/node-tls.mjs): the
// same scenario against a real etcd 3.4 and edge-lease's server, both on
// https:// with --client-cert-auth and etcd's auth on, gives the same
// results: KV, a session kept alive past its TTL, a mutex handed from one
// session to a waiter, a watch's events, all as user "root" with a password.
// A CA that did not sign the server's certificate, and no client
// certificate where one is required, are refused with the same typed
// error on both, within a bound. And the option's shape: PEM contents, not
// paths; not with `fetch`; not for http://; a typed error in a browser
// (index.mjs, which browsers and Workers load). Certificates are made at
// test time (tests/etcd/certs.mjs); every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect } from "../../js/client/node.mjs";
import { connect as browserConnect } from "../../js/client/index.mjs";
import { etcdctl, startBoth, tempDir } from "../etcd/harness.mjs";
import { ctlFlags, makeCerts, tlsAgent } from "../etcd/certs.mjs";
import { within } from "./servers.mjs";

// Both servers on https://, client certificates required: with
// --client-cert-auth; or, with `auth`, with --trusted-ca-file alone (which
// requires one too) and etcd's auth on (user root, password "rootpw", set
// up with etcdctl over TLS). (etcd 3.4.23 answers every gateway request of
// a client whose certificate has a CommonName with a 400 once auth is on
// with --client-cert-auth: the gateway cannot tell the CN from a token.)
async function startTls(t, { auth = false } = {}) {
  const certs = makeCerts(tempDir(t));
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const args = ["--cert-file", certs.cert, "--key-file", certs.key, "--trusted-ca-file", certs.ca, ...(auth ? [] : ["--client-cert-auth"])];
  const { etcd, edge } = await startBoth(t, { args, scheme: "https", dispatcher });
  for (const side of auth ? [etcd, edge] : []) {
    for (const ctl of [["user", "add", "root:rootpw"], ["auth", "enable"]]) {
      const r = await etcdctl(side.url, [...ctlFlags(certs), ...ctl]);
      assert.equal(r.code, 0, `${side.name}: etcdctl ${ctl.join(" ")}: ${r.stderr}`);
    }
  }
  return { certs, etcd, edge };
}

// node:tls's options for the client certificate, trusting `ca`.
const tlsOf = (certs, { ca = certs.ca, client = true } = {}) => ({
  ca: readFileSync(ca),
  ...(client ? { cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey, "utf8") } : {}),
});

// The next `n` events of a watch (next(): a break would end it).
async function take(w, n) {
  const out = [];
  while (out.length < n) {
    const { value, done } = await w.next();
    if (done) break;
    out.push([value.type, value.key, value.value]);
  }
  return out;
}

// The number of keys under `prefix` once it is `n` (polled, for at most 5 s).
async function waitKeys(client, prefix, n) {
  const end = Date.now() + 5000;
  for (;;) {
    const count = (await client.range({ key: prefix, prefix: true })).kvs.length;
    if (count === n || Date.now() > end) return count;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The scenario, the same on each side; what it returns is compared.
async function scenario(url, certs, login = {}) {
  const client = connect(url, { tls: tlsOf(certs), ...login, timeout: 5000 });
  const other = connect(url, { tls: tlsOf(certs), ...login, timeout: 5000 });
  try {
    const out = {};
    const w = client.watch("tls/", { prefix: true });
    await within(w.ready, 5000, "the watch created");
    const put = await client.put("tls/a", "1");
    out.get = (await client.get("tls/a")).value;
    // A session kept alive past its TTL by its keepalives.
    const session = await client.session({ ttl: 2 });
    const granted = Date.now();
    await client.put("tls/b", "2", { lease: session.lease });
    const lives = [];
    while (Date.now() - granted < 3500) {
      lives.push((await client.timeToLive(session.lease)).ttl > 0);
      await new Promise((r) => setTimeout(r, 250));
    }
    out.aliveThroughout = lives.every(Boolean) && lives.length > 0;
    out.sessionLost = session.signal.aborted;
    // A mutex: held by the first session, waited on by another client's, handed over on unlock.
    const m1 = session.mutex("tls-lock");
    await within(m1.lock(), 5000, "the first lock");
    const s2 = await other.session({ ttl: 10 });
    const m2 = s2.mutex("tls-lock");
    let second = false;
    const waiting = m2.lock().then(() => (second = true));
    out.keysWhileWaiting = await within(waitKeys(client, "tls-lock/", 2), 5000, "the waiter's key");
    out.waited = !second;
    await m1.unlock();
    await within(waiting, 5000, "the waiter's lock");
    out.handedOver = m2.held && m2.key.startsWith("tls-lock/");
    await m2.unlock();
    await s2.close();
    out.events = await within(take(w, 2), 5000, "the watch's events");
    out.firstEventAtPut = (await client.get("tls/a")).modRevision === put.revision;
    await w.return();
    await session.close();
    out.afterClose = await client.get("tls/b"); // the session's lease revoked with it
    return out;
  } finally {
    await client.close();
    await other.close();
  }
}

// What a client with `tls` gets for a Range, and how long it took.
async function refused(url, tls) {
  const client = connect(url, { tls, timeout: 5000 });
  const t0 = Date.now();
  try {
    await client.get("a");
    return { ok: true };
  } catch (e) {
    return { code: e.code, message: e.message, ms: Date.now() - t0 };
  } finally {
    await client.close();
  }
}

for (const auth of [false, true]) {
  const what = auth ? "with etcd's auth (user and password)" : "with --client-cert-auth";
  test(`edge-lease/client with tls, ${what}: KV, a session, a mutex and a watch, the same on etcd 3.4 and edge-lease's server`, { timeout: 120_000 }, async (t) => {
    const { certs, etcd, edge } = await startTls(t, { auth });
    const login = auth ? { user: "root", password: "rootpw" } : {};
    const [onEtcd, onEdge] = await Promise.all([scenario(etcd.url, certs, login), scenario(edge.url, certs, login)]);
    assert.deepEqual(onEdge, onEtcd);
    // (And it did what it says, on both.)
    assert.equal(onEtcd.get, "1");
    assert.deepEqual(onEtcd.events, [["put", "tls/a", "1"], ["put", "tls/b", "2"]]);
    assert.equal(onEtcd.aliveThroughout, true);
    assert.equal(onEtcd.handedOver, true);
    assert.equal(onEtcd.afterClose, undefined);
  });
}

test("a CA that did not sign the server's certificate, and no client certificate where one is required: refused with a typed error, the same on both", { timeout: 60_000 }, async (t) => {
  const { certs, etcd, edge } = await startTls(t);
  for (const [what, tls, code, text] of [
    ["wrong CA", tlsOf(certs, { ca: certs.otherCa }), "Unauthenticated", /TLS: 127\.0\.0\.1:\d+ sent a certificate this client does not trust .*check tls\.ca/],
    ["no client certificate", tlsOf(certs, { client: false }), "Unauthenticated", /TLS: 127\.0\.0\.1:\d+ refused the handshake \(ERR_SSL_\w+\): it wants a client certificate its CA signed; check tls\.cert and tls\.key/],
  ]) {
    const [a, b] = [await refused(etcd.url, tls), await refused(edge.url, tls)];
    assert.equal(a.code, code, `etcd, ${what}: ${a.message}`);
    assert.equal(b.code, code, `edge-lease, ${what}: ${b.message}`);
    assert.match(a.message, text);
    assert.match(b.message, text); // (the code in it may differ: edge-lease's server sends its CA in the chain, etcd only the leaf)
    assert.ok(a.ms < 5000 && b.ms < 5000, `${what}: refused at once, not timed out (${a.ms}, ${b.ms} ms)`);
    // No key material in what is said.
    assert.doesNotMatch(a.message + b.message, /PRIVATE KEY|-----BEGIN/);
  }
});

test("the tls option's shape: PEM contents, not paths; not with fetch; https:// only; a typed error where TLS is the platform's", () => {
  const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const cases = [
    [() => connect("https://127.0.0.1:2379", { tls: { ca: "/etc/ssl/ca.pem" } }), /tls\.ca must be PEM contents, not a file path/],
    [() => connect("https://127.0.0.1:2379", { tls: { cert: pem } }), /tls\.key is required with tls\.cert/],
    [() => connect("https://127.0.0.1:2379", { tls: { ca: 5 } }), /tls\.ca must be PEM contents \(a string or a Buffer/],
    [() => connect("https://127.0.0.1:2379", { tls: { cacert: pem } }), /tls has no option cacert/],
    [() => connect("https://127.0.0.1:2379", { tls: { ca: pem }, fetch }), /give tls or fetch, not both/],
    [() => connect("http://127.0.0.1:2379", { tls: { ca: pem } }), /tls is for https:\/\/ URLs, got http:/],
    [() => connect(["https://127.0.0.1:2379", "http://127.0.0.1:2380"], { tls: { ca: pem } }), /tls is for https:\/\/ URLs/],
    [() => browserConnect("https://127.0.0.1:2379", { tls: { ca: pem } }), /in a browser or a Worker TLS is the platform's/],
  ];
  for (const [call, message] of cases) assert.throws(call, { name: "LeaseError", code: "InvalidArgument", message });
  // A key's contents are never repeated in an error.
  const key = "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n";
  assert.throws(() => connect("https://127.0.0.1:2379", { tls: { key, cert: 5 } }), (e) => !e.message.includes("secret"));
});
