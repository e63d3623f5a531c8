// v3lockpb.Lock as etcd 3.4's v3lock server does it (concurrency.Mutex
// run server-side, see concurrency.mjs): Lock puts `name/<lease %x>` if it
// is absent and blocks until no key under `name/` was created before it,
// watching only its predecessor's delete; a canceled or timed-out Lock
// deletes its key (its lease stays). Unlock deletes the key it is given.
// With auth on, the caller needs write and read on `name/` (its key, the
// holder's range and watch), as on etcd; the clean-up carries no token, so
// there it fails and the key stays, as on etcd.
import { bytesOf } from "./common.mjs";
import { admitRecipe, canceled, created, firstCreate, keyUnder, recipe, session, steps, waitDeletes } from "./concurrency.mjs";
import { leaseGoHex } from "edge-lease/lease-id";

export function lockService({ lessor, header, auth, maxRequestBytes }) {
  return {
    async Lock(req, call) {
      const signal = call?.signal;
      if (signal?.aborted) throw canceled();
      const step = steps(auth, call?.token);
      const lease = session(lessor, req.lease, step);
      const name = bytesOf(req.name);
      const pfx = keyUnder(name);
      const myKey = keyUnder(name, leaseGoHex(lease));
      admitRecipe(maxRequestBytes, step, { key: myKey, value: new Uint8Array(0), lease, failure: true, owner: pfx });
      // Mutex.Lock: one txn puts the key if absent and reads the holder.
      const owner = { range: firstCreate(pfx) };
      const r = recipe(() =>
        lessor.txn({
          compare: [created(myKey, 0)],
          success: [{ put: { key: myKey, value: "", lease } }, owner],
          failure: [{ range: { key: myKey } }, owner],
        }),
      );
      const myRev = r.succeeded ? r.revision : r.responses[0].range.kvs[0].createRevision;
      const holder = r.responses[1].range.kvs;
      if (holder.length === 0 || holder[0].createRevision === myRev) {
        return { header: { ...header(), revision: r.revision }, key: myKey };
      }
      let revision;
      try {
        revision = await waitDeletes(lessor, pfx, myRev - 1, signal, step);
      } catch (e) {
        // Mutex.Unlock with the client's context: the key goes, errors ignored.
        try {
          step.nobody.as("etcdserverpb.KV/DeleteRange", { key: myKey });
          lessor.deleteRange({ key: myKey });
        } catch {}
        throw e;
      }
      return { header: { ...header(), revision }, key: myKey };
    },

    Unlock(req, call) {
      const key = bytesOf(req.key);
      steps(auth, call?.token).as("etcdserverpb.KV/DeleteRange", { key });
      const r = recipe(() => lessor.deleteRange({ key }));
      return { header: { ...header(), revision: r.revision } };
    },
  };
}
