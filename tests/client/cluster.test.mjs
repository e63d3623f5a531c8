// Issue 29's acceptance test: edge-lease/client on a real 3-member etcd 3.4
// (127.0.0.1-3, each its own client and peer ports), every client process
// given all three endpoints. Four processes contend on one mutex and one
// election, each with TTL-5 sessions; the leader is killed (-9) and
// restarted, then a follower. history.mjs judges the logs: no two holders
// (or leaders) overlap, tokens rise across holders and in the server's
// order of the guarded writes; the lock is unavailable after the leader's
// death for at most the election (measured) plus one request timeout (plus
// a hand-off between holders), and a follower's death costs no more than a
// request timeout. The same
// workload runs against one edge-lease server killed and restarted: safety
// the same, unavailability the restart plus a request timeout.
//
// The measured numbers are printed as test diagnostics; FAILOVER_EVENTS=file
// writes the etcd run's events there.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { test } from "node:test";
import { startCluster } from "../etcd/cluster.mjs";
import { root } from "../etcd/harness.mjs";
import { checkSafety, errorsBetween, parseLogs, unavailability } from "./history.mjs";
import { restartable, sleep, until } from "./servers.mjs";

const TTL = 5;
const TIMEOUT = 1000; // each request's limit, per member
const PROCESSES = 4;
// What a holder's hand-off to the next one takes (its unlock applied, the
// waiter's watch told, its read answered), with a retry's backoff (25 ms):
// an allowance on top of the election and the timeout, checked against
// the hand-offs measured before any fault.
const HANDOFF_MS = 250;

