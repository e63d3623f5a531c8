// Mutexes and elections with etcd's concurrency semantics: FIFO waits on
// the predecessor, the create revision as fencing token, withLock, aborts
// and lost sessions; interop with `etcdctl lock` and `etcdctl elect`; 20
// clients x 50 lock cycles with a shared counter. Against etcd, edge-lease's
// server and an in-process Lessor (interop: the servers only); held and
// leading as the clock says at the call, whatever the timers did.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { connect } from "../../js/client/index.mjs";
import { Lessor } from "../../js/entries/node.mjs";
import { eachBackend, sleep, until, useServers, within } from "./servers.mjs";

useServers();

const RECIPES = ["txn", "watch", "sort"];

/** A long-running etcdctl: its output so far, a line wait, SIGINT, exit. */
function etcdctlLive(t, url, args) {
  const child = spawn("etcdctl", [`--endpoints=${url}`, ...args], { env: { ...process.env, ETCDCTL_API: "3" }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise((r) => child.on("close", (code, signal) => r({ code, signal })));
  t.after(() => child.kill("SIGKILL"));
  return {
    out: () => out,
    line: (re, ms = 5000) => until(() => re.exec(out), ms).catch(() => { throw new Error(`etcdctl ${args.join(" ")}: no ${re} in ${JSON.stringify(out)} ${err}`); }),
    interrupt: () => child.kill("SIGINT"),
    exited: (ms = 5000) => within(exited, ms, `etcdctl ${args.join(" ")}`),
  };
}

const settled = async (p, ms) => Promise.race([p.then(() => true, () => true), sleep(ms).then(() => false)]);

eachBackend("lock, tryLock, unlock: key name/<lease hex>, token = create revision, FIFO", { needs: RECIPES }, async (t, { connect }) => {
  const etcd = connect();
  const sessions = await Promise.all([1, 2, 3].map(() => etcd.session({ ttl: 10 })));
  const [a, b, c] = sessions.map((s) => s.mutex("m1"));
  await a.lock();
  const tokenA = a.token;
  assert.equal(a.key, `m1/${BigInt("0x" + sessions[0].lease).toString(16)}`);
  const holder = await etcd.get(a.key);
  assert.equal(a.token, holder.createRevision);
  assert.equal(holder.lease, sessions[0].lease);
  assert.equal(await b.tryLock(), false);
  assert.equal((await etcd.range({ key: "m1/", prefix: true })).count, 1, "a failed tryLock leaves no key");
  const order = [];
  const pb = b.lock().then(() => order.push("b"));
  await sleep(100);
  const pc = c.lock().then(() => order.push("c"));
  assert.equal(await settled(Promise.race([pb, pc]), 300), false, "both wait");
  await a.unlock();
  assert.equal(a.key, undefined);
  await within(pb, 3000, "b's lock");
  assert.equal(await settled(pc, 200), false, "c waits for b");
  assert.ok(b.token > tokenA);
  const tokenB = b.token;
  await b.unlock();
  await within(pc, 3000, "c's lock");
  assert.deepEqual(order, ["b", "c"]);
  assert.ok(c.token > tokenB);
  await c.lock(); // the session holds it already: reentrant, same key
  await c.unlock();
  assert.equal(await c.tryLock(), true);
  await c.unlock();
});

eachBackend("an aborted wait removes its key; a lost session fails the wait", { needs: RECIPES, timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const holder = (await etcd.session({ ttl: 10 })).mutex("m2");
  await holder.lock();
  const s = await etcd.session({ ttl: 10 });
  const ctl = new AbortController();
  const waiting = s.mutex("m2").lock({ signal: ctl.signal });
  await sleep(200);
  ctl.abort();
  await assert.rejects(waiting, { code: "Aborted" });
  assert.equal((await etcd.range({ key: "m2/", prefix: true })).count, 1, "the waiter's key is gone");
  // The waiter's lease revoked under it: the wait ends with LeaseNotFound.
  const s2 = await etcd.session({ ttl: 10 });
  const w2 = s2.mutex("m2").lock();
  await sleep(200);
  await etcd.revoke(s2.lease);
  await assert.rejects(within(w2, 5000, "the wait"), { code: "LeaseNotFound" });
  await holder.unlock();
});

eachBackend("withLock: fn's result, release on throw, the loss reported", { needs: RECIPES, timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const r = await etcd.withLock("m3", { ttl: 5 }, async (lock) => {
    assert.ok(lock.token > 0);
    assert.equal((await etcd.get(lock.key)).createRevision, lock.token);
    return "done";
  });
  assert.equal(r, "done");
  assert.equal((await etcd.range({ key: "m3/", prefix: true })).count, 0);
  await assert.rejects(etcd.withLock("m3", { ttl: 5 }, async () => { throw new Error("boom"); }), /boom/);
  assert.equal((await etcd.range({ key: "m3/", prefix: true })).count, 0);
  // The lease revoked while fn runs: fn sees lock.signal abort; withLock rejects.
  await assert.rejects(
    etcd.withLock("m3", { ttl: 5 }, async (lock) => {
      await connect().revoke(lock.session.lease);
      // (In-process the signal has aborted already, before revoke() resolved.)
      await within(new Promise((res) => (lock.signal.aborted ? res() : lock.signal.addEventListener("abort", res))), 3000, "lock.signal");
      return "partial";
    }),
    { code: "LeaseNotFound" },
  );
});

eachBackend("20 clients x 50 lock cycles: no lost update, tokens strictly increasing", { needs: RECIPES, timeout: 120_000 }, async (t, { connect }) => {
  const CLIENTS = 20;
  const CYCLES = 50;
  const counter = connect();
  await counter.put("m4-counter", "0");
  const tokens = [];
  let inside = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const etcd = connect();
      const s = await etcd.session({ ttl: 10 });
      const m = s.mutex("m4");
      for (let c = 0; c < CYCLES; c++) {
        await m.lock();
        inside++;
        assert.equal(inside, 1, "one holder at a time");
        tokens.push(m.token);
        const v = Number((await etcd.get("m4-counter")).value);
        await sleep(0);
        await etcd.put("m4-counter", String(v + 1));
        inside--;
        await m.unlock();
      }
      await s.close();
    }),
  );
  assert.equal((await counter.get("m4-counter")).value, String(CLIENTS * CYCLES));
  assert.equal(tokens.length, CLIENTS * CYCLES);
  assert.ok(tokens.every((tok, i) => i === 0 || tok > tokens[i - 1]), "tokens strictly increasing");
  t.diagnostic(`${CLIENTS * CYCLES} lock cycles in ${Date.now() - started} ms`);
});

