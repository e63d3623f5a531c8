// TLS on the client port, the same on a real etcd 3.4 and on edge-lease's
// server (https:// in --listen-client-urls with --cert-file, --key-file,
// --trusted-ca-file and --client-cert-auth): etcdctl, grpc-js, the etcd3
// npm client and the JSON gateway over TLS give the same answers; a client without a certificate,
// or with one from another CA, is refused by both; --cipher-suites and an
// https:// metrics URL behave alike. Certificates are made at test time
// (certs.mjs); every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect as tlsConnect } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { Etcd3 } from "etcd3";
import { b64, etcdctl, freePort, post, startBoth, tempDir } from "./harness.mjs";
import { grpcClient } from "./grpc-client.mjs";
import { ctlFlags, makeCerts, tlsAgent } from "./certs.mjs";

const tlsArgs = (c, more = []) => ["--cert-file", c.cert, "--key-file", c.key, "--trusted-ca-file", c.ca, "--client-cert-auth", ...more];

// Both servers on https:// URLs with client certificates required.
async function startTls(t, { more = [], rsa = false } = {}) {
  const certs = makeCerts(tempDir(t), { rsa });
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const { etcd, edge } = await startBoth(t, { args: tlsArgs(certs, more), scheme: "https", dispatcher });
  return { certs, dispatcher, etcd, edge };
}

// etcdctl's output with each side's own URL and lease ids normalised, and
// clientv3's JSON warning lines dropped.
function ctl(side, certs) {
  const leases = [];
  const norm = (s) => {
    for (const m of s.matchAll(/^lease ([0-9a-f]{16}) granted/gm)) if (!leases.includes(m[1])) leases.push(m[1]);
    return s.replaceAll(side.url, "<url>").replace(/\b[0-9a-f]{16}\b/g, (id) => (leases.includes(id) ? `<lease ${leases.indexOf(id)}>` : id));
  };
  return {
    leases,
    async run(args, { client = true, timeout } = {}) {
      const r = await etcdctl(side.url, [...ctlFlags(certs, { client }), ...args], { timeout });
      const stderr = r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n");
      return { code: r.code, stdout: norm(r.stdout), stderr: norm(stderr) };
    },
  };
}

