// One "server" of the seed-001 story (tests/client/seed001.test.mjs): takes
// /locks/job with withLock on a short lease, then writes to the fenced
// resource with its token, after a put guarded by the lock (`ifHeld`): at once ("auto"), when the test says so on stdin
// ("wait"), or after a sleep of its own, due well before its lease's
// deadline ("sleep"). Right before writing it checks, synchronously, whether
// it still holds the lock. Prints one JSON line per step.
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "../../js/client/index.mjs";

const [url, name, resource, mode] = process.argv.slice(2);
const say = (o) => console.log(JSON.stringify({ name, at: Date.now(), ...o }));
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((r) => lines.once("line", r));

const etcd = connect(url);
try {
  await etcd.withLock("/locks/job", { ttl: 2 }, async (lock) => {
    let abortedAt = null;
    lock.signal.addEventListener("abort", () => (abortedAt = Date.now()));
    say({ step: "locked", token: lock.token, key: lock.key, deadline: lock.session.deadline });
    if (mode === "wait") await nextLine();
    if (mode === "sleep") await sleep(1000);
    // The first code to run after a freeze: no other timer of this process
    // need have run yet.
    const aborted = lock.signal.aborted;
    const held = lock.held;
    let assertCode = null;
    try {
      lock.assertHeld();
    } catch (e) {
      assertCode = e.code;
    }
    // It writes either way: the guard and the fenced resource are what must
    // refuse it. First in the lock's own store, guarded by the lock...
    let guard;
    try {
      guard = { revision: (await etcd.put("/jobs/result", name, { ifHeld: lock })).revision };
    } catch (e) {
      guard = { code: e.code, holderToken: e.holderToken };
    }
    // ...then at a resource elsewhere, fenced with the token.
    const res = await fetch(`${resource}/write?token=${lock.token}&who=${name}`, { method: "POST" });
    const reason = lock.signal.reason;
    say({ step: "wrote", guard, status: res.status, aborted, held, assertCode, abortedAt, reasonCode: reason?.code, reasonDeadline: reason?.deadline });
  });
  say({ step: "released" });
} catch (e) {
  say({ step: "withLock-rejected", code: e.code, message: e.message });
}
lines.close();
await etcd.close();