eachBackend("interop: an edge-lease mutex and `etcdctl lock` exclude each other", { needs: [...RECIPES, "server"], timeout: 30_000 }, async (t, { connect, url }) => {
  const etcd = connect();
  // etcdctl holds: we wait, and get it once etcdctl lets go (SIGINT).
  const ctl1 = etcdctlLive(t, url, ["lock", "m5"]);
  const [theirKey] = await ctl1.line(/^m5\/[0-9a-f]+$/m);
  const s = await etcd.session({ ttl: 10 });
  const mine = s.mutex("m5");
  assert.equal(await mine.tryLock(), false);
  const locking = mine.lock();
  assert.equal(await settled(locking, 500), false, "waits while etcdctl holds");
  const theirs = await etcd.get(theirKey);
  ctl1.interrupt();
  await within(locking, 5000, "our lock after etcdctl's release");
  assert.ok(mine.token > theirs.createRevision);
  // We hold: etcdctl's command waits until we unlock.
  const ctl2 = etcdctlLive(t, url, ["lock", "m5", "echo", "etcdctl-ran"]);
  await sleep(700);
  assert.equal(ctl2.out(), "", "etcdctl waits while we hold");
  await mine.unlock();
  await ctl2.line(/etcdctl-ran/);
  assert.equal((await ctl2.exited()).code, 0);
  await s.close();
});

eachBackend("election: campaign, leader, proclaim, observe, resign", { needs: RECIPES, timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const [s1, s2] = [await etcd.session({ ttl: 10 }), await etcd.session({ ttl: 10 })];
  const e1 = s1.election("e1");
  const e2 = s2.election("e1");
  assert.equal(await e1.leader(), undefined);
  const ctl = new AbortController();
  const seen = [];
  const obsSession = await etcd.session({ ttl: 10 });
  const observer = (async () => {
    try {
      for await (const l of obsSession.election("e1").observe({ signal: ctl.signal })) seen.push(l.value);
    } catch (e) {
      if (e.code !== "Aborted") throw e;
    }
  })();
  await e1.campaign("one");
  assert.equal(e1.key, `e1/${BigInt("0x" + s1.lease).toString(16)}`);
  assert.deepEqual(await e2.leader().then((l) => [l.key, l.value]), [e1.key, "one"]);
  const second = e2.campaign("two");
  assert.equal(await settled(second, 300), false, "e2 waits");
  await e1.proclaim("one, again");
  await e1.resign();
  await within(second, 3000, "e2's campaign");
  assert.equal((await e1.leader()).value, "two");
  await assert.rejects(e1.proclaim("not me"), { code: "NotLeader" });
  await until(() => seen.length >= 3, 3000);
  ctl.abort();
  await observer;
  assert.deepEqual(seen, ["one", "one, again", "two"]);
});

