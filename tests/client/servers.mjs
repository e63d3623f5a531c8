// Shared by the client tests: one real etcd 3.4 and one edge-lease server
// per test file (tests/etcd/harness.mjs starts them), an in-process Lessor
// per test, and `eachBackend`, which runs a test once against each backend
// of BACKENDS.
//
// EDGE_LACKS is the one list of server features edge-lease does not have
// yet (they answer Unimplemented). A test declares the features it `needs`;
// against edge-lease it is skipped (and says why) while one is listed here.
// When the server gains a feature, delete its line: every test that needs
// it then runs against edge-lease too.
//
// A test that needs "server" (a URL: proxies, etcdctl, other processes,
// restarts) is about servers and runs against etcd and edge-lease only.
// One that needs "url" (a URL it can put a proxy in front of, nothing more)
// runs against the Worker too.
//
// "worker" is edge-lease/worker under Miniflare (tests/workerd/harness.mjs),
// one runtime per test file started when its first test needs it, and the
// client pointed at one namespace of it: connect(<origin>/n/client-tests).

import { after, before, test } from "node:test";
import { connect } from "../../js/client/index.mjs";
import { Lessor } from "../../js/entries/node.mjs";
import { startEdge, startEtcd } from "../etcd/harness.mjs";

/** Every backend a client test runs against, unless it says otherwise. */
export const BACKENDS = ["etcd", "edge-lease", "lessor", "worker"];

/** The backends with a URL (for `backends:` in tests that need one beyond "server"). */
export const SERVERS = ["etcd", "edge-lease"];

/** The namespace of the Worker the client tests use. */
export const WORKER_NAMESPACE = "client-tests";

export const EDGE_LACKS = new Set([]); // edge-lease has every feature the tests need

/** A `t` for the harness's helpers at file level: cleanups run in after(). */
function fileScope() {
  const cleanups = [];
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return { after: (fn) => cleanups.push(fn) };
}

const scope = fileScope();
const started = {};

/** Starts the servers this file's tests use (`etcd`, `edge-lease`), once. */
export function useServers(names = ["etcd", "edge-lease"]) {
  before(async () => {
    await Promise.all(
      names.map(async (n) => {
        started[n] = n === "etcd" ? await startEtcd(scope) : await startEdge(scope);
      }),
    );
  });
  return started;
}

/** The Worker under Miniflare for this file, started on first use. */
let workerStarting = null;
function useWorker() {
  workerStarting ??= (async () => {
    const { startWorker } = await import("../workerd/harness.mjs");
    const w = await startWorker(scope);
    started.worker = { url: w.url(WORKER_NAMESPACE), worker: w };
    return started.worker;
  })();
  return workerStarting;
}

/** A client for `target` (a URL or a Lessor), closed when the test ends. */
export function client(t, target, options) {
  const c = connect(target, options);
  t.after(() => c.close());
  return c;
}

/**
 * An in-process Lessor as etcd is configured in these tests (etcd's minimum
 * TTL of 2 s), on a clock that runs with real time plus `clock.advance(ms)`:
 * advancing moves the engine's time and ticks, so expiry needs no sleeping.
 */
export function lessorBackend(t) {
  let offset = 0;
  const lessor = new Lessor({ now: () => Date.now() + offset, minTtl: 2 });
  const clock = {
    now: () => Date.now() + offset,
    /** Moves the lessor's clock `ms` ahead and expires what is due. */
    advance(ms) {
      offset += ms;
      return lessor.tick();
    },
  };
  const clients = [];
  // One cleanup (t.after runs hooks in order): the clients, then the lessor.
  t.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    lessor.close();
  });
  const connectLocal = () => {
    const c = connect(lessor);
    clients.push(c);
    return c;
  };
  return { lessor, clock, connect: connectLocal };
}

/**
 * `test(name [backend])` for each backend; `fn(t, ctx)` with `ctx.name`,
 * `ctx.connect()` (a client closed at the test's end: over the server's URL,
 * or over the test's one Lessor), and `ctx.url`/`ctx.server` for servers or
 * `ctx.lessor`/`ctx.clock` (lessorBackend) in-process.
 */
