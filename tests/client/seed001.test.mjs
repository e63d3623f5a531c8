// The seed-001 story with real processes: server-3 takes /locks/job with
// withLock on a 2 s lease and is frozen (SIGSTOP) past its TTL; server-7
// gets the lock after the lease expires, with a higher fencing token, and
// writes; server-3, thawed, finds at its first synchronous check that it
// lost the lock at the deadline it last knew (lock.signal.aborted,
// lock.held, lock.assertHeld()), whatever its timers did first; its late
// write guarded by the lock (`ifHeld`) is refused by the server (NotHeld)
// and its write to the fenced resource (a fence of
// edge-lease/fenced) by the resource. Thawed twice: with the
// test's "write" waiting on its stdin, and in a sleep of its own, whose
// timer is due before the deadline's and so runs first.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { fenced } from "../../js/fenced.js";
import { client as connectTo, eachBackend, until, useServers, within } from "./servers.mjs";

useServers();

const worker = fileURLToPath(new URL("./seed-worker.mjs", import.meta.url));

/** The fenced resource: accepts a write only if its token is at least the highest seen. */
async function fencedResource(t) {
  const fence = fenced(new Map(), "job-output");
  const log = [];
  const server = createServer(async (req, res) => {
    const q = new URL(req.url, "http://x").searchParams;
    const token = Number(q.get("token"));
    const who = q.get("who");
    try {
      await fence.write(token, () => log.push({ who, token, ok: true }));
      res.writeHead(200).end();
    } catch (e) {
      log.push({ who, token, ok: false, code: e.code });
      res.writeHead(409).end();
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${server.address().port}`, log };
}

function start(t, args) {
  const child = spawn(process.execPath, [worker, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const steps = [];
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      steps.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const exited = new Promise((r) => child.on("close", r));
  t.after(() => {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  });
  return {
    child,
    step: (name, ms = 10_000) => until(() => steps.find((s) => s.step === name), ms),
    exited: (ms = 10_000) => within(exited, ms, "the worker's exit"),
  };
}

/** The story, with server-3 in `mode` (seed-worker.mjs) and `thaw()` to resume it. */
async function frozenHolder(t, url, mode, thaw) {
  const resource = await fencedResource(t);
  const s3 = start(t, [url, "server-3", resource.url, mode]);
  const locked3 = await s3.step("locked");
  s3.child.kill("SIGSTOP");
  const frozenAt = Date.now();

  const s7 = start(t, [url, "server-7", resource.url, "auto"]);
  const locked7 = await s7.step("locked", 15_000);
  const wrote7 = await s7.step("wrote");
  await s7.step("released");
  assert.equal((await s7.exited()), 0);
  assert.ok(locked7.token > locked3.token, `server-7's token ${locked7.token} > server-3's ${locked3.token}`);
  assert.ok(locked7.at >= locked3.deadline, "server-7 got the lock only after server-3's lease deadline");
  assert.equal(wrote7.status, 200);
  assert.ok(wrote7.guard.revision > locked7.token, "server-7's guarded put was applied");

  const thawedAt = Date.now();
  thaw(s3);
  const wrote3 = await s3.step("wrote");
  assert.equal(wrote3.aborted, true, "lock.signal had aborted at the first check after the freeze");
  assert.equal(wrote3.held, false, "lock.held said the lock was lost");
  assert.equal(wrote3.assertCode, "LeaseNotFound", "lock.assertHeld() threw the session's loss");
  assert.equal(wrote3.reasonCode, "LeaseNotFound");
  assert.equal(wrote3.reasonDeadline, locked3.deadline, "the deadline it last knew: nothing renewed it while frozen");
  assert.ok(wrote3.abortedAt >= locked3.deadline && wrote3.abortedAt >= frozenAt && wrote3.abortedAt <= wrote3.at);
  assert.ok(wrote3.at >= thawedAt);
  // (server-7 has released the lock by then: nobody holds it.)
  assert.deepEqual(wrote3.guard, { code: "NotHeld" }, "the server refused server-3's guarded put");
  const result = await connectTo(t, url).get("/jobs/result");
  assert.equal(result.value, "server-7", "only server-7's guarded put was written");
  assert.equal(result.modRevision, wrote7.guard.revision);
  assert.equal(wrote3.status, 409, "the fenced resource refused the stale token");
  const end3 = await s3.step("withLock-rejected");
  assert.equal(end3.code, "LeaseNotFound");
  await s3.exited();
  assert.deepEqual(resource.log.map((w) => [w.who, w.ok, w.code]), [["server-7", true, undefined], ["server-3", false, "StaleToken"]]);
}

// Against the servers and the Worker: processes that a URL reaches.
const STORY = { needs: ["txn", "watch", "sort", "url"], timeout: 60_000 };

eachBackend("seed 001: a frozen holder loses the lock at its deadline, and its late write is fenced off", STORY, (t, { url }) =>
  frozenHolder(t, url, "wait", (s3) => {
    // The line is there when it resumes: it may be read before any timer runs.
    s3.child.stdin.write("write\n");
    s3.child.kill("SIGCONT");
  }),
);

eachBackend("seed 001: a holder frozen in its own sleep finds the lock lost when the sleep ends, before its deadline timer runs", STORY, (t, { url }) =>
  frozenHolder(t, url, "sleep", (s3) => s3.child.kill("SIGCONT")),
);
