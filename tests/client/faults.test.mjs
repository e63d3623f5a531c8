// Issue 11's fault test: the server killed (SIGKILL) and restarted while a
// mutex is held and another client waits. Restarted within the TTL, both
// sessions survive: the holder keeps the lock, the waiter keeps waiting and
// gets it only once the holder lets go. Down past the TTL, the sessions are
// lost at their deadlines while the server is away; after the restart a new
// client gets the lock, with a higher token, only after the old holder's
// signal has aborted. Never two holders.

import assert from "node:assert/strict";
import { connect } from "../../js/client/index.mjs";
import { SERVERS, eachBackend, restartable, sleep, until, within } from "./servers.mjs";

const settled = async (p, ms) => Promise.race([p.then(() => true, () => true), sleep(ms).then(() => false)]);

/**
 * Who holds what: `took(name, mutex)` when a lock() resolves checks that no
 * other holder's lock is still live (held and its session's signal not
 * aborted); `released(name)` when it lets go.
 */
function holders() {
  const live = new Map();
  return {
    took(name, m) {
      for (const [other, om] of live) {
        assert.ok(om.signal.aborted, `${name} got the lock while ${other} still held it with a live session`);
      }
      live.set(name, m);
    },
    released(name) {
      live.delete(name);
    },
  };
}

eachBackend(
  "the server killed and restarted mid-lock: within the TTL sessions survive, past it they are lost; never two holders",
  { needs: ["txn", "watch", "sort", "server"], timeout: 90_000, backends: SERVERS },
  async (t, { name }) => {
    const server = await restartable(t, name);
    const open = () => {
      const c = connect(server.url, { timeout: 1000 });
      t.after(() => c.close());
      return c;
    };
    const [a, b] = [open(), open()];
    const who = holders();

    // 1. Restarted within the TTL.
    const sa = await a.session({ ttl: 6 });
    const sb = await b.session({ ttl: 6 });
    const ma = sa.mutex("f1");
    const mb = sb.mutex("f1");
    await ma.lock();
    who.took("a", ma);
    const tokenA = ma.token;
    const lockingB = mb.lock().then(() => who.took("b", mb));
    assert.equal(await settled(lockingB, 300), false, "b waits");
    const down = Date.now();
    await server.restart();
    const restartMs = Date.now() - down;
    assert.ok(restartMs < 3000, `the restart took ${restartMs} ms: too long for a 6 s TTL test`);
    await sleep(2500); // more than a keepalive interval (TTL/3) after the restart
    assert.equal(sa.signal.aborted, false, "a's session survived the restart");
    assert.equal(sb.signal.aborted, false, "b's session survived the restart");
    const held = await open().get(ma.key);
    assert.equal(held?.createRevision, tokenA, "a's key is still there, with its token");
    assert.ok((await open().timeToLive(sa.lease)).ttl > 0);
    assert.equal(await settled(lockingB, 200), false, "b still waits while a holds");
    await ma.unlock();
    who.released("a");
    await within(lockingB, 10_000, "b's lock after a's unlock");
    assert.ok(mb.token > tokenA, `b's token ${mb.token} > a's ${tokenA}`);
    await mb.unlock();
    who.released("b");
    await Promise.all([sa.close(), sb.close()]);

    // 2. Down past the TTL.
    const sa2 = await a.session({ ttl: 3 });
    const sb2 = await b.session({ ttl: 3 });
    const ma2 = sa2.mutex("f2");
    await ma2.lock();
    who.took("a", ma2);
    const tokenA2 = ma2.token;
    const waitB = sb2.mutex("f2").lock();
    waitB.catch(() => {});
    assert.equal(await settled(waitB, 300), false, "b waits");
    const lost = new Promise((resolve) => sa2.addEventListener("lost", () => resolve(Date.now())));
    const deadline = sa2.deadline;
    await server.stop();
    const lostAt = await within(lost, 6000, "a's lost event");
    assert.ok(lostAt >= deadline - 5 && lostAt <= deadline + 300, `lost ${lostAt - deadline} ms from the deadline`);
    assert.equal(sa2.lost, true);
    assert.equal(ma2.signal.reason.code, "LeaseNotFound");
    await assert.rejects(within(waitB, 6000, "b's wait"), { code: "LeaseNotFound" }, "b's session was lost too: its wait fails");
    assert.equal(sb2.lost, true);
    await server.start();
    // A new client gets the lock once a's key is gone on the server (its
    // lease expires there, however long the server keeps it after a
    // restart), with a higher token; a's signal has aborted long before.
    const c = open();
    const sc = await c.session({ ttl: 10 });
    const mc = sc.mutex("f2");
    await within(mc.lock(), 30_000, "c's lock after the restart");
    who.took("c", mc);
    assert.ok(mc.token > tokenA2, `c's token ${mc.token} > a's ${tokenA2}`);
    await mc.unlock();
    who.released("c");
    await sc.close();
    await until(async () => (await c.range({ key: "f2/", prefix: true })).count === 0, 5000);
  },
);
