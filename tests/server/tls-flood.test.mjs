// A TLS handshake flood on edge-lease's https:// port (--client-cert-auth):
// waves of connections that never start a handshake, stop halfway through
// one, send garbage, or bring a certificate from another CA, for a bounded
// few seconds, while a client with a good certificate keeps making gRPC
// calls. Its calls succeed, every flood connection is closed by the server
// (node:tls's handshake timeout), the server's open files come back to
// where they were, and it serves on. Bounded in count and time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { startEdge, tempDir, b64 } from "../etcd/harness.mjs";
import { makeCerts, tlsAgent } from "../etcd/certs.mjs";
import { grpcClient, until } from "../etcd/grpc-client.mjs";

const WAVES = 4;
const PER_WAVE = 80;
const FLOOD_MS = 4000;

// The server process's open file descriptors (Linux), or null.
const openFiles = (pid) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
};

test("a TLS handshake flood: a good client's calls go on, every flood connection is closed, the server's files come back", async (t) => {
  const certs = makeCerts(tempDir(t));
  const dispatcher = tlsAgent({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  t.after(() => dispatcher.close());
  const edge = await startEdge(t, {
    args: ["--cert-file", certs.cert, "--key-file", certs.key, "--trusted-ca-file", certs.ca, "--client-cert-auth"],
    scheme: "https",
    dispatcher,
    env: { EDGE_LEASE_HEADERS_TIMEOUT_MS: "1000" },
  });
  const port = Number(new URL(edge.url).port);
  const credentials = grpc.credentials.createSsl(readFileSync(certs.ca), readFileSync(certs.clientKey), readFileSync(certs.clientCert));
  const kv = grpcClient(edge.url, "etcdserverpb.KV", { credentials });
  t.after(() => kv.close());
  const call = (method, req) =>
    new Promise((ok) => kv[method](req, { deadline: Date.now() + 10_000 }, (err, res) => ok(err ? { code: err.code, details: err.details } : res)));
  assert.ok((await call("Put", { key: b64("k"), value: b64("0") })).header, "the victim's first call");
  const before = openFiles(edge.child.pid);

  // Each flood connection: closed by the server (or refused) within 10 s.
  const other = { ca: readFileSync(certs.ca), cert: readFileSync(certs.otherCert), key: readFileSync(certs.otherKey), rejectUnauthorized: false };
  const kinds = [
    () => netConnect(port, "127.0.0.1"), // silent
    () => netConnect(port, "127.0.0.1", function () {
      this.write(Buffer.from([0x16, 3, 1, 0, 200, 1, 0, 0, 196, 3, 3])); // a ClientHello cut short
    }),
    () => netConnect(port, "127.0.0.1", function () {
      this.write(Buffer.alloc(64, 0x41)); // garbage
    }),
    () => tlsConnect({ host: "127.0.0.1", port, servername: "localhost", ...other }), // another CA's certificate
  ];
  const closed = [];
  const flood = (kind) =>
    new Promise((resolve) => {
      const s = kinds[kind]();
      const timer = setTimeout(() => (s.destroy(), resolve({ kind, closed: false })), 10_000);
      s.on("error", () => {});
      s.on("close", () => (clearTimeout(timer), resolve({ kind, closed: true })));
    });

  // The victim calls on while the waves come, each call bounded.
  let flooding = true;
  let lastPut = "0";
  const victim = (async () => {
    const answers = [];
    for (let i = 0; flooding && i < 2000; i++) {
      if (i % 2 === 0) lastPut = String(i);
      const r = i % 2 ? await call("Range", { key: b64("k") }) : await call("Put", { key: b64("k"), value: b64(lastPut) });
      answers.push(r);
      await new Promise((ok) => setTimeout(ok, 20));
    }
    return answers;
  })();
  const started = Date.now();
  for (let w = 0; w < WAVES && Date.now() - started < FLOOD_MS; w++) {
    for (let i = 0; i < PER_WAVE; i++) closed.push(flood(i % kinds.length));
    await new Promise((ok) => setTimeout(ok, FLOOD_MS / WAVES));
  }
  flooding = false;
  const answers = await victim;
  const outcomes = await Promise.all(closed);

  assert.ok(answers.length > 0);
  const failed = answers.filter((a) => a.code !== undefined);
  assert.deepEqual(failed, [], "every call of the good client succeeded");
  const open = outcomes.filter((o) => !o.closed);
  assert.deepEqual(open, [], "every flood connection was closed by the server");
  // Its open files back to where they were (the victim's connection stays).
  if (before !== null) assert.ok(await until(() => openFiles(edge.child.pid) <= before + 2, 10_000), `open files: ${before} before, ${openFiles(edge.child.pid)} after`);
  assert.equal(edge.child.exitCode, null, "the server is up");
  const r = await fetch(edge.url + "/health", { dispatcher, signal: AbortSignal.timeout(5000) });
  assert.equal((await r.json()).health, "true");
  assert.equal(Buffer.from((await call("Range", { key: b64("k") })).kvs[0].value, "base64").toString(), lastPut);
  t.diagnostic(`${outcomes.length} flood connections, ${answers.length} good calls, open files ${before} before, ${openFiles(edge.child.pid)} after`);
});