export function eachBackend(name, { needs = [], timeout = 30_000, backends = BACKENDS } = {}, fn) {
  for (const b of backends) {
    if (b === "lessor" && (needs.includes("server") || needs.includes("url"))) continue;
    if (b === "worker" && needs.includes("server")) continue;
    const missing = b === "edge-lease" ? needs.filter((f) => EDGE_LACKS.has(f)) : [];
    const skip = missing.length ? `waits for edge-lease's server: ${missing.join(", ")} (EDGE_LACKS in tests/client/servers.mjs)` : false;
    test(`${name} [${b}]`, { timeout, skip }, async (t) => {
      if (b === "lessor") {
        const { lessor, clock, connect: connectLocal } = lessorBackend(t);
        return fn(t, { name: b, lessor, clock, connect: connectLocal });
      }
      // (A test that starts its own server, restartable(), uses no started one.)
      const server = b === "worker" ? await useWorker() : started[b];
      return fn(t, { name: b, url: server?.url, server, connect: (o) => client(t, server.url, o) });
    });
  }
}

/** Polls `fn` until it returns truthy, at most `ms`. */
export async function until(fn, ms = 5000, every = 20) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Rejects if `p` does not settle within `ms`. */
export function within(p, ms, what = "operation") {
  let timer;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
    }),
  ]);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A TCP proxy on loopback in front of `target` (a URL): `cut()` drops every
 * connection through it, `block()` makes it drop new ones at once (the
 * server looks unreachable) until `unblock()`. `swallow(path, n)`: the next
 * `n` requests to `path` (e.g. "/v3/kv/put") reach the server, and their
 * connection is dropped when the answer comes back (the request was
 * applied, the answer lost); `swallowed` counts them. `requests(path)`: how
 * many requests to `path` went through.
 */
export async function proxy(t, target) {
  const { createServer, connect: dial } = await import("node:net");
  const to = new URL(target);
  const sockets = new Set();
  const seen = new Map(); // path -> requests
  const rules = new Map(); // path -> how many more to swallow
  let blocked = false;
  const server = createServer((client) => {
    if (blocked) return client.destroy();
    const upstream = dial(Number(to.port), to.hostname);
    sockets.add(client).add(upstream);
    let doomed = false; // this connection's answer is to be swallowed
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.on("data", (d) => {
      // (A request's line comes first in its first chunk: one request at a
      // time per connection, as fetch sends them.)
      const m = /^POST (\S+) HTTP/.exec(d.toString("latin1", 0, 300));
      if (m) {
        const path = m[1].slice(to.pathname.replace(/\/$/, "").length);
        seen.set(path, (seen.get(path) ?? 0) + 1);
        if ((rules.get(path) ?? 0) > 0) {
          rules.set(path, rules.get(path) - 1);
          doomed = true;
        }
      }
      upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (!doomed) return client.write(d);
      p.swallowed++;
      drop();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const p = {
    // (The target's path kept: a Worker's namespace is one.)
    url: `http://127.0.0.1:${server.address().port}${to.pathname.replace(/\/$/, "")}`,
    swallowed: 0,
    cut() {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    block() {
      blocked = true;
      p.cut();
    },
    unblock() {
      blocked = false;
    },
    swallow(path, n = 1) {
      rules.set(path, (rules.get(path) ?? 0) + n);
    },
    requests(path) {
      return seen.get(path) ?? 0;
    },
  };
  t.after(() => {
    p.cut();
    server.close();
  });
  return p;
}

/**
 * A server of `kind` ("etcd" or "edge-lease") on fixed ports and a data dir
 * that survive `restart()` (SIGKILL, then the same command line).
 */
export async function restartable(t, kind) {
  const { spawn } = await import("node:child_process");
  const { freePort, root, tempDir } = await import("../etcd/harness.mjs");
  const { join } = await import("node:path");
  const url = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const name = kind === "etcd" ? "etcd-node" : "edge-node";
  const args = [
    "--name", name,
    "--data-dir", join(tempDir(t, "edge-lease-client-"), "data"),
    "--listen-client-urls", url,
    "--advertise-client-urls", url,
    "--listen-peer-urls", peer,
    "--initial-advertise-peer-urls", peer,
    "--initial-cluster", `${name}=${peer}`,
    "--initial-cluster-token", "etcd-cluster-1",
    "--initial-cluster-state", "new",
  ];
  let child = null;
  let log = "";
  async function start() {
    child = kind === "etcd"
      ? spawn("etcd", args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(process.execPath, ["server/main.mjs", ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => (log += d));
    child.stderr.on("data", (d) => (log += d));
    for (let i = 0; i < 100; i++) {
      try {
        const r = await fetch(url + "/health");
        if (r.ok && (await r.json()).health === "true") return;
      } catch {}
      await sleep(100);
    }
    throw new Error(`${kind} did not become healthy:\n${log.slice(-2000)}`);
  }
  async function stop() {
    if (!child) return;
    const c = child;
    child = null;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await exited;
  }
  t.after(stop);
  await start();
  return { url, start, stop, async restart() { await stop(); await start(); }, log: () => log };
}
