// Lock waits against the Worker go over its hibernatable WebSockets (issue
// 29): 100 clients' waiting locks hold no HTTP request open in the
// namespace's Durable Object, and the next waiter takes the lock once the
// holder unlocks. The client's WebSocket here is undici's (Node 20 has none
// of its own); workerd, browsers, Deno, Bun and Node 22 have theirs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { WebSocket } from "undici";
import { connect } from "../../js/client/index.mjs";
import { ROOT, startWorker } from "./harness.mjs";

const NS = "waits";
const WAITERS = 100;

test(`${WAITERS} waiting locks hold no request open in the Durable Object; the next waiter takes the lock at the unlock`, { timeout: 120_000 }, async (t) => {
  const w = await startWorker(t, { scriptPath: join(ROOT, "tests/workerd/open-requests-worker.mjs") });
  const state = async () => (await fetch(`${w.origin}/__open/${NS}`)).json();
  const open = async () => (await state()).open;
  const url = w.url(NS);
  // One client per waiter, as separate processes or pages would be.
  const clients = Array.from({ length: WAITERS + 1 }, () => connect(url, { webSocket: WebSocket, timeout: 10_000 }));
  t.after(() => Promise.all(clients.map((c) => c.close())));
  // (TTL 60: the sessions' keepalives, short POSTs every 20 s, are not due while the test counts.)
  const sessions = await Promise.all(clients.map((c) => c.session({ ttl: 60 })));
  const holder = sessions[0].mutex("/locks/job");
  await holder.lock();
  const holderToken = holder.token;

  const order = [];
  const waits = sessions.slice(1).map((s, i) => {
    const m = s.mutex("/locks/job");
    return m.lock().then(() => {
      order.push({ i, at: performance.now(), token: m.token });
      return m;
    });
  });
  // (The waiters left when the test ends fail as their sessions close.)
  for (const p of waits) p.catch(() => {});
  // Every waiter's key is in, and each waits on its predecessor's deletion.
  const keys = async () => (await clients[0].range({ key: "/locks/job/", prefix: true, countOnly: true })).count;
  const until = Date.now() + 30_000;
  while ((await keys()) < WAITERS + 1) {
    assert.ok(Date.now() < until, "all the waiters' keys within 30 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  // A waiter creates its key, reads its predecessor, then opens its watch:
  // count once every waiter's socket is open, then several times more.
  while ((await state()).sockets < WAITERS) {
    assert.ok(Date.now() < until, "every waiter's watch socket within 30 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  const counts = [];
  for (let i = 0; i < 5; i++) {
    counts.push(await open());
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(counts, [0, 0, 0, 0, 0], "no request held open by the waiting locks");
  assert.equal(order.length, 0, "all still waiting");

  const unlocked = performance.now();
  await holder.unlock();
  const first = await Promise.race([waits[0], new Promise((_, no) => setTimeout(() => no(new Error("the first waiter did not get the lock within 10 s")), 10_000))]);
  const latency = order[0].at - unlocked;
  t.diagnostic(`the first waiter held the lock ${latency.toFixed(1)} ms after the unlock was sent`);
  assert.equal(order[0].i, 0, "FIFO: the first waiter first");
  assert.ok(first.token > holderToken, "a higher fencing token");
  await first.unlock();
  const second = await waits[1];
  assert.equal(order[1].i, 1);
  await second.unlock();
});
