// edge-lease's etcd server (server/main.mjs) on its own: what a loopback
// server must refuse, requests that must not crash it, its flags, and
// durability across SIGKILL under load. The etcd-compatible behaviour itself
// is compared against a real etcd in tests/etcd/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { connect } from "node:net";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { clusterFlags, freePort, startEdge, tempDir, post, root, b64 } from "../etcd/harness.mjs";


function raw(url, { method = "GET", path = "/", headers = {}, body } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, text, headers: res.headers }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function rawSocket(url, bytes, ms = 2000) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(u.port), u.hostname, () => s.end(bytes));
    let out = "";
    s.on("data", (d) => (out += d));
    s.on("close", () => resolve(out));
    s.on("error", () => resolve(out));
    setTimeout(() => s.destroy(), ms);
  });
}

test("answers the Host names of its advertised client URLs, on the client port and the metrics listener", async (t) => {
  const f = await clusterFlags("adv", join(tempDir(t), "data"));
  const port = new URL(f.url).port;
  const advertised = `http://edge.example:${port}`;
  f.args[f.args.indexOf("--advertise-client-urls") + 1] = advertised;
  const metrics = `http://127.0.0.1:${await freePort()}`;
  const edge = await startEdge(t, { flags: f, args: ["--listen-metrics-urls", metrics] });
  const status = async (url, path, host) => (await raw(url, { method: path === "/metrics" ? "GET" : "POST", path, headers: { host }, body: path === "/metrics" ? undefined : "{}" })).status;
  assert.equal(await status(edge.url, "/v3/kv/range", `edge.example:${port}`), 400, "an advertised name is this server's");
  assert.equal(await status(edge.url, "/v3/kv/range", `evil.example:${port}`), 421);
  assert.equal(await status(metrics, "/metrics", "edge.example"), 200);
  assert.equal(await status(metrics, "/metrics", "evil.example"), 421);
});

test("refuses other Hosts and other origins, survives malformed requests", async (t) => {
  const edge = await startEdge(t);
  const alive = async () => assert.equal((await post(edge.url, "/v3/kv/range", { key: b64("k") })).status, 200);

  // DNS rebinding: a page served from evil.example resolving to 127.0.0.1.
  const host = await raw(edge.url, { method: "POST", path: "/v3/kv/put", headers: { host: "evil.example:2379" }, body: "{}" });
  assert.equal(host.status, 421);
  // A page on another origin POSTing (no-cors): the write must not happen.
  const put = JSON.stringify({ key: b64("csrf"), value: b64("x") });
  const cross = await raw(edge.url, { method: "POST", path: "/v3/kv/put", headers: { origin: "http://evil.example" }, body: put });
  assert.equal(cross.status, 403);
  assert.equal((await post(edge.url, "/v3/kv/range", { key: b64("csrf") })).body.kvs, undefined);
  // Same origin (the demo page) is fine, and no answer carries CORS headers.
  const same = await raw(edge.url, { method: "POST", path: "/v3/kv/range", headers: { origin: edge.url }, body: "{}" });
  assert.equal(same.status, 400);
  assert.equal(same.headers["access-control-allow-origin"], undefined);

  // A malformed request target (any page can send one with <img>).
  assert.equal((await raw(edge.url, { path: "//[" })).status, 404);
  assert.match(await rawSocket(edge.url, "GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), /^HTTP\/1.1 400/);
  assert.match(await rawSocket(edge.url, "GARBAGE\r\n\r\n"), /^HTTP\/1.1 400/);
  // Deeply nested JSON, and a deeply nested txn.
  const deep = "[".repeat(200_000) + "]".repeat(200_000);
  assert.equal((await post(edge.url, "/v3/kv/put", deep)).status, 400);
  let txn = {};
  for (let i = 0; i < 1000; i++) txn = { success: [{ request_txn: txn }] };
  const nested = await post(edge.url, "/v3/kv/txn", txn);
  assert.deepEqual([nested.status, nested.body.code], [400, 3]); // deeper than the gateway reads
  // Truncated HTTP/2: the preface and half a frame, then the socket closes.
  await rawSocket(edge.url, Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Buffer.from([0, 0, 9, 4, 0])]));
  await rawSocket(edge.url, Buffer.from("PRI * HTTP/2.0\r\n"));
  // A body larger than the gateway reads.
  const huge = await post(edge.url, "/v3/kv/put", "x".repeat(9 * 1024 * 1024));
  assert.deepEqual([huge.status, huge.body.code], [429, 8]);
  await alive();

  // The demo page is still served next to the API.
  const page = await fetch(edge.url + "/");
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type"), /text\/html/);
});