/** `n` contender processes over `endpoints`; stop() ends their loops and waits (bounded) for them. */
function contenders(t, endpoints, n, tag) {
  const procs = [];
  for (let i = 0; i < n; i++) {
    const cfg = { name: `${tag}-${i}`, endpoints, ttl: TTL, timeout: TIMEOUT, lock: `${tag}/lock`, election: `${tag}/election`, holdMs: 40, maxMs: 55_000 };
    const child = spawn(process.execPath, ["tests/client/contender.mjs", JSON.stringify(cfg)], { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    const p = { child, out: "", err: "", exited: new Promise((r) => child.once("exit", (code) => r(code))) };
    child.stdout.on("data", (d) => (p.out += d));
    child.stderr.on("data", (d) => (p.err += d));
    procs.push(p);
  }
  t.after(() => procs.forEach((p) => p.child.kill("SIGKILL")));
  return {
    events: () => parseLogs(procs.map((p) => p.out)),
    async stop() {
      for (const p of procs) p.child.stdin.end();
      const codes = await Promise.race([Promise.all(procs.map((p) => p.exited)), sleep(15_000).then(() => null)]);
      assert.ok(codes, "the contenders exit within 15 s of being told to");
      codes.forEach((c, i) => assert.equal(c, 0, `contender ${i} exited with ${c}:\n${procs[i].err.slice(-2000)}`));
      return this.events();
    },
  };
}

const took = (events, kind, after) => events.some((e) => e.kind === kind && e.ev === "held" && e.start > after);

/** Each process has held the lock and led the election at least once since `after`. */
const allTook = (events, after) =>
  [...new Set(events.map((e) => e.who))].length === PROCESSES &&
  [...new Set(events.filter((e) => e.ev === "held" && e.start > after).map((e) => `${e.who}/${e.kind}`))].length === 2 * PROCESSES;

function judge(t, events) {
  const out = {};
  for (const kind of ["lock", "election"]) {
    const s = checkSafety(events, kind);
    assert.deepEqual(s.violations, [], `${kind}: safety`);
    assert.ok(s.holdings.length > 20 && s.writes > 20, `${kind}: ${s.holdings.length} holdings and ${s.writes} guarded writes to judge`);
    out[kind] = s.holdings;
  }
  const lost = events.filter((e) => e.ev === "lost");
  assert.deepEqual(lost, [], "no session was lost");
  return out;
}

const ms = (n) => `${Math.round(n)} ms`;

test("a 3-member etcd: the leader killed, then a follower; no double holder, unavailability within the election plus a request timeout", { timeout: 90_000 }, async (t) => {
  const cluster = await startCluster(t);
  const w = contenders(t, cluster.urls, PROCESSES, "etcd3");
  const t0 = Date.now();
  await until(() => allTook(w.events(), t0), 20_000);
  await sleep(1500);
  const steadyFrom = Date.now() - 1500;

  // The leader dies.
  const leader = await cluster.leader();
  assert.ok(leader, "the cluster has a leader");
  const k1 = Date.now();
  await leader.kill();
  const { at } = await cluster.newLeader(leader);
  const election = at - k1;
  await until(() => took(w.events(), "lock", at) && took(w.events(), "election", at), 15_000);
  await sleep(1500);
  await leader.restart();
  await sleep(1500);

  // A follower dies.
  const now = await cluster.leader();
  const follower = cluster.members.find((m) => m !== now && m.running);
  const k2 = Date.now();
  await follower.kill();
  await sleep(2500);
  const r2 = Date.now();
  await follower.restart();
  await sleep(1000);
  const end = Date.now();

  const events = await w.stop();
  if (process.env.FAILOVER_EVENTS) writeFileSync(process.env.FAILOVER_EVENTS, JSON.stringify({ events, steadyFrom, k1, at, k2, r2, end }));
  const holds = judge(t, events);
  const handoff = unavailability(events, "lock", steadyFrom, k1);
  const numbers = {
    election: ms(election),
    steadyMaxGap: ms(handoff),
    leaderKill: ms(unavailability(events, "lock", k1, k1 + 8000)),
    leaderKillElection: ms(unavailability(events, "election", k1, k1 + 8000)),
    followerKill: ms(unavailability(events, "lock", k2, r2)),
    followerKillElection: ms(unavailability(events, "election", k2, r2)),
    errorsAfterLeaderKill: errorsBetween(events, "lock", k1, k2).length + errorsBetween(events, "election", k1, k2).length,
    errorsAfterFollowerKill: errorsBetween(events, "lock", k2, end).length + errorsBetween(events, "election", k2, end).length,
    lockHoldings: holds.lock.length,
  };
  t.diagnostic(`etcd cluster: ${JSON.stringify(numbers)}`);
  // The worst case: an unlock sent just before the new leader is elected,
  // to a member that still forwards to the dead one, is lost and times
  // out; its retry succeeds, then the lock is handed over as usual. So the
  // bound is the election, one request timeout, and a hand-off.
  assert.ok(handoff < HANDOFF_MS, `hand-offs before any fault took up to ${ms(handoff)}`);
  const leaderGap = unavailability(events, "lock", k1, k1 + 8000);
  assert.ok(
    leaderGap <= election + TIMEOUT + HANDOFF_MS,
    `the lock was unavailable ${ms(leaderGap)} after the leader's death: more than the election (${ms(election)}) plus one request timeout (${TIMEOUT} ms) plus a hand-off (${HANDOFF_MS} ms)`,
  );
  const followerGap = unavailability(events, "lock", k2, r2);
  assert.ok(followerGap <= TIMEOUT, `the lock was unavailable ${ms(followerGap)} after a follower's death`);
  const followerElectionGap = unavailability(events, "election", k2, r2);
  assert.ok(followerElectionGap <= TIMEOUT, `the election had no leader for ${ms(followerElectionGap)} after a follower's death`);
});

test("one edge-lease server killed and restarted: the same workload, the same safety; unavailable for the restart", { timeout: 60_000 }, async (t) => {
  const server = await restartable(t, "edge-lease");
  const w = contenders(t, [server.url], PROCESSES, "edge1");
  const t0 = Date.now();
  await until(() => allTook(w.events(), t0), 20_000);
  await sleep(1500);
  const k = Date.now();
  await server.restart();
  const back = Date.now();
  await until(() => took(w.events(), "lock", back) && took(w.events(), "election", back), 15_000);
  await sleep(1500);
  const end = Date.now();
  const events = await w.stop();
  judge(t, events);
  const gap = unavailability(events, "lock", k, end);
  const numbers = {
    restart: ms(back - k),
    lockUnavailable: ms(gap),
    electionUnavailable: ms(unavailability(events, "election", k, end)),
    errors: errorsBetween(events, "lock", k, end).length + errorsBetween(events, "election", k, end).length,
  };
  t.diagnostic(`edge-lease restart: ${JSON.stringify(numbers)}`);
  assert.ok(gap <= back - k + TIMEOUT, `the lock was unavailable ${ms(gap)}: more than the restart (${ms(back - k)}) plus one request timeout`);
});