eachBackend("interop: elections with `etcdctl elect`", { needs: [...RECIPES, "server"], timeout: 30_000 }, async (t, { connect, url }) => {
  const etcd = connect();
  const theirs = etcdctlLive(t, url, ["elect", "e2", "from-etcdctl"]);
  await theirs.line(/^e2\/[0-9a-f]+\nfrom-etcdctl$/m);
  const s = await etcd.session({ ttl: 10 });
  const e = s.election("e2");
  assert.equal((await e.leader()).value, "from-etcdctl");
  const campaign = e.campaign("from-edge-lease");
  assert.equal(await settled(campaign, 500), false, "waits for etcdctl's leader to resign");
  const observer = etcdctlLive(t, url, ["elect", "-l", "e2"]);
  await observer.line(/from-etcdctl/);
  theirs.interrupt();
  await within(campaign, 5000, "our campaign");
  await observer.line(/from-edge-lease/);
  await e.proclaim("proclaimed");
  await observer.line(/proclaimed/);
  await e.resign();
  observer.interrupt();
  await s.close();
});

// A fetch whose answers to kv/txn come 300 ms late: the request reaches the
// server (and is applied) at once, so an abort meanwhile loses the answer.
function lateTxnAnswers() {
  return async (url, init = {}) => {
    if (!String(url).endsWith("/kv/txn")) return fetch(url, init);
    const { signal, ...rest } = init;
    const res = await fetch(url, rest);
    const body = await res.arrayBuffer();
    await new Promise((ok, no) => {
      const timer = setTimeout(ok, 300);
      signal?.addEventListener("abort", () => (clearTimeout(timer), no(signal.reason)), { once: true });
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

eachBackend("lock() and campaign() aborted after their request reached the server leave no key: the lock is free, no candidate stands", { needs: [...RECIPES, "url"], timeout: 20_000 }, async (t, { connect }) => {
  const slow = connect({ fetch: lateTxnAnswers() });
  const other = connect();
  const s = await slow.session({ ttl: 30 });
  const m = s.mutex("ab1");
  await assert.rejects(m.lock({ signal: AbortSignal.timeout(100) }), { code: "Aborted" });
  assert.equal(m.key, undefined);
  assert.equal((await other.range({ key: "ab1/", prefix: true })).count, 0, "the aborted lock's key is gone");
  const s2 = await other.session({ ttl: 30 });
  assert.equal(await s2.mutex("ab1").tryLock(), true, "another session takes the lock at once");
  const e = s.election("ab2");
  await assert.rejects(e.campaign("A", { signal: AbortSignal.timeout(100) }), { code: "Aborted" });
  assert.equal(e.key, undefined);
  assert.equal(await s2.election("ab2").leader(), undefined, "no leader stands for the withdrawn candidate");
});

eachBackend("an aborted lock() leaves the key another lock of the same session holds", { needs: [...RECIPES, "url"], timeout: 20_000 }, async (t, { connect }) => {
  const slow = connect({ fetch: lateTxnAnswers() });
  const s = await slow.session({ ttl: 30 });
  const holder = s.mutex("ab3");
  await holder.lock();
  await assert.rejects(s.mutex("ab3").lock({ signal: AbortSignal.timeout(100) }), { code: "Aborted" });
  const still = await connect().get(holder.key);
  assert.equal(still?.createRevision, holder.token, "the holder's key stays");
  await holder.unlock();
});

eachBackend("observe() goes on past a compaction of the history it would have watched, and return() ends it at once", { needs: [...RECIPES, "compact"], timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 30 });
  const e = s.election("ob1");
  await e.campaign("v1");
  const seen = e.observe();
  assert.equal((await within(seen.next(), 5000, "the leader")).value.value, "v1");
  // History moves on and is compacted before the observer reads on.
  for (let i = 0; i < 5; i++) await etcd.put("ob1-other", String(i));
  await e.proclaim("v2");
  const last = await etcd.put("ob1-other", "x");
  await etcd.compact(last.revision);
  assert.equal((await within(seen.next(), 5000, "the proclamation")).value.value, "v2");
  const waiting = seen.next();
  await sleep(50);
  assert.deepEqual(await within(seen.return(), 5000, "return()"), { value: undefined, done: true });
  assert.deepEqual(await within(waiting, 5000, "the waiting next()"), { value: undefined, done: true });
  await e.resign();
});

eachBackend("an aborted lock() does not remove the key another lock of the same session took meanwhile", { needs: [...RECIPES, "url"], timeout: 20_000 }, async (t, { connect }) => {
  const slow = connect({ fetch: lateTxnAnswers() });
  const s = await slow.session({ ttl: 30 });
  const [a, b] = [s.mutex("ab4"), s.mutex("ab4")];
  // a's request goes first and is applied; its answer comes after a gave up.
  const pa = a.lock({ signal: AbortSignal.timeout(100) });
  const pb = b.lock();
  await assert.rejects(pa, { code: "Aborted" });
  await within(pb, 5000, "b's lock");
  const other = await connect().session({ ttl: 30 });
  assert.equal((await connect().get(b.key))?.createRevision, b.token, "b's key stays");
  assert.equal(await other.mutex("ab4").tryLock(), false, "no other session gets the lock b holds");
  await b.unlock();
});

eachBackend("a candidate aborted while waiting leaves the key another candidate of the same session waits with; only one leader", { needs: RECIPES, timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const [a, s, b] = await Promise.all([1, 2, 3].map(() => etcd.session({ ttl: 30 })));
  await a.election("ab5").campaign("A");
  const [e1, e2] = [s.election("ab5"), s.election("ab5")];
  const ctl = new AbortController();
  const p1 = e1.campaign("S", { signal: ctl.signal });
  const p2 = e2.campaign("S");
  await sleep(200);
  ctl.abort();
  await assert.rejects(p1, { code: "Aborted" });
  assert.ok(await etcd.get(`ab5/${s.keySuffix}`), "the key e2 waits with stays");
  const p3 = b.election("ab5").campaign("B");
  await a.close(); // A's lease and key go
  await within(p2, 5000, "e2 leads once A is gone");
  assert.equal(await Promise.race([p3.then(() => true), sleep(300).then(() => false)]), false, "B does not lead beside e2");
  assert.equal((await b.election("ab5").leader()).value, "S");
  await e2.resign();
  await within(p3, 5000, "B leads after e2 resigns");
});

eachBackend("tryLock() on a Mutex whose lock() waits leaves the waiting key: that lock() gets its turn", { needs: RECIPES, timeout: 20_000 }, async (t, { connect }) => {
  const etcd = connect();
  const [holder, s] = await Promise.all([1, 2].map(() => etcd.session({ ttl: 30 })));
  const h = holder.mutex("ab6");
  await h.lock();
  const m = s.mutex("ab6");
  const waiting = m.lock();
  await sleep(200);
  assert.equal(await m.tryLock(), false);
  assert.ok(await etcd.get(`ab6/${s.keySuffix}`), "the waiting key stays");
  await h.unlock();
  await within(waiting, 5000, "the waiting lock()");
  assert.equal(m.key, `ab6/${s.keySuffix}`);
  await m.unlock();
});

test("held, leading: false from the deadline on by the clock read at the call, before any timer runs [lessor]", async (t) => {
  // The lessor's clock moves only when the test says, and nothing ticks it.
  let now = Date.now();
  const lessor = new Lessor({ now: () => now, autoTick: false, minTtl: 2 });
  const etcd = connect(lessor);
  t.after(async () => {
    await etcd.close();
    lessor.close();
  });
  const [a, b, c] = await Promise.all([1, 2, 3].map(() => etcd.session({ ttl: 10 })));
  const m = a.mutex("held-m");
  const e = b.election("held-e");
  const m2 = c.mutex("held-m2");
  await m.lock();
  await e.campaign("v");
  await m2.lock();
  assert.equal(m.held, true);
  m.assertHeld();
  assert.equal(e.leading, true);
  e.assertLeading();
  now += 10_000; // the leases' deadline: no keepalive, no timer and no tick from here on
  // The first synchronous check of each session says so.
  assert.equal(m.held, false);
  assert.equal(e.leading, false);
  assert.equal(m2.signal.aborted, true);
  assert.throws(() => m.assertHeld(), { code: "LeaseNotFound", lease: a.lease });
  assert.throws(() => e.assertLeading(), { code: "LeaseNotFound", lease: b.lease });
  assert.equal(m.signal.reason.code, "LeaseNotFound");
  assert.deepEqual([a.lost, b.lost, c.lost], [true, true, true]);
});

eachBackend("held, leading: false before lock()/campaign(), after unlock()/resign() and once the session is closed", { needs: RECIPES }, async (t, { connect }) => {
  const etcd = connect();
  const s = await etcd.session({ ttl: 10 });
  const m = s.mutex("held2-m");
  const e = s.election("held2-e");
  assert.equal(m.held, false);
  assert.throws(() => m.assertHeld(), { code: "NotHeld" });
  assert.equal(e.leading, false);
  assert.throws(() => e.assertLeading(), { code: "NotLeader" });
  await m.lock();
  await e.campaign("v");
  assert.equal(m.held, true);
  assert.equal(e.leading, true);
  await m.unlock();
  await e.resign();
  assert.equal(m.held, false);
  assert.throws(() => m.assertHeld(), { code: "NotHeld" });
  assert.equal(e.leading, false);
  assert.throws(() => e.assertLeading(), { code: "NotLeader" });
  await m.lock();
  await e.campaign("v");
  await s.close();
  assert.equal(m.held, false);
  assert.throws(() => m.assertHeld(), { code: "Closed" });
  assert.equal(e.leading, false);
  assert.throws(() => e.assertLeading(), { code: "Closed" });
});
