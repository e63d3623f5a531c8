// Starts a real etcd 3.4 and edge-lease's server (server/main.mjs) on free
// loopback ports with temp data dirs, for tests that make the same calls to
// both. Every wait is bounded.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * A seeded random source for the random differential tests (xorshift32):
 * `rnd()` in [0, 1), `pick(list)`, `chance(p)`; the same seed, the same run.
 */
export function seeded(seed) {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  return { rnd, pick: (a) => a[Math.floor(rnd() * a.length)], chance: (p) => rnd() < p };
}

/** A string or bytes as base64, as the JSON gateway carries bytes. */
export const b64 = (s) => Buffer.from(s).toString("base64");

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// The processes each test started: stopped (and waited for, bounded)
// before any of its temp dirs goes, whichever after-hook runs first.
const started = new WeakMap();

// SIGKILL, as a crash; waits (bounded) for the exit.
async function kill(p) {
  p.child.kill("SIGKILL");
  await Promise.race([p.exited, new Promise((r) => setTimeout(r, 5000))]);
}

async function stopAll(t) {
  for (const p of started.get(t) ?? []) await kill(p);
}

export function tempDir(t, prefix = "edge-lease-test-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(async () => {
    await stopAll(t);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

// (`dispatcher`: an undici Agent with the CA and client certificate an
// https:// URL needs.)
const healthy = (url, dispatcher) => async () => {
  const r = await fetch(url + "/health", { signal: AbortSignal.timeout(1000), dispatcher });
  return r.ok && (await r.json()).health === "true";
};

// `up` (default: /health says true) within 10 s; fails at once if the
// process `exited` (a promise) meanwhile.
async function waitHealthy(url, log, up = healthy(url), exited = null) {
  let gone = false;
  exited?.then(() => (gone = true));
  for (let i = 0; i < 100 && !gone; i++) {
    try {
      if (await up()) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become healthy${gone ? " (the process exited)" : ""}:\n${log().slice(-2000)}`);
}

// Healthy, and the answer is this process's: a line of its log that says
// it serves (`marker`) names the port (another test's server that took the
// port first would answer too). etcd's capnslog and zap lines both do.
const ours = (p, marker, url, dispatcher) => {
  const port = `:${new URL(url).port}`;
  return async () => p.log().split("\n").some((l) => l.includes(marker) && l.includes(port)) && (await healthy(url, dispatcher)());
};

// A port freePort() found free can be taken by another test's process
// before ours binds it: with ports of its own choosing, a start that
// finds one taken tries again on fresh ones (at most 3 times).
async function onFreshPorts(start) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= 3 || !/address already in use/i.test(e.message)) throw e;
    }
  }
}

/**
 * The flags of the seed's command line for member `name` with its data in
 * `dataDir`, on fresh ports: { url, peer, args } (`scheme`: the client
 * URL's, "https" for TLS).
 */
export async function clusterFlags(name, dataDir, { scheme = "http" } = {}) {
  const client = `${scheme}://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  return {
    url: client,
    peer,
    args: [
      "--name", name,
      "--data-dir", dataDir,
      "--listen-client-urls", client,
      "--advertise-client-urls", client,
      "--listen-peer-urls", peer,
      "--initial-advertise-peer-urls", peer,
      "--initial-cluster", `${name}=${peer}`,
      "--initial-cluster-token", "etcd-cluster-1",
      "--initial-cluster-state", "new",
    ],
  };
}

function run(t, cmd, args, name, env) {
  const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: env && { ...process.env, ...env } });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, log })));
  const p = { child, exited, log: () => log, name, cmd, args, env };
  if (!started.has(t)) started.set(t, []);
  started.get(t).push(p);
  t.after(() => stopAll(t));
  return p;
}

/**
 * `args`: more etcd flags; `flags` (clusterFlags) to choose its name, data
 * and ports; `env`: more environment; `scheme: "https"` for a TLS client
 * URL, with a `dispatcher` for its health checks.
 */
