// One client process of the failover acceptance test (cluster.test.mjs):
// it contends on one mutex and one election, each with its own session, in
// loops, until its stdin ends (or `maxMs` passes), and writes what it did
// as JSON lines on stdout for history.mjs:
//
//   { kind: "lock" | "election", ev: "held", token, lease, start, end, lost, wrote }
//     a holding: `start` when lock()/campaign() resolved (epoch ms, read
//     after it), `end` read before unlock()/resign() was called, or the
//     session's deadline if the session was lost while holding; `wrote`:
//     the revision of the write guarded by the lock made while holding.
//   { kind, ev: "error", op, code, message, t }: a call that failed.
//   { kind, ev: "session", lease, t } / { kind, ev: "lost", lease, t, deadline }
//
// node tests/client/contender.mjs '{"name", "endpoints", "ttl", "timeout", "lock", "election", "holdMs", "maxMs"}'

import { connect } from "../../js/client/index.mjs";

const cfg = JSON.parse(process.argv[2]);
const client = connect(cfg.endpoints, { timeout: cfg.timeout });
const out = (o) => process.stdout.write(JSON.stringify({ who: cfg.name, ...o }) + "\n");
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

let stopping = false;
process.stdin.on("end", () => (stopping = true));
process.stdin.resume();
const hardStop = setTimeout(() => (stopping = true), cfg.maxMs);

/** Sleeps `ms` in steps while `isHeld()`; whether it still holds at the end. */
async function holdFor(isHeld, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!isHeld()) return false;
    await pause(Math.min(10, end - Date.now()));
  }
  return isHeld();
}

/**
 * One loop: a session (again after a loss), `take(session)` to get the
 * lock or the leadership, a guarded write, a hold, `give()` to let go.
 */
async function loop(kind, take) {
  let session = null;
  while (!stopping) {
    let op = "session";
    try {
      if (session !== null && session.signal.aborted) {
        out({ kind, ev: "lost", lease: session.lease, t: Date.now(), deadline: session.deadline });
        session = null;
      }
      if (session === null) {
        session = await client.session({ ttl: cfg.ttl });
        out({ kind, ev: "session", lease: session.lease, t: Date.now() });
      }
      op = "take";
      const { holder, isHeld, give } = await take(session);
      const start = Date.now();
      let wrote = null;
      op = "guarded-write";
      try {
        wrote = (await client.put(`${cfg[kind]}-owner`, String(holder.token), { ifHeld: holder })).revision;
      } catch (e) {
        out({ kind, ev: "error", op, code: e.code, message: e.message, t: Date.now() });
      }
      const still = await holdFor(isHeld, cfg.holdMs);
      const end = still ? Date.now() : session.deadline;
      out({ kind, ev: "held", token: holder.token, lease: session.lease, start, end, lost: !still, wrote });
      op = "give";
      if (still) await give();
    } catch (e) {
      out({ kind, ev: "error", op, code: e.code, message: e.message, t: Date.now() });
      await pause(50);
    }
  }
  if (session !== null) await session.close();
}

const lock = loop("lock", async (session) => {
  const m = session.mutex(cfg.lock);
  await m.lock();
  return { holder: m, isHeld: () => m.held, give: () => m.unlock() };
});

const elect = loop("election", async (session) => {
  const el = session.election(cfg.election);
  await el.campaign(cfg.name);
  return { holder: el, isHeld: () => el.leading, give: () => el.resign() };
});

await Promise.allSettled([lock, elect]);
clearTimeout(hardStop);
await client.close();
out({ ev: "exit", t: Date.now() });