// curl's exit code and what it printed (the body), bounded.
function curl(args) {
  return new Promise((resolve) => {
    const child = spawn("curl", ["-sS", "--max-time", "5", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", () => resolve({ code: "no curl", out }));
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.on("close", (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

test("etcdctl with --cacert/--cert/--key: put, get, lease, watch and member list give etcd's output over TLS", async (t) => {
  const { certs, etcd, edge } = await startTls(t);
  const sessions = [ctl(etcd, certs), ctl(edge, certs)];
  const both = async (args, opts) => {
    const [a, b] = await Promise.all(sessions.map((s) => s.run(args, opts)));
    assert.deepEqual(b, a, `etcdctl ${args.join(" ")}`);
    return a;
  };
  assert.equal((await both(["put", "tls/a", "1"])).stdout, "OK\n");
  await both(["put", "tls/b", "2"]);
  assert.equal((await both(["get", "--prefix", "tls/"])).stdout, "tls/a\n1\ntls/b\n2\n");
  assert.match((await both(["lease", "grant", "60"])).stdout, /^lease <lease 0> granted with TTL\(60s\)\n$/);
  await Promise.all(sessions.map((s) => s.run(["put", `--lease=${s.leases[0]}`, "tls/leased", "x"])));
  const ttl = await Promise.all(sessions.map((s) => s.run(["lease", "timetolive", "--keys", s.leases[0]])));
  for (const r of ttl) assert.match(r.stdout, /^lease <lease 0> granted with TTL\(60s\), remaining\(\d+s\), attached keys\(\[tls\/leased\]\)\n$/);
  // A watch from revision 1 prints the history, then waits: cut at 3 s.
  const watched = await both(["watch", "--prefix", "--rev=1", "tls/"], { timeout: 3000 });
  assert.equal(watched.stdout, "PUT\ntls/a\n1\nPUT\ntls/b\n2\nPUT\ntls/leased\nx\n");
  // (Each side's own id, name and peer URL.)
  for (const s of sessions) assert.match((await s.run(["member", "list"])).stdout, /^[0-9a-f]+, started, (etcd|edge)-node, http:\/\/127\.0\.0\.1:\d+, <url>, false\n$/);
  // --insecure-skip-tls-verify: no CA, still a client certificate.
  for (const side of [etcd, edge]) {
    const r = await etcdctl(side.url, ["--insecure-skip-tls-verify", `--cert=${certs.clientCert}`, `--key=${certs.clientKey}`, "get", "tls/a"]);
    assert.deepEqual([r.code, r.stdout], [0, "tls/a\n1\n"], side.name);
  }
});

test("--client-cert-auth: a client without a certificate, with one from another CA, or in plain text is refused by both", async (t) => {
  const { certs, etcd, edge } = await startTls(t);
  const out = {};
  // (Side by side: each etcdctl here waits out its timeout.)
  await Promise.all([etcd, edge].map(async (side) => {
    const s = ctl(side, certs);
    const plain = side.url.replace("https:", "http:");
    out[side.name] = {
      // etcdctl dials until its command timeout, then says so.
      noCert: await s.run(["--command-timeout=2s", "get", "a"], { client: false }),
      otherCa: await s.run(["--command-timeout=2s", `--cert=${certs.otherCert}`, `--key=${certs.otherKey}`, "get", "a"], { client: false }),
      plain: await etcdctl(plain, ["--command-timeout=2s", "get", "a"]).then((r) => ({ code: r.code, stderr: r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n") })),
      // curl: no answer to plain HTTP (52, "Empty reply from server").
      curlPlain: (await curl([`${plain}/version`])).code,
      curlOk: (await curl(["--cacert", certs.ca, "--cert", certs.clientCert, "--key", certs.clientKey, `${side.url}/health`])).out,
    };
    // No certificate: both send a TLS alert, which curl hears as it
    // writes (55) or reads (56). Another CA's: etcd fails the handshake
    // with an alert, node:tls closes the connection right after it (52).
    // Nothing is answered either way.
    for (const args of [[], ["--cert", certs.otherCert, "--key", certs.otherKey]]) {
      const r = await curl(["--cacert", certs.ca, ...args, `${side.url}/version`]);
      assert.ok(r.code !== 0 && r.out === "", `${side.name} ${args}: ${r.code} ${r.out}`);
    }
    // Each refusal is logged, in etcd's words where they are the same.
    assert.match(side.log(), /rejected connection from "127\.0\.0\.1:\d+" \(error "tls: client didn't provide a certificate", ServerName ""\)/, side.name);
    assert.match(side.log(), /rejected connection.*tls: failed to verify client certificate/, side.name);
  }));
  if (out.etcd.curlPlain === "no curl") t.diagnostic("curl is not installed: its outcomes compare as equal");
  assert.deepEqual(out["edge-lease"], out.etcd);
  assert.deepEqual(out.etcd.noCert, { code: 1, stdout: "", stderr: "Error: context deadline exceeded" });
  assert.equal(out.etcd.otherCa.code, 1);
  assert.equal(out.etcd.plain.code, 1);
});

test("grpc-js over TLS: KV, Lease and Watch answer the same on both", async (t) => {
  const { certs, etcd, edge } = await startTls(t);
  const credentials = grpc.credentials.createSsl(readFileSync(certs.ca), readFileSync(certs.clientKey), readFileSync(certs.clientCert));
  const norm = (r) => JSON.parse(JSON.stringify(r, (k, v) => (["cluster_id", "member_id", "raft_term", "ID", "lease"].includes(k) && v !== "0" ? "<id>" : v)));
  const answers = {};
  for (const side of [etcd, edge]) {
    const client = (service) => {
      const c = grpcClient(side.url, service, { credentials });
      t.after(() => c.close());
      return c;
    };
    const kv = client("etcdserverpb.KV");
    const lease = client("etcdserverpb.Lease");
    const call = (c, m, req) => new Promise((ok) => c[m](req, { deadline: Date.now() + 10_000 }, (e, r) => ok(e ? { code: e.code, details: e.details } : r)));
    const a = [];
    a.push(await call(kv, "Put", { key: b64("g/a"), value: b64("1") }));
    const granted = await call(lease, "LeaseGrant", { TTL: 60 });
    a.push(granted);
    a.push(await call(kv, "Put", { key: b64("g/b"), value: b64("2"), lease: granted.ID, prev_kv: true }));
    a.push(await call(kv, "Range", { key: b64("g/"), range_end: b64("g0") }));
    a.push(await call(kv, "Txn", { compare: [{ key: b64("g/a"), target: "VALUE", value: b64("1") }], success: [{ request_delete_range: { key: b64("g/a"), prev_kv: true } }] }));
    // A watch from revision 1: its created response and the history.
    const watch = client("etcdserverpb.Watch").Watch();
    watch.on("error", () => {}); // (its cancel below)
    const events = [];
    const got = new Promise((ok) => watch.on("data", (m) => (m.events?.length && events.push(...m.events), events.length >= 3 && ok())));
    watch.write({ create_request: { key: b64("g/"), range_end: b64("g0"), start_revision: 1 } });
    await Promise.race([got, new Promise((r) => setTimeout(r, 5000))]);
    watch.cancel();
    a.push(events);
    answers[side.name] = norm(a);
  }
  assert.deepEqual(answers["edge-lease"], answers.etcd);
  assert.equal(answers.etcd.at(-1).length, 3);
});

test("the etcd3 npm client over TLS with a client certificate: kv, a transaction and a lease, the same on both", async (t) => {
  const { certs, etcd, edge } = await startTls(t);
  const credentials = { rootCertificate: readFileSync(certs.ca), privateKey: readFileSync(certs.clientKey), certChain: readFileSync(certs.clientCert) };
  const answers = {};
  for (const side of [etcd, edge]) {
    const client = new Etcd3({ hosts: side.url, credentials, dialTimeout: 5000 });
    t.after(() => client.close());
    const a = {};
    await client.put("e/1").value("one");
    await client.put("e/2").value("two");
    a.prefix = await client.getAll().prefix("e/").strings();
    a.txn = (await client.if("e/1", "Value", "==", "one").then(client.put("e/1").value("uno")).commit()).succeeded;
    a.after = await client.get("e/1").string();
    const lease = client.lease(30, { autoKeepAlive: false });
    await lease.grant();
    await lease.put("e/leased").value("v");
    a.ttl = (await lease.keepaliveOnce()).TTL;
    await lease.revoke();
    a.leased = await client.get("e/leased").string();
    answers[side.name] = a;
  }
  assert.deepEqual(answers["edge-lease"], answers.etcd);
  assert.deepEqual(answers.etcd, { prefix: { "e/1": "one", "e/2": "two" }, txn: true, after: "uno", ttl: "30", leased: null });
});

test("the JSON gateway over https with the client certificate: the same answers on both", async (t) => {
  const { etcd, edge, dispatcher } = await startTls(t);
  const norm = (r) => JSON.parse(JSON.stringify(r, (k, v) => (["cluster_id", "member_id", "raft_term", "ID"].includes(k) ? "<id>" : v)));
  const answers = {};
  for (const side of [etcd, edge]) {
    const call = async (path, body) => {
      const r = await post(side.url, path, body, { dispatcher });
      return { status: r.status, body: norm(r.body) };
    };
    const a = [];
    a.push(await call("/v3/kv/put", { key: b64("h/a"), value: b64("1") }));
    a.push(await call("/v3/kv/range", { key: b64("h/a") }));
    a.push(await call("/v3/lease/grant", { TTL: 60 }));
    a.push(await call("/v3/kv/range", { key: b64("h/"), range_end: b64("h0"), count_only: true }));
    a.push(await call("/v3/kv/put", { key: "not base64" }));
    const version = await fetch(`${side.url}/version`, { dispatcher });
    a.push([version.status, await version.json()]);
    answers[side.name] = a;
  }
  assert.deepEqual(answers["edge-lease"], answers.etcd);
  assert.equal(answers.etcd[0].status, 200);
});

// Whether a TLS client with `options` connects to `url` (within 5 s).
function handshake(url, options) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = tlsConnect({ host: hostname, port: Number(port), ...options }, () => {
      resolve(`${s.getProtocol()} ${s.getCipher().standardName}`);
      s.destroy();
    });
    s.setTimeout(5000, () => (s.destroy(), resolve("timeout")));
    s.on("error", (e) => resolve(`refused (${e.code})`));
  });
}

test("--cipher-suites in Go's names: a TLS 1.2 client must use one of them on both; TLS 1.3 is as without it", async (t) => {
  const { certs, etcd, edge } = await startTls(t, { more: ["--cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"] });
  const client = { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) };
  const out = {};
  for (const side of [etcd, edge]) {
    out[side.name] = [
      await handshake(side.url, { ...client, maxVersion: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }),
      await handshake(side.url, { ...client, maxVersion: "TLSv1.2", ciphers: "ECDHE-ECDSA-CHACHA20-POLY1305" }),
      (await handshake(side.url, { ...client, maxVersion: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384" })).startsWith("refused"),
      (await handshake(side.url, { ...client, minVersion: "TLSv1.3" })).split(" ")[0],
      // Below TLS 1.2: refused by both.
      (await handshake(side.url, { ...client, minVersion: "TLSv1.1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" })).startsWith("refused"),
    ];
  }
  assert.deepEqual(out["edge-lease"], out.etcd);
  assert.deepEqual(out.etcd, ["TLSv1.2 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLSv1.2 TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", true, "TLSv1.3", true]);
});

test("an https:// --listen-metrics-urls serves /metrics and /health over TLS with the client port's certificate and checks, on both", async (t) => {
  const certs = makeCerts(tempDir(t));
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  const noCert = tlsAgent({ ca: certs.ca });
  t.after(() => Promise.all([dispatcher.close(), noCert.close()]));
  const metrics = { etcd: `https://127.0.0.1:${await freePort()}`, "edge-lease": `https://127.0.0.1:${await freePort()}` };
  const { startEtcd, startEdge } = await import("./harness.mjs");
  const out = {};
  for (const [name, start] of [["etcd", startEtcd], ["edge-lease", startEdge]]) {
    await start(t, { args: tlsArgs(certs, ["--listen-metrics-urls", metrics[name]]), scheme: "https", dispatcher });
    const health = await fetch(`${metrics[name]}/health`, { dispatcher });
    const m = await fetch(`${metrics[name]}/metrics`, { dispatcher });
    const refused = await fetch(`${metrics[name]}/health`, { dispatcher: noCert }).then(() => false, () => true);
    out[name] = [health.status, await health.json(), m.status, /^etcd_server_has_leader 1$/m.test(await m.text()), refused];
  }
  assert.deepEqual(out["edge-lease"], out.etcd);
  assert.deepEqual(out.etcd, [200, { health: "true" }, 200, true, true]);
});
