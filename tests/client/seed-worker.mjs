// One "server" of the seed-001 story (tests/client/seed001.test.mjs): takes
// /locks/job with withLock on a short lease, then writes to the fenced
// resource with its token, either at once ("auto") or when the test says so
// on stdin ("wait"). Prints one JSON line per step.
import { createInterface } from "node:readline";
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
    const aborted = lock.signal.aborted;
    const res = await fetch(`${resource}/write?token=${lock.token}&who=${name}`, { method: "POST" });
    const reason = lock.signal.reason;
    say({ step: "wrote", status: res.status, aborted, abortedAt, reasonCode: reason?.code, reasonDeadline: reason?.deadline });
  });
  say({ step: "released" });
} catch (e) {
  say({ step: "withLock-rejected", code: e.code, message: e.message });
}
lines.close();
await etcd.close();
