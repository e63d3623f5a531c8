// Slow clients against the server (issue 13 item 11): S sockets that send a
// request's headers and then trickle its body one byte a second, and once
// they are all in, P probes (GET /version on new connections, and unary
// gRPC calls on new channels) that must still be answered. Used by
// slow-clients.test.mjs, and by hand to measure:
//
//   node tests/server/slow-clients.mjs [--slow 200] [--probes 100] [--nofile 128]
//        [--window 20000] [--hold 0] [--env NAME=VALUE ...]
//
// The server runs under `ulimit -n <nofile>` (as in the issue) with the
// given environment. Prints what the probes got and when.
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { freePort } from "../etcd/harness.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts server/main.mjs under `ulimit -n nofile` (`program`: run as a
 * program, through its #! line, as npx and npm start do): { url, port,
 * pid, stop(), log() }.
 */
export async function startServer({ nofile = 0, env = {}, flags = [], program = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-slow-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ["server/main.mjs", "--data-dir", join(dir, "data"), "--listen-client-urls", url, "--advertise-client-urls", url, ...flags];
  const cmd = nofile ? `ulimit -n ${nofile} && exec "${process.execPath}" ${args.map((a) => `'${a}'`).join(" ")}` : null;
  const options = { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] };
  const child = cmd ? spawn("bash", ["-c", cmd], options) : program ? spawn("./server/main.mjs", args.slice(1), options) : spawn(process.execPath, args, options);
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((ok) => child.on("exit", ok));
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(url + "/health");
      if (r.ok) break;
    } catch {}
    if (i > 100) throw new Error(`server did not start:\n${log}`);
    await sleep(100);
  }
  return {
    url,
    port,
    pid: child.pid, // node's own: bash execs it
    log: () => log,
    async stop() {
      child.kill("SIGKILL");
      await Promise.race([exited, sleep(5000)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Opens `n` slow-body sockets: each sends a POST's headers and one byte of
 * its body, then one more byte a second. Resolves once each is connected
 * (or failed). `closed()` tells how many the server has closed so far.
 */
export async function slowBodies(port, n) {
  const sockets = [];
  let closed = 0;
  const opened = [];
  for (let i = 0; i < n; i++) {
    opened.push(
      new Promise((ok) => {
        const s = connect(port, "127.0.0.1");
        sockets.push(s);
        s.on("error", () => {});
        s.on("close", () => closed++);
        s.on("connect", () => {
          s.write(`POST /v3/kv/range HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
          ok();
        });
        s.on("close", ok);
        s.setTimeout(5000, ok);
      }),
    );
  }
  await Promise.all(opened);
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write(" ");
  }, 1000);
  return {
    closed: () => closed,
    stop() {
      clearInterval(drip);
      for (const s of sockets) s.destroy();
    },
  };
}

/** One HTTP probe on a new connection: { ok, ms, error }. */
function httpProbe(port, windowMs) {
  const t0 = performance.now();
  return new Promise((done) => {
    const s = connect(port, "127.0.0.1");
    let buf = "";
    const finish = (ok, error) => {
      clearTimeout(timer);
      s.destroy();
      done({ ok, ms: Math.round(performance.now() - t0), error });
    };
    const timer = setTimeout(() => finish(false, "no answer"), windowMs);
    s.on("connect", () => s.write(`GET /version HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`));
    s.on("data", (d) => {
      buf += d;
      if (buf.includes("etcdserver")) finish(true);
    });
    s.on("error", (e) => finish(false, e.code ?? e.message));
    s.on("close", () => finish(false, "closed"));
  });
}

/** One unary gRPC call (Maintenance/Status) on a channel of its own. */
function grpcProbe(url, windowMs) {
  const t0 = performance.now();
  const Client = grpc.makeGenericClientConstructor({
    Status: {
      path: "/etcdserverpb.Maintenance/Status",
      requestStream: false,
      responseStream: false,
      requestSerialize: () => Buffer.alloc(0),
      responseDeserialize: (b) => b,
    },
  });
  const c = new Client(url.replace("http://", ""), grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 });
  return new Promise((done) =>
    c.Status({}, { deadline: Date.now() + windowMs }, (err) => {
      c.close();
      done({ ok: !err, ms: Math.round(performance.now() - t0), error: err && `grpc ${err.code} ${err.details.replace(/\(.*$/s, "").trim()}` });
    }),
  );
}

/** P probes at once, half HTTP, half gRPC (at most 10 gRPC): a summary. */
export async function probe(url, port, n, windowMs) {
  const g = Math.min(10, Math.floor(n / 2));
  const results = await Promise.all([
    ...Array.from({ length: n - g }, () => httpProbe(port, windowMs)),
    ...Array.from({ length: g }, () => grpcProbe(url, windowMs)),
  ]);
  const ok = results.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b);
  const errors = {};
  for (const r of results) if (!r.ok) errors[r.error] = (errors[r.error] ?? 0) + 1;
  return {
    answered: ok.length,
    of: n,
    p50: ok[Math.floor(ok.length / 2)] ?? null,
    max: ok.at(-1) ?? null,
    errors,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: o } = parseArgs({
    options: {
      slow: { type: "string", default: "200" },
      probes: { type: "string", default: "100" },
      nofile: { type: "string", default: "128" },
      window: { type: "string", default: "20000" },
      hold: { type: "string", default: "0" },
      env: { type: "string", multiple: true, default: [] },
    },
  });
  const env = Object.fromEntries(o.env.map((kv) => kv.split(/=(.*)/s).slice(0, 2)));
  const server = await startServer({ nofile: Number(o.nofile), env });
  try {
    const t0 = Date.now();
    const slow = await slowBodies(server.port, Number(o.slow));
    console.log(`${o.slow} slow-body sockets in after ${Date.now() - t0} ms (${slow.closed()} already closed by the server)`);
    const r = await probe(server.url, server.port, Number(o.probes), Number(o.window));
    console.log(`probes: ${r.answered}/${r.of} answered within ${o.window} ms; p50 ${r.p50} ms, max ${r.max} ms; failures ${JSON.stringify(r.errors)}`);
    console.log(`slow sockets closed by the server after ${Date.now() - t0} ms: ${slow.closed()}/${o.slow}`);
    // How long the server holds a slow body (bounded by --hold ms).
    const end = Date.now() + Number(o.hold);
    while (slow.closed() < Number(o.slow) && Date.now() < end) await sleep(250);
    console.log(`slow sockets closed by the server after ${Date.now() - t0} ms: ${slow.closed()}/${o.slow}`);
    slow.stop();
  } finally {
    await server.stop();
  }
}
