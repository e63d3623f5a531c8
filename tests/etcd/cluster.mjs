// A real etcd 3.4 cluster on loopback, beside harness.mjs's single member:
// member i listens on 127.0.0.<i>, with its own client and peer ports and
// data dir. Members can be killed (SIGKILL) and started again with the same
// command line; `leader()` asks the members' Maintenance/Status who leads.
// Every wait is bounded; the test's end kills what is left and removes the
// data.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./harness.mjs";

/** A free TCP port on `host` (a loopback address). */
export function freePortOn(host) {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** POSTs to a member's gateway with a short bound: the parsed answer, or null if it did not answer. */
async function ask(url, path, ms = 500) {
  try {
    const r = await fetch(url + path, { method: "POST", body: "{}", signal: AbortSignal.timeout(ms) });
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

/**
 * Starts `size` members (127.0.0.1 ... 127.0.0.<size>) as one new cluster
 * and waits (at most 20 s) until each serves with a leader. `args`: more
 * etcd flags for every member (e.g. --election-timeout).
 */
export async function startCluster(t, { size = 3, args = [] } = {}) {
  // (In memory where there is /dev/shm: a disk's slow fsyncs would stall
  // the cluster for seconds now and then, and blur what failover costs.)
  const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "edge-lease-cluster-"));
  const members = [];
  for (let i = 1; i <= size; i++) {
    const host = `127.0.0.${i}`;
    const url = `http://${host}:${await freePortOn(host)}`;
    const peer = `http://${host}:${await freePortOn(host)}`;
    members.push(member(`m${i}`, url, peer, join(dir, `m${i}`)));
  }
  const initial = members.map((m) => `${m.name}=${m.peer}`).join(",");
  for (const m of members) {
    m.args = [
      "--name", m.name,
      "--data-dir", m.dataDir,
      "--listen-client-urls", m.url,
      "--advertise-client-urls", m.url,
      "--listen-peer-urls", m.peer,
      "--initial-advertise-peer-urls", m.peer,
      "--initial-cluster", initial,
      "--initial-cluster-token", "edge-lease-cluster",
      "--initial-cluster-state", "new",
      ...args,
    ];
  }
  t.after(async () => {
    await Promise.all(members.map((m) => m.kill()));
    rmSync(dir, { recursive: true, force: true });
  });
  for (const m of members) m.spawn();
  await Promise.all(members.map((m) => m.waitServing(20_000)));
  const cluster = {
    members,
    urls: members.map((m) => m.url),
    /** The member every running member names as leader (its id from Status), or null. */
    async leader() {
      const running = members.filter((m) => m.running);
      const answers = await Promise.all(running.map((m) => ask(m.url, "/v3/maintenance/status")));
      const ids = new Map(); // member id -> member
      const votes = new Map();
      answers.forEach((a, i) => {
        if (!a) return;
        ids.set(String(a.header?.member_id), running[i]);
        if (a.leader && a.leader !== "0") votes.set(a.leader, (votes.get(a.leader) ?? 0) + 1);
      });
      // (A majority of the whole cluster names it, and it answers itself.)
      for (const [id, n] of votes) if (n > size / 2 && ids.has(id)) return ids.get(id);
      return null;
    },
    /** Waits (at most `ms`) for a leader other than `not`: { leader, at } (at: Date.now() when seen). */
    async newLeader(not, ms = 15_000) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        const l = await cluster.leader();
        if (l && l !== not) return { leader: l, at: Date.now() };
        await pause(20);
      }
      throw new Error(`no new leader within ${ms} ms`);
    },
  };
  return cluster;
}

function member(name, url, peer, dataDir) {
  let child = null;
  let exited = null;
  let log = "";
  const m = {
    name,
    url,
    peer,
    dataDir,
    args: [],
    get running() {
      return child !== null;
    },
    log: () => log,
    spawn() {
      child = spawn("etcd", m.args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.on("data", (d) => (log += d));
      child.stderr.on("data", (d) => (log += d));
      exited = new Promise((r) => child.once("exit", r));
    },
    /** Until /health says true (the member serves, with a leader), at most `ms`. */
    async waitServing(ms = 15_000) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        try {
          const r = await fetch(url + "/health", { signal: AbortSignal.timeout(500) });
          if (r.ok && (await r.json()).health === "true") return;
        } catch {}
        if (child === null) break;
        await pause(50);
      }
      throw new Error(`${name} (${url}) did not serve within ${ms} ms:\n${log.slice(-2000)}`);
    },
    /** SIGKILL, as a crash; resolves once it exited (at most 5 s). */
    async kill() {
      if (child === null) return;
      const c = child;
      child = null;
      c.kill("SIGKILL");
      await Promise.race([exited, pause(5000)]);
    },
    /** Starts it again with the same flags and data; resolves once it serves. */
    async restart(ms = 15_000) {
      await m.kill();
      m.spawn();
      await m.waitServing(ms);
    },
  };
  return m;
}