export async function startEtcd(t, { args = [], flags, env, scheme, dispatcher } = {}) {
  try {
    execFileSync("etcd", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Error("etcd is not installed: run `bash scripts/setup.sh --etcd` (npm test does)");
  }
  const once = async (f) => {
    const p = run(t, "etcd", [...f.args, ...args], "etcd", env);
    await waitHealthy(f.url, p.log, ours(p, "serving", f.url, dispatcher), p.exited);
    return { ...p, url: f.url, peer: f.peer };
  };
  if (flags) return once(flags);
  return onFreshPorts(async () => once(await clusterFlags("etcd-node", join(tempDir(t, "edge-lease-etcd-"), "data"), { scheme })));
}

/**
 * edge-lease's server with the same flags, run as a program (through its #!
 * line, as npx and npm start run it); `dataDir` to reuse one; `args`: more
 * flags; `nodeArgs`: Node's (then run by this Node, without the #! line's
 * settings); `env`: more environment; `scheme: "https"` for a TLS client
 * URL, with a `dispatcher` for its health checks.
 */
export async function startEdge(t, { dataDir, flags, args = [], nodeArgs = [], env, scheme, dispatcher } = {}) {
  const once = async (f) => {
    const p = nodeArgs.length
      ? run(t, process.execPath, [...nodeArgs, "server/main.mjs", ...f.args, ...args], "edge-lease", env)
      : run(t, "./server/main.mjs", [...f.args, ...args], "edge-lease", env);
    await waitHealthy(f.url, p.log, ours(p, "etcd v3 API", f.url, dispatcher), p.exited);
    return { ...p, url: f.url, peer: f.peer, flags: f };
  };
  if (flags) return once(flags);
  // (The server opens its data directory only once its ports are its own.)
  const dir = dataDir ?? join(tempDir(t), "data");
  return onFreshPorts(async () => once(await clusterFlags("edge-node", dir, { scheme })));
}

/**
 * Kills `p` (SIGKILL, as a crash) and starts it again with the same flags,
 * data and ports; resolves once it answers /version (its /health is false
 * while an alarm is raised).
 */
export async function restart(t, p) {
  await kill(p);
  const q = run(t, p.cmd, p.args, p.name, p.env);
  await waitHealthy(p.url, q.log, async () => (await fetch(p.url + "/version", { signal: AbortSignal.timeout(1000) })).ok, q.exited);
  return { ...p, ...q };
}

/**
 * Both, started side by side (`args`: more flags for both; `scheme` and
 * `dispatcher` as for each). With
 * EDGE_LEASE_SERVER=worker the edge-lease side is edge-lease/worker under
 * Miniflare (tests/workerd/harness.mjs), at the namespace "edge-node" (its
 * member name, as the server's); it takes no flags.
 */
export async function startBoth(t, { args = [], scheme, dispatcher } = {}) {
  const edgeSide = process.env.EDGE_LEASE_SERVER === "worker" ? startWorkerSide(t) : startEdge(t, { args, scheme, dispatcher });
  const [etcd, edge] = await Promise.all([startEtcd(t, { args, scheme, dispatcher }), edgeSide]);
  return { etcd, edge };
}

async function startWorkerSide(t) {
  const { startWorker } = await import("../workerd/harness.mjs");
  const w = await startWorker(t);
  const url = w.url("edge-node");
  // No peers: the member's peer URL is its own URL, where etcd has a port.
  const known = (path, body) =>
    path.endsWith("/cluster/member/list") && body?.members
      ? { ...body, members: body.members.map((m) => ({ ...m, peerURLs: ["<own 1>"] })) }
      : body;
  return { name: "edge-lease", url, peer: `${url}#peer`, worker: w, known };
}

/** etcdctl against `url`: { code, stdout, stderr }, bounded by `timeout` ms. */
export function etcdctl(url, args, { input = "", timeout = 10_000 } = {}) {
  return new Promise((resolve) => {
    const child = spawn("etcdctl", [`--endpoints=${url}`, ...args], {
      env: { ...process.env, ETCDCTL_API: "3" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout);
    // ("close", not "exit": the output may still be in the pipes at exit.)
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // (etcdctl may exit before it reads its input: a refused login.)
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

/** POSTs JSON to the gateway: { status, body } (body parsed when JSON); `dispatcher` for https://. */
export async function post(url, path, body, { dispatcher } = {}) {
  let res;
  try {
    res = await fetch(url + path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body ?? {}), dispatcher });
  } catch (e) {
    // undici says only "fetch failed"; the cause says what happened.
    throw new Error(`POST ${url}${path}: ${e.message}: ${e.cause?.code ?? ""} ${e.cause?.message ?? e.cause}`, { cause: e });
  }
  const text = await res.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // A stream: one JSON object per line.
    try {
      parsed = text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    } catch {}
  }
  return { status: res.status, body: parsed, type: res.headers.get("content-type") };
}

/**
 * `etcdctl watch ...` against `url`: the first `lines` lines of its output,
 * then it is killed (bounded by `timeout`). With `stderr`, its error lines
 * (not its JSON logs) count as output too.
 */
export function etcdctlWatch(url, args, lines, { timeout = 8000, stderr = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn("etcdctl", [`--endpoints=${url}`, "watch", ...args], { env: { ...process.env, ETCDCTL_API: "3" } });
    let out = "";
    const done = () => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      resolve(out.split("\n").slice(0, lines).join("\n"));
    };
    const timer = setTimeout(done, timeout);
    child.stdout.on("data", (d) => {
      out += d;
      if (out.split("\n").length > lines) done();
    });
    if (stderr) child.stderr.on("data", (d) => (out += String(d).split("\n").filter((l) => l && !l.startsWith("{")).map((l) => l + "\n").join("")));
    child.on("close", done);
  });
}