test("what needs engine features answers gRPC Unimplemented with a clear message", async (t) => {
  const edge = await startEdge(t);
  const client = new grpc.Client(edge.url.replace("http://", ""), grpc.credentials.createInsecure());
  t.after(() => client.close());
  const call = (path) =>
    new Promise((ok) =>
      client.makeUnaryRequest(path, (x) => x, (x) => x, Buffer.alloc(0), (err) => ok(err && [err.code, err.details])),
    );
  assert.deepEqual(await call("/etcdserverpb.Maintenance/Hash"), [12, "edge-lease: etcdserverpb.Maintenance/Hash is not implemented by this single-member server"]);
  const hash = await post(edge.url, "/v3/maintenance/hash", {});
  assert.deepEqual([hash.status, hash.body.code], [501, 12]);
});

test("a Range with a sort target that is not one: etcd 3.5's InvalidArgument (etcd 3.4 panics on it), alone or in a Txn, on both transports", async (t) => {
  const edge = await startEdge(t);
  const client = new grpc.Client(edge.url.replace("http://", ""), grpc.credentials.createInsecure());
  t.after(() => client.close());
  const call = (path, bytes) =>
    new Promise((ok) => client.makeUnaryRequest(path, (x) => x, (x) => x, bytes, (err) => ok(err ? [err.code, err.details] : "answered")));
  // RangeRequest { key: "a", sort_target: 7 }; a Txn whose success holds it (RequestOp field 1).
  const range = Buffer.from([0x0a, 0x01, 0x61, 0x30, 0x07]);
  const txn = Buffer.concat([Buffer.from([0x12, range.length + 2, 0x0a, range.length]), range]);
  assert.deepEqual(await call("/etcdserverpb.KV/Range", range), [3, "etcdserver: invalid sort option"]);
  assert.deepEqual(await call("/etcdserverpb.KV/Txn", txn), [3, "etcdserver: invalid sort option"]);
  const r = await post(edge.url, "/v3/kv/range", { key: b64("a"), sort_target: 7 });
  assert.deepEqual([r.status, r.body.code, r.body.message], [400, 3, "etcdserver: invalid sort option"]);
  // The server goes on.
  assert.equal(await call("/etcdserverpb.KV/Range", Buffer.from([0x0a, 0x01, 0x61])), "answered");
});

test("an engine failure outside any call ends the server with status 70; any other uncaught error with 1", async (t) => {
  for (const [error, status, said] of [
    ["new WebAssembly.RuntimeError('unreachable')", 70, /the engine failed \(unreachable\); exiting so that a restart reopens it from the store/],
    ["new Error('a bug')", 1, /Error: a bug/],
  ]) {
    // Thrown from no handler (as a watch stream's timer would), once the server is up.
    const hook = `process.on("SIGUSR2", () => setImmediate(() => { throw ${error}; }));`;
    const edge = await startEdge(t, { nodeArgs: ["--import", `data:text/javascript,${encodeURIComponent(hook)}`] });
    edge.child.kill("SIGUSR2");
    const end = await Promise.race([edge.exited, new Promise((ok) => setTimeout(ok, 10_000, null))]);
    assert.ok(end, "the server exits");
    assert.equal(end.code, status, end.log);
    assert.match(end.log, said);
  }
});

test("etcd's configuration, its corner cases as etcd 3.4.23 reads them: Go's bool spellings, an empty config file or --config-file, empty variables, hidden flags", async (t) => {
  const { parseFlags, FlagError } = await import("../../server/flags.mjs");
  const dir = tempDir(t);
  const parse = async (argv, env = {}) => {
    const logs = [];
    try {
      const f = await parseFlags(argv, env, (l) => logs.push(l));
      return { f, logs };
    } catch (e) {
      if (!(e instanceof FlagError)) throw e;
      return { error: e.message, logs };
    }
  };
  // Go's strconv.ParseBool: 1, t, TRUE... and 0, f, FALSE...
  assert.match((await parse([], { ETCD_ENABLE_V2: "1" })).error, /the v2 API is not supported/);
  assert.equal((await parse([], { ETCD_FORCE_NEW_CLUSTER: "0", ETCD_ENABLE_GRPC_GATEWAY: "T" })).error, undefined);
  assert.match((await parse(["--pre-vote=maybe"])).error, /invalid boolean value "maybe" for --pre-vote/);
  // An empty --config-file is none; an empty file is no settings.
  assert.equal((await parse(["--config-file", "", "--name", "n"])).f.name, "n");
  writeFileSync(join(dir, "empty.yml"), "");
  assert.equal((await parse(["--config-file", join(dir, "empty.yml")])).f.name, "default");
  // A set variable shadowed by its flag is fatal even when empty; an empty
  // one otherwise is unused (and so, for etcd, unrecognized).
  assert.match((await parse(["--name", "a"], { ETCD_NAME: "" })).error, /conflicting environment variable "ETCD_NAME"/);
  const empty = await parse([], { ETCD_NAME: "" });
  assert.equal(empty.f.name, "default");
  assert.deepEqual(empty.logs, ["unrecognized environment variable ETCD_NAME="]);
  // A config file's bools are YAML's (1.1: yes, on...), not numbers or strings.
  writeFileSync(join(dir, "bools.yml"), "name: b\npre-vote: yes\nstrict-reconfig-check: on\n");
  assert.equal((await parse(["--config-file", join(dir, "bools.yml")])).f.name, "b");
  writeFileSync(join(dir, "number.yml"), "enable-pprof: 1\n");
  assert.match((await parse(["--config-file", join(dir, "number.yml")])).error, /enable-pprof in the config file: cannot unmarshal 1 into a bool/);
  // Flags etcd 3.4.23 takes without listing them.
  assert.equal((await parse(["--unsafe-no-fsync", "--experimental-enable-lease-checkpoint-persist"])).error, undefined);
});

