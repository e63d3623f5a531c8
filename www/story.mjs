// The stuck-lock story (shared/seeds/001): a lock is a key attached to a
// lease; its holder renews the lease; when the holder stops, the key expires
// and the next server takes the lock with a higher fencing token. The old
// holder's late writes are refused twice over: in the lock's own store by a
// guarded write, and at the resource elsewhere by its fence.

import { fenced } from "edge-lease/fenced";

export const LOCK = "/locks/job";
export const OUTPUT = "/jobs/output";
export const TTL = 10;

/**
 * What the lock protects that lives elsewhere (a file, a database row):
 * fenced with edge-lease/fenced, it remembers the highest token it accepted
 * and refuses lower ones, since a lease alone cannot stop a holder that does
 * not know it lost the lock. `onWrite` sees each write and its outcome.
 */
export function protectedResource(onWrite) {
  const fence = fenced(new Map(), "job-output");
  return {
    write: (writer, token, data) =>
      fence.write(token, () => onWrite({ writer, token, data, ok: true, where: "resource", note: `highest token now ${token}` })).catch((e) =>
        onWrite({ writer, token, data, ok: false, where: "resource", note: `${e.code}: token ${token} < ${e.highest}` }),
      ),
  };
}

/**
 * Schedules the story on `session` (a fresh one on a simulated clock),
 * starting now. `say(actor, text)` narrates.
 *
 *   T+0   server-3 takes the lock: put ifAbsent, lease TTL 10
 *   T+1   server-7 takes a lease it keeps alive, tries the lock, is
 *         refused, and watches the key
 *   T+3, T+6, T+9   server-3 renews
 *   T+9   server-3 freezes (crash, GC pause, partition): renewals stop
 *   T+19  the lease expires 10 s after the last renewal; the key goes
 *   T+19.5 server-7, told by its watch, takes the lock: higher token
 *   T+21  server-3 wakes and writes with its old token: its guarded put
 *         is refused by the lock's store, its write by the resource's fence
 */
export function startLockStory(session, resource, say) {
  const { lessor, clock } = session;
  // A write in the lock's own store that happens only while `token` still
  // holds the lock: one txn comparing the lock key's create revision, as
  // edge-lease/client's `put(key, value, { ifHeld: lock })` sends it.
  const guardedPut = (who, token, data) => {
    const r = lessor.txn({
      compare: [{ key: LOCK, target: "create", result: "=", value: token }],
      success: [{ put: { key: OUTPUT, value: data } }],
      failure: [{ range: { key: LOCK } }],
    });
    const holder = r.succeeded ? null : r.responses[0].range.kvs[0];
    const note = r.succeeded
      ? `put ${OUTPUT} at revision ${r.revision}`
      : `NotHeld: ${LOCK} is ${holder ? `held by token ${holder.createRevision}` : "free"}`;
    resource.onGuarded({ writer: who, token, data, ok: r.succeeded, where: "lock store", note });
  };
  const t0 = clock.now();
  const at = (seconds, fn) => session.at(t0 + seconds * 1000, null, fn);
  let lease3 = null;
  let token3 = 0;

  // A server takes the lock by creating its key, on its own lease, only if
  // absent. Returns the fencing token, or 0 if the lock is held.
  const tryLock = (who, lease) => {
    const r = lessor.put(LOCK, who, { lease, ifAbsent: true });
    if (!r.created) {
      say(who, `finds ${LOCK} held by ${r.prev.value} (fencing token ${r.prev.createRevision}): refused; it watches the key`);
      return 0;
    }
    // The revision that created the key orders the holders: a fencing token.
    const token = lessor.get(LOCK).createRevision;
    say(who, `took ${LOCK} with lease ${lease}: fencing token ${token}`);
    return token;
  };

  at(0, () => {
    lease3 = lessor.grant(TTL).id;
    session.owners.set(lease3, "server-3");
    token3 = tryLock("server-3", lease3);
    guardedPut("server-3", token3, "part 1");
    resource.write("server-3", token3, "job output, part 1");
  });

  // etcd lock clients watch the key and try again once it is deleted; the
  // half second stands for the watch event and the put's round trip.
  const onceFreed = (then) => {
    const types = ["expire", "revoke", "delete"];
    const watch = (e) => {
      if (!e.keys.includes(LOCK)) return;
      for (const type of types) lessor.removeEventListener(type, watch);
      session.at(clock.now() + 500, null, then);
    };
    for (const type of types) lessor.addEventListener(type, watch);
  };

  at(1, () => {
    // server-7 keeps its own lease alive all along (etcd's
    // concurrency.Session); only the lock key waits.
    const lease7 = lessor.grant(TTL).id;
    session.owners.set(lease7, "server-7");
    session.keepAlive(lease7, true);
    const attempt = () => {
      const token = tryLock("server-7", lease7);
      if (token === 0) return onceFreed(attempt);
      guardedPut("server-7", token, "part 1 (redone)");
      resource.write("server-7", token, "job output, part 1 (redone)");
    };
    attempt();
  });

  for (const s of [3, 6, 9]) {
    at(s, () => {
      lessor.renew(lease3);
      say("server-3", `renewed lease ${lease3}: it now ends at T+${s + TTL} s`);
    });
  }

  at(9, () => say("server-3", "freezes (crash, long GC pause or partition): no more renewals"));

  at(21, () => {
    say("server-3", `wakes up still believing it holds ${LOCK}, writes with fencing token ${token3}`);
    guardedPut("server-3", token3, "part 2");
    resource.write("server-3", token3, "job output, part 2");
  });
}