test("etcd's flags: a configuration that needs a second member is refused", () => {
  const run = (...args) => spawnSync(process.execPath, ["server/main.mjs", ...args], { cwd: root, encoding: "utf8", timeout: 10_000 });
  const two = run("--name", "a", "--initial-cluster", "a=http://127.0.0.1:2380,b=http://127.0.0.1:2381", "--initial-advertise-peer-urls", "http://127.0.0.1:2380");
  assert.equal(two.status, 2);
  assert.match(two.stderr, /single-member etcd: --initial-cluster names 2 members \(a, b\)/);
  const existing = run("--initial-cluster-state", "existing");
  assert.equal(existing.status, 2);
  assert.match(existing.stderr, /joins another member's cluster/);
  assert.match(run("--bogus", "1").stderr, /flag provided but not supported: --bogus/);
  // TLS is served (tests/etcd/tls-*.test.mjs); peer URLs name no peer here.
  assert.match(run("--listen-peer-urls", "https://127.0.0.1:2380").stderr, /only http:\/\/ is supported/);
  assert.match(run("--enable-grpc-gateway=false").stderr, /the JSON gateway is always served here/);
  assert.match(run("--cors", "https://example.com").stderr, /flag provided but not supported: --cors/);
  assert.match(run("--max-request-bytes", "-1").stderr, /invalid value "-1" for flag --max-request-bytes/);
  assert.match(run("--max-request-bytes", String(2 ** 28)).stderr, /--max-request-bytes: at most 134217728/);
});

test("acknowledged writes survive SIGKILL under load; SIGTERM stops cleanly", async (t) => {
  const dataDir = join(tempDir(t), "data");
  let edge = await startEdge(t, { dataDir });
  const flags = edge.flags;
  const ok = async (path, body) => {
    const r = await post(edge.url, path, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const lease = (await ok("/v3/lease/grant", { TTL: 600 })).ID;
  const acked = new Map();
  let stop = false;
  // Writers keep going while the server is killed; only acknowledged puts count.
  const writers = [0, 1, 2, 3].map(async (w) => {
    for (let i = 0; !stop && i < 5000; i++) {
      const key = `w${w}/${i}`;
      try {
        const r = await post(edge.url, "/v3/kv/put", { key: b64(key), value: b64(`v${i}`), lease: i % 2 ? lease : undefined });
        if (r.status === 200) acked.set(key, Number(r.body.header.revision));
      } catch {
        return; // the connection died with the server
      }
    }
  });
  await new Promise((r) => setTimeout(r, 1500));
  edge.child.kill("SIGKILL");
  stop = true;
  await Promise.all(writers);
  assert.equal((await edge.exited).signal, "SIGKILL");
  assert.ok(acked.size > 20, `only ${acked.size} puts acknowledged`);

  edge = await startEdge(t, { flags });
  const all = await ok("/v3/kv/range", { key: b64("\0"), range_end: b64("\0"), keys_only: true });
  const have = new Map(all.kvs.map((kv) => [Buffer.from(kv.key, "base64").toString(), Number(kv.mod_revision)]));
  for (const [k, rev] of acked) assert.equal(have.get(k), rev, `${k} acknowledged at revision ${rev}`);
  assert.equal((await ok("/v3/lease/timetolive", { ID: lease })).grantedTTL, "600");

  edge.child.kill("SIGTERM");
  assert.equal((await edge.exited).code, 0);
  edge = await startEdge(t, { flags });
  const after = await ok("/v3/kv/put", { key: b64("after"), value: b64("restart") });
  assert.equal(Number(after.header.revision), Number(all.header.revision) + 1);
});
